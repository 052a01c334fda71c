//! A provider's error body that echoes a secret-shaped string: the `dream` binary,
//! pointed at a local HTTP server, never shows it unredacted — not on stderr, not in
//! the log, not in the audit record.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

mod common;
use common::*;

/// A fake GitHub token, assembled at run time so this source holds no secret shape.
fn fake_token() -> String {
    ["ghp", "_", "R8xK2mQ9vL4tN7wB3", "cY6hJ1dF5gS0pZ8aE2u"].concat()
}

/// Serves every request on a fresh loopback port with HTTP 400 and a JSON error body
/// whose message carries `token`; returns the base URL.
fn serve_error_echoing(token: &str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let body = serde_json::json!({
        "error": {
            "type": "invalid_request_error",
            "message": format!("unknown field in request; credential {token} is not valid here"),
        }
    })
    .to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
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
            let mut request = vec![0; length];
            let _ = reader.read_exact(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[test]
fn a_provider_error_echoing_a_secret_is_redacted_everywhere() {
    let token = fake_token();
    let url = serve_error_echoing(&token);
    let cli = Cli::new();
    cli.log("We deploy on Fridays after the review.");
    let out = cli.run_with(
        &[
            "--llm",
            "compatible",
            "--base-url",
            &url,
            "--model",
            "local-model",
            "dream",
            "--force",
        ],
        None,
        &[("DREAM_LOG", "trace")],
    );
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "the pass fails: {err}");
    assert!(
        err.contains("HTTP 400"),
        "the provider's error is shown: {err}"
    );
    assert!(err.contains("[REDACTED:"), "its secret is redacted: {err}");
    assert!(!err.contains(&token[4..]), "the token is on stderr: {err}");
    assert!(!stdout(&out).contains(&token[4..]));
    let audit = ok(cli.run(&["audit", "--since", "1h", "--json"]));
    assert!(audit.contains("pass failed"), "{audit}");
    assert!(
        !audit.contains(&token[4..]),
        "the token is audited: {audit}"
    );
}
