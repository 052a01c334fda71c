//! Turning redis-rs errors into `StoreError`s that never carry a password.

use std::fmt;

use dream_core::{Key, StoreError};
use redis::{ErrorKind, RedisError};

/// Why a store refuses to work once its epoch key is gone.
pub(crate) const EPOCH_MISSING: &str = "the store's epoch key is missing: this Redis lost the store's data \
     (restart without persistence, failover to an empty replica, or a flush); refusing to \
     reissue versions and fences";

/// Why a store refuses to work once its epoch key changed.
pub(crate) const EPOCH_CHANGED: &str = "the store's epoch changed: the store was wiped and re-created \
     since this process opened it; refusing to mix its versions and fences with the new store's";

/// A Redis failure, described without values, keys' contents or passwords.
#[derive(Debug)]
pub(crate) struct RedisFailure {
    op: &'static str,
    detail: String,
}

impl fmt::Display for RedisFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "redis {} failed: {}", self.op, self.detail)
    }
}

impl std::error::Error for RedisFailure {}

/// A `rediss://` server whose certificate failed verification: not signed by a
/// trusted CA, not valid for the host name, expired, …. Never retried. It is the
/// source of the [`StoreError::Backend`] that [`RedisStore::open`](crate::RedisStore::open) returns.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the Redis server at {server} was refused: its TLS certificate failed verification ({reason}); \
     check the host name and the CA file (DREAM_REDIS_CA_FILE)"
)]
pub struct CertificateRefused {
    /// The server, `host:port (tls)`.
    pub server: String,
    /// What verification found, as rustls reports it.
    pub reason: rustls::CertificateError,
}

/// The certificate failure behind a connection error, if that is what it was.
pub(crate) fn certificate_refused(server: &str, err: &RedisError) -> Option<CertificateRefused> {
    dream_tls::invalid_certificate(err).map(|reason| CertificateRefused {
        server: server.to_owned(),
        reason,
    })
}

/// Whether an error is a connection problem that a later attempt may not have.
pub(crate) fn is_transient(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_timeout()
        || matches!(
            err.kind(),
            ErrorKind::TryAgain
                | ErrorKind::ClusterDown
                | ErrorKind::MasterDown
                | ErrorKind::BusyLoadingError
                | ErrorKind::ReadOnly
        )
}

/// Maps a redis error for operation `op` on `key` (if any), scrubbing `secret`
/// from its text.
pub(crate) fn map_error(
    op: &'static str,
    key: Option<&Key>,
    err: RedisError,
    secret: Option<&str>,
) -> StoreError {
    if err.code() == Some("WRONGTYPE") {
        return StoreError::Corrupt {
            key: key.cloned(),
            reason: "a key of this store holds a value of the wrong Redis type (foreign data under the store's prefix)".to_owned(),
        };
    }
    let retryable = is_transient(&err);
    StoreError::backend(
        retryable,
        RedisFailure {
            op,
            detail: dream_tls::redact(err.to_string(), secret),
        },
    )
}

/// A failure to reach `server` (its address as [`describe_addr`] shows it,
/// never a password).
///
/// [`describe_addr`]: crate::config::describe_addr
pub(crate) fn connect_error(server: &str, err: RedisError, secret: Option<&str>) -> StoreError {
    StoreError::backend(
        is_transient(&err),
        RedisFailure {
            op: "connect",
            detail: format!("{server}: {}", dream_tls::redact(err.to_string(), secret)),
        },
    )
}

/// A reply the scripts never produce.
pub(crate) fn unexpected_reply(op: &'static str) -> StoreError {
    StoreError::backend(
        false,
        RedisFailure {
            op,
            detail: "unexpected reply from the server's script".to_owned(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_scrubbed_and_classified() {
        let err = RedisError::from((
            ErrorKind::AuthenticationFailed,
            "auth failed",
            "the password s3cr3t-pw was refused".to_owned(),
        ));
        let mapped = map_error("open", None, err, Some("s3cr3t-pw"));
        let shown = format!("{mapped} {mapped:?}");
        assert!(!shown.contains("s3cr3t-pw"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        assert!(!mapped.is_retryable());

        let io = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(map_error("get", None, io, None).is_retryable());
    }
}
