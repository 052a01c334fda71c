//! Turning I/O failures into `StoreError`s that name the operation and the key,
//! never a value.

use std::io;

use dream_core::{Key, StoreError};

/// An I/O failure and what the store was doing.
#[derive(Debug, thiserror::Error)]
#[error("could not {op}: {source}")]
pub(crate) struct IoFailure {
    op: String,
    #[source]
    source: io::Error,
}

/// A backend error for a failed I/O operation described by `op`.
pub(crate) fn io_failure(op: impl Into<String>, source: io::Error) -> StoreError {
    let retryable = matches!(
        source.kind(),
        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    );
    StoreError::backend(
        retryable,
        IoFailure {
            op: op.into(),
            source,
        },
    )
}

/// Adds what the store was doing to an I/O result.
pub(crate) trait Context<T> {
    /// Maps an error to a backend error for the operation `op()` describes.
    fn context<S: Into<String>>(self, op: impl FnOnce() -> S) -> Result<T, StoreError>;
}

impl<T, E: Into<io::Error>> Context<T> for Result<T, E> {
    fn context<S: Into<String>>(self, op: impl FnOnce() -> S) -> Result<T, StoreError> {
        self.map_err(|e| io_failure(op(), e.into()))
    }
}

/// `Corrupt` for a record.
pub(crate) fn corrupt(key: &Key, reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        key: Some(key.clone()),
        reason: reason.into(),
    }
}

/// `Corrupt` for store-wide state.
pub(crate) fn corrupt_store(reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        key: None,
        reason: reason.into(),
    }
}

/// `Incompatible` with a reason.
pub(crate) fn incompatible(reason: impl Into<String>) -> StoreError {
    StoreError::Incompatible {
        reason: reason.into(),
    }
}
