//! Claude Code session files: one JSON object a line. `user` and `assistant`
//! lines wrap an Anthropic-shaped `message`; a hook's output (an `attachment`
//! of type `hook_success` and its kin) is tool text; everything else
//! (summaries, `system` bookkeeping lines, file snapshots, other attachments)
//! is dropped.

use dream_core::{Message, Role};
use serde_json::Value;

use super::{Pieces, anthropic_content};

/// One line of a session file.
pub(super) fn line(value: &Value) -> Pieces {
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .ok_or("a line without a `type`")?;
    let role = match kind {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "attachment" => return Ok(hook_output(value).into_iter().collect()),
        // A line of a Codex rollout, not a Claude Code session's: reported, so
        // a file in the wrong format is not logged as nothing at all.
        "response_item" | "session_meta" | "turn_context" | "event_msg" => {
            return Err(format!(
                "a Codex `{kind}` line, not a Claude Code session line"
            ));
        }
        // Summaries, hook and local-command output, snapshots, attachments,
        // queue bookkeeping: not something the person or the agent said.
        _ => return Ok(Vec::new()),
    };
    let message = value
        .get("message")
        .filter(|m| m.is_object())
        .ok_or("a conversation line without a `message` object")?;
    let content = message
        .get("content")
        .ok_or("a `message` without `content`")?;
    let flag = |name: &str| value.get(name).and_then(Value::as_bool) == Some(true);
    // The person's turns only: a meta line (injected caveats and context), a
    // compaction summary (model-written) and a sub-agent's "user" turns (the
    // prompt the main agent wrote for it) are tool text.
    let role = if role == Role::User
        && (flag("isMeta") || flag("isCompactSummary") || flag("isSidechain"))
    {
        Role::Tool
    } else {
        role
    };
    let pieces = anthropic_content(role, content)?;
    Ok(if role == Role::Tool {
        pieces
            .into_iter()
            .map(|m| Message::new(Role::Tool, m.content))
            .collect()
    } else {
        pieces
    })
}

/// A hook's output from an `attachment` line (`hook_success`, …), as tool
/// text naming the hook; `None` for any other attachment and for a hook that
/// put nothing into the agent's context.
fn hook_output(value: &Value) -> Option<Message> {
    let attachment = value.get("attachment")?;
    let kind = attachment.get("type").and_then(Value::as_str)?;
    if !kind.starts_with("hook_") {
        return None;
    }
    let text = |field: &str| {
        attachment
            .get(field)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
    };
    // `content` is what reached the agent (empty for a hook whose output was
    // only protocol, such as `{}`); `stdout` only where `content` is absent.
    let said = match attachment.get("content") {
        Some(_) => text("content")?,
        None => text("stdout")?,
    };
    let hook = text("hookName").unwrap_or("hook");
    Some(Message::new(Role::Tool, format!("[{kind} {hook}] {said}")))
}
