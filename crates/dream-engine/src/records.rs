//! The JSON records the engine keeps beside the Markdown memories.

use bytes::Bytes;
use chrono::{DateTime, Utc};
use dream_core::{Key, Memory, MemoryId, Message, Record, Scope, SessionId};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{DreamError, Result};

/// Encodes a record as JSON bytes.
pub(crate) fn to_json<T: Serialize>(value: &T) -> Bytes {
    Bytes::from(serde_json::to_vec(value).expect("engine records always serialize"))
}

/// Decodes a JSON record, naming the key when it is not what the engine wrote.
pub(crate) fn from_json<T: DeserializeOwned>(key: &Key, record: &Record) -> Result<T> {
    serde_json::from_slice(&record.value).map_err(|e| DreamError::corrupt(key, e))
}

/// Whether a session still waits for a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// Not yet consolidated.
    Pending,
    /// Consolidated by a pass.
    Consumed,
}

/// A logged session as stored in `sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Pending or consumed (first, so a header read stops early).
    pub status: SessionStatus,
    /// The scope it was logged in.
    pub scope: Scope,
    /// Its id.
    pub id: SessionId,
    /// When it was logged.
    pub created_at: DateTime<Utc>,
    /// When a pass consumed it.
    #[serde(default)]
    pub consumed_at: Option<DateTime<Utc>>,
    /// The pass that consumed it.
    #[serde(default)]
    pub consumed_by: Option<String>,
    /// Rule ids of the secrets redacted from it before it was stored.
    #[serde(default)]
    pub redactions: Vec<String>,
    /// Rule ids of other scanner findings (instruction- or suspicious-shaped text).
    #[serde(default)]
    pub flags: Vec<String>,
    /// For a session imported from an agent's transcript, the hash of the part
    /// it holds ([`crate::transcripts::Part::source`]): an import skips a part
    /// already logged in the scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Passes that left part of what it says unstored (a wait for a per-pass cap
    /// aside); at [`crate::options::limits::SESSION_ATTEMPTS`] it is held for
    /// the person: listed, never dropped, retried by a forced pass.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempts: u32,
    /// Why the last pass that read it left it pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_back: Option<String>,
    /// The transcript, secrets redacted.
    pub messages: Vec<Message>,
    /// The store's seal over the transcript (see [`crate::SealKey`]); a session
    /// without a valid one (planted, edited, from another store) is read as tool
    /// text: it can never make a memory the person's word.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
    /// The store's seal over its state: `status`, `consumed_at`, `consumed_by`
    /// and `seal` (see `SealKey::seal_state`), made whenever the status is
    /// written. A status that does not match it (a consumed or purged session
    /// set back to `pending` by hand) is read as consumed: never replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_seal: Option<String>,
}

/// The first fields of a session record: enough to count and select.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct SessionHeader {
    pub status: SessionStatus,
    pub scope: Scope,
    pub id: SessionId,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub consumed_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub consumed_by: Option<String>,
    #[serde(default)]
    pub seal: Option<String>,
    #[serde(default)]
    pub state_seal: Option<String>,
    #[serde(default)]
    pub attempts: u32,
}

impl From<&SessionRecord> for SessionHeader {
    fn from(session: &SessionRecord) -> Self {
        SessionHeader {
            status: session.status,
            scope: session.scope.clone(),
            id: session.id.clone(),
            source: session.source.clone(),
            consumed_at: session.consumed_at,
            consumed_by: session.consumed_by.clone(),
            seal: session.seal.clone(),
            state_seal: session.state_seal.clone(),
            attempts: session.attempts,
        }
    }
}

impl SessionHeader {
    /// Pending, but held for the person after too many passes left part of it
    /// unstored.
    pub fn is_stuck(&self) -> bool {
        self.status == SessionStatus::Pending
            && self.attempts >= crate::options::limits::SESSION_ATTEMPTS
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Who did something recorded in the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    /// The engine (a dream pass, housekeeping).
    Engine,
    /// A person, through the API or the CLI.
    Person,
    /// An agent: Anthropic's memory tool, or an import of an agent's own memory files.
    Agent,
}

/// What an audit record records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AuditAction {
    /// A session was logged.
    SessionLogged,
    /// A pass created a memory.
    Created,
    /// A pass updated a memory.
    Updated,
    /// A pass marked a memory superseded by a new one.
    Superseded,
    /// A pass moved a memory to the trash.
    Deleted,
    /// A pass pruned a memory beyond `max_memories` to the trash.
    Pruned,
    /// The write gate quarantined a proposal.
    Quarantined,
    /// The write gate refused a proposed action.
    Refused,
    /// A person released a quarantined proposal.
    Released,
    /// A person dropped a quarantined proposal.
    QuarantineDropped,
    /// A person remembered a memory.
    Remembered,
    /// A person forgot a memory (to the trash).
    Forgotten,
    /// A person purged a memory, its history and its trash copies.
    Purged,
    /// A person purged a whole scope (ids and counts only).
    ScopePurged,
    /// A person purged a text wherever it was (ids and counts; never the text).
    TextPurged,
    /// A person restored a memory from the trash.
    Restored,
    /// A trash entry expired and was removed.
    TrashExpired,
    /// A memory was imported.
    Imported,
    /// A person confirmed a memory that was held (unverified or unconfirmed).
    Confirmed,
    /// A pass completed.
    PassCompleted,
    /// A pass failed; its sessions stay pending.
    PassFailed,
    /// A dry run stored a plan.
    PlanStored,
    /// A leftover journal was rolled forward.
    JournalRolledForward,
}

/// One entry of the audit log. Carries ids, rule ids and hashes, never flagged text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Time-ordered id.
    pub id: String,
    /// When.
    pub at: DateTime<Utc>,
    /// What.
    pub action: AuditAction,
    /// Who.
    pub actor: Actor,
    /// In which scope.
    pub scope: Scope,
    /// The memory concerned, if any.
    #[serde(default)]
    pub memory: Option<MemoryId>,
    /// The sessions it came from.
    #[serde(default)]
    pub sessions: Vec<SessionId>,
    /// The pass or plan, if any.
    #[serde(default)]
    pub pass: Option<String>,
    /// Why, in the engine's words (never untrusted text).
    pub reason: String,
    /// Scanner rule ids involved.
    #[serde(default)]
    pub rules: Vec<String>,
    /// SHA-256 of the content concerned.
    #[serde(default)]
    pub hash: Option<String>,
}

/// A memory in the trash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrashRecord {
    /// The memory's id.
    pub memory_id: MemoryId,
    /// Its scope.
    pub scope: Scope,
    /// When it was trashed.
    pub at: DateTime<Utc>,
    /// Why (engine text).
    pub reason: String,
    /// Who trashed it.
    pub actor: Actor,
    /// The pass that trashed it, if any.
    #[serde(default)]
    pub pass: Option<String>,
    /// The memory as it was, in Markdown.
    pub markdown: String,
}

/// A prior version of a memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRecord {
    /// The memory's id.
    pub memory_id: MemoryId,
    /// When this version was replaced.
    pub at: DateTime<Utc>,
    /// What replaced it.
    pub action: AuditAction,
    /// The pass, if any.
    #[serde(default)]
    pub pass: Option<String>,
    /// The version, in Markdown.
    pub markdown: String,
}

/// A scanner finding as recorded by the engine (no flagged text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingInfo {
    /// `instruction`, `secret`, … (the scanner's category).
    pub category: String,
    /// The scanner's rule id.
    pub rule: String,
    /// The scanner's severity.
    pub severity: String,
    /// Whether the finding is a secret (never releasable).
    pub secret: bool,
}

/// Where a quarantined proposal came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "source")]
pub enum QuarantineSource {
    /// A dream pass (or plan).
    Dream {
        /// The pass.
        pass: String,
    },
    /// `remember`.
    Remember,
    /// An import.
    Import,
}

/// What a quarantined proposal would do if released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProposalKind {
    /// Create the memory.
    Create,
    /// Replace the memory with the same id.
    Update,
}

/// A proposal the write gate refused to store as a memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuarantineRecord {
    /// Time-ordered id.
    pub id: String,
    /// When.
    pub at: DateTime<Utc>,
    /// Its scope.
    pub scope: Scope,
    /// Where it came from.
    #[serde(flatten)]
    pub source: QuarantineSource,
    /// Create or update.
    pub kind: ProposalKind,
    /// The proposed memory, every secret redacted.
    pub memory: Memory,
    /// What the scanner found.
    pub findings: Vec<FindingInfo>,
    /// The sessions it came from.
    #[serde(default)]
    pub sessions: Vec<SessionId>,
    /// SHA-256 of the redacted proposal's Markdown.
    pub hash: String,
    /// The store's seal over the proposal (see `seal::verified_quarantine`):
    /// an entry edited on disk or planted is released held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
}

impl QuarantineRecord {
    /// Whether any finding is a secret: such a proposal can never be released.
    pub fn has_secret(&self) -> bool {
        self.findings.iter().any(|f| f.secret)
    }
}

/// When a scope last had a successful pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuccessStamp {
    /// When.
    pub at: DateTime<Utc>,
    /// Which pass.
    pub pass: String,
}
