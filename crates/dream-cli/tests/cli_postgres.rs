//! `dream --store postgres …` end to end through the built binary, plain and
//! with `--encrypt`: log, dream, list, show, recall, forget, trash, restore,
//! history, audit, stats, purge and doctor, on the server of
//! `DREAM_TEST_POSTGRES_URL` (skipped with a banner when absent unless
//! `DREAM_REQUIRE_POSTGRES=1`), each run in a schema of its own. The URL comes
//! from `DREAM_POSTGRES_URL` alone and carries a password (the test server
//! trusts, so it is never checked): no output of any command, at the most
//! verbose level, shows it.

use serde_json::Value;

mod common;
use common::*;

#[path = "../../dream-postgres/tests/common/mod.rs"]
mod postgres_common;

const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const SECRET: &str = "pg-Secret-1n-The-URL";

/// The test server's URL with `SECRET` as the password.
fn url_with_password() -> String {
    let url = postgres_common::url();
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (user, host) = rest.rsplit_once('@').unwrap_or(("postgres", rest));
    let user = user.split(':').next().unwrap_or("postgres");
    format!("{scheme}://{user}:{SECRET}@{host}")
}

/// One run of the flow on a fresh schema, with `extra` global options.
struct Flow<'a> {
    cli: &'a Cli,
    store: String,
    extra: &'a [&'a str],
    env: Vec<(&'static str, String)>,
}

impl Flow<'_> {
    fn output(&self, args: &[&str], stdin: Option<&str>) -> std::process::Output {
        let mut all = vec!["-vvv", "--store", self.store.as_str()];
        all.extend_from_slice(self.extra);
        all.extend_from_slice(args);
        let env: Vec<(&str, &str)> = self.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let out = self.cli.run_with(&all, stdin, &env);
        for text in [stdout(&out), stderr(&out)] {
            assert!(
                !text.contains(SECRET),
                "{args:?} showed the password: {text}"
            );
        }
        out
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> String {
        ok(self.output(args, stdin))
    }

    fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.run(args, None)).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }
}

fn log_dream_recall_forget(extra: &[&str]) {
    if !postgres_common::available("dream --store postgres end to end") {
        return;
    }
    let schema = postgres_common::fresh_schema();
    let _guard = postgres_common::SchemaGuard::new(&schema);
    let cli = Cli::new();
    let mut env = vec![("DREAM_POSTGRES_URL", url_with_password())];
    if extra.contains(&"--encrypt") {
        env.push(("DREAM_KEY", KEY.to_owned()));
    }
    let flow = Flow {
        cli: &cli,
        store: format!("postgres?schema={schema}"),
        extra,
        env,
    };

    assert!(
        flow.run(
            &["log", "-"],
            Some(&session("We use Vitest here, not Jest."))
        )
        .starts_with("logged session ")
    );
    flow.run(&["log", "-"], Some(&session("Call me Sam.")));
    let report = flow.json(&["dream", "--force", "--json"]);
    assert_eq!(report["created"].as_array().unwrap().len(), 2, "{report}");
    assert_eq!(report["sessions_consumed"].as_array().unwrap().len(), 2);

    let memories = flow.json(&["list", "--json"]);
    assert_eq!(memories.as_array().unwrap().len(), 2, "{memories}");
    let vitest = memories
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"].as_str().unwrap().contains("Vitest"))
        .expect("the vitest memory");
    let id = vitest["id"].as_str().unwrap().to_owned();
    assert!(flow.run(&["show", &id], None).contains("Vitest"));

    let recall = flow.json(&["recall", "do we use vitest or jest", "--format", "json"]);
    assert_eq!(recall["policy"]["verdict"], "used", "{recall}");
    assert_eq!(recall["records"][0]["id"], id.as_str());
    let context = flow.run(
        &["recall", "test runner vitest", "--format", "context"],
        None,
    );
    assert!(context.contains("Vitest"), "{context}");

    flow.run(&["forget", &id], None);
    assert_eq!(flow.json(&["list", "--json"]).as_array().unwrap().len(), 1);
    // Nothing left to use: recall exits 1, its JSON on stdout all the same.
    let out = flow.output(&["recall", "vitest", "--format", "json"], None);
    let recall: Value = serde_json::from_str(&stdout(&out)).expect("recall JSON");
    assert!(
        recall["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["id"] != id.as_str()),
        "a forgotten memory recalled: {recall}"
    );
    assert!(flow.run(&["trash"], None).contains(&id));
    flow.run(&["restore", &id], None);
    assert_eq!(flow.json(&["list", "--json"]).as_array().unwrap().len(), 2);
    flow.run(&["history", &id], None);
    let audit = flow.run(&["audit", "--since", "1h", "--format", "jsonl"], None);
    assert!(audit.lines().count() >= 5, "{audit}");
    assert!(
        !audit.contains("Vitest"),
        "audit carries memory text: {audit}"
    );
    assert_eq!(flow.json(&["stats", "--json"])["memories"], 2);
    flow.run(&["forget", &id, "--purge"], None);
    assert!(!flow.run(&["trash"], None).contains(&id));
    flow.run(&["doctor"], None);

    // What the server holds: with --encrypt, none of the text.
    let sql = format!(
        "SELECT count(*) FROM \"{schema}\".records WHERE position('Sam'::bytea IN value) > 0"
    );
    let plain: i64 = postgres_common::with_client(move |client| {
        Box::pin(async move { client.query_one(&sql, &[]).await.unwrap().get(0) })
    })
    .unwrap();
    if extra.contains(&"--encrypt") {
        assert_eq!(plain, 0, "the encrypted store holds plaintext");
    } else {
        assert!(plain > 0, "the plain store holds the memory");
    }
}

#[test]
fn postgres_log_dream_recall_forget_through_the_binary() {
    log_dream_recall_forget(&[]);
}

#[test]
fn encrypted_postgres_log_dream_recall_forget_through_the_binary() {
    log_dream_recall_forget(&["--encrypt"]);
}

/// `--store postgres --url-file FILE`: the URL with its password from a 0600
/// file, never from the command line; a file others can read is refused before
/// any connection, naming the file but not its contents.
#[test]
fn postgres_url_from_a_private_file() {
    use std::os::unix::fs::PermissionsExt as _;
    if !postgres_common::available("dream --store postgres --url-file") {
        return;
    }
    let schema = postgres_common::fresh_schema();
    let _guard = postgres_common::SchemaGuard::new(&schema);
    let cli = Cli::new();
    let file = cli.path("postgres-url");
    std::fs::write(&file, format!("{}\n", url_with_password())).unwrap();
    let file_arg = file.to_str().unwrap();
    let store = format!("postgres?schema={schema}");
    let args = |rest: &[&str]| {
        let mut all = vec!["--store", store.as_str(), "--url-file", file_arg];
        all.extend_from_slice(rest);
        all.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run = |rest: &[&str]| {
        let owned = args(rest);
        let borrowed: Vec<&str> = owned.iter().map(String::as_str).collect();
        cli.run_with(&borrowed, None, &[("DREAM_POSTGRES_URL", "")])
    };

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refused = run(&["remember", "--name", "Editor", "--content", "Helix."]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let said = stderr(&refused);
    assert!(said.contains("chmod 600"), "{said}");
    assert!(said.contains("postgres-url"), "{said}");
    assert!(!said.contains(SECRET), "{said}");

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    ok(run(&[
        "remember",
        "--name",
        "Editor",
        "--content",
        "Helix.",
    ]));
    let listed = ok(run(&["list"]));
    assert!(listed.contains("Editor"), "{listed}");
    assert!(!listed.contains(SECRET));
}
