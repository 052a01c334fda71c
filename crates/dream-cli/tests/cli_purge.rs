//! `dream purge --scope`, `dream purge --matching` and `dream forget --purge
//! --with-sources` through the built binary, on every backend, grepping the
//! store's own files (fs directory, SQLite database and WAL, Redis keys,
//! PostgreSQL rows) for the removed text afterwards; and through encryption,
//! that the removed records' ciphertexts are gone too.

mod common;

#[path = "../../dream-postgres/tests/common/mod.rs"]
mod postgres_common;
#[path = "../../dream-redis/tests/common/mod.rs"]
mod redis_common;
#[path = "common/stored.rs"]
mod stored;

use std::collections::BTreeMap;

use common::*;
use stored::Place;

const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

/// Runs the binary on the place's store with `extra` global flags.
fn run(cli: &Cli, place: &Place, extra: &[&str], args: &[&str]) -> std::process::Output {
    let store = place.store();
    let mut all = vec!["--store", store.as_str()];
    all.extend(extra);
    all.extend(args);
    let env = place.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    cli.run_with(&all, None, &env)
}

fn log(cli: &Cli, place: &Place, scope: &str, text: &str) {
    let store = place.store();
    let env = place.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    ok(cli.run_with(
        &["--store", &store, "--scope", scope, "log", "-"],
        Some(&session(text)),
        &env,
    ));
}

fn failed(output: std::process::Output, needle: &str) {
    code(&output, 2);
    assert!(stderr(&output).contains(needle), "{}", stderr(&output));
}

/// A scope purge: dry run, refusals without a confirmation naming the scope,
/// then everything of the scope gone from the raw store, the other scope's
/// records unchanged, and recall and export finding nothing.
fn scope_purge(backend: &str) {
    let Some(place) = Place::new(backend, "dream purge") else {
        return;
    };
    let cli = Cli::new();
    log(&cli, &place, "acme", "Call me Zorblax.");
    log(&cli, &place, "acme", "We use ZorblaxDB now.");
    ok(run(
        &cli,
        &place,
        &["--scope", "acme"],
        &["dream", "--force"],
    ));
    log(&cli, &place, "acme", "Call me Zorblaxon.");
    ok(run(
        &cli,
        &place,
        &["--scope", "acme"],
        &["dream", "--dry-run"],
    ));
    log(&cli, &place, "beta", "Call me Quillon.");
    ok(run(
        &cli,
        &place,
        &["--scope", "beta"],
        &["dream", "--force"],
    ));
    let beta_export = ok(run(&cli, &place, &["--scope", "beta"], &["export"]));
    assert!(place.holds(&cli, "zorblax"));

    let dry = ok(run(
        &cli,
        &place,
        &["--scope", "acme"],
        &["purge", "--dry-run"],
    ));
    assert!(
        dry.contains("dry run:") && dry.contains("memories removed: 2"),
        "{dry}"
    );
    assert!(dry.contains("sessions removed: 3"), "{dry}");
    assert!(place.holds(&cli, "zorblax"), "a dry run changes nothing");
    failed(
        run(&cli, &place, &["--scope", "acme"], &["purge"]),
        "needs a confirmation",
    );
    failed(
        run(
            &cli,
            &place,
            &["--scope", "acme"],
            &["purge", "--yes-purge-scope", "beta"],
        ),
        "does not name the scope",
    );
    assert!(place.holds(&cli, "zorblax"), "a refusal changes nothing");
    let before = place.raw(&cli);

    let done = ok(run(
        &cli,
        &place,
        &["--scope", "acme"],
        &["purge", "--yes-purge-scope", "acme"],
    ));
    assert!(done.starts_with("purged scope acme"), "{done}");
    assert!(
        !place.holds(&cli, "zorblax"),
        "{backend}: nothing of acme is left"
    );
    assert!(place.holds(&cli, "quillon"));
    let after = place.raw(&cli);
    if matches!(place, Place::Fs) {
        // Every other file is byte-identical but for the generation, the
        // counters, the lease records and the audit log the purge added to.
        for (path, bytes) in &before {
            let mutable = ["/audit/", "/state/", "/journal/", "/.leases/", ".version"]
                .iter()
                .any(|m| path.contains(m));
            if mutable || String::from_utf8_lossy(bytes).contains("Zorblax") {
                continue;
            }
            if let Some(now) = after.get(path) {
                assert_eq!(now, bytes, "{path} changed");
            }
        }
    }
    assert_eq!(
        ok(run(&cli, &place, &["--scope", "beta"], &["export"])),
        beta_export
    );
    let listed = ok(run(&cli, &place, &["--scope", "acme"], &["list", "--json"]));
    assert!(!listed.contains("Zorblax"), "{listed}");
    let recalled = run(&cli, &place, &["--scope", "acme"], &["recall", "Zorblax"]);
    assert!(
        !stdout(&recalled).contains("Zorblax"),
        "{}",
        stdout(&recalled)
    );
    let audit = ok(run(&cli, &place, &["--scope", "acme"], &["audit"]));
    assert!(audit.contains("scope-purged"), "{audit}");
    assert!(!audit.contains("Zorblax"), "{audit}");
}

/// `forget --purge --with-sources` and `purge --matching`: the text is gone from
/// the raw store; a session another memory rests on keeps its other words.
fn memory_and_text_purge(backend: &str) {
    let Some(place) = Place::new(backend, "dream purge") else {
        return;
    };
    let cli = Cli::new();
    log(
        &cli,
        &place,
        "acme",
        "Call me Zorblax. The billing service listens on port 5501.",
    );
    log(&cli, &place, "acme", "Everyone calls me Zorblax");
    ok(run(
        &cli,
        &place,
        &["--scope", "acme"],
        &["dream", "--force"],
    ));
    let listed = ok(run(&cli, &place, &["--scope", "acme"], &["list", "--json"]));
    let memories: Vec<serde_json::Value> = listed
        .lines()
        .flat_map(
            |l| match serde_json::from_str::<serde_json::Value>(l).unwrap() {
                serde_json::Value::Array(items) => items,
                one => vec![one],
            },
        )
        .collect();
    let id = memories
        .iter()
        .find(|m| m["content"].as_str().unwrap().contains("Zorblax"))
        .expect("the name memory")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    failed(
        run(
            &cli,
            &place,
            &["--scope", "acme"],
            &["forget", &id, "--with-sources"],
        ),
        "--purge",
    );
    let out = ok(run(
        &cli,
        &place,
        &["--scope", "acme"],
        &["forget", &id, "--purge", "--with-sources"],
    ));
    // Both sessions keep the assistant's reply: the one only this memory rested on
    // loses the person's message, the shared one keeps it with the name redacted.
    assert!(
        out.contains("0 sessions removed, 2 redacted (2 messages)"),
        "{out}"
    );
    assert!(!place.holds(&cli, "zorblax"), "{backend}: no copy is left");
    assert!(
        place.holds(&cli, "5501"),
        "the other memory's session stays"
    );

    log(&cli, &place, "acme", "My phone is 555-0199, thanks.");
    log(&cli, &place, "beta", "Ring 555-0199 after six.");
    ok(run(
        &cli,
        &place,
        &["--scope", "beta"],
        &["dream", "--force"],
    ));
    failed(
        run(&cli, &place, &[], &["purge", "--matching", "55"]),
        "at least 3",
    );
    let dry = ok(run(
        &cli,
        &place,
        &[],
        &["purge", "--matching", "555-0199", "--dry-run"],
    ));
    assert!(dry.contains("sessions redacted:"), "{dry}");
    assert!(place.holds(&cli, "555-0199"));
    let done = ok(run(&cli, &place, &[], &["purge", "--matching", "555-0199"]));
    assert!(done.starts_with("purged the text"), "{done}");
    assert!(
        !place.holds(&cli, "555-0199"),
        "{backend}: the text is gone"
    );
    assert!(
        place.holds(&cli, "after six"),
        "the rest of the session stays"
    );
    let audit = ok(run(&cli, &place, &[], &["audit"]));
    assert!(!audit.contains("555-0199"), "{audit}");
}

#[test]
fn fs_scope_purge() {
    scope_purge("fs");
}

#[test]
fn sqlite_scope_purge() {
    scope_purge("sqlite");
}

#[test]
fn redis_scope_purge() {
    scope_purge("redis");
}

#[test]
fn postgres_scope_purge() {
    scope_purge("postgres");
}

#[test]
fn fs_memory_and_text_purge() {
    memory_and_text_purge("fs");
}

#[test]
fn sqlite_memory_and_text_purge() {
    memory_and_text_purge("sqlite");
}

#[test]
fn redis_memory_and_text_purge() {
    memory_and_text_purge("redis");
}

#[test]
fn postgres_memory_and_text_purge() {
    memory_and_text_purge("postgres");
}

/// Through the encryption layer the plaintext was never in the files; the
/// ciphertexts of the purged records are gone too, the others unchanged.
#[test]
fn encrypted_scope_purge_removes_the_ciphertexts() {
    let cli = Cli::new();
    let place = Place::Sqlite;
    let key = [("DREAM_KEY", KEY)];
    let store = place.store();
    let with = |scope: &str, args: &[&str]| -> Vec<String> {
        ["--store", store.as_str(), "--encrypt", "--scope", scope]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect()
    };
    let go = |args: Vec<String>, stdin: Option<&str>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        cli.run_with(&args, stdin, &key)
    };
    ok(go(
        with("acme", &["log", "-"]),
        Some(&session("Call me Zorblax.")),
    ));
    ok(go(
        with("beta", &["log", "-"]),
        Some(&session("Call me Quillon.")),
    ));
    ok(go(with("acme", &["dream", "--force"]), None));
    ok(go(with("beta", &["dream", "--force"]), None));
    assert!(!place.holds(&cli, "zorblax"), "encrypted at rest");
    // The raw records of the sqlite file, read with the library.
    let records = || -> BTreeMap<String, Vec<u8>> {
        let db = cli.path("dream.db");
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            use dream::core::RecordStore;
            let store = dream::sqlite::SqliteStore::open(&db).await.unwrap();
            let mut out = BTreeMap::new();
            for ns in store.namespaces().await.unwrap() {
                let page = store.list(&ns, None, 1000).await.unwrap();
                for e in page.entries {
                    out.insert(format!("{ns}/{}", e.id), e.record.value.to_vec());
                }
            }
            out
        })
    };
    let before = records();
    let dry = ok(go(with("acme", &["purge", "--dry-run", "--json"]), None));
    let report: serde_json::Value = serde_json::from_str(&dry).unwrap();
    let purged: Vec<String> = report["removed"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(ns, ids)| {
            ids.as_array()
                .unwrap()
                .iter()
                .map(move |id| format!("{ns}/{}", id.as_str().unwrap()))
        })
        .collect();
    assert!(purged.len() >= 3, "{purged:?}");
    ok(go(
        with("acme", &["purge", "--yes-purge-scope", "acme"]),
        None,
    ));
    let after = records();
    let file = place.raw(&cli);
    for key in &purged {
        let cipher = &before[key];
        assert!(!after.contains_key(key), "{key} is gone");
        for bytes in file.values() {
            assert!(
                !bytes.windows(cipher.len()).any(|w| w == cipher.as_slice()),
                "the ciphertext of {key} is still in the SQLite files"
            );
        }
    }
    let quillon = ok(go(with("beta", &["list", "--json"]), None));
    assert!(quillon.contains("Quillon"), "{quillon}");
}
