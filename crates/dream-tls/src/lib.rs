//! What the network stores (dream-redis, dream-postgres) share to connect
//! safely, so that a CA file means the same thing, a refused certificate reads
//! the same, a URL comes from the environment or from a file holding it with its
//! password the same way, and a password is hidden the same way, on every
//! backend. Its own crate rather than a module of dream-core: dream-core does no
//! I/O and carries no TLS stack, and every store depends on it.
//!
//! They also share how a store URL names their server ([`server_url`]), what a
//! store shows of the server it reaches ([`Endpoint`]) and the check of the
//! epoch a caller expects ([`check_expected_epoch`]).
//!
//! Each backend keeps its own `ConfigError`, naming itself ("invalid Redis
//! URL", "PostgreSQL URL file …"); what is shared here returns the reason alone,
//! or [`UrlSourceError`] for the backend to convert.

use std::error::Error as StdError;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use dream_core::StoreError;
use dream_core::store_url::{Backend, Place, StoreUrl};
use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Largest URL file accepted, in bytes.
pub const MAX_URL_FILE: u64 = 4096;

/// Why a URL file cannot be used. `Display` is the reason alone (never the
/// file's contents); the caller names the file in its own error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct UrlFileError {
    /// Why.
    pub reason: String,
}

/// Reads a file holding a store URL with its password, surrounding whitespace
/// removed. The file must be a regular file (a symbolic link is not followed),
/// owned by this user, not accessible by group or others (`chmod 600`), at most
/// [`MAX_URL_FILE`] bytes of UTF-8, and not empty. Blocking: call it off the
/// async runtime.
pub fn read_url_file(path: &Path) -> Result<String, UrlFileError> {
    let fail = |reason: &str| UrlFileError {
        reason: reason.to_owned(),
    };
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(|errno| match errno {
        Errno::LOOP => fail("it is a symbolic link; refusing to follow it"),
        Errno::NOENT => fail("it does not exist"),
        Errno::ACCESS => fail("permission denied"),
        other => UrlFileError {
            reason: format!("cannot open it: {other}"),
        },
    })?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| UrlFileError {
        reason: format!("cannot stat it: {e}"),
    })?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(fail("it is not a regular file"));
    }
    if stat.st_uid != rustix::process::geteuid().as_raw() {
        return Err(fail("it is owned by another user"));
    }
    if stat.st_mode & 0o077 != 0 {
        return Err(fail(
            "it is accessible by group or others; run chmod 600 on it",
        ));
    }
    let mut text = String::new();
    std::fs::File::from(fd)
        .take(MAX_URL_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|_| fail("it could not be read as UTF-8 text"))?;
    if text.len() as u64 > MAX_URL_FILE {
        return Err(fail("it is larger than 4 KiB"));
    }
    let url = text.trim();
    if url.is_empty() {
        return Err(fail("it is empty"));
    }
    Ok(url.to_owned())
}

/// Why a store's URL could not be had from the environment or from a file.
/// `Display` never shows the URL; a backend converts it into its own
/// `ConfigError`, which names the backend.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlSourceError {
    /// The environment variable is not set.
    #[error("environment variable {0} is not set")]
    MissingEnv(&'static str),
    /// The environment variable is not valid UTF-8.
    #[error("environment variable {0} is not valid UTF-8")]
    NotUnicode(&'static str),
    /// The URL file could not be used.
    #[error("URL file {}: {reason}", .path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why (never its contents).
        reason: String,
    },
}

/// The URL in environment variable `name`, given `std::env::var(name)`.
pub fn env_url(
    name: &'static str,
    value: Result<String, std::env::VarError>,
) -> Result<String, UrlSourceError> {
    value.map_err(|e| match e {
        std::env::VarError::NotPresent => UrlSourceError::MissingEnv(name),
        std::env::VarError::NotUnicode(_) => UrlSourceError::NotUnicode(name),
    })
}

/// The URL in the file `path`, checked and read by [`read_url_file`] on a
/// blocking thread.
pub async fn file_url(path: &Path) -> Result<String, UrlSourceError> {
    let owned = path.to_path_buf();
    let fail = |reason: String| UrlSourceError::File {
        path: path.to_path_buf(),
        reason,
    };
    tokio::task::spawn_blocking(move || read_url_file(&owned))
        .await
        .map_err(|_| fail("the reading thread failed".to_owned()))?
        .map_err(|e| fail(e.reason))
}

/// The connection URL and the store's own parameter (Redis key prefix,
/// PostgreSQL schema) of a store URL naming `backend`'s server, once resolved
/// ([`StoreUrl::resolve`]). The error is the reason alone, for the backend's
/// `ConfigError::InvalidUrl`.
pub fn server_url(url: &StoreUrl, backend: Backend) -> Result<(&str, Option<&str>), &'static str> {
    let server = match (backend, url.place()) {
        (Backend::Redis, Place::Redis(server)) | (Backend::Postgres, Place::Postgres(server)) => {
            server
        }
        _ => return Err("the store URL names another backend"),
    };
    let unread = match backend {
        Backend::Postgres => "the URL is still to be read from DREAM_POSTGRES_URL or a URL file",
        _ => "the URL is still to be read from DREAM_REDIS_URL or a URL file",
    };
    let connection = server.connection().ok_or(unread)?;
    Ok((connection, server.namespace()))
}

/// Which server and database a network store talks to, as the store describes
/// itself, with the password kept only to scrub it from error text: `Debug`
/// (see [`Endpoint::debug_fields`]) shows it as [`REDACTED`].
#[derive(Clone)]
pub struct Endpoint<D> {
    /// The server, `host:port` or a unix socket; never credentials.
    pub server: String,
    /// The database: Redis's number, PostgreSQL's name.
    pub database: D,
    password: Option<String>,
}

impl<D: fmt::Debug> Endpoint<D> {
    /// `server` and `database`, with the `password` to scrub from error text.
    pub fn new(server: String, database: D, password: Option<String>) -> Self {
        Endpoint {
            server,
            database,
            password,
        }
    }

    /// The password, to scrub from error text ([`redact`]); never to show.
    pub fn password(&self) -> Option<&str> {
        self.password.as_deref()
    }

    /// Adds `server`, `database` and `password` (as [`REDACTED`]) to a store's
    /// `Debug`, which goes on with the store's own fields.
    pub fn debug_fields<'s, 'a, 'b: 'a>(
        &self,
        out: &'s mut fmt::DebugStruct<'a, 'b>,
    ) -> &'s mut fmt::DebugStruct<'a, 'b> {
        out.field("server", &self.server)
            .field("database", &self.database)
            .field("password", &self.password.as_ref().map(|_| Redacted))
    }
}

impl<D: fmt::Debug> fmt::Debug for Endpoint<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.debug_fields(&mut f.debug_struct("Endpoint")).finish()
    }
}

/// Refuses to open a store whose epoch is not the one the caller expects (as
/// given to the backend's `expecting_epoch`): it was wiped and re-created since.
pub fn check_expected_epoch(expected: Option<&str>, epoch: &str) -> Result<(), StoreError> {
    match expected {
        Some(expected) if expected != epoch => Err(StoreError::Incompatible {
            reason: "the store's epoch is not the expected one: it was wiped and re-created"
                .to_owned(),
        }),
        _ => Ok(()),
    }
}

/// What stands for a password wherever a store describes itself: in `Debug`,
/// and in an error's text (one definition, beside the store URL's).
pub use dream_core::store_url::REDACTED;

/// A password in `Debug` output: shows as [`REDACTED`].
pub struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// `text` with every occurrence of `secret` replaced by [`REDACTED`]; an absent
/// or empty secret changes nothing.
pub fn redact(mut text: String, secret: Option<&str>) -> String {
    if let Some(secret) = secret.filter(|s| !s.is_empty()) {
        text = text.replace(secret, REDACTED);
    }
    text
}

/// Largest CA file accepted, in bytes.
pub const MAX_CA_FILE: u64 = 1024 * 1024;

/// Why a CA file cannot be used. `Display` is the reason alone; the caller names
/// the file in its own error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct CaFileError {
    /// Why.
    pub reason: String,
}

/// Reads a PEM file of CA certificates: at most [`MAX_CA_FILE`] bytes, every
/// PEM block valid, at least one certificate. Returns the PEM bytes.
pub fn read_ca_file(path: &Path) -> Result<Vec<u8>, CaFileError> {
    let fail = |reason: String| CaFileError { reason };
    let mut pem = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_CA_FILE + 1).read_to_end(&mut pem))
        .map_err(|e| fail(format!("cannot read it: {e}")))?;
    if pem.len() as u64 > MAX_CA_FILE {
        return Err(fail("it is larger than 1 MiB".to_owned()));
    }
    let mut count = 0;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        cert.map_err(|e| fail(format!("it is not valid PEM: {e}")))?;
        count += 1;
    }
    if count == 0 {
        return Err(fail("it holds no PEM certificate".to_owned()));
    }
    Ok(pem)
}

/// The certificate failure somewhere in `err`'s chain of sources (looking inside
/// `io::Error`s too, where drivers wrap rustls's error), if that is what it was.
pub fn invalid_certificate(err: &(dyn StdError + 'static)) -> Option<rustls::CertificateError> {
    let mut next = Some(err);
    while let Some(current) = next {
        let inner = current
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|inner| inner as &(dyn StdError + 'static));
        if let Some(rustls::Error::InvalidCertificate(reason)) =
            inner.unwrap_or(current).downcast_ref::<rustls::Error>()
        {
            return Some(reason.clone());
        }
        next = current.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_ca_file(&dir.path().join("missing.pem")).unwrap_err();
        assert!(err.reason.starts_with("cannot read it"), "{err}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let err = read_ca_file(&empty).unwrap_err();
        assert_eq!(err.reason, "it holds no PEM certificate");
        let broken = dir.path().join("broken.pem");
        std::fs::write(
            &broken,
            "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let err = read_ca_file(&broken).unwrap_err();
        assert!(err.reason.contains("not valid PEM"), "{err}");
        let large = dir.path().join("large.pem");
        std::fs::write(&large, vec![b'\n'; MAX_CA_FILE as usize + 1]).unwrap();
        let err = read_ca_file(&large).unwrap_err();
        assert_eq!(err.reason, "it is larger than 1 MiB");
    }

    #[test]
    fn redact_hides_the_secret() {
        assert_eq!(
            redact("bad s3cr3t here".into(), Some("s3cr3t")),
            "bad <redacted> here"
        );
        assert_eq!(redact("x".into(), Some("")), "x");
        assert_eq!(redact("x".into(), None), "x");
        assert_eq!(format!("{:?}", Some(Redacted)), "Some(<redacted>)");
    }

    #[test]
    fn urls_come_from_the_environment_and_from_files() {
        let err = env_url("DREAM_X_URL", Err(std::env::VarError::NotPresent)).unwrap_err();
        assert_eq!(err, UrlSourceError::MissingEnv("DREAM_X_URL"));
        let odd = std::env::VarError::NotUnicode(std::ffi::OsString::from("x"));
        let err = env_url("DREAM_X_URL", Err(odd)).unwrap_err();
        assert_eq!(err, UrlSourceError::NotUnicode("DREAM_X_URL"));
        assert_eq!(env_url("DREAM_X_URL", Ok("u".into())).unwrap(), "u");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let err = runtime.block_on(file_url(&missing)).unwrap_err();
        assert_eq!(
            err,
            UrlSourceError::File {
                path: missing,
                reason: "it does not exist".to_owned()
            }
        );
    }

    #[test]
    fn server_urls_are_had_only_from_the_backend_s_own_resolved_urls() {
        let url = StoreUrl::parse("redis")
            .unwrap()
            .resolve("redis://:pw@h:6379/0");
        assert_eq!(
            server_url(&url, Backend::Redis),
            Ok(("redis://:pw@h:6379/0", None))
        );
        let url = StoreUrl::parse("postgres://h/db?schema=team").unwrap();
        assert_eq!(
            server_url(&url, Backend::Postgres),
            Ok(("postgres://h/db", Some("team")))
        );
        for (url, backend) in [
            ("redis://h", Backend::Postgres),
            ("postgres://h/db", Backend::Redis),
            ("fs:/tmp/x", Backend::Redis),
            ("sqlite:/tmp/x.db", Backend::Postgres),
        ] {
            let url = StoreUrl::parse(url).unwrap();
            assert_eq!(
                server_url(&url, backend),
                Err("the store URL names another backend")
            );
        }
        let unread = StoreUrl::parse("postgres").unwrap();
        let reason = server_url(&unread, Backend::Postgres).unwrap_err();
        assert!(reason.contains("DREAM_POSTGRES_URL"), "{reason}");
        let unread = StoreUrl::parse("redis").unwrap();
        let reason = server_url(&unread, Backend::Redis).unwrap_err();
        assert!(reason.contains("DREAM_REDIS_URL"), "{reason}");
    }

    #[test]
    fn only_an_expected_epoch_other_than_the_store_s_is_refused() {
        assert!(check_expected_epoch(None, "e1").is_ok());
        assert!(check_expected_epoch(Some("e1"), "e1").is_ok());
        let err = check_expected_epoch(Some("e0"), "e1").unwrap_err();
        assert!(matches!(err, StoreError::Incompatible { .. }), "{err:?}");
    }

    #[test]
    fn an_endpoint_shows_no_password() {
        let endpoint = Endpoint::new("h:6379".to_owned(), 3, Some("s3cr3t".to_owned()));
        assert_eq!(endpoint.password(), Some("s3cr3t"));
        assert_eq!(
            format!("{endpoint:?}"),
            "Endpoint { server: \"h:6379\", database: 3, password: Some(<redacted>) }"
        );
        let open = Endpoint::new("h:5432".to_owned(), Some("db".to_owned()), None);
        assert_eq!(
            format!("{open:?}"),
            "Endpoint { server: \"h:5432\", database: Some(\"db\"), password: None }"
        );
    }

    #[test]
    fn a_certificate_error_is_found_inside_io_errors_and_sources() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::other(tls);
        assert_eq!(
            invalid_certificate(&io),
            Some(rustls::CertificateError::UnknownIssuer)
        );
        #[derive(Debug, thiserror::Error)]
        #[error("connecting failed")]
        struct Wrapper(#[source] std::io::Error);
        let wrapped = Wrapper(io);
        assert_eq!(
            invalid_certificate(&wrapped),
            Some(rustls::CertificateError::UnknownIssuer)
        );
        assert_eq!(invalid_certificate(&std::io::Error::other("plain")), None);
    }
}
