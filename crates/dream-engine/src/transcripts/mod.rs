//! Transcripts from the agents people use: Claude Code session files, Codex
//! rollouts, and the OpenAI Chat Completions and Anthropic Messages `messages`
//! arrays, read into sessions [`crate::Dream::log_transcript`] can log.
//!
//! Roles are assigned by what a block *is*, not by the message it sits in: a
//! tool result, hook or command output, an attached file or injected environment
//! context is `tool` text even inside a `user` message (the person did not say
//! it); a tool call is `assistant` text; thinking and the agent's own
//! instructions (`system`, `developer`) are dropped; an image is a placeholder.
//! A line or element that cannot be read is reported by its number and skipped
//! whole. [`split`] fits a transcript into the engine's session limits.

mod anthropic;
mod claude_code;
mod codex;
mod openai;
mod split;

use std::fmt;
use std::str::FromStr;

use dream_core::{Message, Role};
use serde_json::Value;

pub use split::{Part, TRUNCATED_MARKER, split};

/// The most bytes a transcript file may have (a session file of a very long
/// agent run is a few tens of MiB; this bounds what one import reads).
pub const MAX_TRANSCRIPT_BYTES: usize = 256 * 1024 * 1024;

/// A transcript format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Claude Code's session JSONL (`~/.claude/projects/<project>/<session>.jsonl`).
    ClaudeCode,
    /// Codex's rollout JSONL (`~/.codex/sessions/…/rollout-….jsonl`).
    Codex,
    /// An OpenAI Chat Completions `messages` array (or a request body holding one).
    OpenAiChat,
    /// An Anthropic Messages API `messages` array (or a request body holding one).
    Anthropic,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 4] = [
        Format::ClaudeCode,
        Format::Codex,
        Format::OpenAiChat,
        Format::Anthropic,
    ];

    /// The name `dream log --from` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::OpenAiChat => "openai-chat",
            Format::Anthropic => "anthropic",
        }
    }

    /// Whether the format is one JSON object per line (and a directory of such
    /// files can be imported).
    pub fn is_jsonl(self) -> bool {
        matches!(self, Format::ClaudeCode | Format::Codex)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Format {
    type Err = TranscriptError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| TranscriptError::UnknownFormat(s.to_owned()))
    }
}

/// Why a transcript could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranscriptError {
    /// Not one of [`Format::ALL`].
    #[error(
        "unknown transcript format `{0}` (expected claude-code, codex, openai-chat or anthropic)"
    )]
    UnknownFormat(String),
    /// The file is larger than [`MAX_TRANSCRIPT_BYTES`].
    #[error("the transcript is larger than {MAX_TRANSCRIPT_BYTES} bytes")]
    TooLarge,
    /// A `messages` array file that is not JSON of the expected shape.
    #[error("malformed {format} transcript: {reason}")]
    Malformed {
        /// The format it was read as.
        format: Format,
        /// What is wrong.
        reason: String,
    },
}

/// A line (JSONL formats) or array element (the API formats) that was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Its 1-based line number, or 1-based element number in the `messages` array.
    pub at: usize,
    /// Why it was skipped.
    pub reason: String,
}

/// A transcript read into session messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transcript {
    /// The messages, in order; consecutive text of one role is one message.
    pub messages: Vec<Message>,
    /// What could not be read, each skipped whole.
    pub skipped: Vec<Skipped>,
}

/// Reads `text` as a transcript in `format`.
pub fn parse(format: Format, text: &str) -> Result<Transcript, TranscriptError> {
    if text.len() > MAX_TRANSCRIPT_BYTES {
        return Err(TranscriptError::TooLarge);
    }
    match format {
        Format::ClaudeCode => Ok(jsonl(text, claude_code::line)),
        Format::Codex => Ok(jsonl(text, codex::line)),
        Format::OpenAiChat => array(format, text, openai::message),
        Format::Anthropic => array(format, text, anthropic::message),
    }
}

/// What one line or element contributes: messages (possibly none), or why it
/// cannot be read.
type Pieces = Result<Vec<Message>, String>;

/// Reads one JSON object a line; a line that is not JSON, or that `read`
/// refuses, is skipped whole and reported.
fn jsonl(text: &str, read: fn(&Value) -> Pieces) -> Transcript {
    let mut out = Builder::default();
    let mut skipped = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let pieces = serde_json::from_str::<Value>(line)
            .map_err(|e| format!("not JSON: {e}"))
            .and_then(|value| read(&value));
        match pieces {
            Ok(pieces) => out.extend(pieces),
            Err(reason) => skipped.push(Skipped { at: i + 1, reason }),
        }
    }
    Transcript {
        messages: out.finish(),
        skipped,
    }
}

/// Reads a JSON `messages` array (or an object with a `messages` array, as a
/// request body has); an element `read` refuses is skipped whole and reported.
fn array(
    format: Format,
    text: &str,
    read: fn(&Value) -> Pieces,
) -> Result<Transcript, TranscriptError> {
    let malformed = |reason: String| TranscriptError::Malformed { format, reason };
    let value: Value = serde_json::from_str(text).map_err(|e| malformed(e.to_string()))?;
    let elements = match &value {
        Value::Array(items) => items,
        Value::Object(body) => match body.get("messages") {
            Some(Value::Array(items)) => items,
            _ => return Err(malformed("expected a `messages` array".into())),
        },
        _ => return Err(malformed("expected a `messages` array".into())),
    };
    let mut out = Builder::default();
    let mut skipped = Vec::new();
    for (i, element) in elements.iter().enumerate() {
        match read(element) {
            Ok(pieces) => out.extend(pieces),
            Err(reason) => skipped.push(Skipped { at: i + 1, reason }),
        }
    }
    Ok(Transcript {
        messages: out.finish(),
        skipped,
    })
}

/// Collects messages, joining consecutive text of one role and dropping empty text.
#[derive(Debug, Default)]
struct Builder {
    messages: Vec<Message>,
}

impl Builder {
    fn extend(&mut self, pieces: Vec<Message>) {
        for piece in pieces {
            let content = piece.content.trim();
            if content.is_empty() {
                continue;
            }
            match self.messages.last_mut() {
                Some(last) if last.role == piece.role => {
                    last.content.push_str("\n\n");
                    last.content.push_str(content);
                }
                _ => self.messages.push(Message::new(piece.role, content)),
            }
        }
    }

    fn finish(self) -> Vec<Message> {
        self.messages
    }
}

/// The text of an Anthropic-shaped content value (a string, or an array of
/// blocks) as pieces: `role` for text, by-kind roles for everything else.
/// Shared by the Anthropic format and Claude Code, whose messages have that shape.
fn anthropic_content(role: Role, content: &Value) -> Pieces {
    match content {
        Value::String(text) => Ok(vec![Message::new(by_kind(role, text), text.as_str())]),
        Value::Array(blocks) => {
            let mut pieces = Vec::new();
            for (i, block) in blocks.iter().enumerate() {
                let piece = anthropic_block(role, block)
                    .map_err(|reason| format!("content block {}: {reason}", i + 1))?;
                pieces.extend(piece);
            }
            Ok(pieces)
        }
        Value::Null => Ok(Vec::new()),
        _ => Err("`content` is neither a string nor an array of blocks".into()),
    }
}

/// One Anthropic content block as at most one piece.
fn anthropic_block(role: Role, block: &Value) -> Result<Option<Message>, String> {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .ok_or("a block without a `type`")?;
    let piece = match kind {
        "text" => {
            let text = str_field(block, "text")?;
            Message::new(by_kind(role, text), text)
        }
        "image" => Message::new(role, IMAGE_PLACEHOLDER),
        "document" => Message::new(Role::Tool, "[document attached]"),
        "tool_use" | "server_tool_use" => tool_call(
            block.get("name").and_then(Value::as_str).unwrap_or("tool"),
            block.get("input").unwrap_or(&Value::Null),
        ),
        "tool_result" => {
            let inner = block.get("content").unwrap_or(&Value::Null);
            let text = match anthropic_content(Role::Tool, inner)? {
                pieces if pieces.is_empty() => String::new(),
                pieces => join(pieces),
            };
            let error = block.get("is_error").and_then(Value::as_bool) == Some(true);
            Message::new(
                Role::Tool,
                if error {
                    format!("[tool error] {text}")
                } else {
                    text
                },
            )
        }
        // Thinking is the model's scratch work, not something said.
        "thinking" | "redacted_thinking" => return Ok(None),
        // Server tool results (web search, code execution…) are tool output.
        other if other.ends_with("_tool_result") => Message::new(Role::Tool, format!("[{other}]")),
        _ => return Ok(None),
    };
    Ok(Some(piece))
}

/// What an image becomes.
const IMAGE_PLACEHOLDER: &str = "[image]";

/// How one OpenAI-style wire format names its content parts' `type`s.
struct PartKinds {
    /// Text, read from the part's `text`.
    text: &'static [&'static str],
    /// An image: [`IMAGE_PLACEHOLDER`].
    image: &'static [&'static str],
    /// Audio: `[audio]`.
    audio: &'static [&'static str],
    /// An attached file: `[file attached]`, as tool text.
    file: &'static [&'static str],
}

/// The messages of an OpenAI-style array of content parts from `role`: text by
/// what it is ([`by_kind`]), placeholders for media, refusals as the assistant's;
/// parts of other types are dropped.
fn openai_parts(role: Role, parts: &[Value], kinds: &PartKinds) -> Pieces {
    let mut pieces = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let kind = part
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("content part {}: no `type`", i + 1))?;
        if kinds.text.contains(&kind) {
            let text =
                str_field(part, "text").map_err(|e| format!("content part {}: {e}", i + 1))?;
            pieces.push(Message::new(by_kind(role, text), text));
        } else if kinds.image.contains(&kind) {
            pieces.push(Message::new(role, IMAGE_PLACEHOLDER));
        } else if kinds.audio.contains(&kind) {
            pieces.push(Message::new(role, "[audio]"));
        } else if kinds.file.contains(&kind) {
            pieces.push(Message::new(Role::Tool, "[file attached]"));
        } else if kind == "refusal" {
            let text = part
                .get("refusal")
                .and_then(Value::as_str)
                .unwrap_or_default();
            pieces.push(Message::new(Role::Assistant, text));
        }
    }
    Ok(pieces)
}

/// A tool call as assistant text: the agent chose to run it.
fn tool_call(name: &str, input: &Value) -> Message {
    let input = match input {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Message::new(Role::Assistant, format!("[tool call {name}] {input}"))
}

/// The text of pieces, joined (their roles are the caller's to decide).
fn join(pieces: Vec<Message>) -> String {
    pieces
        .into_iter()
        .map(|m| m.content)
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A required string field.
fn str_field<'a>(value: &'a Value, field: &str) -> Result<&'a str, String> {
    value
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("`{field}` is missing or not a string"))
}

/// Text a harness injects into a `user` turn that the person did not type:
/// command and hook output, reminders, environment context, instruction files.
fn injected(text: &str) -> bool {
    let start = text.trim_start();
    crate::provenance::HARNESS_TAGS.iter().any(|tag| {
        start
            .strip_prefix('<')
            .is_some_and(|s| s.starts_with(&format!("{tag}>")))
    }) || start.starts_with("# AGENTS.md instructions")
}

/// `role` unless the text is [`injected`], which is tool text.
fn by_kind(role: Role, text: &str) -> Role {
    if role == Role::User && injected(text) {
        Role::Tool
    } else {
        role
    }
}

#[cfg(test)]
mod tests;
