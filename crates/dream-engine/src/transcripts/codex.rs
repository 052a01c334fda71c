//! Codex rollout files: one JSON object a line. Current rollouts wrap each item
//! as `{"timestamp","type","payload"}`; `response_item` payloads carry the
//! conversation, and `session_meta`, `turn_context`, `event_msg` (which repeats
//! the response items for the UI) and `compacted` are dropped. Older rollouts
//! hold the response items bare, after a first line of session metadata.

use dream_core::{Message, Role};
use serde_json::Value;

use super::{PartKinds, Pieces, by_kind, openai_parts, tool_call};

/// One line of a rollout.
pub(super) fn line(value: &Value) -> Pieces {
    if !value.is_object() {
        return Err("not a JSON object".into());
    }
    match value.get("type").and_then(Value::as_str) {
        Some("response_item") => item(
            value
                .get("payload")
                .ok_or("a `response_item` without `payload`")?,
        ),
        Some("session_meta" | "turn_context" | "event_msg" | "compacted") => Ok(Vec::new()),
        // A line of a Claude Code session, not a rollout's: reported, so a file
        // in the wrong format is not logged as nothing at all.
        Some(kind @ ("user" | "assistant" | "summary" | "attachment" | "system"))
            if value.get("payload").is_none() && value.get("role").is_none() =>
        {
            Err(format!(
                "a Claude Code `{kind}` line, not a Codex rollout item"
            ))
        }
        Some(_) => item(value),
        // An older rollout's first line (session id and instructions) or a
        // state marker.
        None => Ok(Vec::new()),
    }
}

/// One response item.
fn item(item: &Value) -> Pieces {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .ok_or("an item without a `type`")?;
    let piece = match kind {
        "message" => return message(item),
        "function_call" | "custom_tool_call" => tool_call(
            item.get("name").and_then(Value::as_str).unwrap_or("tool"),
            item.get("arguments")
                .or_else(|| item.get("input"))
                .unwrap_or(&Value::Null),
        ),
        "local_shell_call" => tool_call("shell", item.get("action").unwrap_or(&Value::Null)),
        "web_search_call" => tool_call("web_search", item.get("action").unwrap_or(&Value::Null)),
        "function_call_output" | "custom_tool_call_output" => Message::new(
            Role::Tool,
            output_text(item.get("output").unwrap_or(&Value::Null)),
        ),
        // Reasoning (often encrypted) is the model's scratch work; anything
        // else is bookkeeping.
        _ => return Ok(Vec::new()),
    };
    Ok(vec![piece])
}

/// A `message` item: its role, then each content part by what it is.
fn message(item: &Value) -> Pieces {
    let role = match item.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        // The agent's own instructions.
        Some("system" | "developer") => return Ok(Vec::new()),
        Some(other) => return Err(format!("unknown role `{other}`")),
        None => return Err("a message without a `role`".into()),
    };
    let parts = match item.get("content") {
        Some(Value::Array(parts)) => parts,
        Some(Value::String(text)) => {
            return Ok(vec![Message::new(by_kind(role, text), text.as_str())]);
        }
        _ => return Err("a message whose `content` is not an array".into()),
    };
    openai_parts(role, parts, &PARTS)
}

/// The content parts of a Responses API message.
const PARTS: PartKinds = PartKinds {
    text: &["input_text", "output_text", "text"],
    image: &["input_image"],
    audio: &[],
    file: &[],
};

/// A tool output: a string, or an object with `output`/`content` text.
fn output_text(output: &Value) -> String {
    match output {
        // Older rollouts keep `{"output","metadata"}` as a JSON string.
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(inner @ Value::Object(_)) if inner.get("output").is_some() => output_text(&inner),
            _ => text.clone(),
        },
        Value::Object(fields) => fields
            .get("output")
            .or_else(|| fields.get("content"))
            .map(output_text)
            .unwrap_or_else(|| output.to_string()),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
