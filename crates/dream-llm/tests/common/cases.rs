//! The cases every client runs against the local server. Each is a plain
//! async fn taking the flavour; `provider_cases!` turns them into tests.

use std::time::{Duration, Instant};

use dream_core::llm::{LanguageModel, ModelError, recover_json_object};
use serde_json::json;

use super::{Flavor, KEY, Reply, Server, request};

/// Expands to one `#[tokio::test]` per case for `$flavor`.
#[macro_export]
macro_rules! provider_cases {
    ($flavor:expr) => {
        $crate::provider_cases!(@each $flavor;
            normal_completion_with_usage,
            custom_base_url_with_a_path_prefix,
            provider_error_body_is_not_retried,
            unauthorized_is_not_retried,
            forbidden_is_not_retried,
            rate_limited_honours_retry_after_then_succeeds,
            rate_limit_wait_beyond_the_budget_fails_at_once,
            rate_limited_until_retries_run_out,
            server_error_then_success,
            persistent_server_error_after_retries,
            answer_slower_than_the_timeout,
            a_model_that_never_answers_ends_at_the_deadline,
            truncated_json_body,
            connection_cut_mid_body,
            body_over_the_cap_by_content_length,
            streamed_body_over_the_cap_stops_reading,
            one_object_in_prose_is_recovered,
            one_object_in_a_fence_is_recovered,
            two_objects_are_refused,
            stopped_by_the_token_limit,
            connection_refused,
            the_answer_model_and_usage_are_taken_from_the_body,
        );
    };
    (@each $flavor:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                common::cases::$case($flavor).await;
            }
        )*
    };
}

async fn server_and_model(flavor: Flavor, script: Vec<Reply>) -> (Server, dream_llm::HttpModel) {
    let server = Server::start(script).await;
    let model = flavor
        .config(server.url(flavor.default_style_base()))
        .build()
        .unwrap();
    (server, model)
}

/// Asserts that neither the key nor the prompt shows in an error.
fn assert_clean(error: &ModelError) {
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(!shown.contains("prefers tea"), "{shown}");
}

pub async fn normal_completion_with_usage(flavor: Flavor) {
    let (server, model) = server_and_model(flavor, vec![flavor.ok("Noted: tea.", false)]).await;
    let req = request(true);
    let answer = model.complete(&req).await.unwrap();
    assert_eq!(answer.text, "Noted: tea.");
    assert!(!answer.truncated);
    let (input, output) = flavor.ok_usage();
    assert_eq!((answer.usage.input, answer.usage.output), (input, output));
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    let path = flavor.expected_path(flavor.default_style_base());
    flavor.check_request(&seen[0], &path, &req);
}

pub async fn custom_base_url_with_a_path_prefix(flavor: Flavor) {
    let server = Server::start(vec![flavor.ok("ok", false)]).await;
    let base = flavor.custom_base();
    let model = flavor.config(server.url(base)).build().unwrap();
    let expected_path = flavor.expected_path(base);
    let line = model
        .announcement()
        .expect("a custom base URL is announced");
    assert!(line.contains(&server.url(&expected_path)), "{line}");
    assert!(!line.contains(KEY), "{line}");
    let req = request(false);
    model.complete(&req).await.unwrap();
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    flavor.check_request(&seen[0], &expected_path, &req);
}

pub async fn provider_error_body_is_not_retried(flavor: Flavor) {
    let reply = flavor.error(
        400,
        "invalid_request_error",
        "max_tokens: 512 > 256, which is the maximum allowed",
    );
    let (server, model) = server_and_model(flavor, vec![reply]).await;
    let error = model.complete(&request(false)).await.unwrap_err();
    assert_eq!(
        error,
        ModelError::Provider {
            status: 400,
            message: "invalid_request_error: max_tokens: 512 > 256, which is the maximum allowed"
                .to_owned()
        }
    );
    assert_eq!(server.requests().len(), 1, "a 400 is never retried");
    assert_clean(&error);
}

pub async fn unauthorized_is_not_retried(flavor: Flavor) {
    let message = format!("Incorrect API key provided: {KEY}.");
    let (server, model) = server_and_model(
        flavor,
        vec![flavor.error(401, "authentication_error", &message)],
    )
    .await;
    let error = model.complete(&request(false)).await.unwrap_err();
    assert_eq!(error, ModelError::Unauthorized { status: 401 });
    assert_eq!(server.requests().len(), 1, "a 401 is never retried");
    assert_clean(&error);
}

pub async fn forbidden_is_not_retried(flavor: Flavor) {
    let (server, model) = server_and_model(
        flavor,
        vec![flavor.error(403, "permission_error", "not allowed")],
    )
    .await;
    let error = model.complete(&request(false)).await.unwrap_err();
    assert_eq!(error, ModelError::Unauthorized { status: 403 });
    assert_eq!(server.requests().len(), 1, "a 403 is never retried");
}

pub async fn rate_limited_honours_retry_after_then_succeeds(flavor: Flavor) {
    let limited = flavor
        .error(429, "rate_limit_error", "Rate limit reached")
        .with_header("retry-after", "1");
    let (server, model) = server_and_model(flavor, vec![limited, flavor.ok("later", false)]).await;
    let started = Instant::now();
    let answer = model.complete(&request(false)).await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(answer.text, "later");
    assert_eq!(server.requests().len(), 2);
    // Backoff alone would wait at most 100 ms; Retry-After said one second.
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
}

pub async fn rate_limit_wait_beyond_the_budget_fails_at_once(flavor: Flavor) {
    let limited = flavor
        .error(429, "rate_limit_error", "Rate limit reached")
        .with_header("retry-after", "120");
    let (server, model) = server_and_model(flavor, vec![limited, flavor.ok("never", false)]).await;
    let started = Instant::now();
    let error = model.complete(&request(false)).await.unwrap_err();
    assert_eq!(error, ModelError::RateLimited);
    assert_eq!(server.requests().len(), 1, "no retry earlier than asked");
    assert!(started.elapsed() < Duration::from_secs(2));
}

pub async fn rate_limited_until_retries_run_out(flavor: Flavor) {
    let limited = || flavor.error(429, "rate_limit_error", "Rate limit reached");
    let (server, model) =
        server_and_model(flavor, vec![limited(), limited(), limited(), limited()]).await;
    let error = model.complete(&request(false)).await.unwrap_err();
    assert_eq!(error, ModelError::RateLimited);
    assert_eq!(server.requests().len(), 3, "one attempt and two retries");
}

pub async fn server_error_then_success(flavor: Flavor) {
    let (server, model) = server_and_model(
        flavor,
        vec![flavor.overloaded(), flavor.ok("recovered", false)],
    )
    .await;
    let req = request(true);
    let answer = model.complete(&req).await.unwrap();
    assert_eq!(answer.text, "recovered");
    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0].body, seen[1].body,
        "the retry sends the same request"
    );
    let path = flavor.expected_path(flavor.default_style_base());
    flavor.check_request(&seen[1], &path, &req);
}

pub async fn persistent_server_error_after_retries(flavor: Flavor) {
    let bad = || flavor.error(502, "api_error", "upstream failed");
    let (server, model) = server_and_model(flavor, vec![bad(), bad(), bad(), bad()]).await;
    let error = model.complete(&request(false)).await.unwrap_err();
    assert_eq!(
        error,
        ModelError::Provider {
            status: 502,
            message: "api_error: upstream failed".to_owned()
        }
    );
    assert_eq!(server.requests().len(), 3, "one attempt and two retries");
}

pub async fn answer_slower_than_the_timeout(flavor: Flavor) {
    let slow = || Reply::Delayed(Duration::from_secs(3), Box::new(flavor.ok("late", false)));
    let server = Server::start(vec![slow(), slow(), slow()]).await;
    let model = flavor
        .config(server.url(flavor.default_style_base()))
        .timeouts(Duration::from_secs(1), Duration::from_millis(300))
        .retries(
            1,
            Duration::from_millis(10),
            Duration::from_millis(10),
            Duration::from_secs(1),
        )
        .build()
        .unwrap();
    let started = Instant::now();
    let error = model.complete(&request(false)).await.unwrap_err();
    let elapsed = started.elapsed();
    assert_eq!(error, ModelError::Timeout);
    assert_eq!(server.requests().len(), 2, "a timeout is retried");
    assert!(elapsed < Duration::from_millis(2500), "{elapsed:?}");
}

pub async fn a_model_that_never_answers_ends_at_the_deadline(flavor: Flavor) {
    let silent = || Reply::Delayed(Duration::from_secs(30), Box::new(flavor.ok("late", false)));
    let server = Server::start((0..10).map(|_| silent()).collect()).await;
    let model = flavor
        .config(server.url(flavor.default_style_base()))
        .timeouts(Duration::from_secs(1), Duration::from_millis(400))
        .retries(
            10,
            Duration::from_millis(10),
            Duration::from_millis(10),
            Duration::from_secs(60),
        )
        .deadline(Duration::from_millis(1000))
        .build()
        .unwrap();
    let started = Instant::now();
    let error = model.complete(&request(false)).await.unwrap_err();
    let elapsed = started.elapsed();
    assert_eq!(error, ModelError::Timeout);
    let attempts = server.requests().len();
    assert!(
        (2..=3).contains(&attempts),
        "ten retries allowed, but the deadline leaves room for two or three: {attempts}"
    );
    assert!(
        elapsed >= Duration::from_millis(950) && elapsed < Duration::from_millis(2000),
        "the call ends at its deadline: {elapsed:?}"
    );
}

pub async fn truncated_json_body(flavor: Flavor) {
    let Reply::Full { body, .. } = flavor.ok("cut", false) else {
        unreachable!()
    };
    let cut = body[..body.len() / 2].to_owned();
    let (server, model) = server_and_model(flavor, vec![Reply::json(200, cut)]).await;
    let error = model.complete(&request(false)).await.unwrap_err();
    match &error {
        ModelError::InvalidResponse(why) => {
            assert!(why.contains("ends before the JSON is complete"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 1, "a malformed 200 is not retried");
}

pub async fn connection_cut_mid_body(flavor: Flavor) {
    let Reply::Full { body, .. } = flavor.ok("cut", false) else {
        unreachable!()
    };
    let cut = || Reply::CutOff {
        declared: body.len(),
        body: body[..body.len() / 2].to_owned(),
    };
    let (server, model) = server_and_model(flavor, vec![cut(), cut(), cut()]).await;
    let error = model.complete(&request(false)).await.unwrap_err();
    match &error {
        ModelError::Transport(why) => assert!(why.contains("reading the answer"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 3, "a broken connection is retried");
    assert_clean(&error);
}

pub async fn body_over_the_cap_by_content_length(flavor: Flavor) {
    let big = "y".repeat(100_000);
    let (server, model) = {
        let server = Server::start(vec![flavor.ok(&big, false)]).await;
        let model = flavor
            .config(server.url(flavor.default_style_base()))
            .max_response_bytes(64 << 10)
            .build()
            .unwrap();
        (server, model)
    };
    let error = model.complete(&request(false)).await.unwrap_err();
    assert_eq!(error, ModelError::TooLarge { limit: 64 << 10 });
    assert_eq!(
        server.requests().len(),
        1,
        "an oversized answer is not retried"
    );
}

pub async fn streamed_body_over_the_cap_stops_reading(flavor: Flavor) {
    let total = 256 << 20;
    let server = Server::start(vec![Reply::Stream {
        chunk: 16 << 10,
        total,
    }])
    .await;
    let model = flavor
        .config(server.url(flavor.default_style_base()))
        .max_response_bytes(64 << 10)
        .build()
        .unwrap();
    let error = model.complete(&request(false)).await.unwrap_err();
    assert_eq!(error, ModelError::TooLarge { limit: 64 << 10 });
    let written = server.streamed().await;
    // Socket buffers absorb a few MiB at most; the client stopped reading
    // long before the server's 256 MiB.
    assert!(written < 32 << 20, "server wrote {written} bytes");
    assert_eq!(server.requests().len(), 1);
}

pub async fn one_object_in_prose_is_recovered(flavor: Flavor) {
    let text = "Here is the plan you asked for:\n{\"create\": [{\"title\": \"Tea\", \"body\": \"Prefers tea {not coffee}\"}]}\nI hope this helps.";
    let (_server, model) = server_and_model(flavor, vec![flavor.ok(text, false)]).await;
    let answer = model.complete(&request(true)).await.unwrap();
    assert_eq!(answer.text, text);
    assert_eq!(
        recover_json_object(&answer.text, answer.truncated).unwrap(),
        json!({"create": [{"title": "Tea", "body": "Prefers tea {not coffee}"}]})
    );
}

pub async fn one_object_in_a_fence_is_recovered(flavor: Flavor) {
    let text = "```json\n{\n  \"create\": [],\n  \"update\": [{\"id\": \"m1\"}]\n}\n```";
    let (_server, model) = server_and_model(flavor, vec![flavor.ok(text, false)]).await;
    let answer = model.complete(&request(true)).await.unwrap();
    assert_eq!(
        recover_json_object(&answer.text, answer.truncated).unwrap(),
        json!({"create": [], "update": [{"id": "m1"}]})
    );
}

pub async fn two_objects_are_refused(flavor: Flavor) {
    let text = "Draft:\n{\"create\": [{\"title\": \"A\"}]}\nFinal:\n```json\n{\"create\": [{\"title\": \"B\"}]}\n```";
    let (_server, model) = server_and_model(flavor, vec![flavor.ok(text, false)]).await;
    let answer = model.complete(&request(true)).await.unwrap();
    assert_eq!(
        recover_json_object(&answer.text, answer.truncated),
        Err(ModelError::AmbiguousJson { candidates: 2 })
    );
}

pub async fn stopped_by_the_token_limit(flavor: Flavor) {
    // Even a cut answer that happens to parse is refused.
    let text = "{\"create\": []}";
    let (_server, model) = server_and_model(flavor, vec![flavor.ok(text, true)]).await;
    let answer = model.complete(&request(true)).await.unwrap();
    assert!(answer.truncated);
    assert_eq!(answer.text, text);
    assert_eq!(
        recover_json_object(&answer.text, answer.truncated),
        Err(ModelError::Truncated)
    );
}

pub async fn connection_refused(flavor: Flavor) {
    // Bind, note the port, close: nothing listens there now.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let model = flavor
        .config(format!(
            "http://127.0.0.1:{port}{}",
            flavor.default_style_base()
        ))
        .build()
        .unwrap();
    let error = model.complete(&request(false)).await.unwrap_err();
    match &error {
        ModelError::Transport(why) => assert!(why.starts_with("could not connect"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_clean(&error);
}

pub async fn the_answer_model_and_usage_are_taken_from_the_body(flavor: Flavor) {
    let (_server, model) = server_and_model(flavor, vec![flavor.ok("x", false)]).await;
    let answer = model.complete(&request(false)).await.unwrap();
    assert_eq!(answer.model, flavor.ok_model());
    assert_eq!(
        model.describe(),
        format!(
            "{}:{}",
            match flavor {
                Flavor::OpenAi => "openai",
                Flavor::Anthropic => "anthropic",
                Flavor::Compatible => "openai-compatible",
            },
            flavor.model()
        )
    );
}
