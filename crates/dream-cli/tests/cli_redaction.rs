//! Issue 36, redacted everywhere: a credential pasted anywhere reaches no stored
//! byte and no output, through the built `dream` binary on fs, SQLite, Redis and
//! PostgreSQL. One key per way in — a logged session (the person's turn and a
//! tool's), a memory a compromised model proposes and an update it proposes, a
//! `remember`, an `import`, an update by `import --replace`, MCP's `remember`,
//! and a bad argument that a careless error message would echo — then every
//! stored byte (the fs directory, the SQLite file and WAL, every Redis key under
//! the prefix, every PostgreSQL row), every output (the commands' stdout and
//! stderr, history, audit, events, quarantine, export, `recall --hook`, MCP's
//! answers) and every request sent to the language model and the embedding
//! model is searched for each key and for a fragment of it. Words stored beside
//! the keys must be found in the same places, so the search is known to see them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

mod common;
use common::*;

#[path = "../../dream-postgres/tests/common/mod.rs"]
mod postgres_common;
#[path = "../../dream-redis/tests/common/mod.rs"]
mod redis_common;
#[path = "common/stored.rs"]
mod stored;
use stored::Place;

/// The word stored beside every key: where it is found, the search can see.
const MARK: &str = "Bluebird";

/// One credential per way in, each of a family the scanner knows by its value
/// alone, assembled at run time so this source holds no secret shape.
struct Keys {
    /// In the person's turn of a logged session, with no assignment cue.
    logged: String,
    /// In a tool's output in the same session.
    tool: String,
    /// Invented by the model in a memory it proposes.
    model: String,
    /// In an update the model proposes to an existing memory.
    model_update: String,
    /// In `dream remember`.
    remembered: String,
    /// In a line of `dream import`.
    imported: String,
    /// In an update by `dream import --replace`.
    updated: String,
    /// In MCP's `remember` tool.
    mcp: String,
    /// In a bad argument whose error message would echo it.
    error: String,
}

impl Keys {
    fn new() -> Keys {
        let alnum = |seed: usize, n: usize| -> String {
            const A: &[u8] = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
            (0..n)
                .map(|i| A[(seed * 31 + i * 7 + i * i) % A.len()] as char)
                .collect()
        };
        let letters = |seed: usize, n: usize| -> String {
            alnum(seed, 2 * n)
                .chars()
                .filter(char::is_ascii_alphabetic)
                .take(n)
                .collect()
        };
        let upper = |seed: usize, n: usize| -> String {
            const A: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ234567";
            (0..n)
                .map(|i| A[(seed * 13 + i * 11 + i * i) % A.len()] as char)
                .collect()
        };
        Keys {
            logged: ["sk-proj-", &alnum(1, 48)].concat(),
            tool: ["ghp", "_", &alnum(2, 36)].concat(),
            model: ["SG.", &alnum(3, 22), ".", &alnum(4, 43)].concat(),
            model_update: ["npm", "_", &alnum(5, 36)].concat(),
            remembered: ["hf", "_", &letters(6, 34)].concat(),
            imported: ["AKIA", &upper(7, 16)].concat(),
            updated: ["glpat", "-", &alnum(8, 20)].concat(),
            mcp: [
                "xoxb",
                "-",
                "2748193",
                "0563",
                "-",
                "8841027",
                "3952",
                "-",
                &alnum(9, 24),
            ]
            .concat(),
            error: ["lin_api_", &alnum(10, 40)].concat(),
        }
    }

    fn all(&self) -> [(&'static str, &str); 9] {
        [
            ("logged", &self.logged),
            ("tool", &self.tool),
            ("model", &self.model),
            ("model update", &self.model_update),
            ("remembered", &self.remembered),
            ("imported", &self.imported),
            ("updated", &self.updated),
            ("mcp", &self.mcp),
            ("error", &self.error),
        ]
    }
}

/// A key's value and its last sixteen characters: a fragment no redaction
/// marker or prefix shares.
fn needles(key: &str) -> [&str; 2] {
    [key, &key[key.len() - 16..]]
}

/// A model server on loopback speaking OpenAI's wire format: chat completions
/// answered with the plan set by [`ModelServer::answer`], embeddings with a toy
/// vector; every request body is kept.
struct ModelServer {
    url: String,
    plan: Arc<Mutex<String>>,
    requests: Arc<Mutex<Vec<(String, String)>>>,
}

impl ModelServer {
    fn serve() -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let plan = Arc::new(Mutex::new(String::new()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (answer, seen) = (plan.clone(), requests.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (request_line, body) = read_request(&stream);
                let body = String::from_utf8_lossy(&body).into_owned();
                seen.lock()
                    .unwrap()
                    .push((request_line.clone(), body.clone()));
                let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let reply = if request_line.contains("/embeddings") {
                    let n = request["input"].as_array().map_or(1, Vec::len);
                    let data: Vec<Value> = (0..n)
                        .map(|i| json!({"object": "embedding", "index": i, "embedding": [1.0, 0.5, 0.25, 0.1]}))
                        .collect();
                    json!({"object": "list", "data": data, "model": request["model"],
                           "usage": {"prompt_tokens": 5, "total_tokens": 5}})
                } else {
                    let content = answer.lock().unwrap().clone();
                    json!({
                        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_741_569_952,
                        "model": "local-model",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": content}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
                    })
                }
                .to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        ModelServer {
            url,
            plan,
            requests,
        }
    }

    /// The consolidation plan the next chat completions answer with.
    fn answer(&self, plan: Value) {
        *self.plan.lock().unwrap() = plan.to_string();
    }

    /// The bodies of the requests whose request line names `path`.
    fn bodies(&self, path: &str) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|(line, _)| line.contains(path))
            .map(|(_, body)| body.clone())
            .collect()
    }
}

/// One test's store, model server and everything the binary printed.
struct Run {
    cli: Cli,
    place: Place,
    model: ModelServer,
    /// Every command's stdout and stderr (and MCP's answers), by what ran.
    printed: Vec<(String, String)>,
}

impl Run {
    /// The binary on the store, with the model server as language model and
    /// embedder; `expected` exit codes.
    fn run(&mut self, args: &[&str], stdin: Option<&str>, expected: &[i32]) -> String {
        let output = self.output(args, stdin);
        assert!(
            output.status.code().is_some_and(|c| expected.contains(&c)),
            "{args:?}: {:?}\nstdout: {}\nstderr: {}",
            output.status,
            stdout(&output),
            stderr(&output)
        );
        self.printed
            .push((format!("{args:?} stderr"), stderr(&output)));
        let out = stdout(&output);
        self.printed.push((format!("{args:?}"), out.clone()));
        out
    }

    fn output(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let store = self.place.store();
        let mut all = self.global(&store);
        all.extend_from_slice(args);
        let env = self.place.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.cli.run_with(&all, stdin, &env)
    }

    fn global<'a>(&'a self, store: &'a str) -> Vec<&'a str> {
        vec![
            "--store",
            store,
            "--llm",
            "compatible",
            "--base-url",
            &self.model.url,
            "--model",
            "local-model",
            "--embedder",
            "compatible",
            "--embedding-url",
            &self.model.url,
            "--embedding-model",
            "toy",
            "--embedding-dims",
            "4",
        ]
    }

    /// The id of the active memory named `name`.
    fn memory_id(&mut self, name: &str) -> String {
        let list: Vec<Value> =
            serde_json::from_str(&self.run(&["list", "--json"], None, &[0])).expect("list");
        list.iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no memory {name}: {list:#?}"))["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// MCP over stdio: `remember` with `content`, then `recall` of `query`; the
    /// answers.
    fn mcp(&mut self, content: &str, query: &str) {
        let store = self.place.store();
        let mut args = self.global(&store);
        args.push("mcp");
        let mut command = self.cli.command(&args);
        for (k, v) in self.place.env() {
            command.env(k, v);
        }
        let mut server = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dream mcp");
        let mut stdin = server.stdin.take().unwrap();
        let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
        let mut answered = Vec::new();
        let mut call = |message: Value, answered: &mut Vec<String>| {
            writeln!(stdin, "{message}").unwrap();
            let Some(id) = message.get("id") else { return };
            loop {
                let line = lines.next().expect("an answer").expect("a line");
                let answer: Value = serde_json::from_str(&line).expect("JSON-RPC");
                answered.push(line);
                if answer.get("id") == Some(id) {
                    return;
                }
            }
        };
        call(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "dream-test", "version": "0"}}}),
            &mut answered,
        );
        call(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            &mut answered,
        );
        call(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "remember",
                "arguments": {"name": "Mirror", "content": content}}}),
            &mut answered,
        );
        call(
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "recall",
                "arguments": {"query": query}}}),
            &mut answered,
        );
        drop(stdin);
        let mut err = String::new();
        let _ = server.stderr.take().unwrap().read_to_string(&mut err);
        server.wait().unwrap();
        assert!(answered.len() >= 3, "{answered:#?}");
        let answers = answered.join("\n");
        assert!(
            answers.contains(MARK),
            "MCP's recall found the memory: {answers}"
        );
        self.printed.push(("mcp".into(), answers));
        self.printed.push(("mcp stderr".into(), err));
    }
}

fn redacted_everywhere(backend: &str) {
    let Some(place) = Place::new(backend, "redaction everywhere") else {
        return;
    };
    let keys = Keys::new();
    let mut run = Run {
        cli: Cli::new(),
        place,
        model: ModelServer::serve(),
        printed: Vec::new(),
    };

    // Each key is one the scanner reports by its value alone.
    for (what, key) in keys.all() {
        let found = run.cli.run_with(
            &["scan", "--secrets-only"],
            Some(&format!("here's what I got back: {key}")),
            &[],
        );
        code(&found, 1);
        assert!(
            stdout(&found).contains("secret"),
            "{what}: {}",
            stdout(&found)
        );
        run.printed.push((
            format!("scan of the {what} key"),
            stdout(&found) + &stderr(&found),
        ));
    }

    // A session: the person pastes a key, a tool prints another.
    let transcript = json!([
        {"role": "user", "content": format!("The {MARK} release runs its tests with Vitest. The deploy uses {} at the moment, rotate it later.", keys.logged)},
        {"role": "assistant", "content": "Noted."},
        {"role": "tool", "content": format!("env: GITHUB_TOKEN={}", keys.tool)},
    ])
    .to_string();
    run.run(&["log", "-"], Some(&transcript), &[0]);

    // A dream pass whose model invents a key of its own.
    let evidence = json!([{"session": "S1", "message": 0}]);
    run.model.answer(json!({
        "create": [
            {"name": "Runner", "kind": "project", "content": format!("The {MARK} release runs its tests with Vitest."), "evidence": evidence},
            {"name": "Deploy key", "kind": "reference", "content": format!("The {MARK} deploy uses {}.", keys.model), "evidence": evidence}
        ],
        "update": [], "delete": []
    }));
    run.run(&["dream", "--force"], None, &[0]);

    // remember, import, and an update by import --replace.
    run.run(
        &[
            "remember",
            "--name",
            "Registry",
            "--content",
            &format!("Publishing the {MARK} crates uses {}.", keys.remembered),
        ],
        None,
        &[0, 1],
    );
    let lines = [
        json!({"name": "Staging", "description": "the staging host", "kind": "project",
               "content": format!("The {MARK} staging host is staging.internal.")}),
        json!({"name": "Bucket", "description": "the bucket", "kind": "reference",
               "content": format!("The {MARK} bucket is read with {}.", keys.imported)}),
    ];
    let jsonl: String = lines.iter().map(|l| format!("{l}\n")).collect();
    run.run(&["import", "-"], Some(&jsonl), &[0, 1]);
    let staging = run.memory_id("Staging");
    let exported = run.run(&["export"], None, &[0]);
    let mut line: Value = exported
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|m| m["id"] == staging.as_str())
        .expect("the exported line");
    for content in [
        format!(
            "The {MARK} staging host is staging2.internal, reached with {}.",
            keys.updated
        ),
        format!("The {MARK} staging host is staging3.internal."),
    ] {
        line["content"] = content.into();
        run.run(
            &["import", "--replace", "-"],
            Some(&format!("{line}\n")),
            &[0, 1],
        );
    }
    let history = run.run(&["history", &staging, "--json"], None, &[0]);
    assert!(
        history.contains("staging"),
        "a prior version is kept: {history}"
    );

    // A second session and a pass whose model slips a key into an update.
    let transcript = json!([
        {"role": "user", "content": format!("The {MARK} staging host moved to staging4.internal.")},
        {"role": "assistant", "content": "Noted."},
    ])
    .to_string();
    run.run(&["log", "-"], Some(&transcript), &[0]);
    run.model.answer(json!({
        "create": [],
        "update": [{"id": staging, "content": format!("The {MARK} staging host moved to staging4.internal; its token is {}.", keys.model_update),
                    "evidence": [{"session": "S1", "message": 0}]}],
        "delete": []
    }));
    run.run(&["dream", "--force"], None, &[0]);

    // MCP.
    run.mcp(&format!("The {MARK} mirror syncs with {}.", keys.mcp), MARK);

    // A bad argument carrying a key: the error names what is wrong, not the key.
    let bad = run.output(
        &[
            "remember",
            "--name",
            "Oops",
            "--kind",
            &keys.error,
            "--content",
            "x",
        ],
        None,
    );
    code(&bad, 2);
    run.printed.push(("bad --kind".into(), stderr(&bad)));
    let line = json!({"name": "Oops", "kind": 7, "content": format!("uses {}", keys.error)});
    let bad = run.output(&["import", "-"], Some(&format!("{line}\n")));
    assert_ne!(bad.status.code(), Some(0), "{}", stderr(&bad));
    run.printed.push((
        "bad import".into(),
        format!("{}{}", stdout(&bad), stderr(&bad)),
    ));

    // Every way out.
    run.run(&["model", "embed"], None, &[0]);
    for args in [
        &["list", "--json"][..],
        &["quarantine", "--json"],
        &["audit", "--since", "1h", "--json"],
        &["events", "--json"],
        &["export"],
        &["export", "--format", "claude-md"],
        &["show", staging.as_str()],
        &["history", staging.as_str(), "--json"],
        &["stats", "--json"],
        &["trash", "--json"],
    ] {
        run.run(args, None, &[0]);
    }
    let recalled = run.run(&["recall", MARK, "--format", "json"], None, &[0, 1]);
    assert!(recalled.contains("\"Runner\""), "{recalled}");
    let hook = json!({"prompt": format!("How do we deploy {MARK}?"), "hook_event_name": "UserPromptSubmit"}).to_string();
    run.run(&["recall", "--hook"], Some(&hook), &[0, 1]);

    // The search sees what it looks for: the words beside the keys are in the
    // store, the prompts, the embedded texts and the outputs, and so are the
    // redaction markers.
    let stored = run.place.raw(&run.cli);
    let stored_text: Vec<(String, String)> = stored
        .iter()
        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
        .collect();
    assert!(
        stored_text.iter().any(|(_, v)| v.contains(MARK)),
        "{backend}: the search sees the store"
    );
    assert!(
        stored_text.iter().any(|(_, v)| v.contains("[REDACTED:")),
        "{backend}: redactions are stored"
    );
    let prompts = run.model.bodies("/chat/completions");
    assert!(
        prompts.len() >= 2,
        "two passes called the model: {prompts:#?}"
    );
    assert!(prompts.iter().all(|p| p.contains(MARK)), "{prompts:#?}");
    assert!(
        prompts.iter().any(|p| p.contains("[REDACTED:")),
        "{prompts:#?}"
    );
    let embedded = run.model.bodies("/embeddings");
    assert!(
        embedded.iter().any(|b| b.contains(MARK)),
        "memory text was embedded: {embedded:#?}"
    );
    let printed = run
        .printed
        .iter()
        .map(|(_, o)| o.as_str())
        .collect::<String>();
    assert!(printed.contains(MARK), "the outputs are searched");

    let mut leaks = Vec::new();
    for (what, key) in keys.all() {
        for needle in needles(key) {
            for (at, text) in &stored_text {
                if text.contains(needle) {
                    leaks.push(format!("{what} key stored at {at}"));
                }
            }
            for (n, body) in prompts.iter().enumerate() {
                if body.contains(needle) {
                    leaks.push(format!("{what} key sent to the model in request {n}"));
                }
            }
            for (n, body) in embedded.iter().enumerate() {
                if body.contains(needle) {
                    leaks.push(format!("{what} key sent to the embedder in request {n}"));
                }
            }
            for (command, out) in &run.printed {
                if out.contains(needle) {
                    leaks.push(format!("{what} key printed by {command}"));
                }
            }
        }
    }
    leaks.dedup();
    assert!(leaks.is_empty(), "{backend}: {leaks:#?}");
}

#[test]
fn a_key_reaches_no_stored_byte_and_no_output_on_fs() {
    redacted_everywhere("fs");
}

#[test]
fn a_key_reaches_no_stored_byte_and_no_output_on_sqlite() {
    redacted_everywhere("sqlite");
}

#[test]
fn a_key_reaches_no_stored_byte_and_no_output_on_redis() {
    redacted_everywhere("redis");
}

#[test]
fn a_key_reaches_no_stored_byte_and_no_output_on_postgres() {
    redacted_everywhere("postgres");
}
