//! What the end-to-end tests of the built `dream` binary share: a working
//! directory and a configuration directory per test, running the binary with a
//! clean environment, and reading what it printed.
#![allow(dead_code)] // each test binary uses its own part of it

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// One test's working directory and user configuration directory (where the
/// store's seal key lives), both removed at the end.
pub struct Cli {
    pub dir: tempfile::TempDir,
    pub config: tempfile::TempDir,
}

impl Cli {
    /// The working directory is the top of a repository (it holds `.git`), so
    /// the search for a store never looks above it.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join(".git")).expect("mark the repository's top");
        Cli {
            dir,
            config: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The binary in the working directory, with no key, URL or API key from the
    /// environment and no colour.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dream"));
        command
            .args(args)
            .current_dir(self.dir.path())
            .env("DREAM_CONFIG_DIR", self.config.path())
            .env_remove("DREAM_KEY")
            .env_remove("DREAM_STORE")
            .env_remove("DREAM_REDIS_URL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env("NO_COLOR", "1");
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, None, &[])
    }

    pub fn run_with(&self, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Output {
        self.run_in(self.dir.path(), args, stdin, env)
    }

    /// [`Cli::run_with`] with another working directory.
    pub fn run_in(
        &self,
        dir: &std::path::Path,
        args: &[&str],
        stdin: Option<&str>,
        env: &[(&str, &str)],
    ) -> Output {
        let mut command = self.command(args);
        command
            .current_dir(dir)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("run dream");
        if let Some(text) = stdin {
            // A command refused before it reads its input exits with the pipe
            // still open: a broken pipe here is that refusal, judged by the
            // exit code and stderr below, not a failure of the harness.
            let written = child
                .stdin
                .take()
                .expect("stdin")
                .write_all(text.as_bytes());
            if let Err(e) = written
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                panic!("write stdin: {e}");
            }
        }
        child.wait_with_output().expect("wait for dream")
    }

    /// Logs one session of the person saying `text` (the assistant answers "Noted.").
    pub fn log(&self, text: &str) {
        ok(self.run_with(&["log", "-"], Some(&session(text)), &[]));
    }
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[track_caller]
pub fn code(output: &Output, expected: i32) {
    assert_eq!(
        output.status.code(),
        Some(expected),
        "stdout: {}\nstderr: {}",
        stdout(output),
        stderr(output)
    );
}

#[track_caller]
pub fn ok(output: Output) -> String {
    code(&output, 0);
    stdout(&output)
}

/// A session of the person saying `text`, the assistant answering "Noted.".
pub fn session(text: &str) -> String {
    serde_json::json!([{ "role": "user", "content": text }, { "role": "assistant", "content": "Noted." }]).to_string()
}

/// The JSON of an MCP tool result (the `result` of a `tools/call`, as JSON): its
/// last content item, parsed. Checks the shape every Dream answer keeps: text
/// items only and no `structuredContent` (a client would hand its model that
/// instead of the readable text).
pub fn tool_json(result: &serde_json::Value) -> serde_json::Value {
    assert!(
        result
            .get("structuredContent")
            .is_none_or(serde_json::Value::is_null),
        "{result:#}"
    );
    let content = result["content"].as_array().expect("content items");
    assert!(content.iter().all(|c| c["type"] == "text"), "{result:#}");
    let last = content.last().expect("a content item")["text"]
        .as_str()
        .expect("text");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("the last item is not JSON ({e}): {last}"))
}

/// One HTTP/1.1 request read from `stream`, for the tests' loopback servers: its
/// request line (`POST /v1/embeddings HTTP/1.1`) and its body (as long as its
/// `content-length` says; empty without one).
pub fn read_request(stream: &TcpStream) -> (String, Vec<u8>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut request_line = String::new();
    let _ = reader.read_line(&mut request_line);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    (request_line, body)
}
