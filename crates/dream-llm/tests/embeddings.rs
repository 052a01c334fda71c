//! The embedding clients (OpenAI `/v1/embeddings`, an OpenAI-compatible server,
//! Ollama's `/api/embed`) against a local server speaking each real wire format:
//! batching, dimensions, errors, 429 with Retry-After, and the key never in an
//! error or a log line.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use common::{KEY, Reply, Server};
use dream_core::embed::{EmbedError, Embedder};
use dream_core::llm::ModelError;
use dream_llm::{ApiKey, EmbedderOptions, ModelOptions};
use serde_json::json;
use tracing_subscriber::fmt::MakeWriter;

fn fast(config: ModelOptions) -> ModelOptions {
    config
        .timeouts(Duration::from_secs(2), Duration::from_secs(2))
        .retries(
            2,
            Duration::from_millis(10),
            Duration::from_millis(100),
            Duration::from_secs(10),
        )
        .use_env_proxy(false)
}

fn openai(server: &Server, dimensions: usize) -> EmbedderOptions {
    EmbedderOptions::openai("text-embedding-3-small", dimensions).http(|c| {
        fast(c)
            .api_key(ApiKey::new(KEY).unwrap())
            .base_url(server.url("/v1"))
    })
}

/// A vector for text number `i` (distinct per text).
fn vector(i: usize, dimensions: usize) -> Vec<f32> {
    (0..dimensions).map(|d| (i * 10 + d + 1) as f32).collect()
}

/// OpenAI's answer for `vectors`, listed in reverse index order (the client
/// must order them by `index`).
fn openai_answer(vectors: &[Vec<f32>]) -> Reply {
    let data: Vec<_> = vectors
        .iter()
        .enumerate()
        .rev()
        .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
        .collect();
    Reply::json(
        200,
        json!({
            "object": "list",
            "data": data,
            "model": "text-embedding-3-small",
            "usage": {"prompt_tokens": 8, "total_tokens": 8}
        })
        .to_string(),
    )
}

fn openai_error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::json(
        status,
        json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
            .to_string(),
    )
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("memory text number {i}")).collect()
}

#[tokio::test]
async fn openai_batches_in_order_with_the_key_and_the_dimension() {
    let server = Server::start(vec![
        openai_answer(&[vector(0, 3), vector(1, 3)]),
        openai_answer(&[vector(2, 3), vector(3, 3)]),
        openai_answer(&[vector(4, 3)]),
    ])
    .await;
    let embedder = openai(&server, 3).batch(2).build().unwrap();
    assert_eq!(
        embedder.announcement().map(|l| l.contains("127.0.0.1")),
        Some(true)
    );
    let got = embedder.embed(&texts(5)).await.unwrap();
    assert_eq!(got, (0..5).map(|i| vector(i, 3)).collect::<Vec<_>>());
    let seen = server.requests();
    assert_eq!(seen.len(), 3);
    for (n, request) in seen.iter().enumerate() {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/v1/embeddings");
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let body = request.json();
        assert_eq!(body["model"], "text-embedding-3-small");
        assert_eq!(body["encoding_format"], "float");
        assert_eq!(body["dimensions"], 3);
        let sent: Vec<String> = texts(5).into_iter().skip(n * 2).take(2).collect();
        assert_eq!(body["input"], json!(sent));
    }
    assert_eq!(embedder.describe(), "openai:text-embedding-3-small");
    assert_eq!(
        (embedder.model(), embedder.dimensions()),
        ("text-embedding-3-small", 3)
    );
}

#[tokio::test]
async fn a_compatible_server_gets_no_key_and_no_dimensions_field() {
    let server = Server::start(vec![openai_answer(&[vector(0, 4), vector(1, 4)])]).await;
    let embedder = EmbedderOptions::openai_compatible("bge-small-en", server.url("/tei/v1/"), 4)
        .http(fast)
        .build()
        .unwrap();
    let line = embedder.announcement().unwrap();
    assert!(
        line.contains("sends memory text to http://127.0.0.1:"),
        "{line}"
    );
    assert!(line.contains("over plain http"), "{line}");
    embedder.embed(&texts(2)).await.unwrap();
    let seen = server.requests();
    assert_eq!(seen[0].path, "/tei/v1/embeddings");
    assert_eq!(seen[0].header("authorization"), None);
    let body = seen[0].json();
    assert!(body.get("dimensions").is_none(), "{body}");
    assert_eq!(body["input"], json!(texts(2)));
}

#[tokio::test]
async fn ollama_native_embed() {
    let answer = json!({
        "model": "all-minilm",
        "embeddings": [vector(0, 2), vector(1, 2), vector(2, 2)],
        "total_duration": 14_143_917,
        "load_duration": 1_019_500,
        "prompt_eval_count": 8
    });
    let server = Server::start(vec![Reply::json(200, answer.to_string())]).await;
    let embedder = EmbedderOptions::ollama("all-minilm", server.url(""), 2)
        .http(fast)
        .build()
        .unwrap();
    let got = embedder.embed(&texts(3)).await.unwrap();
    assert_eq!(got, (0..3).map(|i| vector(i, 2)).collect::<Vec<_>>());
    let seen = server.requests();
    assert_eq!(seen[0].path, "/api/embed");
    assert_eq!(
        seen[0].json(),
        json!({"model": "all-minilm", "input": texts(3)})
    );
    assert_eq!(embedder.describe(), "ollama:all-minilm");
}

#[tokio::test]
async fn ollama_error_body_is_reported() {
    let server = Server::start(vec![Reply::json(
        404,
        r#"{"error":"model \"nomic\" not found, try pulling it first"}"#,
    )])
    .await;
    let embedder = EmbedderOptions::ollama("nomic", server.url(""), 2)
        .http(fast)
        .build()
        .unwrap();
    let error = embedder.embed(&texts(1)).await.unwrap_err();
    match error {
        EmbedError::Model(ModelError::Provider { status, message }) => {
            assert_eq!(status, 404);
            assert!(message.contains("not found"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 1, "a 404 is not retried");
}

#[tokio::test]
async fn a_wrong_dimension_or_count_is_refused() {
    let server = Server::start(vec![
        openai_answer(&[vector(0, 5)]),
        openai_answer(&[vector(0, 3)]),
        Reply::json(200, json!({"embeddings": [[1.0, f32::MAX]]}).to_string()),
    ])
    .await;
    let embedder = openai(&server, 3).build().unwrap();
    assert_eq!(
        embedder.embed(&texts(1)).await.unwrap_err(),
        EmbedError::Dimension {
            expected: 3,
            got: 5
        }
    );
    assert_eq!(
        embedder.embed(&texts(2)).await.unwrap_err(),
        EmbedError::Count {
            expected: 2,
            got: 1
        }
    );
    // Not the OpenAI shape at all.
    assert!(matches!(
        embedder.embed(&texts(1)).await.unwrap_err(),
        EmbedError::Model(ModelError::InvalidResponse(_))
    ));
    assert!(matches!(
        embedder.embed(&[]).await.unwrap_err(),
        EmbedError::InvalidRequest(_)
    ));
}

#[tokio::test]
async fn rate_limited_honours_retry_after_then_succeeds() {
    let server = Server::start(vec![
        openai_error(429, "rate_limit_exceeded", "Rate limit reached")
            .with_header("retry-after", "0.3"),
        openai_answer(&[vector(0, 3)]),
    ])
    .await;
    let embedder = openai(&server, 3).build().unwrap();
    let started = Instant::now();
    assert_eq!(embedder.embed(&texts(1)).await.unwrap(), vec![vector(0, 3)]);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn rate_limited_until_retries_run_out() {
    let limited =
        || openai_error(429, "rate_limit_exceeded", "slow down").with_header("retry-after", "0");
    let server = Server::start(vec![limited(), limited(), limited(), limited()]).await;
    let embedder = openai(&server, 3).build().unwrap();
    assert_eq!(
        embedder.embed(&texts(1)).await.unwrap_err(),
        EmbedError::Model(ModelError::RateLimited)
    );
    assert_eq!(server.requests().len(), 3, "one attempt and two retries");
}

#[tokio::test]
async fn a_bad_request_and_bad_credentials_are_not_retried() {
    let server = Server::start(vec![
        openai_error(
            400,
            "invalid_request_error",
            "This model's maximum context length is 8192 tokens",
        ),
        openai_error(401, "invalid_request_error", "Incorrect API key provided"),
    ])
    .await;
    let embedder = openai(&server, 3).build().unwrap();
    assert!(matches!(
        embedder.embed(&texts(1)).await.unwrap_err(),
        EmbedError::Model(ModelError::Provider { status: 400, .. })
    ));
    assert_eq!(
        embedder.embed(&texts(1)).await.unwrap_err(),
        EmbedError::Model(ModelError::Unauthorized { status: 401 })
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_server_error_is_retried_and_a_slow_answer_times_out() {
    let server = Server::start(vec![
        openai_error(503, "server_error", "overloaded"),
        openai_answer(&[vector(0, 3)]),
        Reply::Delayed(
            Duration::from_secs(5),
            Box::new(openai_answer(&[vector(0, 3)])),
        ),
    ])
    .await;
    let embedder = openai(&server, 3)
        .http(|c| {
            c.retries(
                0,
                Duration::from_millis(10),
                Duration::from_millis(10),
                Duration::from_secs(1),
            )
        })
        .build()
        .unwrap();
    // No retries configured: the 503 fails at once.
    assert!(matches!(
        embedder.embed(&texts(1)).await.unwrap_err(),
        EmbedError::Model(ModelError::Provider { status: 503, .. })
    ));
    assert_eq!(embedder.embed(&texts(1)).await.unwrap(), vec![vector(0, 3)]);
    let started = Instant::now();
    assert_eq!(
        embedder.embed(&texts(1)).await.unwrap_err(),
        EmbedError::Model(ModelError::Timeout)
    );
    assert!(started.elapsed() < Duration::from_secs(4));
}

/// A writer into a shared buffer.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

#[tokio::test]
async fn the_key_is_never_in_an_error_or_a_log_line() {
    static LOG_BRIDGE: Once = Once::new();
    LOG_BRIDGE.call_once(|| tracing_log::LogTracer::init().unwrap());
    let buffer = Buffer::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(buffer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let echo = format!("internal error while serving key {KEY}");
    let server = Server::start(vec![
        openai_error(500, "server_error", &echo),
        openai_error(500, "server_error", &echo),
        openai_error(500, "server_error", &echo),
        openai_error(
            401,
            "invalid_request_error",
            &format!("Incorrect API key provided: {KEY}"),
        ),
    ])
    .await;
    let embedder = openai(&server, 3).build().unwrap();
    let first = embedder.embed(&texts(1)).await.unwrap_err();
    let second = embedder.embed(&texts(1)).await.unwrap_err();
    let logs = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("retrying model call"),
        "the test saw no log:\n{logs}"
    );
    for shown in [
        logs,
        format!("{first} {first:?} {second} {second:?}"),
        format!("{embedder:?}"),
    ] {
        assert!(
            !shown.contains(&KEY[..12]),
            "a piece of the key shows:\n{shown}"
        );
        assert!(!shown.to_ascii_lowercase().contains("bearer"), "{shown}");
    }
}

#[tokio::test]
async fn plain_http_to_another_host_is_refused() {
    let error = EmbedderOptions::openai_compatible("m", "http://10.1.2.3:8080/v1", 8)
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("plain http"), "{error}");
}
