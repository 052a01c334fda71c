//! Fitting a transcript into the engine's session limits: an over-long tool
//! output is truncated with a visible marker, an over-long user or assistant
//! message is cut into consecutive messages (nothing the person said is lost),
//! and an over-long session becomes several parts.

use dream_core::{Message, Role};
use sha2::{Digest, Sha256};

use crate::options::{MAX_MESSAGE_BYTES, MAX_MESSAGES_PER_SESSION, MAX_SESSION_BYTES};

/// How a truncated tool output ends: this, the bytes kept and the bytes it had.
pub const TRUNCATED_MARKER: &str = "[truncated by dream:";

/// Room kept for the marker at the end of a truncated message.
const MARKER_ROOM: usize = 80;

/// One session's worth of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// Its messages, within every session limit.
    pub messages: Vec<Message>,
    /// A hash over exactly these messages: the same transcript imported again
    /// gives the same parts with the same hashes.
    pub source: String,
}

/// Splits `messages` into parts that [`crate::Dream::log_transcript`] accepts.
/// Parts are filled from the start, so a transcript that only grew keeps its
/// earlier parts (and their hashes).
pub fn split(messages: Vec<Message>) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut current: Vec<Message> = Vec::new();
    let mut bytes = 0usize;
    for message in messages.into_iter().flat_map(fit) {
        if current.len() == MAX_MESSAGES_PER_SESSION
            || bytes + message.content.len() > MAX_SESSION_BYTES
        {
            parts.push(part(std::mem::take(&mut current)));
            bytes = 0;
        }
        bytes += message.content.len();
        current.push(message);
    }
    if !current.is_empty() {
        parts.push(part(current));
    }
    parts
}

fn part(messages: Vec<Message>) -> Part {
    let mut hash = Sha256::new();
    hash.update(b"dream-transcript-part-v1\n");
    for m in &messages {
        hash.update(m.role.as_str().as_bytes());
        hash.update(b"\n");
        hash.update(m.content.len().to_le_bytes());
        hash.update(m.content.as_bytes());
    }
    Part {
        messages,
        source: hex::encode(hash.finalize()),
    }
}

/// One message within [`MAX_MESSAGE_BYTES`], NUL characters replaced.
fn fit(message: Message) -> Vec<Message> {
    let content = if message.content.contains('\0') {
        message.content.replace('\0', "\u{FFFD}")
    } else {
        message.content
    };
    if content.len() <= MAX_MESSAGE_BYTES {
        return vec![Message::new(message.role, content)];
    }
    if message.role == Role::Tool {
        let keep = floor_char_boundary(&content, MAX_MESSAGE_BYTES - MARKER_ROOM);
        let text = format!(
            "{}\n{TRUNCATED_MARKER} kept {keep} of {} bytes]",
            &content[..keep],
            content.len()
        );
        return vec![Message::new(Role::Tool, text)];
    }
    let mut chunks = Vec::new();
    let mut rest = content.as_str();
    while !rest.is_empty() {
        let end = floor_char_boundary(rest, MAX_MESSAGE_BYTES);
        chunks.push(Message::new(message.role, &rest[..end]));
        rest = &rest[end..];
    }
    chunks
}

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}
