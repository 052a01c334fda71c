//! Turning driver and pool errors into `StoreError`s that never carry a value
//! or a password.

use std::fmt;

use deadpool_postgres::PoolError;
use dream_core::{Key, StoreError};
use tokio_postgres::error::SqlState;

/// Why a store refuses to work once its meta row is gone.
pub(crate) const EPOCH_MISSING: &str = "the store's meta row (its epoch) is missing: this database lost the store's data \
     (restored from an older backup, or tables emptied); refusing to reissue versions and fences";

/// Why a store refuses to work once its schema or tables are gone.
pub(crate) const SCHEMA_MISSING: &str = "the store's schema or tables are missing: the database was dropped, \
     restored from before the store existed, or the schema was removed; refusing to re-create it under a running process";

/// Why a store refuses to work once its epoch changed.
pub(crate) const EPOCH_CHANGED: &str = "the store's epoch changed: the store was wiped and re-created \
     since this process opened it; refusing to mix its versions and fences with the new store's";

/// A PostgreSQL failure, described without values or passwords.
#[derive(Debug)]
pub(crate) struct PgFailure {
    pub(crate) op: &'static str,
    pub(crate) detail: String,
}

impl fmt::Display for PgFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "postgres {} failed: {}", self.op, self.detail)
    }
}

impl std::error::Error for PgFailure {}

/// What kind of failure a driver error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The server answered with an error: the statement was rolled back.
    /// `retry` when trying again may succeed (serialization failure, deadlock,
    /// shutdown in progress).
    Refused { retry: bool },
    /// The store's schema or tables are gone.
    SchemaMissing,
    /// No answer (connection lost, I/O error): the outcome of a write is unknown.
    Lost,
}

pub(crate) fn kind(err: &tokio_postgres::Error) -> Kind {
    match err.code() {
        Some(code) => {
            if *code == SqlState::INVALID_SCHEMA_NAME
                || *code == SqlState::UNDEFINED_TABLE
                || *code == SqlState::UNDEFINED_FUNCTION
            {
                Kind::SchemaMissing
            } else if *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN
                || *code == SqlState::IDLE_SESSION_TIMEOUT
            {
                // The session ended: a statement that was running may have
                // committed just before (its commit is not interruptible).
                Kind::Lost
            } else {
                // These errors roll the statement back (or come before it ran).
                let retry = *code == SqlState::T_R_SERIALIZATION_FAILURE
                    || *code == SqlState::T_R_DEADLOCK_DETECTED
                    || *code == SqlState::CANNOT_CONNECT_NOW
                    || *code == SqlState::TOO_MANY_CONNECTIONS;
                Kind::Refused { retry }
            }
        }
        None => Kind::Lost,
    }
}

/// Maps a driver error for operation `op`, scrubbing `secret` from its text.
pub(crate) fn map_pg(
    op: &'static str,
    key: Option<&Key>,
    err: &tokio_postgres::Error,
    secret: Option<&str>,
) -> StoreError {
    match kind(err) {
        Kind::SchemaMissing => StoreError::Corrupt {
            key: key.cloned(),
            reason: SCHEMA_MISSING.to_owned(),
        },
        Kind::Refused { retry } => StoreError::backend(
            retry,
            PgFailure {
                op,
                detail: dream_tls::redact(describe(err), secret),
            },
        ),
        Kind::Lost => StoreError::backend(
            true,
            PgFailure {
                op,
                detail: dream_tls::redact(describe(err), secret),
            },
        ),
    }
}

/// A server whose TLS certificate failed verification (not signed by a trusted
/// CA, not valid for the host name with `verify-full`, expired, …). Never
/// retried. It is the source of the [`StoreError::Backend`] that opening the
/// store (or any later connection) fails with.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the PostgreSQL server at {server} was refused: its TLS certificate failed verification ({reason}); \
     check the host name and the URL's sslrootcert"
)]
pub struct CertificateRefused {
    /// The server, `host:port`.
    pub server: String,
    /// What verification found, as rustls reports it.
    pub reason: rustls::CertificateError,
}

/// The certificate failure behind a driver error, if that is what it was.
fn certificate_refused(server: &str, err: &tokio_postgres::Error) -> Option<CertificateRefused> {
    dream_tls::invalid_certificate(err).map(|reason| CertificateRefused {
        server: server.to_owned(),
        reason,
    })
}

/// Maps a pool error (no connection could be had: nothing was sent) from `server`.
pub(crate) fn map_pool(
    op: &'static str,
    err: &PoolError,
    server: &str,
    secret: Option<&str>,
) -> StoreError {
    if let PoolError::Backend(e) = err
        && let Some(refused) = certificate_refused(server, e)
    {
        return StoreError::backend(false, refused);
    }
    let detail = match err {
        PoolError::Backend(e) => describe(e),
        PoolError::Timeout(_) => "timed out waiting for a connection".to_owned(),
        PoolError::Closed => "the connection pool is closed".to_owned(),
        _ => "the connection pool failed".to_owned(),
    };
    let retryable = !matches!(err, PoolError::Closed)
        && !matches!(err, PoolError::Backend(e) if matches!(kind(e), Kind::Refused { retry: false }));
    StoreError::backend(
        retryable,
        PgFailure {
            op,
            detail: dream_tls::redact(detail, secret),
        },
    )
}

/// A write whose outcome could not be resolved.
pub(crate) fn unknown_outcome(op: &'static str, key: Option<&Key>) -> StoreError {
    StoreError::backend(
        false,
        PgFailure {
            op,
            detail: format!(
                "the connection was lost before the server answered and reading back{} could not tell \
                 whether the write was committed; read the record before writing again",
                key.map(|k| format!(" {k}")).unwrap_or_default()
            ),
        },
    )
}

/// A reply the statements never produce.
pub(crate) fn unexpected_reply(op: &'static str) -> StoreError {
    StoreError::backend(
        false,
        PgFailure {
            op,
            detail: "unexpected reply from the server".to_owned(),
        },
    )
}

/// The error's text with the server's message (never a parameter value: the
/// store's statements raise no errors that quote their arguments).
fn describe(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            let mut text = err.to_string();
            let mut source = std::error::Error::source(err);
            while let Some(inner) = source {
                text.push_str(": ");
                text.push_str(&inner.to_string());
                source = inner.source();
            }
            text
        }
    }
}

/// The epoch status codes of the functions and reads, as errors.
pub(crate) fn epoch_error(status: i32) -> Option<StoreError> {
    match status {
        crate::schema::EPOCH_MISSING => Some(StoreError::Corrupt {
            key: None,
            reason: EPOCH_MISSING.to_owned(),
        }),
        crate::schema::EPOCH_CHANGED => Some(StoreError::Incompatible {
            reason: EPOCH_CHANGED.to_owned(),
        }),
        _ => None,
    }
}
