//! The language-model seam the engine calls. Implementations live in `dream-llm`
//! (HTTP providers) and, for tests, in `testing::ScriptedModel`.

use std::fmt::Debug;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// One request to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionRequest {
    /// The system text (trusted rules).
    pub system: String,
    /// The user text (framed, sanitized data).
    pub user: String,
    /// Ask for a JSON object.
    pub json: bool,
    /// Output token limit.
    pub max_tokens: u32,
    /// Sampling temperature.
    pub temperature: f32,
}

/// Tokens a call used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
}

impl std::ops::AddAssign for TokenUsage {
    fn add_assign(&mut self, other: Self) {
        self.input += other.input;
        self.output += other.output;
    }
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// The answer text (untrusted).
    pub text: String,
    /// Tokens used.
    pub usage: TokenUsage,
    /// The model that answered.
    pub model: String,
    /// True when the answer was cut off by its token limit.
    pub truncated: bool,
}

/// Why a model call failed. Never carries a key or a request body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// No model is configured.
    #[error("no language model is configured")]
    NotConfigured,
    /// The request could not be sent or no answer arrived (after retries).
    #[error("could not reach the model provider: {0}")]
    Transport(String),
    /// The call took longer than its timeout (after retries).
    #[error("the model call timed out")]
    Timeout,
    /// The provider refused the credentials (401/403).
    #[error("the provider rejected the credentials (HTTP {status})")]
    Unauthorized {
        /// HTTP status.
        status: u16,
    },
    /// The provider kept rate-limiting (429) after retries.
    #[error("rate limited by the provider")]
    RateLimited,
    /// The provider answered with an error status.
    #[error("the provider answered HTTP {status}: {message}")]
    Provider {
        /// HTTP status.
        status: u16,
        /// The provider's error message (its `error.message`), shortened.
        message: String,
    },
    /// The answer body was larger than allowed.
    #[error("the answer was larger than {limit} bytes")]
    TooLarge {
        /// The cap, in bytes.
        limit: usize,
    },
    /// The answer could not be understood.
    #[error("invalid answer from the model: {0}")]
    InvalidResponse(String),
    /// The answer was cut off by its token limit.
    #[error("the answer was cut off by its token limit")]
    Truncated,
    /// A scripted model ran out of answers (tests).
    #[error("the scripted model has no answer left")]
    ScriptExhausted,
    /// The request itself is unusable (for example a zero token limit).
    #[error("invalid model request: {0}")]
    InvalidRequest(String),
    /// No top-level JSON object could be recovered from the answer.
    #[error("no JSON object could be recovered from the answer")]
    NoJsonObject,
    /// The answer holds more than one top-level JSON object: which one is meant
    /// is ambiguous, so none is taken.
    #[error("the answer holds {candidates} JSON objects; exactly one is required")]
    AmbiguousJson {
        /// How many top-level objects were found.
        candidates: usize,
    },
}

/// A language model. Dyn-compatible: the engine holds `Arc<dyn LanguageModel>`.
#[async_trait]
pub trait LanguageModel: Send + Sync + Debug + 'static {
    /// A short, key-free description (`openai:gpt-4o-mini`).
    fn describe(&self) -> String;
    /// Runs one completion.
    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, ModelError>;
}

#[async_trait]
impl<T: LanguageModel + ?Sized> LanguageModel for std::sync::Arc<T> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, ModelError> {
        (**self).complete(request).await
    }
}

/// The longest answer text [`recover_json_object`] looks at, in bytes.
pub const MAX_RECOVERABLE_ANSWER: usize = 1 << 20;

/// Recovers the one top-level JSON object an answer holds.
///
/// The answer may be the bare object, the object in a Markdown fence, or the
/// object wrapped in prose. Recovery is strict:
/// - an answer cut off by its token limit (`truncated`) → [`ModelError::Truncated`],
///   even when its text happens to parse;
/// - no top-level object (only prose, only an array, broken JSON) →
///   [`ModelError::NoJsonObject`];
/// - two or more top-level objects → [`ModelError::AmbiguousJson`]: the engine
///   never guesses which one was meant;
/// - text longer than [`MAX_RECOVERABLE_ANSWER`] → [`ModelError::TooLarge`].
///
/// Objects nested in another object or in an array are not top level: `[{"a":1}]`
/// holds no top-level object. Never panics, whatever the text, and the work is
/// bounded: the bytes examined by all parse attempts together stay within a
/// small multiple of the text's length (past that, hostile text full of broken
/// fragments is [`ModelError::NoJsonObject`]).
pub fn recover_json_object(text: &str, truncated: bool) -> Result<serde_json::Value, ModelError> {
    if truncated {
        return Err(ModelError::Truncated);
    }
    if text.len() > MAX_RECOVERABLE_ANSWER {
        return Err(ModelError::TooLarge {
            limit: MAX_RECOVERABLE_ANSWER,
        });
    }
    let bytes = text.as_bytes();
    let mut budget = text.len().saturating_mul(4).saturating_add(64 << 10);
    let mut objects: Vec<&str> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        // `{` and `[` are ASCII, so `at` is a char boundary whenever we slice.
        if !matches!(bytes[at], b'{' | b'[') {
            at += 1;
            continue;
        }
        let (outcome, examined) = probe_value(&text[at..]);
        budget = match budget.checked_sub(examined) {
            Some(left) => left,
            None => return Err(ModelError::NoJsonObject),
        };
        match outcome {
            Some(len) => {
                if bytes[at] == b'{' {
                    objects.push(&text[at..at + len]);
                }
                // Skip the whole value: whatever it nests is not top level.
                at += len;
            }
            None => at += 1,
        }
    }
    match objects.as_slice() {
        [] => Err(ModelError::NoJsonObject),
        [one] => serde_json::from_str(one).map_err(|_| ModelError::NoJsonObject),
        many => Err(ModelError::AmbiguousJson {
            candidates: many.len(),
        }),
    }
}

/// Checks whether one JSON value starts `text`, without building it. Returns
/// its length (if it parses) and about how many bytes the check examined.
fn probe_value(text: &str) -> (Option<usize>, usize) {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    match values.next() {
        Some(Ok(_)) => {
            let len = values.byte_offset();
            (Some(len), len)
        }
        Some(Err(e)) => (None, error_offset(text, e.line(), e.column())),
        None => (None, text.len()),
    }
}

/// The byte offset of a (1-based line, column) position serde_json reported.
fn error_offset(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    line_start
        .saturating_add(column)
        .clamp(1, text.len().max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn recover(text: &str) -> Result<serde_json::Value, ModelError> {
        recover_json_object(text, false)
    }

    #[test]
    fn bare_object() {
        assert_eq!(recover(r#"{"a":1}"#).unwrap(), json!({"a": 1}));
        assert_eq!(
            recover("  \n{\"a\": [1, {\"b\": null}]}\n ").unwrap(),
            json!({"a": [1, {"b": null}]})
        );
    }

    #[test]
    fn fenced_object() {
        let text = "```json\n{\"actions\": [], \"note\": \"none\"}\n```";
        assert_eq!(
            recover(text).unwrap(),
            json!({"actions": [], "note": "none"})
        );
        let plain_fence = "```\n{\"x\": true}\n```\n";
        assert_eq!(recover(plain_fence).unwrap(), json!({"x": true}));
    }

    #[test]
    fn prose_wrapped_object() {
        let text =
            "Sure! Here is the plan:\n\n{\"create\": [{\"title\": \"tea\"}]}\n\nLet me know.";
        assert_eq!(
            recover(text).unwrap(),
            json!({"create": [{"title": "tea"}]})
        );
    }

    #[test]
    fn braces_in_prose_that_are_not_json_are_ignored() {
        let text = "Use {name} as a placeholder; the answer is {\"ok\": 1} (see [1]).";
        assert_eq!(recover(text).unwrap(), json!({"ok": 1}));
    }

    #[test]
    fn braces_inside_strings_do_not_split_the_object() {
        let text = r#"{"s": "a } and { \" b {\"x\":1}", "t": "]["}"#;
        assert_eq!(
            recover(text).unwrap(),
            json!({"s": "a } and { \" b {\"x\":1}", "t": "]["})
        );
    }

    #[test]
    fn two_objects_are_ambiguous() {
        assert_eq!(
            recover(r#"{"a":1}{"b":2}"#),
            Err(ModelError::AmbiguousJson { candidates: 2 })
        );
        let fenced_and_prose =
            "For example {\"draft\": true}. Final:\n```json\n{\"draft\": false}\n```";
        assert_eq!(
            recover(fenced_and_prose),
            Err(ModelError::AmbiguousJson { candidates: 2 })
        );
        assert_eq!(
            recover("{} {} {}"),
            Err(ModelError::AmbiguousJson { candidates: 3 })
        );
    }

    #[test]
    fn no_object_is_an_error() {
        for text in [
            "",
            "   ",
            "I cannot help with that.",
            "[1, 2, 3]",
            "[{\"a\": 1}]",
            "\"{\\\"a\\\": 1}\"",
            "42",
            "{\"a\": 1",
            "{a: 1}",
            "{'a': 1}",
            "```json\n{\"a\": }\n```",
        ] {
            assert_eq!(recover(text), Err(ModelError::NoJsonObject), "{text:?}");
        }
    }

    #[test]
    fn an_object_in_an_array_is_not_top_level_but_one_beside_it_is() {
        assert_eq!(
            recover("[{\"a\":1}] and then {\"b\":2}").unwrap(),
            json!({"b": 2})
        );
    }

    #[test]
    fn a_truncated_answer_is_an_error_even_if_it_parses() {
        assert_eq!(
            recover_json_object(r#"{"a":1}"#, true),
            Err(ModelError::Truncated)
        );
        assert_eq!(
            recover_json_object(r#"{"a":"#, true),
            Err(ModelError::Truncated)
        );
    }

    #[test]
    fn an_answer_over_the_bound_is_refused() {
        let text = format!("{{\"a\":\"{}\"}}", "x".repeat(MAX_RECOVERABLE_ANSWER));
        assert_eq!(
            recover(&text),
            Err(ModelError::TooLarge {
                limit: MAX_RECOVERABLE_ANSWER
            })
        );
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let deep = format!("{}{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
        assert_eq!(recover(&deep), Err(ModelError::NoJsonObject));
        let deep_arrays = "[".repeat(100_000);
        assert_eq!(recover(&deep_arrays), Err(ModelError::NoJsonObject));
    }

    #[test]
    fn hostile_inputs_near_the_bound_finish() {
        let patterns = [
            "{\"a\":[",
            "[1,",
            "{",
            "{\"",
            "{\"a\":\"{",
            "[{\"a\":{\"b\":[",
        ];
        for pattern in patterns {
            let text = pattern.repeat(MAX_RECOVERABLE_ANSWER / pattern.len());
            let started = std::time::Instant::now();
            let _ = recover(&text);
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "{pattern:?} took {:?}",
                started.elapsed()
            );
        }
    }

    #[test]
    fn non_ascii_text_around_the_object() {
        assert_eq!(
            recover("Voilà — le résultat : {\"clé\": \"été\"} ✓").unwrap(),
            json!({"clé": "été"})
        );
    }

    fn json_leaf() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            ".{0,12}".prop_map(serde_json::Value::from),
        ]
    }

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        json_leaf().prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
                prop::collection::btree_map(".{0,8}", inner, 0..6)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn never_panics_on_any_text(text in ".{0,400}", truncated in any::<bool>()) {
            let _ = recover_json_object(&text, truncated);
        }

        #[test]
        fn never_panics_on_json_like_text(text in "[{}\\[\\]\":,0-9a \\\\`\n]{0,400}") {
            let _ = recover_json_object(&text, false);
        }

        #[test]
        fn recovers_any_object_wrapped_in_brace_free_prose(
            map in prop::collection::btree_map(".{0,8}", json_value(), 0..6),
            before in "[^{}\\[\\]]{0,60}",
            after in "[^{}\\[\\]]{0,60}",
            fenced in any::<bool>(),
            pretty in any::<bool>(),
        ) {
            let object = serde_json::Value::Object(map.into_iter().collect());
            let body = if pretty {
                serde_json::to_string_pretty(&object).unwrap()
            } else {
                serde_json::to_string(&object).unwrap()
            };
            let text = if fenced {
                format!("{before}\n```json\n{body}\n```\n{after}")
            } else {
                format!("{before}{body}{after}")
            };
            prop_assert_eq!(recover_json_object(&text, false), Ok(object.clone()));
            prop_assert_eq!(recover_json_object(&text, true), Err(ModelError::Truncated));
            let twice = format!("{text}\n{body}");
            prop_assert_eq!(
                recover_json_object(&twice, false),
                Err(ModelError::AmbiguousJson { candidates: 2 })
            );
        }
    }
}
