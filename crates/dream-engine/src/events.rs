//! Events: one for every state change this process makes, through a tokio
//! broadcast channel ([`crate::Dream::subscribe`]). Events carry ids, rule ids and
//! hashes, never memory text or flagged text. They are process-local; the audit
//! log in the store is the record every process shares.

use dream_core::{MemoryId, SessionId};
use serde::Serialize;

/// Capacity of the broadcast channel; a slow subscriber misses older events
/// (`RecvError::Lagged`), it never blocks the engine.
pub const EVENT_CAPACITY: usize = 1024;

/// A state change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Event {
    /// A session was logged.
    SessionLogged {
        /// Its id.
        session: SessionId,
        /// Rule ids of the secrets redacted from it.
        redactions: Vec<String>,
    },
    /// A pass started (its claim is held).
    PassStarted {
        /// The pass.
        pass: String,
    },
    /// A pass did not run.
    PassSkipped {
        /// Why (see [`crate::SkipReason`]).
        reason: String,
    },
    /// A pass failed; its sessions stay pending.
    PassFailed {
        /// The pass.
        pass: String,
        /// Why (the error's text, which never carries values).
        reason: String,
    },
    /// A pass (or an applied plan) completed.
    PassCompleted {
        /// The pass.
        pass: String,
        /// Sessions consumed.
        sessions: usize,
    },
    /// A memory was created (by a pass, `remember`, an import or a release).
    MemoryCreated {
        /// Its id.
        memory: MemoryId,
        /// SHA-256 of its Markdown.
        hash: String,
    },
    /// A memory was changed in place.
    MemoryUpdated {
        /// Its id.
        memory: MemoryId,
        /// SHA-256 of its new Markdown.
        hash: String,
    },
    /// A memory was marked superseded.
    MemorySuperseded {
        /// Its id.
        memory: MemoryId,
        /// The memory that supersedes it.
        by: MemoryId,
    },
    /// A memory moved to the trash (forgotten, deleted by a pass, or pruned).
    MemoryTrashed {
        /// Its id.
        memory: MemoryId,
        /// `forgotten`, `deleted` or `pruned`.
        why: &'static str,
    },
    /// A memory came back from the trash.
    MemoryRestored {
        /// Its id.
        memory: MemoryId,
    },
    /// A memory, its history and its trash copies were removed for good.
    MemoryPurged {
        /// Its id.
        memory: MemoryId,
    },
    /// A proposal went to the quarantine.
    Quarantined {
        /// The quarantine entry.
        entry: String,
        /// The scanner rules that fired.
        rules: Vec<String>,
    },
    /// A proposed action was refused by the write gate.
    Refused {
        /// The action (`create`, `update`, `delete`).
        action: &'static str,
        /// The gate's reason code.
        reason: String,
    },
    /// A person released a quarantined proposal.
    Released {
        /// The quarantine entry.
        entry: String,
        /// The memory written.
        memory: MemoryId,
    },
    /// A person dropped a quarantined proposal.
    QuarantineDropped {
        /// The quarantine entry.
        entry: String,
    },
    /// Trash entries past their retention were removed.
    TrashExpired {
        /// How many.
        count: usize,
    },
    /// A dry run stored a plan.
    PlanStored {
        /// The plan.
        plan: String,
    },
    /// A leftover journal from an interrupted apply was rolled forward.
    JournalRolledForward {
        /// The journal's pass or operation.
        pass: String,
    },
}
