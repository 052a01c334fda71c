//! Events: one for every state change any process makes, recorded in the store's
//! change feed ([`crate::feed`], read through [`crate::Dream::subscribe`]). An
//! event says what changed — its kind and the ids involved — never memory text,
//! flagged text or a hash of either: the feed is read outside the encryption
//! layer, and a hash of plaintext would confirm a guessed memory.

use dream_core::{MemoryId, SessionId};
use serde::{Deserialize, Serialize};

/// A state change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    },
    /// A memory was changed in place.
    MemoryUpdated {
        /// Its id.
        memory: MemoryId,
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
        why: String,
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
        action: String,
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
