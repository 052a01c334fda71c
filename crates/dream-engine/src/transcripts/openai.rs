//! An OpenAI Chat Completions `messages` array: `system`/`developer` (dropped:
//! the agent's own instructions), `user`, `assistant` (text, refusals and
//! `tool_calls`), and `tool`/`function` results.

use dream_core::{Message, Role};
use serde_json::Value;

use super::{PartKinds, Pieces, by_kind, openai_parts, str_field, tool_call};

/// One element of the array.
pub(super) fn message(value: &Value) -> Pieces {
    let role = match value.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some("tool" | "function") => Role::Tool,
        Some("system" | "developer") => return Ok(Vec::new()),
        Some(other) => return Err(format!("unknown role `{other}`")),
        None => return Err("a message without a `role`".into()),
    };
    let mut pieces = content(role, value.get("content").unwrap_or(&Value::Null))?;
    if role == Role::Assistant {
        if let Some(refusal) = value.get("refusal").and_then(Value::as_str) {
            pieces.push(Message::new(Role::Assistant, refusal));
        }
        if let Some(calls) = value.get("tool_calls") {
            let calls = calls.as_array().ok_or("`tool_calls` is not an array")?;
            for (i, call) in calls.iter().enumerate() {
                let function = call
                    .get("function")
                    .ok_or_else(|| format!("tool call {}: no `function`", i + 1))?;
                let name =
                    str_field(function, "name").map_err(|e| format!("tool call {}: {e}", i + 1))?;
                pieces.push(tool_call(
                    name,
                    function.get("arguments").unwrap_or(&Value::Null),
                ));
            }
        }
        if let Some(function) = value.get("function_call").filter(|f| !f.is_null()) {
            let name = str_field(function, "name").map_err(|e| format!("function call: {e}"))?;
            pieces.push(tool_call(
                name,
                function.get("arguments").unwrap_or(&Value::Null),
            ));
        }
    }
    Ok(pieces)
}

/// The content parts of a Chat Completions message.
const PARTS: PartKinds = PartKinds {
    text: &["text"],
    image: &["image_url"],
    audio: &["input_audio"],
    file: &["file"],
};

/// A `content` value: a string, null, or an array of parts.
fn content(role: Role, content: &Value) -> Pieces {
    match content {
        Value::Null => Ok(Vec::new()),
        Value::String(text) => Ok(vec![Message::new(by_kind(role, text), text.as_str())]),
        Value::Array(parts) => openai_parts(role, parts, &PARTS),
        _ => Err("`content` is neither a string nor an array of parts".into()),
    }
}
