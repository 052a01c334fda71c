//! Everyday use through the built binary (issue 37): the project's store found
//! from any subdirectory and made only by a write; hooks and `dream mcp` in a
//! project with no store; a pass stopped by a signal or killed; reads of a store
//! the user cannot write; and the small things a new user trips on.

mod common;
#[path = "common/places.rs"]
mod places;
#[path = "../../dream-postgres/tests/common/mod.rs"]
mod postgres_common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

/// A repository `repo/` (with `.git`) holding `repo/services/billing`, in the
/// test's directory.
fn repository(cli: &Cli) -> (PathBuf, PathBuf) {
    let repo = cli.path("repo");
    let deep = repo.join("services/billing");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::create_dir(repo.join(".git")).unwrap();
    (repo, deep)
}

/// The binary in `dir`.
fn run_in(cli: &Cli, dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    cli.run_in(dir, args, stdin, &[])
}

/// Every `.dream` under `dir`.
fn stores_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap().flatten() {
            let path = entry.path();
            if entry.file_name() == ".dream" {
                found.push(path.clone());
            }
            if entry.file_type().unwrap().is_dir() {
                pending.push(path);
            }
        }
    }
    found
}

/// How many seal keys the test's configuration directory holds.
fn seal_keys(cli: &Cli) -> usize {
    std::fs::read_dir(cli.config.path().join("seal-keys")).map_or(0, |d| d.count())
}

async fn mcp_client(
    cli: &Cli,
    dir: &Path,
) -> rmcp::service::RunningService<rmcp::service::RoleClient, ()> {
    let mut command = tokio::process::Command::from(cli.command(&["mcp"]));
    command.current_dir(dir).stderr(Stdio::null());
    let transport = rmcp::transport::TokioChildProcess::new(command).expect("spawn dream mcp");
    ().serve(transport).await.expect("MCP initialise")
}

async fn tool(
    client: &rmcp::service::RunningService<rmcp::service::RoleClient, ()>,
    name: &str,
    args: Value,
) -> Value {
    let Value::Object(map) = args else {
        panic!("arguments are an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(map))
        .await
        .expect("call");
    assert_ne!(result.is_error, Some(true), "{name}: {result:?}");
    tool_json(&serde_json::to_value(&result).unwrap())
}

/// In a project with nothing stored, no read, health check, hook, MCP
/// `initialize`, `tools/list` or MCP read makes a store or a seal key; the hooks
/// answer "no memories yet" and exit 0; reads say where they looked.
#[test]
fn nothing_but_a_write_makes_a_store_or_a_key() {
    let cli = Cli::new();
    let (repo, deep) = repository(&cli);
    let list = run_in(&cli, &deep, &["list"], None);
    code(&list, 2);
    let err = stderr(&list);
    assert!(err.contains("no store at"), "{err}");
    assert!(err.contains("the repository's top"), "{err}");
    assert!(err.contains(&repo.display().to_string()), "{err}");
    for args in [
        &["recall", "deploy"][..],
        &["stats"],
        &["history", "m-1"],
        &["audit"],
        &["export"],
    ] {
        code(&run_in(&cli, &deep, args, None), 2);
    }
    let doctor = run_in(&cli, &deep, &["doctor"], None);
    code(&doctor, 0);
    let report = stdout(&doctor);
    assert!(report.contains("no .dream in"), "{report}");
    assert!(report.contains("none yet"), "{report}");
    for (args, stdin) in [
        (&["recall", "--brief", "--budget", "1000"][..], None),
        (
            &["recall", "--hook", "--limit", "5"],
            Some(r#"{"prompt":"how do we deploy?"}"#),
        ),
    ] {
        let out = run_in(&cli, &deep, args, stdin);
        assert_eq!(ok(out), "no memories yet\n");
    }
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let client = mcp_client(&cli, &deep).await;
        let tools = client.list_all_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "recall"));
        let recalled = tool(&client, "recall", json!({ "query": "deploy" })).await;
        let records = &recalled["records"];
        assert_eq!(records, &json!([]));
        let stats = tool(&client, "stats", json!({})).await;
        assert_eq!(stats["memories"], 0);
        tool(&client, "list", json!({})).await;
        client.cancel().await.unwrap();
    });
    assert_eq!(stores_under(cli.dir.path()), Vec::<PathBuf>::new());
    assert_eq!(seal_keys(&cli), 0, "no seal key made");
}

/// A write from a subdirectory makes the store at the repository's top; every
/// command from any subdirectory then finds it, and `stats` and `doctor` say
/// which store and why.
#[test]
fn the_store_is_found_from_any_subdirectory() {
    let cli = Cli::new();
    let (repo, deep) = repository(&cli);
    let store = repo.join(".dream");
    ok(run_in(
        &cli,
        &deep,
        &["log", "-"],
        Some(&session("We deploy billing on Fridays.")),
    ));
    assert_eq!(stores_under(cli.dir.path()), vec![store.clone()]);
    ok(run_in(&cli, &repo, &["dream", "--force"], None));
    let recalled = ok(run_in(&cli, &deep, &["recall", "deploy billing"], None));
    assert!(recalled.contains("POLICY: used"), "{recalled}");
    let stats = ok(run_in(&cli, &deep, &["stats", "--json"], None));
    let stats: Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["location"], format!("fs:{}", store.display()));
    let why = stats["located_by"].as_str().unwrap();
    assert!(
        why.contains("the nearest .dream above the working directory"),
        "{why}"
    );
    let doctor = ok(run_in(&cli, &deep, &["doctor"], None));
    assert!(
        doctor.contains(&format!("store fs:{}", store.display())),
        "{doctor}"
    );
    assert!(doctor.contains("the nearest .dream"), "{doctor}");
    // A store nearer the working directory wins; above the repository's top
    // nothing is looked at.
    std::fs::create_dir(cli.path(".dream")).unwrap();
    ok(run_in(
        &cli,
        &deep,
        &["remember", "The billing service owns invoices."],
        None,
    ));
    assert!(!deep.join(".dream").exists());
    let listed = ok(run_in(&cli, &deep, &["list"], None));
    assert!(listed.contains("invoices"), "{listed}");
    // Hooks from the subdirectory see the project's memories and exit 0.
    let brief = ok(run_in(&cli, &deep, &["recall", "--brief"], None));
    assert!(brief.contains("Fridays"), "{brief}");
    let hook = ok(run_in(
        &cli,
        &deep,
        &["recall", "--hook"],
        Some(r#"{"prompt":"when do we deploy billing?"}"#),
    ));
    assert!(hook.contains("Fridays"), "{hook}");
}

/// `dream mcp` started in a subdirectory of a project with no store makes it,
/// with its seal key, at the first write, at the repository's top; the CLI then
/// verifies what the server sealed.
#[test]
fn mcp_makes_the_store_at_its_first_write() {
    let cli = Cli::new();
    let (repo, deep) = repository(&cli);
    let id = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let client = mcp_client(&cli, &deep).await;
        tool(&client, "recall", json!({ "query": "deploy" })).await;
        assert!(!repo.join(".dream").exists());
        let remembered = tool(
            &client,
            "remember",
            json!({ "name": "Deploy day", "kind": "project", "content": "We deploy on Fridays." }),
        )
        .await;
        let id = remembered["remembered"].as_str().unwrap().to_owned();
        let listed = tool(&client, "list", json!({})).await;
        assert!(format!("{listed:?}").contains(&id));
        client.cancel().await.unwrap();
        id
    });
    assert_eq!(stores_under(cli.dir.path()), vec![repo.join(".dream")]);
    assert_eq!(seal_keys(&cli), 1);
    // Held (nothing admitted: exit 1) because the agent said it, never because
    // its seal failed.
    let recalled = run_in(&cli, &repo, &["recall", "deploy Fridays", "--json"], None);
    code(&recalled, 1);
    let recalled: Value = serde_json::from_str(&stdout(&recalled)).unwrap();
    let record = &recalled["records"][0];
    assert_eq!(record["id"], id.as_str(), "{recalled}");
    let reason = record["reason"].to_string();
    assert!(reason.contains("unconfirmed-source"), "{recalled}");
    assert!(!reason.contains("unverified"), "{recalled}");
}

/// `DREAM_STORE` names one store for every directory; `--store` still wins; a
/// relative path there is refused.
#[test]
fn dream_store_names_one_store_everywhere() {
    let cli = Cli::new();
    let (repo, deep) = repository(&cli);
    let elsewhere = cli.path("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let one = format!("fs:{}", cli.path("one-store").display());
    let env = |dir: &Path, args: &[&str]| {
        let mut command = cli.command(args);
        command.current_dir(dir).env("DREAM_STORE", &one);
        command.output().unwrap()
    };
    ok(env(&deep, &["remember", "We deploy on Fridays."]));
    let listed = ok(env(&elsewhere, &["list"]));
    assert!(listed.contains("Fridays"), "{listed}");
    assert!(!repo.join(".dream").exists());
    let doctor = ok(env(&elsewhere, &["doctor"]));
    assert!(doctor.contains("named by DREAM_STORE"), "{doctor}");
    let flag = env(&elsewhere, &["--store", "fs:.dream", "list"]);
    code(&flag, 2);
    assert!(stderr(&flag).contains("no store at"), "{}", stderr(&flag));
    let mut relative = cli.command(&["list"]);
    relative.env("DREAM_STORE", "fs:rel/store");
    let refused = relative.output().unwrap();
    code(&refused, 2);
    assert!(
        stderr(&refused).contains("absolute path"),
        "{}",
        stderr(&refused)
    );
}

/// A local model server that accepts connections and never answers, and a
/// channel that says when the pass reached it.
fn silent_model() -> (String, std::sync::mpsc::Receiver<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
            let _ = tx.send(());
        }
    });
    (format!("http://127.0.0.1:{port}/v1"), rx)
}

/// Starts a pass that waits on a silent model; returns once it holds the claim.
fn pass_waiting_on_a_model(cli: &Cli, place: &places::Place) -> std::process::Child {
    let (base, reached) = silent_model();
    let args = [
        "--store",
        &place.store,
        "--llm",
        "compatible",
        "--model",
        "m",
        "--base-url",
        &base,
        "--timeout",
        "120",
        "--deadline",
        "120",
        "dream",
        "--force",
    ];
    let mut command = cli.command(&args);
    command.envs(place.env.iter().map(|(k, v)| (*k, v.as_str())));
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    reached
        .recv_timeout(Duration::from_secs(60))
        .expect("the pass reached the model");
    child
}

fn signal(child: &std::process::Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn run_at(cli: &Cli, place: &places::Place, args: &[&str], stdin: Option<&str>) -> Output {
    let mut all = vec!["--store", place.store.as_str()];
    all.extend(args);
    let env: Vec<(&str, &str)> = place.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    cli.run_with(&all, stdin, &env)
}

/// One pending session in `place`'s store.
fn log_one_session(cli: &Cli, place: &places::Place) {
    let text = session("We deploy on Fridays from now on.");
    ok(run_at(cli, place, &["log", "-"], Some(&text)));
}

/// Ctrl-C or SIGTERM during a pass: the pass stops, its sessions stay pending,
/// and its claim is free at once (the next pass runs, not "another pass is
/// running"), on every backend.
#[test]
fn a_signal_ends_a_pass_and_frees_its_claim() {
    for backend in ["fs", "sqlite", "redis", "postgres"] {
        let Some(place) = places::place(backend, "signal") else {
            continue;
        };
        let cli = Cli::new();
        log_one_session(&cli, &place);
        for (name, exit) in [("INT", 130), ("TERM", 143)] {
            let child = pass_waiting_on_a_model(&cli, &place);
            let running = ok(run_at(&cli, &place, &["doctor"], None));
            assert!(
                running.contains("claim: a pass is running"),
                "{backend}: {running}"
            );
            signal(&child, name);
            let out = child.wait_with_output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(exit),
                "{backend} {name}: {}",
                stderr(&out)
            );
            let err = stderr(&out);
            assert!(err.contains(&format!("stopped by SIG{name}")), "{err}");
            assert!(err.contains("its claim is released"), "{err}");
            let stats = ok(run_at(&cli, &place, &["stats", "--json"], None));
            let stats: Value = serde_json::from_str(&stats).unwrap();
            assert_eq!(stats["pending_sessions"], 1, "{backend}: {stats}");
            let free = ok(run_at(&cli, &place, &["doctor"], None));
            assert!(free.contains("claim: free"), "{backend}: {free}");
        }
        let next = ok(run_at(&cli, &place, &["dream", "--force"], None));
        assert!(
            !next.contains("another pass is running"),
            "{backend}: {next}"
        );
        assert!(next.contains("dream pass"), "{backend}: {next}");
    }
}

/// A pass killed outright (SIGKILL) cannot give its claim up: the next pass
/// and `doctor` say so, and when it frees itself, on every backend.
#[test]
fn a_claim_left_by_a_killed_pass_is_reported() {
    for backend in ["fs", "sqlite", "redis", "postgres"] {
        let Some(place) = places::place(backend, "killed") else {
            continue;
        };
        let cli = Cli::new();
        log_one_session(&cli, &place);
        let child = pass_waiting_on_a_model(&cli, &place);
        let killed_at = chrono::Local::now();
        signal(&child, "KILL");
        child.wait_with_output().unwrap();
        let next = run_at(&cli, &place, &["dream", "--force"], None);
        code(&next, 2);
        let err = stderr(&next);
        let marker = "held by a process that stopped; free at ";
        let at = err
            .find(marker)
            .unwrap_or_else(|| panic!("{backend}: {err}"));
        let time = &err[at + marker.len()..at + marker.len() + 8];
        let free = chrono::NaiveTime::parse_from_str(time, "%H:%M:%S").expect(time);
        let ahead = free - killed_at.time();
        assert!(
            ahead > chrono::Duration::zero() && ahead <= chrono::Duration::seconds(31),
            "{backend}: free at {free}, killed at {killed_at}"
        );
        let doctor = ok(run_at(&cli, &place, &["doctor"], None));
        assert!(
            doctor.contains(&format!("claim: {marker}{time}")),
            "{backend}: {doctor}"
        );
    }
}

/// Whether this process may write anything (root can, whatever the mode says).
fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The binary as a user who cannot write the store: `nobody` when the tests
/// run as root (for whom a file's mode stops nothing), else this user.
fn as_reader(cli: &Cli, args: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_dream");
    let mut command = if is_root() {
        let mut command = Command::new("setpriv");
        command
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                bin,
            ])
            .args(args);
        command
    } else {
        let mut command = Command::new(bin);
        command.args(args);
        command
    };
    command
        .current_dir(cli.dir.path())
        .env("DREAM_CONFIG_DIR", cli.config.path())
        .env("NO_COLOR", "1")
        .env_remove("DREAM_STORE")
        .stdin(Stdio::null());
    command.output().unwrap()
}

fn read_only(path: &Path) {
    for entry in std::fs::read_dir(path).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            read_only(&entry.path());
        } else {
            let mut perms = entry.metadata().unwrap().permissions();
            perms.set_mode(perms.mode() & 0o444);
            std::fs::set_permissions(entry.path(), perms).unwrap();
        }
    }
    let mut perms = std::fs::metadata(path).unwrap().permissions();
    perms.set_mode(perms.mode() & 0o555);
    std::fs::set_permissions(path, perms).unwrap();
}

/// A store the user cannot write is read like any other: list, recall, stats,
/// show and history take no lock and write nothing; a write is refused.
#[test]
fn reads_work_on_a_store_the_user_cannot_write() {
    let cli = Cli::new();
    if is_root() {
        for dir in [cli.dir.path(), cli.config.path()] {
            std::os::unix::fs::chown(dir, Some(65534), Some(65534)).unwrap();
        }
    }
    let remembered = as_reader(&cli, &["remember", "We deploy on Fridays.", "--json"]);
    code(&remembered, 0);
    let id: Value = serde_json::from_slice(&remembered.stdout).unwrap();
    let id = id["remembered"].as_str().unwrap().to_owned();
    read_only(&cli.path(".dream"));
    read_only(cli.config.path());
    // The store really is read-only for this user: a write fails.
    let write = as_reader(&cli, &["remember", "We deploy on Mondays."]);
    code(&write, 2);
    for args in [
        &["list"][..],
        &["recall", "deploy"],
        &["stats"],
        &["show", &id],
        &["history", &id],
    ] {
        let out = as_reader(&cli, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(!err.contains(".lock"), "{args:?}: {err}");
    }
    let recalled = as_reader(&cli, &["recall", "deploy"]);
    assert!(
        stdout(&recalled).contains("POLICY: used"),
        "{}",
        stdout(&recalled)
    );
}

/// Plain `dream log` splits a session over the limits instead of refusing it:
/// nothing the person said is lost.
#[test]
fn an_oversized_session_is_split_not_refused() {
    let cli = Cli::new();
    let long = format!(
        "{} We deploy on Fridays. ENDMARK",
        "We talked about the garden for a while. ".repeat(4_000)
    );
    let output = "the build printed another line of its log\n".repeat(3_000);
    let one = json!([{ "role": "user", "content": long }, { "role": "tool", "content": output }]);
    let out = ok(cli.run_with(&["log", "-", "--json"], Some(&one.to_string()), &[]));
    let logged: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(logged["messages"], 4, "{logged}");
    let many: Vec<Value> = (0..12)
        .map(|i| json!({ "role": "user", "content": format!("{i} {}", "We planted tomatoes. ".repeat(2_800)) }))
        .collect();
    let out = ok(cli.run_with(&["log", "-"], Some(&Value::from(many).to_string()), &[]));
    assert!(out.contains("logged as 2 sessions"), "{out}");
    let sessions = std::fs::read_dir(cli.path(".dream/sessions")).unwrap();
    let text: String = sessions
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect();
    assert!(
        text.contains("ENDMARK"),
        "the end of the long message is kept"
    );
    assert!(
        text.contains("[truncated by dream:"),
        "the tool output is cut visibly"
    );
    let stats = ok(cli.run(&["stats", "--json"]));
    let stats: Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["pending_sessions"], 3, "{stats}");
}

/// The small things: import without a description; a hook's output logged as
/// tool text; history after forget and restore; a transcript in the wrong
/// format; one of a thing said as one; a mistyped option; a Redis address in
/// its connection error.
#[test]
fn the_small_things() {
    let cli = Cli::new();
    let line = json!({ "id": "deploy-day", "name": "Deploy day", "kind": "project", "content": "We deploy on Fridays after the standup." });
    let imported = ok(cli.run_with(&["import", "-"], Some(&line.to_string()), &[]));
    assert!(imported.contains("imported 1"), "{imported}");
    let shown: Value =
        serde_json::from_str(&ok(cli.run(&["show", "deploy-day", "--json"]))).unwrap();
    assert_eq!(
        shown["description"],
        "We deploy on Fridays after the standup."
    );

    ok(cli.run(&["forget", "deploy-day"]));
    ok(cli.run(&["restore", "deploy-day"]));
    let history = ok(cli.run(&["history", "deploy-day"]));
    assert!(
        history.contains("1 prior version of deploy-day"),
        "{history}"
    );
    let listed = ok(cli.run(&["list"]));
    assert!(listed.contains("1 memory in scope default"), "{listed}");

    let transcript = [
        json!({ "type": "user", "message": { "role": "user", "content": "Hello there." } }),
        json!({ "type": "attachment", "attachment": { "type": "hook_success", "hookName": "SessionStart:startup", "hookEvent": "SessionStart", "content": "HOOKSAID remembered context", "stdout": "HOOKSAID remembered context", "exitCode": 0 } }),
        json!({ "type": "attachment", "attachment": { "type": "hook_success", "hookName": "PreToolUse:Bash", "content": "", "stdout": "{}\n", "exitCode": 0 } }),
    ]
    .map(|v| v.to_string())
    .join("\n");
    std::fs::write(cli.path("claude.jsonl"), &transcript).unwrap();
    let logged = ok(cli.run(&["log", "--from", "claude-code", "claude.jsonl"]));
    assert!(
        logged.starts_with("logged 1 session from 1 file"),
        "{logged}"
    );
    let sessions: String = std::fs::read_dir(cli.path(".dream/sessions"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .collect();
    let hook = sessions
        .find("HOOKSAID")
        .expect("the hook's output is logged");
    let before = &sessions[..hook];
    assert!(
        before.rfind("\"role\":\"tool\"") > before.rfind("\"role\":\"user\""),
        "logged as tool text: {sessions}"
    );
    assert!(!sessions.contains("PreToolUse"), "{sessions}");

    let wrong = cli.run(&["log", "--from", "codex", "claude.jsonl"]);
    code(&wrong, 2);
    let err = stderr(&wrong);
    assert!(err.contains("no line reads as a codex transcript"), "{err}");
    assert!(!stdout(&wrong).contains("logged 0"), "{}", stdout(&wrong));

    let typo = cli.run(&["recall", "deploy", "--limt", "3"]);
    code(&typo, 2);
    let err = stderr(&typo);
    assert!(err.contains("--limit"), "{err}");
    assert!(!err.contains("--llm"), "{err}");

    let unreachable = cli.run_with(
        &["--store", "redis", "list"],
        None,
        &[("DREAM_REDIS_URL", "redis://:hunter2@127.0.0.1:1/0")],
    );
    code(&unreachable, 2);
    let err = stderr(&unreachable);
    assert!(err.contains("127.0.0.1:1"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}
