//! Store URLs: the one place that says which text names which store, what its
//! options are and what it may not hold. The command line, the seal-key
//! locator, `doctor` and `events` parse a store URL here; the network backends
//! build their configuration from the parsed [`StoreUrl`] and take their
//! schemes from [`Backend::of_scheme`].
//!
//! What a store URL is:
//! - `fs:PATH` (a directory) and `sqlite:PATH` (a SQLite file): the path is not
//!   empty; a relative one is taken from the working directory.
//! - Redis: `redis://`, `rediss://` (TLS), `valkey://`, `valkeys://` (TLS),
//!   `unix://`, `redis+unix://` and `valkey+unix://`. The query takes
//!   `prefix=P` (the store's key prefix) and, on a Unix socket, whose path has
//!   no place for it, `db=N` (the database number).
//! - PostgreSQL: `postgres://` and `postgresql://`. `schema=S` is the store's
//!   schema; every other parameter (`sslmode`, `sslrootcert`, `host`, …) is the
//!   connection's, kept in order.
//! - `redis` and `postgres` alone, optionally with `?prefix=P` / `?schema=S`:
//!   the URL, with its password, is in `DREAM_REDIS_URL` / `DREAM_POSTGRES_URL`
//!   or in a private file ([`StoreUrl::source_env`], [`StoreUrl::resolve`]).
//!   No other parameter: those belong in the URL kept there.
//! - No password: a URL given on a command line shows in the process list, so
//!   `user:password@` and `password=` are refused. A URL from the environment
//!   or a file ([`StoreUrl::resolve`]) may hold one.
//! - `Display` is the text as given, which holds no password; `Debug` shows no
//!   more. The URL from the environment or a file is never shown.
//!
//! Scheme names compare without case. No I/O happens here: reading the
//! environment or a URL file (dream-tls) and resolving a path are the caller's.

use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable holding the Redis URL, with its password, behind `redis`.
pub const REDIS_URL_ENV: &str = "DREAM_REDIS_URL";

/// The environment variable holding the PostgreSQL URL, with its password, behind `postgres`.
pub const POSTGRES_URL_ENV: &str = "DREAM_POSTGRES_URL";

/// What stands for a password wherever a store describes itself.
pub const REDACTED: &str = "<redacted>";

/// The store URLs Dream takes, for the error that refuses another.
const EXPECTED: &str = "fs:PATH, sqlite:PATH, redis://host:port[/db][?prefix=P] or \
                        postgres://[user@]host[:port]/database[?schema=S]";

/// Which backend a store URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// A directory of files (`fs:PATH`).
    Fs,
    /// A SQLite file (`sqlite:PATH`).
    Sqlite,
    /// A Redis or Valkey server.
    Redis,
    /// A PostgreSQL server.
    Postgres,
}

impl Backend {
    /// The server backend a `scheme://` URL names, if any: the one list of
    /// Redis and PostgreSQL schemes.
    pub fn of_scheme(scheme: &str) -> Option<Backend> {
        match scheme.to_ascii_lowercase().as_str() {
            "redis" | "rediss" | "valkey" | "valkeys" | "unix" | "redis+unix" | "valkey+unix" => {
                Some(Backend::Redis)
            }
            "postgres" | "postgresql" => Some(Backend::Postgres),
            _ => None,
        }
    }

    /// The cargo feature a binary needs to open it.
    pub fn feature(self) -> &'static str {
        match self {
            Backend::Fs => "fs",
            Backend::Sqlite => "sqlite",
            Backend::Redis => "redis",
            Backend::Postgres => "postgres",
        }
    }

    /// The environment variable holding a server's URL (`None` for a path store).
    pub fn url_env(self) -> Option<&'static str> {
        match self {
            Backend::Redis => Some(REDIS_URL_ENV),
            Backend::Postgres => Some(POSTGRES_URL_ENV),
            Backend::Fs | Backend::Sqlite => None,
        }
    }

    /// The store's own query parameter: the key prefix or the schema.
    fn namespace_parameter(self) -> &'static str {
        match self {
            Backend::Postgres => "schema",
            _ => "prefix",
        }
    }

    /// How a path store's URL starts.
    fn path_scheme(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite:",
            _ => "fs:",
        }
    }
}

/// A store URL that cannot be used. `Display` names the problem in the
/// person's terms and never shows a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreUrlError {
    /// No backend takes this URL.
    #[error("unknown store {shown}: expected {EXPECTED}")]
    Unknown {
        /// The URL as given, any password in it replaced by `<redacted>`.
        shown: String,
    },
    /// `fs:` or `sqlite:` without a path.
    #[error("the store path is empty")]
    EmptyPath,
    /// A password in the URL, which a command line would show to every user.
    #[error(
        "a password in --store would show in the process list: put the URL in {env} \
         or --url-file and pass --store {feature}",
        env = .backend.url_env().unwrap_or_default(),
        feature = .backend.feature()
    )]
    Password {
        /// The server the URL names.
        backend: Backend,
    },
    /// A Redis URL with a query parameter other than `prefix` (and, on a Unix
    /// socket, `db`).
    #[error(
        "a Redis store URL takes only the query parameter prefix=P (and db=N on a unix:// socket; \
         on TCP the database is the path, redis://host:port/N)"
    )]
    RedisQuery,
    /// `redis?…` or `postgres?…` with a parameter other than the store's own.
    #[error(
        "--store {feature} takes only ?{parameter}=…; other parameters belong in \
         the URL in {env} or --url-file",
        feature = .backend.feature(),
        parameter = .backend.namespace_parameter(),
        env = .backend.url_env().unwrap_or_default()
    )]
    ShorthandQuery {
        /// The server the URL names.
        backend: Backend,
    },
}

/// Where a store lives, as its URL says (`Debug` shows no password: see
/// [`ServerUrl`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A directory of files.
    Fs(PathBuf),
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A Redis or Valkey server.
    Redis(ServerUrl),
    /// A PostgreSQL server.
    Postgres(ServerUrl),
}

/// A server store's URL: what the backend connects with and the store's own
/// parameter. `Debug` never shows the connection URL.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerUrl {
    /// The URL the backend connects with, without the store's own parameter;
    /// `None` while it is still to be read from the environment or a file.
    connection: Option<String>,
    /// `prefix=P` (Redis) or `schema=S` (PostgreSQL).
    namespace: Option<String>,
    /// The whole URL the store is known by, the store's parameter in its place:
    /// what [`StoreUrl::locator`] reads. `None` until resolved.
    whole: Option<String>,
    /// The query given with `redis` or `postgres` alone (empty otherwise).
    shorthand_query: String,
}

impl ServerUrl {
    /// The URL the backend connects with (a password only when it came from the
    /// environment or a file); `None` until [`StoreUrl::resolve`].
    pub fn connection(&self) -> Option<&str> {
        self.connection.as_deref()
    }

    /// The store's key prefix (Redis) or schema (PostgreSQL), when given.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
}

impl fmt::Debug for ServerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerUrl")
            .field("resolved", &self.connection.is_some())
            .field("namespace", &self.namespace)
            .finish()
    }
}

/// A parsed, checked store URL (see the module docs for the rules). `Debug`
/// shows no password: the text as given holds none, and see [`ServerUrl`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreUrl {
    /// The text as given; never a password.
    given: String,
    place: Place,
}

impl StoreUrl {
    /// Parses a store URL as a person gives it (`--store`, `DREAM_STORE`, a
    /// project's `dream.toml`).
    pub fn parse(text: &str) -> Result<StoreUrl, StoreUrlError> {
        for backend in [Backend::Fs, Backend::Sqlite] {
            if let Some(path) = text.strip_prefix(backend.path_scheme()) {
                if path.is_empty() {
                    return Err(StoreUrlError::EmptyPath);
                }
                return Ok(StoreUrl::at_path(backend, PathBuf::from(path)));
            }
        }
        for backend in [Backend::Redis, Backend::Postgres] {
            if let Some(query) = shorthand_query(text, backend.feature()) {
                return parse_shorthand(text, backend, query);
            }
        }
        let backend = text
            .split_once("://")
            .and_then(|(scheme, _)| Backend::of_scheme(scheme))
            .ok_or_else(|| StoreUrlError::Unknown {
                shown: without_password(text),
            })?;
        let (base, query) = text.split_once('?').unwrap_or((text, ""));
        let (namespace, connection) = split_query(backend, base, query)?;
        if has_password(base) {
            return Err(StoreUrlError::Password { backend });
        }
        let server = ServerUrl {
            connection: Some(connection),
            namespace,
            whole: Some(text.to_owned()),
            shorthand_query: String::new(),
        };
        Ok(StoreUrl::server(text, backend, server))
    }

    fn at_path(backend: Backend, path: PathBuf) -> StoreUrl {
        let given = format!("{}{}", backend.path_scheme(), path.display());
        let place = match backend {
            Backend::Sqlite => Place::Sqlite(path),
            _ => Place::Fs(path),
        };
        StoreUrl { given, place }
    }

    fn server(text: &str, backend: Backend, server: ServerUrl) -> StoreUrl {
        let place = match backend {
            Backend::Postgres => Place::Postgres(server),
            _ => Place::Redis(server),
        };
        StoreUrl {
            given: text.to_owned(),
            place,
        }
    }

    /// Where the store lives.
    pub fn place(&self) -> &Place {
        &self.place
    }

    /// Which backend the URL names.
    pub fn backend(&self) -> Backend {
        match self.place {
            Place::Fs(_) => Backend::Fs,
            Place::Sqlite(_) => Backend::Sqlite,
            Place::Redis(_) => Backend::Redis,
            Place::Postgres(_) => Backend::Postgres,
        }
    }

    /// The path of a directory or SQLite store.
    pub fn path(&self) -> Option<&Path> {
        match &self.place {
            Place::Fs(path) | Place::Sqlite(path) => Some(path),
            Place::Redis(_) | Place::Postgres(_) => None,
        }
    }

    /// The same kind of path store at `path`; a server store as it is.
    pub fn moved_to(&self, path: impl Into<PathBuf>) -> StoreUrl {
        match self.path() {
            Some(_) => StoreUrl::at_path(self.backend(), path.into()),
            None => self.clone(),
        }
    }

    /// The environment variable `redis` or `postgres` alone reads its URL from,
    /// while that URL (or a `--url-file`'s) is still to be given to
    /// [`StoreUrl::resolve`]; `None` for any other URL.
    pub fn source_env(&self) -> Option<&'static str> {
        match &self.place {
            Place::Redis(server) | Place::Postgres(server) if server.connection.is_none() => {
                self.backend().url_env()
            }
            _ => None,
        }
    }

    /// `redis` or `postgres` alone with `full`, the URL read from the
    /// environment or a file (a password allowed): the backend checks it when it
    /// connects. Any other URL is returned as it is.
    pub fn resolve(mut self, full: &str) -> StoreUrl {
        if self.source_env().is_none() {
            return self;
        }
        let backend = self.backend();
        if let Place::Redis(server) | Place::Postgres(server) = &mut self.place {
            server.whole = Some(match backend {
                Backend::Postgres => join_query(full, &server.shorthand_query),
                _ => format!("{full}{}", server.shorthand_query),
            });
            server.connection = Some(full.to_owned());
        }
        self
    }

    /// Where a server store lives, as its seal key is filed: its whole URL
    /// without the user and password, the scheme in lowercase, `postgresql`
    /// spelled `postgres` and `valkey…` spelled `redis…` (one store, one key,
    /// whichever spelling names it). `None` for a path store (its locator is its resolved
    /// path, which takes the file system) and before [`StoreUrl::resolve`].
    pub fn locator(&self) -> Option<String> {
        let (Place::Redis(server) | Place::Postgres(server)) = &self.place else {
            return None;
        };
        let whole = server.whole.as_deref()?;
        let (scheme, rest) = whole.split_once("://").unwrap_or(("redis", whole));
        let scheme = scheme.to_ascii_lowercase();
        let scheme = match scheme.as_str() {
            "postgresql" => "postgres",
            "valkey" => "redis",
            "valkeys" => "rediss",
            "valkey+unix" => "redis+unix",
            other => other,
        };
        let host = |authority: &str| {
            authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host)
                .to_owned()
        };
        let rest = match rest.split_once('/') {
            Some((authority, path)) => format!("{}/{path}", host(authority)),
            None => host(rest),
        };
        Some(format!("{scheme}://{rest}"))
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.given)
    }
}

/// The query after `name` when `text` is `name` alone or `name?query`.
fn shorthand_query<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(name)?;
    match rest {
        "" => Some(""),
        _ => rest.strip_prefix('?'),
    }
}

/// `redis` or `postgres` alone: its store parameter, nothing else.
fn parse_shorthand(text: &str, backend: Backend, query: &str) -> Result<StoreUrl, StoreUrlError> {
    let (namespace, rest) = split_query(backend, "", query)?;
    if !rest.is_empty() {
        return Err(StoreUrlError::ShorthandQuery { backend });
    }
    let server = ServerUrl {
        connection: None,
        namespace,
        whole: None,
        shorthand_query: text[backend.feature().len()..].to_owned(),
    };
    Ok(StoreUrl::server(text, backend, server))
}

/// The store's parameter and the connection URL (`base` with the other
/// parameters) from a URL's `query`. Redis takes `prefix=P` alone (an empty
/// pair included); PostgreSQL keeps its other parameters, empty pairs dropped,
/// and refuses `password=`.
fn split_query(
    backend: Backend,
    base: &str,
    query: &str,
) -> Result<(Option<String>, String), StoreUrlError> {
    let parameter = backend.namespace_parameter();
    let mut namespace = None;
    let mut rest = Vec::new();
    if backend == Backend::Redis && !query.is_empty() {
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some((name, value)) if name == parameter => namespace = Some(value.to_owned()),
                // A socket path has no place for the database number: it is `db=N`.
                Some(("db", n))
                    if is_unix_socket(base)
                        && !n.is_empty()
                        && n.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    rest.push(pair)
                }
                _ => return Err(StoreUrlError::RedisQuery),
            }
        }
        return Ok((namespace, join_query(base, &rest.join("&"))));
    }
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some((name, value)) if name == parameter => namespace = Some(value.to_owned()),
            Some(("password", _)) => return Err(StoreUrlError::Password { backend }),
            _ => rest.push(pair),
        }
    }
    Ok((namespace, join_query(base, &rest.join("&"))))
}

/// Whether a Redis URL names a Unix socket (`unix://`, `redis+unix://`, `valkey+unix://`).
fn is_unix_socket(url: &str) -> bool {
    url.split_once("://").is_some_and(|(scheme, _)| {
        let scheme = scheme.to_ascii_lowercase();
        scheme == "unix" || scheme.ends_with("+unix")
    })
}

/// `url` with `query` (with or without its `?`) added to its own query.
fn join_query(url: &str, query: &str) -> String {
    let query = query.strip_prefix('?').unwrap_or(query);
    match (url.contains('?'), query.is_empty()) {
        (_, true) => url.to_owned(),
        (true, false) => format!("{url}&{query}"),
        (false, false) => format!("{url}?{query}"),
    }
}

/// The authority of a `scheme://` URL (the whole text without one).
fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split('/').next().unwrap_or("")
}

/// Whether a URL's authority carries a password (`user:pass@` or `:pass@`).
fn has_password(url: &str) -> bool {
    authority(url)
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

/// `url` with the password of its authority replaced by [`REDACTED`].
fn without_password(url: &str) -> String {
    let authority = authority(url);
    let Some((userinfo, _)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    let Some(colon) = userinfo.find(':') else {
        return url.to_owned();
    };
    // `authority` is a slice of `url`: where it starts there.
    let authority_at = authority.as_ptr() as usize - url.as_ptr() as usize;
    let (start, end) = (authority_at + colon + 1, authority_at + userinfo.len());
    format!("{}{REDACTED}{}", &url[..start], &url[end..])
}

#[cfg(test)]
mod tests;
