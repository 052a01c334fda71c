//! Mapping rusqlite failures onto the store's typed errors.

use dream_core::{Key, StoreError};
use rusqlite::ErrorCode;

/// Maps a rusqlite error to a `StoreError`. Values are bound as parameters, never
/// spliced into SQL, so SQLite's messages cannot carry them.
pub(crate) fn map_err(err: rusqlite::Error, key: Option<&Key>) -> StoreError {
    match err.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            key: key.cloned(),
            reason: "the SQLite database file is malformed".to_owned(),
        },
        Some(ErrorCode::NotADatabase) => StoreError::Incompatible {
            reason: "the file is not a SQLite database".to_owned(),
        },
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::backend(true, err),
        _ => StoreError::backend(false, err),
    }
}

/// A corrupt stored row.
pub(crate) fn corrupt(key: Option<&Key>, reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        key: key.cloned(),
        reason: reason.into(),
    }
}

/// A blocking task that panicked or was cancelled.
pub(crate) fn join_err(err: tokio::task::JoinError) -> StoreError {
    StoreError::backend(false, format!("the SQLite worker task failed: {err}"))
}
