//! The engine's error type. `Display` never shows a stored value, a transcript or a key.

use dream_core::{EmbedError, InvalidId, Key, LockName, ModelError, StoreError};

use crate::plan::PlanError;

/// Why an engine operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DreamError {
    /// The store failed.
    #[error(transparent)]
    Store(StoreError),
    /// An input broke a documented rule or cap; nothing was stored.
    #[error("invalid {what}: {reason}")]
    InvalidInput {
        /// What was being validated (`session`, `memory`, `options`, …).
        what: &'static str,
        /// Which rule it broke (never the offending text).
        reason: String,
    },
    /// An id failed validation.
    #[error(transparent)]
    InvalidId(#[from] InvalidId),
    /// Too many sessions are waiting for a pass; nothing was stored.
    #[error("{pending} sessions are pending, the bound is {bound}: run a dream pass first")]
    PendingFull {
        /// Pending sessions in this scope.
        pending: usize,
        /// The configured bound.
        bound: usize,
    },
    /// Nothing with that id exists (in this scope).
    #[error("no {what} with id {id}")]
    NotFound {
        /// What was looked up (`memory`, `trash entry`, `plan`, …).
        what: &'static str,
        /// The id (validated, so safe to show).
        id: String,
    },
    /// A record with that id already exists.
    #[error("a {what} with id {id} already exists")]
    AlreadyExists {
        /// What exists.
        what: &'static str,
        /// Its id.
        id: String,
    },
    /// Another holder kept the lock longer than the engine was willing to wait.
    #[error("lock {lock} is held by another process; try again later")]
    Busy {
        /// The lock.
        lock: LockName,
    },
    /// A lease the operation depended on was lost; nothing more was written.
    #[error("lease on lock {lock} was lost")]
    LockLost {
        /// The lock.
        lock: LockName,
    },
    /// The store cannot host Dream (no leases or fenced writes).
    #[error("store {store} cannot host Dream: it lacks {missing}")]
    UnsupportedStore {
        /// The store's name.
        store: String,
        /// The missing capability.
        missing: &'static str,
    },
    /// The language model failed; the sessions stay pending.
    #[error("consolidation failed: {0}")]
    Model(#[from] ModelError),
    /// The embedder failed; the vectors stay as they were and the next backfill retries.
    #[error("embedding failed: {0}")]
    Embedding(#[source] EmbedError),
    /// The consolidator's answer could not be turned into a plan; the sessions stay pending.
    #[error("consolidation failed: {0}")]
    Consolidation(#[source] PlanError),
    /// What a plan or pass read has changed since; nothing was applied.
    #[error("refused: {reason}")]
    Stale {
        /// What changed.
        reason: String,
    },
    /// The operation is refused by policy (e.g. releasing a secret).
    #[error("refused: {reason}")]
    Refused {
        /// Why.
        reason: String,
    },
    /// A reader's cursor is outside the change feed: the entries after it were
    /// trimmed, or the feed never reached it. Read the state afresh, then follow
    /// the feed from its oldest entry.
    #[error("events after cursor {cursor} cannot be read ({reason}): resync")]
    Resync {
        /// The cursor.
        cursor: u64,
        /// Why.
        reason: String,
    },
    /// A stored record is not what the engine wrote.
    #[error("corrupt record {key}: {reason}")]
    Corrupt {
        /// The record.
        key: Key,
        /// What is wrong.
        reason: String,
    },
}

impl DreamError {
    pub(crate) fn invalid(what: &'static str, reason: impl Into<String>) -> Self {
        DreamError::InvalidInput {
            what,
            reason: reason.into(),
        }
    }

    pub(crate) fn corrupt(key: &Key, reason: impl std::fmt::Display) -> Self {
        DreamError::Corrupt {
            key: key.clone(),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn not_found(what: &'static str, id: impl std::fmt::Display) -> Self {
        DreamError::NotFound {
            what,
            id: id.to_string(),
        }
    }
}

impl From<StoreError> for DreamError {
    /// A store's `LockLost` becomes the engine's; everything else is wrapped.
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::LockLost { lock } => DreamError::LockLost { lock },
            other => DreamError::Store(other),
        }
    }
}

/// Result alias for the engine.
pub type Result<T, E = DreamError> = std::result::Result<T, E>;
