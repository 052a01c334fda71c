//! Claude Code session files: one JSON object a line. `user` and `assistant`
//! lines wrap an Anthropic-shaped `message`; everything else (summaries,
//! `system` hook and command lines, file snapshots, attachments) is dropped.

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
