//! `dream rekey --from-plain` and `--to-plain` through the built binary, on
//! every backend (fs, sqlite, redis, postgres; the last two from
//! `DREAM_TEST_REDIS_URL` / `DREAM_TEST_POSTGRES_URL`, skipped with a banner when
//! absent unless `DREAM_REQUIRE_REDIS=1` / `DREAM_REQUIRE_POSTGRES=1`):
//!
//! - plain → encrypted → plain keeps every memory, session and audit record
//!   (what list, show, history, audit, stats and recall print is the same), and
//!   after `--from-plain` no memory's text is in the store's own bytes;
//! - a conversion killed part way (SIGKILL at a failpoint) leaves a store every
//!   other command refuses with "being encrypted/decrypted in place", `doctor`
//!   reports it, and running the same command again finishes it;
//! - the mistakes (`--from-plain` on an encrypted store, `--to-plain` on a plain
//!   one, a wrong key, another key on resuming) are named in the person's terms.

use std::path::Path;
use std::process::Output;

mod common;
use common::*;

#[path = "../../dream-postgres/tests/common/mod.rs"]
mod postgres_common;

#[path = "common/places.rs"]
mod places;
use places::{Place, place};

const KEY_A: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const KEY_B: &str = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";

/// What the memories say: none of it may be in an encrypted store's bytes.
const SECRETS: [&str; 3] = ["Bluebird", "Kestrel-7", "Vitest"];

/// Runs the binary on `place`'s store with `env` added.
fn run(cli: &Cli, place: &Place, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut all = vec!["--store", place.store.as_str()];
    all.extend_from_slice(args);
    let mut vars: Vec<(&str, &str)> = place.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    vars.extend_from_slice(env);
    cli.run_with(&all, None, &vars)
}

/// Exit code 2 with one `error:` line on stderr containing `needle`.
#[track_caller]
fn fails(output: Output, needle: &str) -> String {
    let err = stderr(&output);
    assert_eq!(
        output.status.code(),
        Some(2),
        "stdout: {}\nstderr: {err}",
        stdout(&output)
    );
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains(needle), "wanted {needle:?} in {err}");
    err
}

/// Logs one session of the person saying `text` on `place`'s store.
fn log(cli: &Cli, place: &Place, text: &str) {
    let env: Vec<(&str, &str)> = place.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    ok(cli.run_with(
        &["--store", place.store.as_str(), "log", "-"],
        Some(&session(text)),
        &env,
    ));
}

/// A store with memories (two remembered, three from sessions a pass
/// consumed), their audit records, and one session still pending.
fn fill(cli: &Cli, place: &Place) {
    for (name, content) in [
        ("Codename", "The project codename is Bluebird."),
        ("Build host", "Releases are built on host Kestrel-7."),
    ] {
        ok(run(
            cli,
            place,
            &["remember", "--name", name, "--content", content],
            &[],
        ));
    }
    for text in [
        "We use Vitest here, not Jest.",
        "From now on we deploy on Fridays.",
        "Call me Sam.",
    ] {
        log(cli, place, text);
    }
    ok(run(cli, place, &["dream", "--force"], &[]));
    log(cli, place, "Our staging database is Postgres 16.");
}

/// Everything the read commands print about the store, as one text.
fn snapshot(cli: &Cli, place: &Place, pre: &[&str], env: &[(&str, &str)]) -> String {
    let with = |args: &[&str]| {
        let mut all = pre.to_vec();
        all.extend_from_slice(args);
        ok(run(cli, place, &all, env))
    };
    let list = with(&["list", "--json"]);
    let memories: Vec<serde_json::Value> = serde_json::from_str(&list).expect("list --json");
    assert!(memories.len() >= 4, "{list}");
    let mut out = format!("list:\n{list}\n");
    for memory in &memories {
        let id = memory["id"].as_str().expect("id");
        out += &format!("show {id}:\n{}\n", with(&["show", id]));
        out += &format!("history {id}:\n{}\n", with(&["history", id]));
    }
    out += &format!("audit:\n{}\n", with(&["audit", "--since", "1d", "--json"]));
    let mut stats: serde_json::Value =
        serde_json::from_str(&with(&["stats", "--json"])).expect("stats json");
    // The one thing meant to differ: `encrypted(…)` around the backend's name.
    stats["store"] = serde_json::Value::Null;
    out += &format!("stats:\n{stats}\n");
    out += &format!("trash:\n{}\n", with(&["trash", "--json"]));
    let recall: serde_json::Value = serde_json::from_str(&with(&[
        "recall",
        "what is the codename",
        "--format",
        "json",
    ]))
    .expect("recall json");
    out += &format!("recall:\n{}\n", recall["records"]);
    out
}

/// Every byte the store keeps in files under the working directory (fs, SQLite).
fn file_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.extend(std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Whether the backend keeps its bytes in the test's directory.
fn local(backend: &str) -> bool {
    matches!(backend, "fs" | "sqlite")
}

fn round_trip(backend: &str) {
    let Some(place) = place(backend, "rekey-round-trip") else {
        return;
    };
    let cli = Cli::new();
    fill(&cli, &place);
    let before = snapshot(&cli, &place, &[], &[]);
    if local(backend) {
        let bytes = file_bytes(cli.dir.path());
        assert!(SECRETS.iter().all(|s| contains(&bytes, s)), "a plain store");
    }

    let key = [("DREAM_KEY", KEY_A)];
    let done = run(&cli, &place, &["rekey", "--from-plain"], &key);
    assert_eq!(stderr(&done), "", "no progress on a non-terminal stderr");
    let said = ok(done);
    assert!(said.contains("the store is encrypted now"), "{said}");
    if local(backend) {
        // Compacted, so an overwritten plaintext page of SQLite is gone too.
        let bytes = file_bytes(cli.dir.path());
        for secret in SECRETS {
            assert!(
                !contains(&bytes, secret),
                "{secret} in the encrypted store's bytes"
            );
        }
    }
    fails(
        run(&cli, &place, &["list"], &[]),
        "this store is encrypted: pass --encrypt",
    );
    let encrypted = snapshot(&cli, &place, &["--encrypt"], &key);
    assert_eq!(encrypted, before, "what the store says, encrypted");

    let done = run(&cli, &place, &["--encrypt", "rekey", "--to-plain"], &key);
    assert_eq!(stderr(&done), "", "no progress on a non-terminal stderr");
    assert!(ok(done).contains("the store is plain now"));
    fails(
        run(&cli, &place, &["--encrypt", "list"], &key),
        "this store is not encrypted",
    );
    assert_eq!(snapshot(&cli, &place, &[], &[]), before, "plain again");
    // The pending session is still a session a pass consumes.
    ok(run(&cli, &place, &["dream", "--force"], &[]));
    assert!(ok(run(&cli, &place, &["list"], &[])).contains("Postgres 16"));
}

#[test]
fn fs_round_trip_plain_encrypted_plain() {
    round_trip("fs");
}

#[test]
fn sqlite_round_trip_plain_encrypted_plain() {
    round_trip("sqlite");
}

#[test]
fn redis_round_trip_plain_encrypted_plain() {
    round_trip("redis");
}

#[test]
fn postgres_round_trip_plain_encrypted_plain() {
    round_trip("postgres");
}

#[test]
fn conversion_mistakes_are_named_in_the_persons_terms() {
    let Some(place) = place("fs", "rekey-mistakes") else {
        return;
    };
    let cli = Cli::new();
    let a = [("DREAM_KEY", KEY_A)];
    let b = [("DREAM_KEY", KEY_B)];
    fails(
        run(&cli, &place, &["rekey", "--from-plain"], &a),
        "no store at",
    );
    ok(run(
        &cli,
        &place,
        &["remember", "--name", "Codename", "--content", "Bluebird."],
        &[],
    ));
    fails(
        run(&cli, &place, &["--encrypt", "rekey", "--to-plain"], &a),
        "this store is not encrypted",
    );
    fails(
        run(&cli, &place, &["rekey", "--to-plain"], &a),
        "--to-plain needs --encrypt",
    );
    fails(
        run(
            &cli,
            &place,
            &["--encrypt", "rekey"],
            &[("DREAM_KEY", KEY_A), ("DREAM_NEW_KEY", KEY_B)],
        ),
        "this store is not encrypted: `dream --encrypt rekey --from-plain` encrypts it",
    );
    fails(
        run(&cli, &place, &["rekey", "--from-plain"], &[]),
        "DREAM_KEY",
    );
    ok(run(&cli, &place, &["rekey", "--from-plain"], &a));
    fails(
        run(&cli, &place, &["rekey", "--from-plain"], &a),
        "this store is already encrypted",
    );
    fails(
        run(&cli, &place, &["--encrypt", "rekey", "--to-plain"], &b),
        "the key does not open this store",
    );
    assert!(ok(run(&cli, &place, &["--encrypt", "list"], &a)).contains("Codename"));
    let err = fails(
        run(
            &cli,
            &place,
            &["rekey", "--to-plain", "--new-key-file", "k"],
            &a,
        ),
        "cannot be used with",
    );
    assert!(err.contains("--new-key-file"), "{err}");
}

/// A conversion killed at `failpoint`, then every other command, `doctor`, and
/// the same command run again to finish.
#[cfg(feature = "failpoints")]
fn killed(backend: &str, failpoint: &str) {
    let Some(place) = place(backend, "rekey-killed") else {
        return;
    };
    let cli = Cli::new();
    fill(&cli, &place);
    let before = snapshot(&cli, &place, &[], &[]);
    let key = [("DREAM_KEY", KEY_A)];
    let crash = |args: &[&str]| {
        let mut env = key.to_vec();
        env.push(("DREAM_FAILPOINT", failpoint));
        let out = run(&cli, &place, args, &env);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            out.status.signal(),
            Some(9),
            "killed at {failpoint}: {}",
            stderr(&out)
        );
    };
    let refused = |what: &str| {
        fails(run(&cli, &place, &["list"], &[]), what);
        fails(run(&cli, &place, &["--encrypt", "list"], &key), what);
        fails(
            run(
                &cli,
                &place,
                &["--encrypt", "list"],
                &[("DREAM_KEY", KEY_B)],
            ),
            what,
        );
        let doctor = run(&cli, &place, &["--encrypt", "doctor"], &key);
        code(&doctor, 1);
        assert!(stdout(&doctor).contains(what), "{}", stdout(&doctor));
    };

    crash(&["rekey", "--from-plain"]);
    refused("this store is being encrypted in place by `dream --encrypt rekey --from-plain`");
    fails(
        run(
            &cli,
            &place,
            &["rekey", "--from-plain"],
            &[("DREAM_KEY", KEY_B)],
        ),
        "used another key",
    );
    fails(
        run(&cli, &place, &["--encrypt", "rekey", "--to-plain"], &key),
        "finish that first",
    );
    ok(run(&cli, &place, &["rekey", "--from-plain"], &key));
    assert_eq!(snapshot(&cli, &place, &["--encrypt"], &key), before);

    crash(&["--encrypt", "rekey", "--to-plain"]);
    refused("this store is being decrypted in place by `dream --encrypt rekey --to-plain`");
    ok(run(
        &cli,
        &place,
        &["--encrypt", "rekey", "--to-plain"],
        &key,
    ));
    assert_eq!(snapshot(&cli, &place, &[], &[]), before);
}

#[cfg(feature = "failpoints")]
mod crash {
    use dream::encrypted::PAGE_FAILPOINT;
    use dream::encrypted::convert::{CLEANUP_FAILPOINT, MARKER_FAILPOINT};

    #[test]
    fn fs_killed_after_a_page_then_finished() {
        super::killed("fs", PAGE_FAILPOINT);
    }

    #[test]
    fn fs_killed_after_the_marker_then_finished() {
        super::killed("fs", MARKER_FAILPOINT);
    }

    #[test]
    fn fs_killed_before_cleanup_then_finished() {
        super::killed("fs", CLEANUP_FAILPOINT);
    }

    #[test]
    fn sqlite_killed_after_a_page_then_finished() {
        super::killed("sqlite", PAGE_FAILPOINT);
    }

    #[test]
    fn redis_killed_after_a_page_then_finished() {
        super::killed("redis", PAGE_FAILPOINT);
    }

    #[test]
    fn postgres_killed_after_a_page_then_finished() {
        super::killed("postgres", PAGE_FAILPOINT);
    }
}
