//! Engine options, with the first seed's defaults.

use std::time::Duration;

use dream_core::Scope;

use crate::error::{DreamError, Result};

/// Caps on one session given to `log_session`.
pub const MAX_MESSAGES_PER_SESSION: usize = 1_000;
/// Cap on one message's content, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// Cap on one session's total content, in bytes.
pub const MAX_SESSION_BYTES: usize = 512 * 1024;

/// Caps on one memory's fields, applied by the write gate to every writer
/// (consolidators, `remember`, imports, releases).
pub mod limits {
    /// Passes that may leave part of a session unstored (a per-pass cap wait
    /// aside) before it is held for the person: listed by `stats` and `doctor`,
    /// retried only by a forced pass, never dropped.
    pub const SESSION_ATTEMPTS: u32 = 3;
    /// Longest name, in characters.
    pub const NAME_CHARS: usize = 200;
    /// Longest description, in characters.
    pub const DESCRIPTION_CHARS: usize = 500;
    /// Longest content, in bytes.
    pub const CONTENT_BYTES: usize = 16 * 1024;
    /// Most tags.
    pub const TAGS: usize = 16;
    /// Longest tag, in characters.
    pub const TAG_CHARS: usize = 64;
    /// Deepest metadata nesting (the top-level object is depth 1).
    pub const METADATA_DEPTH: usize = 8;
    /// Largest metadata, as JSON bytes.
    pub const METADATA_BYTES: usize = 8 * 1024;
    /// Most sessions a memory cites as its provenance.
    pub const SOURCES: usize = 64;
}

/// How a [`crate::Dream`] behaves. `Options::default()` holds the first seed's
/// defaults: 5 sessions, 24 hours, 200 memories, a session log of 1000.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The scope (project) this handle works in: sessions are logged in it, passes
    /// consolidate its sessions into its memories, and only its memories are visible.
    pub scope: Scope,
    /// Whether `dream(false)` may run at all.
    pub enabled: bool,
    /// Pending sessions needed before `dream(false)` runs.
    pub min_sessions: usize,
    /// Hours since the last successful pass before `dream(false)` runs.
    pub min_hours: u32,
    /// Memories kept per scope; a pass prunes beyond it (to the trash).
    pub max_memories: usize,
    /// Sessions kept in the log (store-wide); pending ones are never trimmed.
    pub session_log: usize,
    /// Pending sessions per scope; past it `log_session` answers `PendingFull`.
    pub max_pending: usize,
    /// Sessions one pass consolidates at most.
    pub batch_sessions: usize,
    /// Sessions sent to the consolidator in one request; `None` sends the whole
    /// batch at once. A small local model follows one session per request far
    /// better than twenty: the pass then asks once per group of this many
    /// sessions and merges the answers into one plan.
    pub sessions_per_request: Option<usize>,
    /// Bytes of transcript one pass sends to its consolidator at most.
    pub batch_bytes: usize,
    /// Memories one pass may create at most.
    pub max_creates_per_pass: usize,
    /// Existing memories one pass may change at most: updates, supersedes,
    /// deletes and prunes all count.
    pub max_deletes_per_pass: usize,
    /// Days a forgotten or pruned memory stays restorable in the trash.
    pub trash_days: u32,
    /// Prior versions kept per memory.
    pub history_per_memory: usize,
    /// Days audit records are kept.
    pub audit_days: u32,
    /// Dry-run plans kept.
    pub max_plans: usize,
    /// TTL of the store lease (lock `dream`) every memory mutation holds.
    pub lease_ttl: Duration,
    /// TTL of the claim lease a pass holds around its model call.
    pub claim_ttl: Duration,
    /// How long a mutation waits for the store lease before answering `Busy`.
    pub lease_wait: Duration,
    /// Output token limit for the LLM consolidator: the most any request asks
    /// for (each asks for no more than its text needs; see `LlmConsolidator::request`).
    pub max_tokens: u32,
    /// After `log_session`, check the gates and dream in the background
    /// (the session just logged does not count towards the gate).
    pub auto_dream: bool,
    /// Change-feed entries kept (store-wide); a reader further behind must resync.
    pub feed_retain: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            scope: Scope::default(),
            enabled: true,
            min_sessions: 5,
            min_hours: 24,
            max_memories: 200,
            session_log: 1000,
            max_pending: 1000,
            batch_sessions: 20,
            sessions_per_request: None,
            batch_bytes: 256 * 1024,
            max_creates_per_pass: 20,
            max_deletes_per_pass: 20,
            trash_days: 30,
            history_per_memory: 20,
            audit_days: 365,
            max_plans: 16,
            lease_ttl: Duration::from_secs(30),
            claim_ttl: Duration::from_secs(30),
            lease_wait: Duration::from_secs(60),
            max_tokens: 4096,
            auto_dream: false,
            feed_retain: 10_000,
        }
    }
}

impl Options {
    /// Checks the options for values that cannot work.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: &str| Err(DreamError::invalid("options", reason));
        if self.max_memories == 0 {
            return bad("max_memories must be at least 1");
        }
        if self.session_log == 0 || self.max_pending == 0 || self.batch_sessions == 0 {
            return bad("session_log, max_pending and batch_sessions must be at least 1");
        }
        if self.sessions_per_request == Some(0) {
            return bad("sessions_per_request must be at least 1");
        }
        if self.batch_bytes < 1024 {
            return bad("batch_bytes must be at least 1024");
        }
        if self.history_per_memory == 0 || self.max_plans == 0 {
            return bad("history_per_memory and max_plans must be at least 1");
        }
        if self.lease_ttl < Duration::from_millis(300)
            || self.claim_ttl < Duration::from_millis(300)
        {
            return bad("lease_ttl and claim_ttl must be at least 300 ms");
        }
        if self.feed_retain == 0 {
            return bad("feed_retain must be at least 1");
        }
        if self.max_tokens == 0 {
            return bad("max_tokens must be at least 1");
        }
        Ok(())
    }
}
