//! The providers' wire formats: request bodies and answer parsing.

use dream_core::llm::{Completion, CompletionRequest, ModelError, TokenUsage};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::config::{MAX_MODEL_NAME_LEN, Provider};

/// Added to the system text when JSON is asked for.
pub(crate) const JSON_INSTRUCTION: &str =
    "Answer with exactly one JSON object and nothing else: no prose, no Markdown fence.";

/// The system text sent: the caller's, plus the JSON instruction when asked.
/// OpenAI's JSON mode also requires the word "JSON" to appear in the messages.
fn system_text(request: &CompletionRequest) -> String {
    if !request.json {
        return request.system.clone();
    }
    if request.system.is_empty() {
        JSON_INSTRUCTION.to_owned()
    } else {
        format!("{}\n\n{JSON_INSTRUCTION}", request.system)
    }
}

/// The request body for `provider`.
pub(crate) fn request_body(provider: Provider, model: &str, request: &CompletionRequest) -> Value {
    let system = system_text(request);
    match provider {
        Provider::OpenAi | Provider::OpenAiCompatible => {
            let mut messages = Vec::with_capacity(2);
            if !system.is_empty() {
                messages.push(json!({"role": "system", "content": system}));
            }
            messages.push(json!({"role": "user", "content": request.user}));
            let mut body = json!({
                "model": model,
                "messages": messages,
                "temperature": request.temperature,
            });
            // OpenAI's current models take `max_completion_tokens` (and refuse
            // `max_tokens` on reasoning models); compatible servers know `max_tokens`.
            let limit_field = if provider == Provider::OpenAi {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body[limit_field] = json!(request.max_tokens);
            if request.json {
                body["response_format"] = json!({"type": "json_object"});
            }
            body
        }
        Provider::Anthropic => {
            let mut body = json!({
                "model": model,
                "max_tokens": request.max_tokens,
                "messages": [{"role": "user", "content": request.user}],
                "temperature": request.temperature,
            });
            if !system.is_empty() {
                body["system"] = json!(system);
            }
            body
        }
    }
}

/// Checks a request before anything is sent.
pub(crate) fn check_request(
    provider: Provider,
    request: &CompletionRequest,
) -> Result<(), ModelError> {
    if request.max_tokens == 0 {
        return Err(ModelError::InvalidRequest(
            "max_tokens must be at least 1".to_owned(),
        ));
    }
    let max_temperature = if provider == Provider::Anthropic {
        1.0
    } else {
        2.0
    };
    if !request.temperature.is_finite()
        || request.temperature < 0.0
        || request.temperature > max_temperature
    {
        return Err(ModelError::InvalidRequest(format!(
            "temperature must be between 0 and {max_temperature}"
        )));
    }
    if request.user.is_empty() {
        return Err(ModelError::InvalidRequest(
            "the user text is empty".to_owned(),
        ));
    }
    Ok(())
}

#[derive(Deserialize)]
struct ChatCompletion {
    model: Option<String>,
    choices: Vec<Choice>,
    usage: Option<ChatUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: Option<ChoiceMessage>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    content: Option<String>,
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct ChatUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct Message {
    model: Option<String>,
    content: Vec<ContentBlock>,
    stop_reason: Option<String>,
    usage: Option<MessageUsage>,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
}

#[derive(Deserialize)]
struct MessageUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

/// Parses a successful answer body.
pub(crate) fn parse_answer(
    provider: Provider,
    configured_model: &str,
    body: &[u8],
) -> Result<Completion, ModelError> {
    match provider {
        Provider::OpenAi | Provider::OpenAiCompatible => {
            let answer: ChatCompletion = serde_json::from_slice(body).map_err(json_error)?;
            let choice = answer.choices.into_iter().next().ok_or_else(|| {
                ModelError::InvalidResponse("the answer holds no choice".to_owned())
            })?;
            let message = choice.message.ok_or_else(|| {
                ModelError::InvalidResponse("the answer's choice holds no message".to_owned())
            })?;
            let text = match (message.content, message.refusal) {
                (Some(text), _) => text,
                (None, Some(_)) => {
                    return Err(ModelError::InvalidResponse(
                        "the model refused to answer".to_owned(),
                    ));
                }
                (None, None) => {
                    return Err(ModelError::InvalidResponse(
                        "the answer holds no text".to_owned(),
                    ));
                }
            };
            let usage = answer.usage.map_or(TokenUsage::default(), |u| TokenUsage {
                input: u.prompt_tokens.unwrap_or(0),
                output: u.completion_tokens.unwrap_or(0),
            });
            Ok(Completion {
                text,
                usage,
                model: answer_model(answer.model, configured_model),
                truncated: choice.finish_reason.as_deref() == Some("length"),
            })
        }
        Provider::Anthropic => {
            let answer: Message = serde_json::from_slice(body).map_err(json_error)?;
            if answer.stop_reason.as_deref() == Some("refusal") {
                return Err(ModelError::InvalidResponse(
                    "the model refused to answer".to_owned(),
                ));
            }
            let mut text = String::new();
            let mut text_blocks = 0;
            for block in answer.content {
                if block.kind == "text"
                    && let Some(part) = block.text
                {
                    text.push_str(&part);
                    text_blocks += 1;
                }
            }
            if text_blocks == 0 {
                return Err(ModelError::InvalidResponse(
                    "the answer holds no text block".to_owned(),
                ));
            }
            let usage = answer.usage.map_or(TokenUsage::default(), |u| TokenUsage {
                input: u.input_tokens.unwrap_or(0)
                    + u.cache_creation_input_tokens.unwrap_or(0)
                    + u.cache_read_input_tokens.unwrap_or(0),
                output: u.output_tokens.unwrap_or(0),
            });
            let truncated = matches!(
                answer.stop_reason.as_deref(),
                Some("max_tokens" | "model_context_window_exceeded")
            );
            Ok(Completion {
                text,
                usage,
                model: answer_model(answer.model, configured_model),
                truncated,
            })
        }
    }
}

/// The model the provider says answered, if it is a sane name; else the configured one.
fn answer_model(reported: Option<String>, configured: &str) -> String {
    match reported {
        Some(name)
            if !name.is_empty()
                && name.len() <= MAX_MODEL_NAME_LEN
                && name.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            name
        }
        _ => configured.to_owned(),
    }
}

/// A JSON error described by its kind and position only: serde's own message
/// can quote values from the body.
fn json_error(e: serde_json::Error) -> ModelError {
    let what = match e.classify() {
        serde_json::error::Category::Eof => "ends before the JSON is complete",
        serde_json::error::Category::Syntax => "is not valid JSON",
        serde_json::error::Category::Data => "does not have the expected shape",
        serde_json::error::Category::Io => "could not be read",
    };
    ModelError::InvalidResponse(format!(
        "the answer body {what} (line {}, column {})",
        e.line(),
        e.column()
    ))
}

/// The longest provider error message kept, in bytes.
pub(crate) const MAX_ERROR_MESSAGE: usize = 300;

/// The provider's error message from an error body, in any of the usual shapes:
/// OpenAI and Anthropic `{"error": {"type", "message"}}`, `{"error": "…"}`,
/// vLLM `{"message": …}`, `{"detail": …}`. Not yet scrubbed or shortened.
pub(crate) fn error_message(body: &[u8]) -> String {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return "(no readable error message)".to_owned();
    };
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let error = value.get("error");
    let message = error
        .and_then(|e| e.get("message"))
        .and_then(text)
        .or_else(|| error.and_then(text))
        .or_else(|| value.get("message").and_then(text))
        .or_else(|| value.get("detail").and_then(text));
    let kind = error
        .and_then(|e| e.get("type"))
        .and_then(text)
        .or_else(|| value.get("type").and_then(text).filter(|t| t != "error"));
    match (kind, message) {
        (Some(kind), Some(message)) => format!("{kind}: {message}"),
        (None, Some(message)) => message,
        (Some(kind), None) => kind,
        (None, None) => "(no readable error message)".to_owned(),
    }
}

/// Shortens `message`, redacts every run of at least `min_run` bytes it
/// shares with any of `secrets` (the key, the prompt texts), and escapes
/// control characters.
pub(crate) fn scrub(message: &str, secrets: &[(&str, usize)]) -> String {
    let mut cut = message.len().min(MAX_ERROR_MESSAGE);
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    let short = &message[..cut];
    let bytes = short.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut at = 0;
    'outer: while at < bytes.len() {
        for &(secret, min_run) in secrets {
            if secret.len() < min_run || at + min_run > bytes.len() {
                continue;
            }
            let Ok(window) = std::str::from_utf8(&bytes[at..at + min_run]) else {
                continue;
            };
            if !secret.contains(window) {
                continue;
            }
            let mut end = at + min_run;
            while end < bytes.len()
                && std::str::from_utf8(&bytes[at..=end]).is_ok_and(|w| secret.contains(w))
            {
                end += 1;
            }
            out.extend_from_slice(b"[redacted]");
            at = end;
            continue 'outer;
        }
        out.push(bytes[at]);
        at += 1;
    }
    let text = String::from_utf8_lossy(&out);
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if is_unsafe_for_terminal(c) {
            escaped.extend(c.escape_unicode());
        } else {
            escaped.push(c);
        }
    }
    if cut < message.len() {
        escaped.push('…');
    }
    escaped
}

/// Control characters, line breaks and invisible characters (the one
/// definition, [`dream_core::display::is_invisible`]): escaped before a
/// provider's text reaches an error (and from there a terminal).
fn is_unsafe_for_terminal(c: char) -> bool {
    dream_core::display::needs_escape(c, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_redacts_runs_of_a_secret() {
        let key = "sk-proj-ABCDEFGHIJKLMNOP";
        let shown = scrub(
            "Incorrect API key provided: sk-proj-ABCDEFGHIJKLMNOP. Also sk-proj-ABCD.",
            &[(key, 8)],
        );
        assert!(!shown.contains("ABCDEFGH"), "{shown}");
        assert!(
            shown.contains("Incorrect API key provided: [redacted]."),
            "{shown}"
        );
        assert!(shown.ends_with("Also [redacted]."), "{shown}");
        // Fewer than 8 shared bytes are not the key and stay.
        assert_eq!(
            scrub("prefix sk-proj and more", &[(key, 8)]),
            "prefix sk-proj and more"
        );
    }

    #[test]
    fn scrub_shortens_and_escapes() {
        let long = format!("bad\n\u{1b}[31m{}", "x".repeat(1000));
        let shown = scrub(&long, &[]);
        assert!(
            !shown.contains('\n') && !shown.contains('\u{1b}'),
            "{shown}"
        );
        assert!(shown.len() < MAX_ERROR_MESSAGE * 2, "{}", shown.len());
        assert!(shown.ends_with('…'));
    }

    #[test]
    fn scrub_never_splits_characters() {
        let text = "é".repeat(400);
        let shown = scrub(&text, &[("éééééééé", 4)]);
        assert!(shown.contains("[redacted]"));
    }

    fn req(json: bool, system: &str, temperature: f32, max_tokens: u32) -> CompletionRequest {
        CompletionRequest {
            system: system.to_owned(),
            user: "data".to_owned(),
            json,
            max_tokens,
            temperature,
        }
    }

    #[test]
    fn bad_requests_are_refused_before_sending() {
        let ok = req(false, "s", 0.7, 10);
        assert!(check_request(Provider::OpenAi, &ok).is_ok());
        assert!(check_request(Provider::OpenAi, &req(false, "s", 1.5, 10)).is_ok());
        for (provider, bad) in [
            (Provider::OpenAi, req(false, "s", 0.5, 0)),
            (Provider::OpenAi, req(false, "s", f32::NAN, 10)),
            (Provider::OpenAi, req(false, "s", -0.1, 10)),
            (Provider::OpenAi, req(false, "s", 2.5, 10)),
            (Provider::Anthropic, req(false, "s", 1.5, 10)),
            (
                Provider::OpenAiCompatible,
                CompletionRequest {
                    user: String::new(),
                    ..ok.clone()
                },
            ),
        ] {
            assert!(
                matches!(
                    check_request(provider, &bad),
                    Err(ModelError::InvalidRequest(_))
                ),
                "{provider:?} {bad:?}"
            );
        }
    }

    #[test]
    fn an_empty_system_text_sends_no_system_message() {
        let body = request_body(Provider::OpenAiCompatible, "m", &req(false, "", 0.0, 5));
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": "data"}])
        );
        let body = request_body(Provider::Anthropic, "m", &req(false, "", 0.0, 5));
        assert!(body.get("system").is_none(), "{body}");
        // JSON mode alone still brings the instruction.
        let body = request_body(Provider::Anthropic, "m", &req(true, "", 0.0, 5));
        assert_eq!(body["system"], JSON_INSTRUCTION);
    }

    #[test]
    fn refusals_and_empty_answers_are_typed_errors() {
        let refusal = br#"{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}"#;
        assert_eq!(
            parse_answer(Provider::OpenAi, "gpt-4o", refusal),
            Err(ModelError::InvalidResponse(
                "the model refused to answer".to_owned()
            ))
        );
        let no_choice = br#"{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[]}"#;
        assert!(parse_answer(Provider::OpenAi, "gpt-4o", no_choice).is_err());
        let anthropic_refusal = br#"{"id":"m","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":"refusal","usage":{"input_tokens":1,"output_tokens":0}}"#;
        assert_eq!(
            parse_answer(Provider::Anthropic, "claude", anthropic_refusal),
            Err(ModelError::InvalidResponse(
                "the model refused to answer".to_owned()
            ))
        );
        let only_thinking = br#"{"id":"m","type":"message","role":"assistant","model":"claude","content":[{"type":"thinking","thinking":"hm","signature":"x"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}"#;
        assert!(parse_answer(Provider::Anthropic, "claude", only_thinking).is_err());
    }

    #[test]
    fn shape_errors_do_not_quote_the_body() {
        let body = br#"{"choices": "SECRET-VALUE-FROM-BODY"}"#;
        let err = parse_answer(Provider::OpenAi, "m", body).unwrap_err();
        assert!(!err.to_string().contains("SECRET"), "{err}");
    }

    #[test]
    fn an_insane_reported_model_name_is_replaced() {
        let body = br#"{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"model":"evil\u001b[31m"}"#;
        assert_eq!(
            parse_answer(Provider::OpenAiCompatible, "mine", body)
                .unwrap()
                .model,
            "mine"
        );
    }

    #[test]
    fn error_shapes() {
        assert_eq!(
            error_message(br#"{"error":{"message":"Bad thing","type":"invalid_request_error","param":null,"code":null}}"#),
            "invalid_request_error: Bad thing"
        );
        assert_eq!(
            error_message(br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#),
            "overloaded_error: Overloaded"
        );
        assert_eq!(
            error_message(br#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(
            error_message(
                br#"{"object":"error","message":"too long","type":"BadRequestError","code":400}"#
            ),
            "BadRequestError: too long"
        );
        assert_eq!(
            error_message(b"<html>502</html>"),
            "(no readable error message)"
        );
    }
}
