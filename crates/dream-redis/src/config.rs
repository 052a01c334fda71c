//! Where the store is and how to reach it. The password lives only inside the
//! parsed connection info; nothing here prints it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dream_core::store::DEFAULT_MAX_VALUE_SIZE;
use dream_core::store_url::{Backend, StoreUrl};
use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo};

/// The environment variable holding the Redis URL (password included, if any).
pub const URL_ENV: &str = dream_core::store_url::REDIS_URL_ENV;

/// The environment variable naming a PEM file of CA certificates that a
/// `rediss://` server's certificate must chain to (instead of the public roots).
pub const CA_FILE_ENV: &str = "DREAM_REDIS_CA_FILE";

/// The key prefix used when none is configured.
pub const DEFAULT_PREFIX: &str = "dream";

/// Longest prefix accepted.
const MAX_PREFIX_LEN: usize = 64;

/// A configuration that could not be built. `Display` never shows the URL or a
/// password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The environment variable is not set.
    #[error("environment variable {0} is not set")]
    MissingEnv(&'static str),
    /// The environment variable is not valid UTF-8.
    #[error("environment variable {0} is not valid UTF-8")]
    NotUnicode(&'static str),
    /// The URL is not one this store accepts.
    #[error("invalid Redis URL: {reason}")]
    InvalidUrl {
        /// Why (never the URL itself).
        reason: &'static str,
    },
    /// The CA file could not be used, or was given for a plain (non-TLS) URL.
    #[error("Redis CA file {}: {reason}", .path.display())]
    CaFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The key prefix is not acceptable.
    #[error("invalid store prefix: {reason}")]
    InvalidPrefix {
        /// Why.
        reason: &'static str,
    },
    /// The URL file could not be used.
    #[error("Redis URL file {}: {reason}", .path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why (never its contents).
        reason: String,
    },
}

impl From<dream_tls::UrlSourceError> for ConfigError {
    fn from(err: dream_tls::UrlSourceError) -> Self {
        match err {
            dream_tls::UrlSourceError::MissingEnv(name) => ConfigError::MissingEnv(name),
            dream_tls::UrlSourceError::NotUnicode(name) => ConfigError::NotUnicode(name),
            dream_tls::UrlSourceError::File { path, reason } => ConfigError::File { path, reason },
        }
    }
}

/// How to reach a Redis store: server, database, credentials, key prefix and limits.
///
/// `Debug` shows the server, database and prefix; a password shows as `<redacted>`.
#[derive(Clone)]
pub struct RedisOptions {
    pub(crate) connection: ConnectionInfo,
    pub(crate) prefix: String,
    pub(crate) max_value_size: usize,
    pub(crate) response_timeout: Duration,
    pub(crate) connection_timeout: Duration,
    pub(crate) expected_epoch: Option<String>,
    pub(crate) create: bool,
    /// PEM CA certificates for `rediss://` (`None`: the public web roots).
    pub(crate) ca: Option<Vec<u8>>,
}

impl RedisOptions {
    /// A configuration from a URL: `redis://[user][:password@]host[:port][/db]`,
    /// `rediss://…` (TLS, the server's certificate verified against the public web
    /// roots or [`with_ca_file`](Self::with_ca_file)) or
    /// `unix:///path/to/socket[?db=N]`. The prefix is [`DEFAULT_PREFIX`].
    /// `rediss://…#insecure` (no verification) is refused.
    pub fn from_url(url: &str) -> Result<Self, ConfigError> {
        let url = url.trim();
        let (scheme, _) = url.split_once("://").ok_or(ConfigError::InvalidUrl {
            reason: "expected redis://host[:port][/db] or unix:///path",
        })?;
        if Backend::of_scheme(scheme) != Some(Backend::Redis) {
            return Err(ConfigError::InvalidUrl {
                reason: "unsupported scheme (expected redis:// or unix://)",
            });
        }
        let connection = url
            .into_connection_info()
            .map_err(|_| ConfigError::InvalidUrl {
                reason: "the URL could not be parsed (expected redis://[user][:password@]host[:port][/db] or unix:///path[?db=N])",
            })?;
        if connection.redis.db < 0 {
            return Err(ConfigError::InvalidUrl {
                reason: "the database number is negative",
            });
        }
        if matches!(
            connection.addr,
            ConnectionAddr::TcpTls { insecure: true, .. }
        ) {
            return Err(ConfigError::InvalidUrl {
                reason: "#insecure would skip verifying the server's certificate; give its CA with DREAM_REDIS_CA_FILE instead",
            });
        }
        Ok(RedisOptions {
            connection,
            prefix: DEFAULT_PREFIX.to_owned(),
            max_value_size: DEFAULT_MAX_VALUE_SIZE,
            response_timeout: Duration::from_secs(10),
            connection_timeout: Duration::from_secs(5),
            expected_epoch: None,
            create: true,
            ca: None,
        })
    }

    /// A configuration from a store URL once resolved ([`StoreUrl::resolve`]):
    /// its connection URL, as [`from_url`](Self::from_url) takes it, and its
    /// `?prefix=P`, as [`with_prefix`](Self::with_prefix) takes it.
    pub fn from_store_url(url: &StoreUrl) -> Result<Self, ConfigError> {
        let (connection, prefix) = dream_tls::server_url(url, Backend::Redis)
            .map_err(|reason| ConfigError::InvalidUrl { reason })?;
        let config = Self::from_url(connection)?;
        match prefix {
            Some(prefix) => config.with_prefix(prefix),
            None => Ok(config),
        }
    }

    /// A configuration from the URL in [`URL_ENV`] (`DREAM_REDIS_URL`).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_env_value(std::env::var(URL_ENV))
    }

    fn from_env_value(value: Result<String, std::env::VarError>) -> Result<Self, ConfigError> {
        Self::from_url(&dream_tls::env_url(URL_ENV, value)?)
    }

    /// A configuration from a file holding the URL (surrounding whitespace ignored).
    ///
    /// The file must be a regular file (not a symlink), owned by this user, not
    /// readable or writable by group or others (`chmod 600`), and at most 4 KiB.
    /// The file is read on a blocking thread.
    pub async fn from_file(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        Self::from_url(&dream_tls::file_url(path.as_ref()).await?)
    }

    /// The same configuration with another key prefix: 1 to 64 characters of
    /// `[A-Za-z0-9_-]`, starting with a letter or digit. Stores with different
    /// prefixes on one Redis are independent.
    pub fn with_prefix(mut self, prefix: &str) -> Result<Self, ConfigError> {
        validate_prefix(prefix)?;
        self.prefix = prefix.to_owned();
        Ok(self)
    }

    /// The same configuration with another value cap (default 16 MiB).
    pub fn with_max_value_size(mut self, max: usize) -> Self {
        self.max_value_size = max;
        self
    }

    /// How long one command may wait for its answer (default 10 s).
    pub fn with_response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// How long one connection attempt may take (default 5 s).
    pub fn with_connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// Refuse to open unless the store's epoch is exactly `epoch` (as returned by
    /// [`RedisStore::epoch`](crate::RedisStore::epoch) earlier): a caller that
    /// remembers the epoch detects a wipe even across its own restarts.
    pub fn expecting_epoch(mut self, epoch: impl Into<String>) -> Self {
        self.expected_epoch = Some(epoch.into());
        self
    }

    /// Trust only the CA certificates in the PEM file `path` (read now, at most
    /// 1 MiB) for a `rediss://` server, instead of the public web roots. Refused
    /// for a plain URL, where it would suggest a protection the connection lacks.
    pub fn with_ca_file(mut self, path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let fail = |reason: String| ConfigError::CaFile {
            path: path.to_path_buf(),
            reason,
        };
        if !self.is_tls() {
            return Err(fail(
                "a CA file needs a rediss:// (TLS) URL; this one is plain".to_owned(),
            ));
        }
        self.ca = Some(dream_tls::read_ca_file(path).map_err(|e| fail(e.reason))?);
        Ok(self)
    }

    /// [`with_ca_file`](Self::with_ca_file) with the file named by [`CA_FILE_ENV`]
    /// (`DREAM_REDIS_CA_FILE`), if that variable is set and not empty.
    pub fn with_ca_file_from_env(self) -> Result<Self, ConfigError> {
        match std::env::var_os(CA_FILE_ENV) {
            Some(path) if !path.is_empty() => self.with_ca_file(PathBuf::from(path)),
            _ => Ok(self),
        }
    }

    /// Whether the connection is TLS (`rediss://`).
    pub fn is_tls(&self) -> bool {
        matches!(self.connection.addr, ConnectionAddr::TcpTls { .. })
    }

    /// Refuse to create the store: opening fails unless it already exists.
    pub fn without_create(mut self) -> Self {
        self.create = false;
        self
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The database number from the URL.
    pub fn database(&self) -> i64 {
        self.connection.redis.db
    }

    /// `host:port` or `unix:<path>`; never credentials.
    pub fn server(&self) -> String {
        describe_addr(&self.connection.addr)
    }

    pub(crate) fn password(&self) -> Option<&str> {
        self.connection.redis.password.as_deref()
    }
}

impl fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisOptions")
            .field("server", &self.server())
            .field("database", &self.connection.redis.db)
            .field("username", &self.connection.redis.username)
            .field("password", &self.password().map(|_| dream_tls::Redacted))
            .field("prefix", &self.prefix)
            .field("max_value_size", &self.max_value_size)
            .field("response_timeout", &self.response_timeout)
            .field("connection_timeout", &self.connection_timeout)
            .field("expected_epoch", &self.expected_epoch)
            .field("create", &self.create)
            .field("custom_ca", &self.ca.is_some())
            .finish()
    }
}

pub(crate) fn describe_addr(addr: &ConnectionAddr) -> String {
    match addr {
        ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
        ConnectionAddr::TcpTls { host, port, .. } => format!("{host}:{port} (tls)"),
        ConnectionAddr::Unix(path) => format!("unix:{}", path.display()),
    }
}

fn validate_prefix(prefix: &str) -> Result<(), ConfigError> {
    let mut chars = prefix.chars();
    match chars.next() {
        None => {
            return Err(ConfigError::InvalidPrefix {
                reason: "it is empty",
            });
        }
        Some(c) if !c.is_ascii_alphanumeric() => {
            return Err(ConfigError::InvalidPrefix {
                reason: "it must start with an ASCII letter or digit",
            });
        }
        Some(_) => {}
    }
    if prefix.len() > MAX_PREFIX_LEN {
        return Err(ConfigError::InvalidPrefix {
            reason: "it is longer than 64 characters",
        });
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(ConfigError::InvalidPrefix {
            reason: "only ASCII letters, digits, '_' and '-' are allowed",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_with_database_and_password_parses_and_hides_the_password() {
        let config = RedisOptions::from_url("redis://alice:pa55-WORD@10.1.2.3:6390/7").unwrap();
        assert_eq!(config.database(), 7);
        assert_eq!(config.server(), "10.1.2.3:6390");
        assert_eq!(config.password(), Some("pa55-WORD"));
        let shown = format!("{config:?}");
        assert!(!shown.contains("pa55-WORD"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        assert!(shown.contains("alice"), "{shown}");
    }

    #[test]
    fn unix_socket_url_parses() {
        let config = RedisOptions::from_url("unix:///run/redis/redis.sock?db=2").unwrap();
        assert_eq!(config.database(), 2);
        assert_eq!(config.server(), "unix:/run/redis/redis.sock");
    }

    #[test]
    fn tls_urls_parse_and_insecure_is_refused() {
        let config = RedisOptions::from_url("rediss://:secret@host:6380/3").unwrap();
        assert!(config.is_tls());
        assert_eq!(
            (config.server().as_str(), config.database()),
            ("host:6380 (tls)", 3)
        );
        assert!(!RedisOptions::from_url("redis://host").unwrap().is_tls());
        let err = RedisOptions::from_url("rediss://:secret@host:6380/0#insecure").unwrap_err();
        assert!(matches!(err, ConfigError::InvalidUrl { .. }), "{err:?}");
        assert!(!err.to_string().contains("secret"), "{err}");
    }

    #[test]
    fn ca_files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let tls = RedisOptions::from_url("rediss://host:6380").unwrap();
        let missing = dir.path().join("missing.pem");
        let err = tls.clone().with_ca_file(&missing).unwrap_err();
        assert!(matches!(err, ConfigError::CaFile { .. }), "{err:?}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let err = tls.clone().with_ca_file(&empty).unwrap_err();
        assert!(err.to_string().contains("no PEM certificate"), "{err}");
        let broken = dir.path().join("broken.pem");
        std::fs::write(
            &broken,
            "-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let err = tls.clone().with_ca_file(&broken).unwrap_err();
        assert!(err.to_string().contains("not valid PEM"), "{err}");
        // A CA for a plain connection would suggest a protection it lacks.
        let plain = RedisOptions::from_url("redis://host").unwrap();
        let err = plain.with_ca_file(&empty).unwrap_err();
        assert!(err.to_string().contains("rediss://"), "{err}");
    }

    #[test]
    fn bad_urls_are_refused_without_echoing_them() {
        for url in [
            "",
            "localhost:6379",
            "http://:hunter2-secret@host/",
            "redis://:hunter2-secret@host:notaport/",
            "redis://:hunter2-secret@host:6379/notadb",
            "redis://:hunter2-secret@host:6379/-3",
        ] {
            let err = RedisOptions::from_url(url).unwrap_err();
            assert!(
                matches!(err, ConfigError::InvalidUrl { .. }),
                "{url}: {err:?}"
            );
            let shown = format!("{err} {err:?}");
            assert!(!shown.contains("hunter2"), "{shown}");
        }
    }

    #[test]
    fn store_urls_build_the_configuration_with_their_prefix() {
        let url = StoreUrl::parse("valkey://10.0.0.5:6390/3?prefix=team").unwrap();
        let config = RedisOptions::from_store_url(&url).unwrap();
        assert_eq!(
            (config.server().as_str(), config.database(), config.prefix()),
            ("10.0.0.5:6390", 3, "team")
        );
        let tls = StoreUrl::parse("valkeys://host:6380").unwrap();
        assert!(RedisOptions::from_store_url(&tls).unwrap().is_tls());
        let from_env = StoreUrl::parse("redis")
            .unwrap()
            .resolve("redis://:hunter2-secret@127.0.0.1:7000/4");
        let config = RedisOptions::from_store_url(&from_env).unwrap();
        assert_eq!(config.password(), Some("hunter2-secret"));
        assert_eq!(config.prefix(), DEFAULT_PREFIX);
        let bad_prefix = StoreUrl::parse("redis://h?prefix=a:b").unwrap();
        assert!(matches!(
            RedisOptions::from_store_url(&bad_prefix),
            Err(ConfigError::InvalidPrefix { .. })
        ));
    }

    #[test]
    fn store_urls_of_another_backend_unread_or_garbled_are_refused() {
        // A URL file or variable holding garbage, another backend's URL or a
        // trailing line: a typed error that never echoes it.
        for full in [
            "not a url :hunter2-secret",
            "postgres://u:hunter2-secret@h/db",
            "redis://:hunter2-secret@h:6379/0\ngarbage",
        ] {
            let url = StoreUrl::parse("redis").unwrap().resolve(full);
            let err = RedisOptions::from_store_url(&url).unwrap_err();
            assert!(
                matches!(err, ConfigError::InvalidUrl { .. }),
                "{full}: {err:?}"
            );
            assert!(!format!("{err} {err:?}").contains("hunter2"), "{err}");
        }
        for url in ["redis", "fs:/tmp/x", "postgres://h/db"] {
            let url = StoreUrl::parse(url).unwrap();
            let err = RedisOptions::from_store_url(&url).unwrap_err();
            assert!(matches!(err, ConfigError::InvalidUrl { .. }), "{err:?}");
        }
    }

    #[test]
    fn env_lookup_without_the_variable_is_a_clear_error() {
        let err = RedisOptions::from_env_value(Err(std::env::VarError::NotPresent)).unwrap_err();
        assert!(matches!(err, ConfigError::MissingEnv(URL_ENV)), "{err:?}");
        assert!(err.to_string().contains(URL_ENV));
        let err = RedisOptions::from_env_value(Err(std::env::VarError::NotUnicode(
            std::ffi::OsString::from("x"),
        )))
        .unwrap_err();
        assert!(matches!(err, ConfigError::NotUnicode(URL_ENV)), "{err:?}");
        let config = RedisOptions::from_env_value(Ok("redis://127.0.0.1:7000/4".into())).unwrap();
        assert_eq!(
            (config.server().as_str(), config.database()),
            ("127.0.0.1:7000", 4)
        );
    }

    #[test]
    fn prefixes_are_validated() {
        let config = RedisOptions::from_url("redis://127.0.0.1").unwrap();
        assert_eq!(config.prefix(), DEFAULT_PREFIX);
        for ok in ["a", "team-1", "A_b-C", &"x".repeat(64)] {
            assert_eq!(config.clone().with_prefix(ok).unwrap().prefix(), ok);
        }
        for bad in [
            "",
            "-a",
            "_a",
            "a:b",
            "a{b}",
            "a*",
            "a b",
            "é",
            &"x".repeat(65),
        ] {
            assert!(
                matches!(
                    config.clone().with_prefix(bad),
                    Err(ConfigError::InvalidPrefix { .. })
                ),
                "{bad:?}"
            );
        }
    }
}
