//! Recall by meaning through the `dream` binary, with a local server speaking
//! OpenAI's embeddings wire format: two memories remembered, a paraphrase that
//! shares no word with either, and vector ranking finds the right one.

use std::io::Write;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

mod common;
use common::*;

/// Words of each concept the server's toy model knows; a text's vector counts
/// its words per concept, plus a small constant so no vector is all zeros.
const CONCEPTS: [&[&str]; 3] = [
    &["vitest", "jest", "runner", "specs", "tests", "unit"],
    &["tea", "drinks", "lunch", "beverage", "brew"],
    &["deploy", "ship", "fly", "release"],
];

fn embed(text: &str) -> Vec<f32> {
    let mut vector = vec![0.0, 0.0, 0.0, 0.1];
    for word in text
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        for (dim, words) in CONCEPTS.iter().enumerate() {
            if words.contains(&word) {
                vector[dim] += 1.0;
            }
        }
    }
    vector
}

/// Serves `POST /v1/embeddings` on a fresh loopback port, computing each input's
/// vector with the toy model; returns the base URL and the count of texts embedded.
fn serve_embeddings() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let embedded = Arc::new(AtomicUsize::new(0));
    let count = embedded.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (request_line, body) = read_request(&stream);
            let (status, answer) = match serde_json::from_slice::<Value>(&body) {
                Ok(request) if request_line.starts_with("POST /v1/embeddings ") => {
                    let inputs: Vec<String> = request["input"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|t| t.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default();
                    count.fetch_add(inputs.len(), Ordering::SeqCst);
                    let data: Vec<Value> = inputs
                        .iter()
                        .enumerate()
                        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": embed(t)}))
                        .collect();
                    let answer = json!({
                        "object": "list",
                        "data": data,
                        "model": request["model"],
                        "usage": {"prompt_tokens": 5, "total_tokens": 5}
                    });
                    ("200 OK", answer)
                }
                _ => (
                    "404 Not Found",
                    json!({"error": {"message": "not found", "type": "invalid_request_error"}}),
                ),
            };
            let answer = answer.to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (url, embedded)
}

#[test]
fn recall_by_a_paraphrase_that_shares_no_word() {
    let (url, embedded) = serve_embeddings();
    let cli = Cli::new();
    let embedder = [
        "--embedder",
        "compatible",
        "--embedding-url",
        url.as_str(),
        "--embedding-model",
        "toy-concepts",
        "--embedding-dims",
        "4",
    ];
    let with = |args: &[&str]| {
        let mut all: Vec<&str> = embedder.to_vec();
        all.extend_from_slice(args);
        cli.run(&all)
    };
    let out = with(&[
        "remember",
        "--name",
        "Test runner",
        "--content",
        "The project uses Vitest, not Jest",
    ]);
    code(&out, 0);
    assert!(
        stderr(&out).contains("sends memory text to http://127.0.0.1:"),
        "the embedder is announced: {}",
        stderr(&out)
    );
    code(
        &with(&[
            "remember",
            "--name",
            "Afternoons",
            "--content",
            "The team drinks green tea after lunch",
        ]),
        0,
    );
    assert!(
        embedded.load(Ordering::SeqCst) >= 2,
        "both memories were embedded"
    );

    // Words alone find nothing: the query shares no word with either memory.
    let query = "which tool checks our specs";
    let lexical = cli.run(&["recall", query, "--format", "json"]);
    let lexical: Value = serde_json::from_str(&stdout(&lexical)).unwrap();
    assert_eq!(lexical["policy"]["verdict"], "ignored", "{lexical}");

    let hybrid = with(&["recall", query, "--format", "json"]);
    let hybrid: Value = serde_json::from_str(&stdout(&hybrid)).unwrap();
    assert_eq!(hybrid["ranker"]["kind"], "hybrid", "{hybrid}");
    assert_eq!(hybrid["policy"]["verdict"], "used", "{hybrid}");
    let records = hybrid["records"].as_array().unwrap();
    assert_eq!(records[0]["name"], "Test runner", "{hybrid}");
    assert_eq!(records[0]["verdict"], "used");
    assert!(
        records.iter().all(|r| r["name"] != "Afternoons"),
        "the unrelated memory is below the floor: {hybrid}"
    );
}

#[test]
fn an_unreachable_embedder_never_blocks_a_write_and_recall_says_it_fell_back() {
    // A port nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let cli = Cli::new();
    let embedder = [
        "--embedder",
        "compatible",
        "--embedding-url",
        url.as_str(),
        "--embedding-model",
        "toy",
        "--embedding-dims",
        "4",
    ];
    let mut args = embedder.to_vec();
    args.extend_from_slice(&[
        "remember",
        "--name",
        "Test runner",
        "--content",
        "We use Vitest",
    ]);
    let out = cli.run(&args);
    code(&out, 0);
    assert!(
        stderr(&out).contains("memory vectors not updated"),
        "{}",
        stderr(&out)
    );
    let mut args = embedder.to_vec();
    args.extend_from_slice(&["recall", "vitest", "--format", "json"]);
    let out = cli.run(&args);
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(result["ranker"]["kind"], "lexical-fallback", "{result}");
    assert_eq!(result["policy"]["verdict"], "used", "{result}");
}

#[test]
fn the_embedder_is_chosen_by_a_flag_never_by_a_config_file() {
    let cli = Cli::new();
    ok(cli.run(&["remember", "--name", "Runner", "--content", "We use Vitest"]));
    std::fs::write(cli.dir.path().join("dream.toml"), "embedder = \"openai\"\n").unwrap();
    let out = cli.run(&["recall", "anything"]);
    assert!(
        stderr(&out).contains("`embedder` may not be set"),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        cli.dir.path().join("dream.toml"),
        "embedding_model = \"m\"\nembedding_dims = 8\n",
    )
    .unwrap();
    let out = cli.run(&["--embedder", "compatible", "recall", "anything"]);
    assert!(stderr(&out).contains("--embedding-url"), "{}", stderr(&out));
}

#[test]
fn vectors_of_an_encrypted_store_are_encrypted() {
    const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let (url, embedded) = serve_embeddings();
    let cli = Cli::new();
    let args = |extra: &[&str]| -> Vec<String> {
        [
            "--store",
            "fs:enc",
            "--encrypt",
            "--embedder",
            "compatible",
            "--embedding-url",
            url.as_str(),
            "--embedding-model",
            "toy-concepts",
            "--embedding-dims",
            "4",
        ]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect()
    };
    let run = |extra: &[&str]| {
        let all = args(extra);
        cli.run_with(
            &all.iter().map(String::as_str).collect::<Vec<_>>(),
            None,
            &[("DREAM_KEY", KEY)],
        )
    };
    ok(run(&[
        "remember",
        "--name",
        "Test runner",
        "--content",
        "The project uses Vitest, not Jest",
    ]));
    assert!(embedded.load(Ordering::SeqCst) >= 1);
    let files = tree_bytes(&cli.path("enc"));
    assert!(
        files
            .iter()
            .any(|(path, _)| path.to_string_lossy().contains("vectors")),
        "a vector is stored: {:?}",
        files.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for (path, bytes) in &files {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains("toy-concepts") && !text.contains("Vitest"),
            "plaintext on disk in {path:?}"
        );
    }
    let out = run(&["recall", "which tool checks our specs", "--format", "json"]);
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(result["ranker"]["kind"], "hybrid", "{result}");
    assert_eq!(result["records"][0]["name"], "Test runner", "{result}");
}

/// Every file under `dir` with its bytes.
fn tree_bytes(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.clone(), std::fs::read(&path).expect("read")));
            }
        }
    }
    out
}
