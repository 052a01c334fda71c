//! What the client logs: with the debug option, prompts and answers; never the
//! key, never the authorization headers — even when a provider echoes the key.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex, Once};

use common::{Flavor, KEY, Server, request};
use dream_core::llm::{LanguageModel, ModelError};
use tracing_subscriber::fmt::MakeWriter;

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

impl Buffer {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// Captures every event at every level on this thread (the tests run on a
/// current-thread runtime), including `log` records from the HTTP stack.
fn capture() -> (Buffer, tracing::subscriber::DefaultGuard) {
    static LOG_BRIDGE: Once = Once::new();
    LOG_BRIDGE.call_once(|| tracing_log::LogTracer::init().unwrap());
    let buffer = Buffer::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(buffer.clone())
        .finish();
    (buffer, tracing::subscriber::set_default(subscriber))
}

/// Provider error bodies that echo the key, as some gateways do.
fn echoing_failures(flavor: Flavor) -> Vec<common::Reply> {
    let echo = format!("internal error while serving key {KEY}");
    vec![
        flavor.error(500, "api_error", &echo),
        flavor.error(503, "api_error", &echo),
        flavor.error(
            401,
            "authentication_error",
            &format!("invalid x-api-key {KEY}"),
        ),
    ]
}

fn assert_key_absent(logs: &str, error: &ModelError) {
    assert!(!logs.contains(KEY), "the key is in the logs:\n{logs}");
    // Not even a long piece of it.
    assert!(
        !logs.contains(&KEY[..12]),
        "a piece of the key is in the logs:\n{logs}"
    );
    assert!(!logs.to_ascii_lowercase().contains("bearer"), "{logs}");
    assert!(!logs.to_ascii_lowercase().contains("x-api-key:"), "{logs}");
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(&KEY[..12]), "{shown}");
}

async fn failing_call_with_debug_logging(flavor: Flavor) {
    let (logs, _guard) = capture();
    let server = Server::start(echoing_failures(flavor)).await;
    let model = flavor
        .config(server.url(flavor.default_style_base()))
        .debug_prompts(true)
        .build()
        .unwrap();
    let req = request(true);
    let error = model.complete(&req).await.unwrap_err();
    assert_eq!(error, ModelError::Unauthorized { status: 401 });
    assert_eq!(server.requests().len(), 3);
    let logs = logs.text();
    // The capture works and the debug option is on: the prompt is there, and
    // so are the retries of the errors that echoed the key.
    assert!(logs.contains(&req.system), "{logs}");
    assert!(logs.contains(&req.user), "{logs}");
    assert_eq!(logs.matches("retrying model call").count(), 2, "{logs}");
    assert!(
        logs.contains("internal error while serving key [redacted]"),
        "{logs}"
    );
    assert!(logs.contains("model call failed"), "{logs}");
    assert_key_absent(&logs, &error);
}

#[tokio::test]
async fn openai_failing_call_with_debug_logging_never_shows_the_key() {
    failing_call_with_debug_logging(Flavor::OpenAi).await;
}

#[tokio::test]
async fn anthropic_failing_call_with_debug_logging_never_shows_the_key() {
    failing_call_with_debug_logging(Flavor::Anthropic).await;
}

#[tokio::test]
async fn without_the_debug_option_prompts_and_answers_are_not_logged() {
    let (logs, _guard) = capture();
    let flavor = Flavor::OpenAi;
    let server = Server::start(vec![
        flavor.error(500, "api_error", "try again"),
        flavor.ok("The secret plan is tea.", false),
    ])
    .await;
    let model = flavor
        .config(server.url(flavor.default_style_base()))
        .build()
        .unwrap();
    let req = request(false);
    model.complete(&req).await.unwrap();
    let logs = logs.text();
    assert!(logs.contains("retrying model call"), "{logs}");
    assert!(logs.contains("model call done"), "{logs}");
    assert!(!logs.contains("prefers tea"), "{logs}");
    assert!(!logs.contains(&req.system), "{logs}");
    assert!(!logs.contains("secret plan"), "{logs}");
    assert!(!logs.contains(KEY), "{logs}");
}

#[tokio::test]
async fn with_the_debug_option_the_answer_is_logged() {
    let (logs, _guard) = capture();
    let flavor = Flavor::Anthropic;
    let server = Server::start(vec![flavor.ok("The plan is tea.", false)]).await;
    let model = flavor
        .config(server.url(flavor.default_style_base()))
        .debug_prompts(true)
        .build()
        .unwrap();
    model.complete(&request(false)).await.unwrap();
    let logs = logs.text();
    assert!(logs.contains("The plan is tea."), "{logs}");
    assert!(logs.contains("dream_llm::prompt"), "{logs}");
    assert!(!logs.contains(KEY), "{logs}");
}

#[tokio::test]
async fn debug_output_of_models_and_configs_hides_the_key() {
    let flavor = Flavor::Anthropic;
    let config = flavor.config("http://127.0.0.1:9/".to_owned());
    let model = config.clone().build().unwrap();
    for shown in [
        format!("{config:?}"),
        format!("{model:?}"),
        format!("{config:#?}"),
    ] {
        assert!(!shown.contains(KEY), "{shown}");
        assert!(shown.contains("redacted"), "{shown}");
    }
}

/// A secret-shaped string that is not the client's key: only the caller's
/// redactor knows it is a secret.
const ECHOED: &str = "ghp_R2d4Fk8sLw0qZx7Vn3Tb5Yc9Mh1Jp6Ga2Ue";

/// The caller's redactor: removes [`ECHOED`].
fn redact_echoed(text: &str) -> String {
    text.replace(ECHOED, "[secret]")
}

async fn echoed_secret_never_reaches_the_logs(flavor: Flavor) {
    let (logs, _guard) = capture();
    let echo = format!("the prompt held {ECHOED}, refused");
    let server = Server::start(vec![
        flavor.error(500, "api_error", &echo),
        flavor.error(400, "invalid_request_error", &echo),
    ])
    .await;
    let model = flavor
        .config(server.url(flavor.default_style_base()))
        .debug_prompts(true)
        .redact_with(redact_echoed)
        .build()
        .unwrap();
    let error = model.complete(&request(false)).await.unwrap_err();
    assert_eq!(server.requests().len(), 2);
    let logs = logs.text();
    // Both failures were logged, redacted; the secret is nowhere, at any level.
    assert_eq!(logs.matches("retrying model call").count(), 1, "{logs}");
    assert!(logs.contains("model call failed"), "{logs}");
    assert!(logs.contains("the prompt held [secret]"), "{logs}");
    assert!(
        !logs.contains(&ECHOED[..12]),
        "the secret is in the logs:\n{logs}"
    );
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(&ECHOED[..12]), "{shown}");
}

#[tokio::test]
async fn openai_error_body_echoing_a_secret_is_redacted_in_trace_logs() {
    echoed_secret_never_reaches_the_logs(Flavor::OpenAi).await;
}

#[tokio::test]
async fn anthropic_error_body_echoing_a_secret_is_redacted_in_trace_logs() {
    echoed_secret_never_reaches_the_logs(Flavor::Anthropic).await;
}

/// With the debug option, the logged prompt and answer go through the caller's
/// redactor too: a secret in the session text, or one the model echoes, is logged
/// redacted (the completion itself is returned as the model wrote it).
#[tokio::test]
async fn debug_logged_prompts_and_answers_are_redacted() {
    let (logs, _guard) = capture();
    let flavor = Flavor::OpenAi;
    let answer = format!("Noted the token {ECHOED} for later.");
    let server = Server::start(vec![flavor.ok(&answer, false)]).await;
    let model = flavor
        .config(server.url(flavor.default_style_base()))
        .debug_prompts(true)
        .redact_with(redact_echoed)
        .build()
        .unwrap();
    let mut req = request(false);
    req.user = format!("<session_k2>my token is {ECHOED}</session_k2>");
    let completion = model.complete(&req).await.unwrap();
    assert_eq!(completion.text, answer);
    let logs = logs.text();
    assert!(logs.contains("my token is [secret]"), "{logs}");
    assert!(
        logs.contains("Noted the token [secret] for later."),
        "{logs}"
    );
    assert!(
        !logs.contains(&ECHOED[..12]),
        "the secret is in the logs:\n{logs}"
    );
}
