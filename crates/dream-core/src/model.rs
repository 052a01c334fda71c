//! The memory and session model.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::id::{MemoryId, Scope, SessionId};

/// What a memory is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryKind {
    /// A fact about the user (name, role, preferences).
    User,
    /// Feedback the user gave about the agent's work.
    Feedback,
    /// A fact or decision about the project.
    Project,
    /// A pointer to an external resource.
    Reference,
}

impl MemoryKind {
    /// Every kind, in display order.
    pub const ALL: [MemoryKind; 4] = [Self::User, Self::Feedback, Self::Project, Self::Reference];

    /// The lowercase name used in Markdown and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Feedback => "feedback",
            Self::Project => "project",
            Self::Reference => "reference",
        }
    }

    /// Parses the lowercase name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Where a memory is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryStatus {
    /// Current.
    #[default]
    Active,
    /// Replaced by a successor.
    Superseded,
    /// Withdrawn.
    Revoked,
    /// Past its expiry.
    Expired,
    /// Current, but not the person's word: its evidence is only tool, assistant
    /// or system text, or it is a standing order that sends data out. Held at
    /// recall until a person confirms it. Readers older than this value refuse
    /// the record, so they fail closed instead of trusting it.
    Unconfirmed,
}

impl MemoryStatus {
    /// Every status.
    pub const ALL: [MemoryStatus; 5] = [
        Self::Active,
        Self::Superseded,
        Self::Revoked,
        Self::Expired,
        Self::Unconfirmed,
    ];

    /// The lowercase name used in Markdown and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Superseded => "superseded",
            Self::Revoked => "revoked",
            Self::Expired => "expired",
            Self::Unconfirmed => "unconfirmed",
        }
    }

    /// Parses the lowercase name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether a memory with this status is current (active or unconfirmed):
    /// passes may change it, and it is not retired.
    pub fn is_current(self) -> bool {
        matches!(self, Self::Active | Self::Unconfirmed)
    }
}

/// One curated, named memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Its id, assigned by the engine.
    pub id: MemoryId,
    /// Short name (single line).
    pub name: String,
    /// One-line description used for recall manifests (single line).
    pub description: String,
    /// What the memory is about.
    pub kind: MemoryKind,
    /// The body, kept byte for byte.
    pub content: String,
    /// Free-form tags (single line each).
    #[serde(default)]
    pub tags: Vec<String>,
    /// The scope (project) it belongs to.
    #[serde(default)]
    pub scope: Scope,
    /// Lifecycle status.
    #[serde(default)]
    pub status: MemoryStatus,
    /// Memories this one replaces.
    #[serde(default)]
    pub supersedes: Vec<MemoryId>,
    /// When it stops being current, if ever.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// The sessions it was learned from (its provenance).
    #[serde(default)]
    pub sources: Vec<SessionId>,
    /// The roles of the messages its evidence came from, sorted and without
    /// repeats: `user` when the person said it (or did it: `remember`, an import),
    /// `assistant`, `tool` or `system` otherwise. Empty for records written
    /// before roles were recorded.
    #[serde(default)]
    pub evidence: Vec<Role>,
    /// How sure the consolidator was, from 0 to 1.
    pub confidence: f64,
    /// Pinned memories (from `remember`) are never pruned.
    #[serde(default)]
    pub pinned: bool,
    /// Nested JSON metadata.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

/// Characters that end a line somewhere: collapsed in single-line fields.
pub fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Collapses every line break in `s` into one space, so the value fits on one line.
pub fn single_line(s: &str) -> String {
    if !s.contains(is_line_break) {
        return s.to_owned();
    }
    s.chars()
        .map(|c| if is_line_break(c) { ' ' } else { c })
        .collect()
}

impl Memory {
    /// A new active memory with empty tags, provenance and metadata, created `now`.
    pub fn new(
        id: MemoryId,
        kind: MemoryKind,
        name: impl Into<String>,
        description: impl Into<String>,
        content: impl Into<String>,
        now: DateTime<Utc>,
    ) -> Self {
        Memory {
            id,
            name: name.into(),
            description: description.into(),
            kind,
            content: content.into(),
            tags: Vec::new(),
            scope: Scope::default(),
            status: MemoryStatus::Active,
            supersedes: Vec::new(),
            expires_at: None,
            created_at: now,
            updated_at: now,
            sources: Vec::new(),
            evidence: Vec::new(),
            confidence: 1.0,
            pinned: false,
            metadata: Map::new(),
        }
    }

    /// The memory with single-line fields (name, description, tags) collapsed
    /// onto one line. Rendering applies this; `parse(render(m)) == m.normalized()`.
    pub fn normalized(mut self) -> Self {
        self.name = single_line(&self.name);
        self.description = single_line(&self.description);
        for tag in &mut self.tags {
            *tag = single_line(tag);
        }
        self
    }
}

/// Who said a message in a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person.
    User,
    /// The agent.
    Assistant,
    /// The agent's system prompt.
    System,
    /// A tool's output.
    Tool,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 4] = [Self::User, Self::Assistant, Self::System, Self::Tool];

    /// The lowercase name used in Markdown and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::System => "system",
            Self::Tool => "tool",
        }
    }

    /// Parses the lowercase name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// One message of a session transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: String,
}

impl Message {
    /// A message from `role`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
        }
    }
}

/// One logged session transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// Time-ordered id.
    pub id: SessionId,
    /// The scope it was logged in.
    pub scope: Scope,
    /// When it was logged.
    pub created_at: DateTime<Utc>,
    /// The transcript.
    pub messages: Vec<Message>,
}
