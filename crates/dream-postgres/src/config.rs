//! Where the store is and how to reach it. The password lives only inside the
//! parsed `tokio_postgres::Config`; nothing here prints it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use dream_core::store::DEFAULT_MAX_VALUE_SIZE;
use dream_core::store_url::{Backend, StoreUrl};
use tokio_postgres::config::{Host, SslMode};

/// The environment variable holding the PostgreSQL URL (password included, if any).
pub const URL_ENV: &str = dream_core::store_url::POSTGRES_URL_ENV;

/// The schema used when none is configured.
pub const DEFAULT_SCHEMA: &str = "dream";

/// Longest schema name accepted (PostgreSQL's identifier limit is 63 bytes).
const MAX_SCHEMA_LEN: usize = 63;

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
    #[error("invalid PostgreSQL URL: {reason}")]
    InvalidUrl {
        /// Why (never the URL itself).
        reason: &'static str,
    },
    /// The URL's TLS settings cannot be honoured: `sslmode=require` (which would
    /// not check who the server is), or `sslrootcert` without `verify-ca` or
    /// `verify-full`.
    #[error("invalid TLS settings in the PostgreSQL URL: {reason}")]
    Tls {
        /// Why.
        reason: &'static str,
    },
    /// The `sslrootcert` file could not be used.
    #[error("PostgreSQL CA file (sslrootcert) {}: {reason}", .path.display())]
    CaFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The file that should hold the URL could not be used.
    #[error("PostgreSQL URL file {}: {reason}", .path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why (never its contents).
        reason: String,
    },
    /// The schema name is not acceptable.
    #[error("invalid store schema: {reason}")]
    InvalidSchema {
        /// Why.
        reason: &'static str,
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

/// How to reach a PostgreSQL store: server, database, credentials, schema and limits.
///
/// `Debug` shows the server, database, user and schema; a password shows as
/// `<redacted>`.
#[derive(Clone)]
pub struct PostgresOptions {
    pub(crate) pg: tokio_postgres::Config,
    pub(crate) schema: String,
    pub(crate) max_value_size: usize,
    pub(crate) pool_size: usize,
    pub(crate) statement_timeout: Duration,
    pub(crate) expected_epoch: Option<String>,
    pub(crate) create: bool,
    pub(crate) tls: Option<TlsSettings>,
}

/// How a TLS connection verifies the server.
#[derive(Clone)]
pub(crate) struct TlsSettings {
    /// `verify-full`: the certificate must be valid for the host name too.
    pub(crate) verify_host: bool,
    /// PEM CA certificates from `sslrootcert` (`None`: the public web roots).
    pub(crate) ca: Option<Vec<u8>>,
}

impl PostgresOptions {
    /// A configuration from a URL:
    /// `postgres://[user[:password]@]host[:port]/database[?param=value&...]`
    /// (`postgresql://` too; `host=/path/to/dir` in the query reaches a unix
    /// socket). The schema is [`DEFAULT_SCHEMA`].
    ///
    /// TLS: `sslmode=verify-full` (the certificate chains to a trusted CA and is
    /// valid for the host) or `verify-ca` (chain only), with `sslrootcert=FILE`
    /// (PEM CA certificates, read now) or, without it or with
    /// `sslrootcert=system`, the public web roots. `require` is refused with
    /// [`ConfigError::Tls`]: it encrypts without checking who answers.
    /// `disable`, `allow` and `prefer` connect in plain text.
    pub fn from_url(url: &str) -> Result<Self, ConfigError> {
        let url = url.trim();
        let (scheme, rest) = url.split_once("://").ok_or(ConfigError::InvalidUrl {
            reason: "expected postgres://[user@]host[:port]/database",
        })?;
        if Backend::of_scheme(scheme) != Some(Backend::Postgres) {
            return Err(ConfigError::InvalidUrl {
                reason: "unsupported scheme (expected postgres:// or postgresql://)",
            });
        }
        // sslmode and sslrootcert are read here, never by the driver: it knows no
        // verify-* modes and would fall back to plain text on `prefer`.
        let mut query_pairs = Vec::new();
        let mut verify_host = None;
        let mut root_cert = None;
        let base = match rest.split_once('?') {
            Some((base, query)) => {
                for pair in query.split('&').filter(|p| !p.is_empty()) {
                    let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
                    match name {
                        "sslmode" => {
                            verify_host = match value {
                                "disable" | "allow" | "prefer" => None,
                                "verify-full" => Some(true),
                                "verify-ca" => Some(false),
                                "require" => {
                                    return Err(ConfigError::Tls {
                                        reason: "sslmode=require encrypts without checking who the server is; \
                                                 use sslmode=verify-full (with sslrootcert=FILE for a private CA)",
                                    });
                                }
                                _ => {
                                    return Err(ConfigError::InvalidUrl {
                                        reason: "unknown sslmode",
                                    });
                                }
                            };
                        }
                        "sslrootcert" => root_cert = Some(value),
                        "schema" => {
                            return Err(ConfigError::InvalidUrl {
                                reason: "the schema is not a connection parameter: use with_schema (the CLI takes ?schema=S)",
                            });
                        }
                        _ => query_pairs.push(pair),
                    }
                }
                base
            }
            None => rest,
        };
        let tls = match (verify_host, root_cert) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err(ConfigError::Tls {
                    reason: "sslrootcert needs sslmode=verify-full or sslmode=verify-ca",
                });
            }
            (Some(verify_host), None | Some("system")) => Some(TlsSettings {
                verify_host,
                ca: None,
            }),
            (Some(verify_host), Some(path)) => Some(TlsSettings {
                verify_host,
                ca: Some(read_ca_file(&percent_decode(path))?),
            }),
        };
        let mut normalized = format!("postgresql://{base}");
        if !query_pairs.is_empty() {
            normalized.push('?');
            normalized.push_str(&query_pairs.join("&"));
        }
        let mut pg = tokio_postgres::Config::from_str(&normalized).map_err(|_| {
            ConfigError::InvalidUrl {
                reason: "the URL could not be parsed (expected postgres://[user[:password]@]host[:port]/database[?param=value])",
            }
        })?;
        if pg.get_hosts().is_empty() {
            return Err(ConfigError::InvalidUrl {
                reason: "the URL names no host",
            });
        }
        if pg.get_user().is_none() {
            let user = std::env::var("USER").unwrap_or_else(|_| "postgres".to_owned());
            pg.user(&user);
        }
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(Duration::from_secs(5));
        }
        pg.ssl_mode(if tls.is_some() {
            SslMode::Require
        } else {
            SslMode::Disable
        });
        if pg.get_application_name().is_none() {
            pg.application_name("dream");
        }
        Ok(PostgresOptions {
            pg,
            schema: DEFAULT_SCHEMA.to_owned(),
            max_value_size: DEFAULT_MAX_VALUE_SIZE,
            pool_size: 16,
            statement_timeout: Duration::from_secs(30),
            expected_epoch: None,
            create: true,
            tls,
        })
    }

    /// A configuration from a store URL once resolved ([`StoreUrl::resolve`]):
    /// its connection URL, as [`from_url`](Self::from_url) takes it, and its
    /// `?schema=S`, as [`with_schema`](Self::with_schema) takes it.
    pub fn from_store_url(url: &StoreUrl) -> Result<Self, ConfigError> {
        let (connection, schema) = dream_tls::server_url(url, Backend::Postgres)
            .map_err(|reason| ConfigError::InvalidUrl { reason })?;
        let config = Self::from_url(connection)?;
        match schema {
            Some(schema) => config.with_schema(schema),
            None => Ok(config),
        }
    }

    /// A configuration from a file holding the URL (surrounding whitespace
    /// ignored), checked as [`dream_tls::read_url_file`] says: a regular file of
    /// this user's, mode 0600, at most 4 KiB. Read on a blocking thread.
    pub async fn from_file(path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        Self::from_url(&dream_tls::file_url(path.as_ref()).await?)
    }

    /// A configuration from the URL in [`URL_ENV`] (`DREAM_POSTGRES_URL`).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_env_value(std::env::var(URL_ENV))
    }

    fn from_env_value(value: Result<String, std::env::VarError>) -> Result<Self, ConfigError> {
        Self::from_url(&dream_tls::env_url(URL_ENV, value)?)
    }

    /// The same configuration with another schema: 1 to 63 characters of
    /// `[a-z0-9_]`, starting with a letter or `_`. Stores in different schemas of
    /// one database are independent.
    pub fn with_schema(mut self, schema: &str) -> Result<Self, ConfigError> {
        validate_schema(schema)?;
        self.schema = schema.to_owned();
        Ok(self)
    }

    /// The same configuration with another value cap (default 16 MiB, at most 1 GiB - 1).
    pub fn with_max_value_size(mut self, max: usize) -> Self {
        self.max_value_size = max.min((1 << 30) - 1);
        self
    }

    /// How many connections the pool keeps at most (default 16).
    pub fn with_pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// How long one statement may run on the server (default 30 s).
    pub fn with_statement_timeout(mut self, timeout: Duration) -> Self {
        self.statement_timeout = timeout;
        self
    }

    /// Refuse to open unless the store's epoch is exactly `epoch` (as returned by
    /// [`PostgresStore::epoch`](crate::PostgresStore::epoch) earlier).
    pub fn expecting_epoch(mut self, epoch: impl Into<String>) -> Self {
        self.expected_epoch = Some(epoch.into());
        self
    }

    /// Refuse to create the store: opening fails unless it already exists.
    pub fn without_create(mut self) -> Self {
        self.create = false;
        self
    }

    /// The schema.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The database name.
    pub fn database(&self) -> Option<&str> {
        self.pg.get_dbname()
    }

    /// `host:port` (or the unix socket directory); never credentials.
    pub fn server(&self) -> String {
        let port = self.pg.get_ports().first().copied().unwrap_or(5432);
        match self.pg.get_hosts().first() {
            Some(Host::Tcp(host)) => format!("{host}:{port}"),
            Some(Host::Unix(path)) => format!("unix:{}", path.display()),
            None => "?".to_owned(),
        }
    }

    /// Whether connections use TLS (`sslmode=verify-full` or `verify-ca`).
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    pub(crate) fn password(&self) -> Option<String> {
        self.pg
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned())
    }
}

impl fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("server", &self.server())
            .field("database", &self.pg.get_dbname())
            .field("user", &self.pg.get_user())
            .field(
                "password",
                &self.pg.get_password().map(|_| dream_tls::Redacted),
            )
            .field("schema", &self.schema)
            .field("max_value_size", &self.max_value_size)
            .field("pool_size", &self.pool_size)
            .field("statement_timeout", &self.statement_timeout)
            .field("expected_epoch", &self.expected_epoch)
            .field("create", &self.create)
            .field(
                "tls",
                &self
                    .tls
                    .as_ref()
                    .map(|t| match (t.verify_host, t.ca.is_some()) {
                        (true, true) => "verify-full, sslrootcert",
                        (true, false) => "verify-full, public roots",
                        (false, true) => "verify-ca, sslrootcert",
                        (false, false) => "verify-ca, public roots",
                    }),
            )
            .finish()
    }
}

/// A URL query value with its `%XX` escapes decoded (paths may hold them).
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads and checks a PEM file of CA certificates ([`dream_tls::read_ca_file`]).
fn read_ca_file(path: &str) -> Result<Vec<u8>, ConfigError> {
    dream_tls::read_ca_file(Path::new(path)).map_err(|e| ConfigError::CaFile {
        path: PathBuf::from(path),
        reason: e.reason,
    })
}

fn validate_schema(schema: &str) -> Result<(), ConfigError> {
    let mut chars = schema.chars();
    match chars.next() {
        None => {
            return Err(ConfigError::InvalidSchema {
                reason: "it is empty",
            });
        }
        Some(c) if !(c.is_ascii_lowercase() || c == '_') => {
            return Err(ConfigError::InvalidSchema {
                reason: "it must start with a lowercase ASCII letter or '_'",
            });
        }
        Some(_) => {}
    }
    if schema.len() > MAX_SCHEMA_LEN {
        return Err(ConfigError::InvalidSchema {
            reason: "it is longer than 63 characters",
        });
    }
    if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        return Err(ConfigError::InvalidSchema {
            reason: "only lowercase ASCII letters, digits and '_' are allowed",
        });
    }
    if schema.starts_with("pg_") || schema == "information_schema" || schema == "public" {
        return Err(ConfigError::InvalidSchema {
            reason: "it is a system schema or public",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_with_password_parses_and_hides_the_password() {
        let config =
            PostgresOptions::from_url("postgres://alice:pa55-WORD@10.1.2.3:5433/memories").unwrap();
        assert_eq!(config.server(), "10.1.2.3:5433");
        assert_eq!(config.database(), Some("memories"));
        assert_eq!(config.password().as_deref(), Some("pa55-WORD"));
        let shown = format!("{config:?}");
        assert!(!shown.contains("pa55-WORD"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        assert!(shown.contains("alice"), "{shown}");
        assert_eq!(config.schema(), DEFAULT_SCHEMA);
    }

    #[test]
    fn postgresql_scheme_and_unix_socket_parse() {
        let config = PostgresOptions::from_url(
            "postgresql://bob@/db?host=/var/run/postgresql&application_name=x",
        )
        .unwrap();
        assert_eq!(config.server(), "unix:/var/run/postgresql");
    }

    #[test]
    fn tls_modes_parse_and_unverified_ones_are_refused() {
        let full =
            PostgresOptions::from_url("postgres://u:secret@h/db?sslmode=verify-full").unwrap();
        assert!(full.is_tls());
        assert_eq!(full.pg.get_ssl_mode(), SslMode::Require);
        let tls = full.tls.as_ref().unwrap();
        assert!(tls.verify_host && tls.ca.is_none());
        let ca = PostgresOptions::from_url("postgres://h/db?sslmode=verify-ca&sslrootcert=system")
            .unwrap();
        assert!(!ca.tls.as_ref().unwrap().verify_host);
        for url in [
            "postgres://u:secret@h/db?sslmode=require",
            "postgres://u:secret@h/db?sslrootcert=/x.pem",
            "postgres://u:secret@h/db?sslmode=prefer&sslrootcert=/x.pem",
        ] {
            let err = PostgresOptions::from_url(url).unwrap_err();
            assert!(matches!(err, ConfigError::Tls { .. }), "{url}: {err:?}");
            let shown = err.to_string();
            assert!(
                shown.contains("ssl") && !shown.contains("secret"),
                "{shown}"
            );
        }
        let plain = PostgresOptions::from_url("postgres://h/db?sslmode=prefer").unwrap();
        assert_eq!(plain.pg.get_ssl_mode(), SslMode::Disable);
        assert!(!plain.is_tls());
    }

    #[test]
    fn ca_files_are_read_and_checked() {
        let dir = std::env::temp_dir().join(format!("dream-pg-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing file.pem");
        let url = |path: &std::path::Path| {
            format!(
                "postgres://h/db?sslmode=verify-full&sslrootcert={}",
                path.display().to_string().replace(' ', "%20")
            )
        };
        let err = PostgresOptions::from_url(&url(&missing)).unwrap_err();
        assert!(
            matches!(&err, ConfigError::CaFile { path, .. } if *path == missing),
            "{err:?}"
        );
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "nothing\n").unwrap();
        let err = PostgresOptions::from_url(&url(&empty)).unwrap_err();
        assert!(err.to_string().contains("no PEM certificate"), "{err}");
        let broken = dir.join("broken.pem");
        std::fs::write(
            &broken,
            "-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let err = PostgresOptions::from_url(&url(&broken)).unwrap_err();
        assert!(err.to_string().contains("not valid PEM"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_urls_are_refused_without_echoing_them() {
        for url in [
            "",
            "localhost:5432",
            "redis://:hunter2-secret@host/",
            "postgres://:hunter2-secret@host:notaport/db",
            "postgres://u:hunter2-secret@h/db?sslmode=bogus",
            "postgres://u:hunter2-secret@h/db?schema=x",
        ] {
            let err = PostgresOptions::from_url(url).unwrap_err();
            assert!(
                matches!(err, ConfigError::InvalidUrl { .. }),
                "{url}: {err:?}"
            );
            let shown = format!("{err} {err:?}");
            assert!(!shown.contains("hunter2"), "{shown}");
        }
    }

    #[test]
    fn store_urls_build_the_configuration_with_their_schema() {
        let url =
            StoreUrl::parse("postgresql://u@10.1.2.3:5433/mem?schema=team&sslmode=verify-full")
                .unwrap();
        let config = PostgresOptions::from_store_url(&url).unwrap();
        assert_eq!(config.server(), "10.1.2.3:5433");
        assert_eq!(config.database(), Some("mem"));
        assert_eq!(config.schema(), "team");
        assert!(config.is_tls());
        let from_env = StoreUrl::parse("postgres?schema=team")
            .unwrap()
            .resolve("postgres://alice:hunter2-secret@h/db");
        let config = PostgresOptions::from_store_url(&from_env).unwrap();
        assert_eq!(config.password().as_deref(), Some("hunter2-secret"));
        assert_eq!(config.schema(), "team");
        let bad_schema = StoreUrl::parse("postgres://h/db?schema=public").unwrap();
        assert!(matches!(
            PostgresOptions::from_store_url(&bad_schema),
            Err(ConfigError::InvalidSchema { .. })
        ));
    }

    #[test]
    fn store_urls_of_another_backend_unread_or_garbled_are_refused() {
        for full in [
            "not a url :hunter2-secret",
            "redis://:hunter2-secret@h:6379/0",
            "postgres://u:hunter2-secret@h:notaport/db",
        ] {
            let url = StoreUrl::parse("postgres").unwrap().resolve(full);
            let err = PostgresOptions::from_store_url(&url).unwrap_err();
            assert!(
                matches!(err, ConfigError::InvalidUrl { .. }),
                "{full}: {err:?}"
            );
            assert!(!format!("{err} {err:?}").contains("hunter2"), "{err}");
        }
        for url in ["postgres", "sqlite:/tmp/x.db", "redis://h"] {
            let url = StoreUrl::parse(url).unwrap();
            let err = PostgresOptions::from_store_url(&url).unwrap_err();
            assert!(matches!(err, ConfigError::InvalidUrl { .. }), "{err:?}");
        }
    }

    #[test]
    fn env_lookup_without_the_variable_is_a_clear_error() {
        let err = PostgresOptions::from_env_value(Err(std::env::VarError::NotPresent)).unwrap_err();
        assert!(matches!(err, ConfigError::MissingEnv(URL_ENV)), "{err:?}");
        assert!(err.to_string().contains(URL_ENV));
        let config =
            PostgresOptions::from_env_value(Ok("postgres://127.0.0.1:7000/x".into())).unwrap();
        assert_eq!(config.server(), "127.0.0.1:7000");
    }

    #[test]
    fn schemas_are_validated() {
        let config = PostgresOptions::from_url("postgres://127.0.0.1/db").unwrap();
        for ok in ["a", "team_1", "_x", &"x".repeat(63)] {
            assert_eq!(config.clone().with_schema(ok).unwrap().schema(), ok);
        }
        for bad in [
            "",
            "1a",
            "A",
            "a-b",
            "a\"b",
            "a b",
            "é",
            "pg_catalog",
            "public",
            &"x".repeat(64),
        ] {
            assert!(
                matches!(
                    config.clone().with_schema(bad),
                    Err(ConfigError::InvalidSchema { .. })
                ),
                "{bad:?}"
            );
        }
    }
}
