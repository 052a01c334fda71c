//! Store URLs: `fs:PATH`, `sqlite:PATH`, `redis://…`, `postgres://…`; and the encryption layer.
//! A backend this binary was built without is one clear error.

use std::path::Path;
use std::sync::Arc;

use dream::core::RecordStore;

use super::CliError;

/// Opens the store a URL names. `url_file` supplies the URL, with its password,
/// behind `--store redis` or `--store postgres`.
pub async fn open(url: &str, url_file: Option<&Path>) -> Result<Arc<dyn RecordStore>, CliError> {
    if let Some(path) = url.strip_prefix("fs:") {
        return open_fs(path).await;
    }
    if let Some(path) = url.strip_prefix("sqlite:") {
        return open_sqlite(path).await;
    }
    if url == "redis"
        || url.starts_with("redis://")
        || url.starts_with("rediss://")
        || url.starts_with("unix://")
    {
        return open_redis(url, url_file).await;
    }
    if is_postgres(url) {
        return open_postgres(url, url_file).await;
    }
    Err(CliError::usage(format!(
        "unknown store {}: expected fs:PATH, sqlite:PATH, redis://host:port[/db][?prefix=P] or postgres://[user@]host[:port]/database[?schema=S]",
        super::output::escape(url)
    )))
}

/// The name and capabilities of the directory or SQLite store a URL names, as
/// it will have them once made (`dream mcp` makes it at its first write).
#[cfg(feature = "mcp")]
pub fn info_before_made(url: &str) -> Result<dream::core::StoreInfo, CliError> {
    if url.starts_with("fs:") {
        return fs_info();
    }
    if url.starts_with("sqlite:") {
        return sqlite_info();
    }
    Err(CliError::usage(format!(
        "the store {} cannot be made later",
        super::output::escape(url)
    )))
}

#[cfg(all(feature = "mcp", feature = "fs"))]
fn fs_info() -> Result<dream::core::StoreInfo, CliError> {
    Ok(dream::fs::FsOptions::default().store_info())
}

#[cfg(all(feature = "mcp", not(feature = "fs")))]
fn fs_info() -> Result<dream::core::StoreInfo, CliError> {
    Err(not_built("fs"))
}

#[cfg(all(feature = "mcp", feature = "sqlite"))]
fn sqlite_info() -> Result<dream::core::StoreInfo, CliError> {
    Ok(dream::sqlite::SqliteOptions::default().store_info())
}

#[cfg(all(feature = "mcp", not(feature = "sqlite")))]
fn sqlite_info() -> Result<dream::core::StoreInfo, CliError> {
    Err(not_built("sqlite"))
}

/// Early notice of changes to the store a URL names, from a backend that can
/// hear other processes' writes (Redis pub/sub); `None` for one that cannot
/// (a directory, SQLite), whose readers poll. PostgreSQL `LISTEN`s.
pub async fn watch_changes(
    url: &str,
    url_file: Option<&Path>,
) -> Result<Option<tokio::sync::watch::Receiver<u64>>, CliError> {
    if url == "redis"
        || url.starts_with("redis://")
        || url.starts_with("rediss://")
        || url.starts_with("unix://")
    {
        return watch_redis(url, url_file).await;
    }
    if is_postgres(url) {
        return watch_postgres(url, url_file).await;
    }
    Ok(None)
}

#[cfg(feature = "postgres")]
async fn watch_postgres(
    url: &str,
    url_file: Option<&Path>,
) -> Result<Option<tokio::sync::watch::Receiver<u64>>, CliError> {
    let store = open_postgres_store(url, url_file).await?;
    Ok(Some(store.watch_changes().await?))
}

#[cfg(not(feature = "postgres"))]
async fn watch_postgres(
    _: &str,
    _: Option<&Path>,
) -> Result<Option<tokio::sync::watch::Receiver<u64>>, CliError> {
    Ok(None)
}

#[cfg(feature = "redis")]
async fn watch_redis(
    url: &str,
    url_file: Option<&Path>,
) -> Result<Option<tokio::sync::watch::Receiver<u64>>, CliError> {
    let store = open_redis_store(url, url_file).await?;
    Ok(Some(store.watch_changes().await?))
}

#[cfg(not(feature = "redis"))]
async fn watch_redis(
    _: &str,
    _: Option<&Path>,
) -> Result<Option<tokio::sync::watch::Receiver<u64>>, CliError> {
    Ok(None)
}

#[cfg(any(
    not(feature = "fs"),
    not(feature = "sqlite"),
    not(feature = "redis"),
    not(feature = "postgres"),
    not(feature = "encryption")
))]
fn not_built(feature: &str) -> CliError {
    CliError::usage(format!(
        "this dream was built without feature `{feature}`; rebuild with --features {feature}"
    ))
}

/// The full URL behind `--store redis` (from `--url-file` or
/// DREAM_REDIS_URL) and `--store postgres` (from DREAM_POSTGRES_URL), with the
/// flag's own `?query`; any other URL as it is. Names where a store lives (its
/// seal key is filed by it), never opens it.
pub fn resolve_shorthand(url: &str, url_file: Option<&Path>) -> Result<String, CliError> {
    let shorthand = |scheme: &str| {
        url.strip_prefix(scheme)
            .filter(|q| q.is_empty() || q.starts_with('?'))
            .map(str::to_owned)
    };
    let full = |env: &str, feature: &str| match url_file {
        Some(path) => read_url_file(path, feature),
        None => Ok(std::env::var(env).unwrap_or_default()),
    };
    if let Some(query) = shorthand("redis") {
        let full = full(REDIS_URL_ENV, "redis")?;
        return Ok(format!("{full}{query}"));
    }
    if let Some(query) = shorthand("postgres") {
        let full = full(POSTGRES_URL_ENV, "postgres")?;
        let query = query.strip_prefix('?').unwrap_or("");
        return Ok(match (full.contains('?'), query.is_empty()) {
            (_, true) => full,
            (true, false) => format!("{full}&{query}"),
            (false, false) => format!("{full}?{query}"),
        });
    }
    Ok(url.to_owned())
}

/// The URL in a `--url-file`, checked as the stores check it (a private regular
/// file, not a link; `dream_tls::read_url_file`), its refusal naming the file.
#[cfg(any(feature = "redis", feature = "postgres"))]
fn read_url_file(path: &Path, _feature: &str) -> Result<String, CliError> {
    dream_tls::read_url_file(path).map_err(|e| {
        CliError::usage(format!(
            "--url-file {}: {e}",
            super::output::escape(&path.display().to_string())
        ))
    })
}

#[cfg(not(any(feature = "redis", feature = "postgres")))]
fn read_url_file(_: &Path, feature: &str) -> Result<String, CliError> {
    Err(not_built(feature))
}

/// Environment variable holding the Redis URL for `--store redis`.
const REDIS_URL_ENV: &str = "DREAM_REDIS_URL";

/// The namespace only an encrypted store has (its key counters).
const ENCRYPTION_NAMESPACE: &str = "encryption";

/// Refuses, in the person's terms, a plaintext store opened with `--encrypt` or
/// an encrypted one opened without it (which would mix plaintext and ciphertext).
/// Returns the store's namespaces, for [`check_key_opens`].
pub async fn check_encryption(
    store: &dyn RecordStore,
    encrypt: bool,
) -> Result<Vec<dream::core::Namespace>, CliError> {
    let namespaces = store.namespaces().await?;
    let encrypted = is_encrypted(&namespaces);
    if encrypted {
        check_conversion(store).await?;
    }
    if encrypted && !encrypt {
        return Err(CliError::usage(
            "this store is encrypted: pass --encrypt with its key (DREAM_KEY or --key-file)",
        ));
    }
    if encrypt && !encrypted && !namespaces.is_empty() {
        return Err(CliError::usage(
            "this store is not encrypted: drop --encrypt (a plaintext store cannot be read \
             or written as an encrypted one)",
        ));
    }
    Ok(namespaces)
}

/// Whether a store's namespaces are an encrypted store's (or one part way
/// through a conversion).
pub fn is_encrypted(namespaces: &[dream::core::Namespace]) -> bool {
    namespaces
        .iter()
        .any(|n| n.as_str() == ENCRYPTION_NAMESPACE)
}

/// Refuses a store part way through `rekey --from-plain` or `--to-plain`
/// (running now, or interrupted), saying how it ends.
#[cfg(feature = "encryption")]
async fn check_conversion(store: &dyn RecordStore) -> Result<(), CliError> {
    use dream::encrypted::Direction;
    let Some(conversion) = dream::encrypted::conversion_in_progress(store).await? else {
        return Ok(());
    };
    let (what, command) = match conversion.to {
        Direction::Encrypted => ("encrypted", "dream --encrypt rekey --from-plain"),
        Direction::Plain => ("decrypted", "dream --encrypt rekey --to-plain"),
    };
    Err(CliError::usage(format!(
        "this store is being {what} in place by `{command}`: try again when it has finished \
         (if that command was interrupted, run it again with the same key to finish)"
    )))
}

/// Without the `encryption` feature no conversion can have started.
#[cfg(not(feature = "encryption"))]
async fn check_conversion(_: &dyn RecordStore) -> Result<(), CliError> {
    Ok(())
}

/// Reads one record through the encryption layer: a key that does not decrypt
/// it is named as such, never reported as a corrupt record.
/// `namespaces` are the inner store's, as [`check_encryption`] listed them.
pub async fn check_key_opens(
    store: &dyn RecordStore,
    namespaces: &[dream::core::Namespace],
) -> Result<(), CliError> {
    for namespace in namespaces {
        if namespace.as_str() == ENCRYPTION_NAMESPACE {
            continue;
        }
        let page = store.list(namespace, None, 1).await;
        let first = match page {
            Ok(page) => page.entries.into_iter().next(),
            Err(dream::core::StoreError::Corrupt { .. }) => return Err(wrong_key()),
            Err(e) => return Err(e.into()),
        };
        if first.is_some() {
            return Ok(());
        }
    }
    Ok(())
}

fn wrong_key() -> CliError {
    CliError::usage(
        "the key does not open this store (a wrong key, or the key from before `rekey`)",
    )
}

/// A store to be created at `path` needs its parent directory: name it when missing.
fn parent_exists(path: &str) -> Result<(), CliError> {
    let parent = Path::new(path)
        .parent()
        .filter(|p| !p.as_os_str().is_empty());
    match parent {
        Some(dir) if !dir.is_dir() => Err(CliError::usage(format!(
            "cannot create the store {}: the directory {} does not exist",
            super::output::escape(path),
            super::output::escape(&dir.display().to_string())
        ))),
        _ => Ok(()),
    }
}

fn empty_path(path: &str) -> Result<(), CliError> {
    if path.is_empty() {
        Err(CliError::usage("the store path is empty"))
    } else {
        Ok(())
    }
}

#[cfg(feature = "fs")]
async fn open_fs(path: &str) -> Result<Arc<dyn RecordStore>, CliError> {
    empty_path(path)?;
    parent_exists(path)?;
    Ok(Arc::new(dream::fs::FsStore::open(path).await?))
}

#[cfg(not(feature = "fs"))]
async fn open_fs(_: &str) -> Result<Arc<dyn RecordStore>, CliError> {
    Err(not_built("fs"))
}

#[cfg(feature = "sqlite")]
async fn open_sqlite(path: &str) -> Result<Arc<dyn RecordStore>, CliError> {
    empty_path(path)?;
    parent_exists(path)?;
    Ok(Arc::new(dream::sqlite::SqliteStore::open(path).await?))
}

#[cfg(not(feature = "sqlite"))]
async fn open_sqlite(_: &str) -> Result<Arc<dyn RecordStore>, CliError> {
    Err(not_built("sqlite"))
}

/// Splits `?prefix=P` off a Redis URL.
fn split_prefix(url: &str) -> Result<(&str, Option<&str>), CliError> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url, None));
    };
    let mut prefix = None;
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("prefix", value)) => prefix = Some(value),
            _ => {
                return Err(CliError::usage(
                    "a Redis store URL takes only the query parameter prefix=P",
                ));
            }
        }
    }
    Ok((base, prefix))
}

/// Whether a URL's authority carries a password (`user:pass@` or `:pass@`).
fn has_password(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or("");
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

#[cfg(feature = "redis")]
async fn open_redis(url: &str, url_file: Option<&Path>) -> Result<Arc<dyn RecordStore>, CliError> {
    Ok(Arc::new(open_redis_store(url, url_file).await?))
}

#[cfg(feature = "redis")]
async fn open_redis_store(
    url: &str,
    url_file: Option<&Path>,
) -> Result<dream::redis::RedisStore, CliError> {
    use dream::redis::{RedisOptions, RedisStore};
    let (base, prefix) = split_prefix(url)?;
    if has_password(base) {
        return Err(CliError::usage(
            "a password in --store would show in the process list: put the URL in DREAM_REDIS_URL or --url-file and pass --store redis",
        ));
    }
    let mut config = if base == "redis" {
        match url_file {
            Some(path) => RedisOptions::from_file(path).await?,
            None => RedisOptions::from_env()?,
        }
    } else {
        RedisOptions::from_url(base)?
    }
    .with_ca_file_from_env()?;
    if let Some(prefix) = prefix {
        config = config.with_prefix(prefix)?;
    }
    Ok(RedisStore::open(config).await?)
}

#[cfg(not(feature = "redis"))]
async fn open_redis(url: &str, _: Option<&Path>) -> Result<Arc<dyn RecordStore>, CliError> {
    let _ = (split_prefix(url), has_password(url));
    Err(not_built("redis"))
}

/// Whether a store URL names PostgreSQL: `postgres` alone (the URL is in
/// DREAM_POSTGRES_URL), optionally with `?schema=S`, or a `postgres://` /
/// `postgresql://` URL.
pub fn is_postgres(url: &str) -> bool {
    url == "postgres"
        || url.starts_with("postgres?")
        || url.starts_with("postgres://")
        || url.starts_with("postgresql://")
}

/// The environment variable `--store postgres` reads the URL from.
pub const POSTGRES_URL_ENV: &str = "DREAM_POSTGRES_URL";

/// Splits `schema=S` off a PostgreSQL URL's query; the other parameters stay
/// (they are connection parameters).
fn split_schema(url: &str) -> Result<(String, Option<String>), CliError> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), None));
    };
    let mut schema = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("schema", value)) => schema = Some(value.to_owned()),
            Some(("password", _)) => {
                return Err(CliError::usage(
                    "a password in --store would show in the process list: put the URL in DREAM_POSTGRES_URL or --url-file and pass --store postgres",
                ));
            }
            _ => rest.push(pair),
        }
    }
    let mut out = base.to_owned();
    if !rest.is_empty() {
        out.push('?');
        out.push_str(&rest.join("&"));
    }
    Ok((out, schema))
}

#[cfg(feature = "postgres")]
async fn open_postgres(
    url: &str,
    url_file: Option<&Path>,
) -> Result<Arc<dyn RecordStore>, CliError> {
    Ok(Arc::new(open_postgres_store(url, url_file).await?))
}

#[cfg(feature = "postgres")]
async fn open_postgres_store(
    url: &str,
    url_file: Option<&Path>,
) -> Result<dream::postgres::PostgresStore, CliError> {
    use dream::postgres::{PostgresOptions, PostgresStore};
    let (base, schema) = split_schema(url)?;
    if has_password(&base) {
        return Err(CliError::usage(
            "a password in --store would show in the process list: put the URL in DREAM_POSTGRES_URL or --url-file and pass --store postgres",
        ));
    }
    let mut config = if base == "postgres" {
        match url_file {
            Some(path) => PostgresOptions::from_file(path).await?,
            None => PostgresOptions::from_env()?,
        }
    } else {
        PostgresOptions::from_url(&base)?
    };
    if let Some(schema) = schema {
        config = config.with_schema(&schema)?;
    }
    Ok(PostgresStore::open(config).await?)
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(url: &str, _: Option<&Path>) -> Result<Arc<dyn RecordStore>, CliError> {
    let _ = split_schema(url)?;
    Err(not_built("postgres"))
}

/// The key `--encrypt` uses: its id and material.
#[cfg(feature = "encryption")]
pub type StoreKey = (dream::encrypted::KeyId, dream::encrypted::KeyMaterial);

/// Without the `encryption` feature there is no key type.
#[cfg(not(feature = "encryption"))]
pub type StoreKey = std::convert::Infallible;

/// Environment variable holding the encryption key (base64 of 32 bytes).
pub const KEY_ENV: &str = "DREAM_KEY";

/// Loads the key for `--encrypt` from `key_file` or DREAM_KEY.
#[cfg(feature = "encryption")]
pub fn load_key(key_file: Option<&Path>) -> Result<StoreKey, CliError> {
    keys::load(key_file, keys::KEY_ENV)
}

/// Without the `encryption` feature, `--encrypt` is one clear error.
#[cfg(not(feature = "encryption"))]
pub fn load_key(_: Option<&Path>) -> Result<StoreKey, CliError> {
    Err(not_built("encryption"))
}

/// Wraps `store` in encryption under `key`.
#[cfg(feature = "encryption")]
pub fn encrypt(store: Arc<dyn RecordStore>, (id, material): StoreKey) -> Arc<dyn RecordStore> {
    let ring = dream::encrypted::KeyRing::new(id, material);
    Arc::new(dream::encrypted::EncryptedStore::new(store, ring))
}

/// Without the `encryption` feature no key exists, so this cannot be called.
#[cfg(not(feature = "encryption"))]
pub fn encrypt(_: Arc<dyn RecordStore>, key: StoreKey) -> Arc<dyn RecordStore> {
    match key {}
}

/// `store` (an encrypted one over `raw` when `encrypted`) with every read
/// watched for a conversion another process begins meanwhile: such a read is a
/// clear "being encrypted or decrypted" error, never ciphertext or a wrong-key
/// error (see `dream::encrypted::ConversionWatch`).
#[cfg(feature = "encryption")]
pub fn watch_conversion(
    store: Arc<dyn RecordStore>,
    raw: Arc<dyn RecordStore>,
    encrypted: bool,
) -> Arc<dyn RecordStore> {
    Arc::new(dream::encrypted::ConversionWatch::new(
        store, raw, encrypted,
    ))
}

/// Without the `encryption` feature no conversion can begin: `store` as it is.
#[cfg(not(feature = "encryption"))]
pub fn watch_conversion(
    store: Arc<dyn RecordStore>,
    _: Arc<dyn RecordStore>,
    _: bool,
) -> Arc<dyn RecordStore> {
    store
}

/// Key loading for `--encrypt` and `rekey`.
#[cfg(feature = "encryption")]
pub mod keys {
    use std::path::Path;

    use dream::encrypted::{KeyId, KeyMaterial};
    use sha2::{Digest, Sha256};

    use crate::cli::CliError;

    pub use super::KEY_ENV;

    /// A key's id: the first four bytes of a hash of the key, so the same key
    /// always gets the same id and two keys almost surely differ.
    pub fn key_id(material: &KeyMaterial) -> KeyId {
        let digest = Sha256::new()
            .chain_update(b"dream key id v1\0")
            .chain_update(material.to_base64().as_bytes())
            .finalize();
        KeyId::new(u32::from_be_bytes([
            digest[0], digest[1], digest[2], digest[3],
        ]))
    }

    /// Loads a key from `file` if given, else from the environment variable `var`.
    pub fn load(file: Option<&Path>, var: &str) -> Result<(KeyId, KeyMaterial), CliError> {
        let material = match file {
            Some(path) => KeyMaterial::from_file(path)?,
            None => KeyMaterial::from_env(var).map_err(|e| {
                CliError::usage(format!(
                    "no encryption key: set {var} (base64 of 32 bytes) or pass --key-file ({e})"
                ))
            })?,
        };
        Ok((key_id(&material), material))
    }
}

/// Persistence checks for `doctor`: `(ok, line)` pairs; Redis without `appendonly` warns.
#[cfg(feature = "redis")]
pub async fn persistence_checks(url: &str, url_file: Option<&Path>) -> Vec<(bool, String)> {
    if !(url == "redis"
        || url.starts_with("redis://")
        || url.starts_with("rediss://")
        || url.starts_with("unix://"))
    {
        return Vec::new();
    }
    let store = match open_redis_store(url, url_file).await {
        Ok(store) => store,
        Err(_) => return Vec::new(),
    };
    let mut checks = Vec::new();
    match store.appendonly_enabled().await {
        Ok(Some(true)) => checks.push((true, "redis: appendonly is on".to_owned())),
        Ok(Some(false)) => checks.push((
            false,
            "redis: appendonly is off; a restart loses recent writes (Dream then refuses the wiped store by its epoch)".to_owned(),
        )),
        Ok(None) | Err(_) => checks.push((false, "redis: could not read the appendonly setting (CONFIG GET refused?)".to_owned())),
    }
    if let Ok(Some(policy)) = store.eviction_policy().await
        && policy != "noeviction"
    {
        checks.push((
            false,
            format!(
                "redis: maxmemory-policy is {policy}; evictions can drop records — use noeviction"
            ),
        ));
    }
    checks
}

/// Without Redis there is nothing to check.
#[cfg(not(feature = "redis"))]
pub async fn persistence_checks(_: &str, _: Option<&Path>) -> Vec<(bool, String)> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_passwords_and_prefixes() {
        assert!(has_password("redis://:secret@127.0.0.1:6379/0"));
        assert!(has_password("redis://user:secret@host"));
        assert!(!has_password("redis://user@host:6379"));
        assert!(!has_password("redis://127.0.0.1:6379/2"));
        assert_eq!(
            split_prefix("redis://h:1/2?prefix=team").unwrap(),
            ("redis://h:1/2", Some("team"))
        );
        assert!(split_prefix("redis://h?password=x").is_err());
    }

    #[test]
    fn postgres_urls_split_their_schema_and_refuse_passwords() {
        assert!(is_postgres("postgres"));
        assert!(is_postgres("postgres?schema=team"));
        assert!(is_postgres("postgresql://h/db"));
        assert!(!is_postgres("postgresx://h"));
        assert_eq!(
            split_schema("postgres://u@h:5/db?schema=team&sslmode=disable").unwrap(),
            (
                "postgres://u@h:5/db?sslmode=disable".to_owned(),
                Some("team".to_owned())
            )
        );
        assert_eq!(
            split_schema("postgres").unwrap(),
            ("postgres".to_owned(), None)
        );
        assert!(split_schema("postgres://h/db?password=x").is_err());
        assert!(has_password("postgres://u:secret@h/db"));
        assert!(!has_password("postgres://u@h/db"));
    }
}
