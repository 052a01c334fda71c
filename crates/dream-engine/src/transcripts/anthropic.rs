//! An Anthropic Messages API `messages` array: `user` and `assistant` messages
//! whose content is a string or an array of blocks.

use dream_core::Role;
use serde_json::Value;

use super::{Pieces, anthropic_content};

/// One element of the array.
pub(super) fn message(value: &Value) -> Pieces {
    let role = match value.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        Some(other) => return Err(format!("unknown role `{other}`")),
        None => return Err("a message without a `role`".into()),
    };
    let content = value.get("content").ok_or("a message without `content`")?;
    anthropic_content(role, content)
}
