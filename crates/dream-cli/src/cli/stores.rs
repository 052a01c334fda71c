//! Opening the store a URL names (parsed by `dream::core::StoreUrl`, which
//! holds every rule of what a store URL is), and the encryption layer. A
//! backend this binary was built without is one clear error.

use std::path::Path;
use std::sync::Arc;

use dream::core::RecordStore;
use dream::core::store_url::{Backend, Place, StoreUrl};

use super::CliError;

/// Opens the store a URL names. `url_file` supplies the URL, with its password,
/// behind `--store redis` or `--store postgres`.
pub async fn open(url: &str, url_file: Option<&Path>) -> Result<Arc<dyn RecordStore>, CliError> {
    let url = StoreUrl::parse(url)?;
    match url.place() {
        Place::Fs(path) => open_fs(path).await,
        Place::Sqlite(path) => open_sqlite(path).await,
        Place::Redis(_) => open_redis(&url, url_file).await,
        Place::Postgres(_) => open_postgres(&url, url_file).await,
    }
}

/// The name and capabilities of the directory or SQLite store a URL names, as
/// it will have them once made (`dream mcp` makes it at its first write).
#[cfg(feature = "mcp")]
pub fn info_before_made(url: &str) -> Result<dream::core::StoreInfo, CliError> {
    match StoreUrl::parse(url)?.backend() {
        Backend::Fs => fs_info(),
        Backend::Sqlite => sqlite_info(),
        Backend::Redis | Backend::Postgres => Err(CliError::usage(format!(
            "the store {} cannot be made later",
            super::streams::escape(url)
        ))),
    }
}

#[cfg(all(feature = "mcp", feature = "fs"))]
fn fs_info() -> Result<dream::core::StoreInfo, CliError> {
    Ok(dream::fs::FsOptions::default().store_info())
}

#[cfg(all(feature = "mcp", not(feature = "fs")))]
fn fs_info() -> Result<dream::core::StoreInfo, CliError> {
    Err(CliError::not_built(Backend::Fs.feature()))
}

#[cfg(all(feature = "mcp", feature = "sqlite"))]
fn sqlite_info() -> Result<dream::core::StoreInfo, CliError> {
    Ok(dream::sqlite::SqliteOptions::default().store_info())
}

#[cfg(all(feature = "mcp", not(feature = "sqlite")))]
fn sqlite_info() -> Result<dream::core::StoreInfo, CliError> {
    Err(CliError::not_built(Backend::Sqlite.feature()))
}

/// `url` with the URL behind `--store redis` or `--store postgres` read from
/// `url_file` or the environment (`StoreUrl::source_env`); any other URL as it
/// is. A refusal reads as the backend's (`Redis URL file …`, `environment
/// variable … is not set`).
#[cfg(any(feature = "redis", feature = "postgres"))]
pub fn resolve(url: &StoreUrl, url_file: Option<&Path>) -> Result<StoreUrl, CliError> {
    let Some(env) = url.source_env() else {
        return Ok(url.clone());
    };
    let full = match url_file {
        Some(path) => dream_tls::read_url_file(path).map_err(|e| dream_tls::UrlSourceError::File {
            path: path.to_path_buf(),
            reason: e.reason,
        }),
        None => dream_tls::env_url(env, std::env::var(env)),
    };
    match full {
        Ok(full) => Ok(url.clone().resolve(&full)),
        Err(e) => Err(source_error(url.backend(), e)),
    }
}

/// Without a server backend, `redis` and `postgres` alone cannot be opened.
#[cfg(not(any(feature = "redis", feature = "postgres")))]
pub fn resolve(url: &StoreUrl, _: Option<&Path>) -> Result<StoreUrl, CliError> {
    match url.source_env() {
        Some(_) => Err(CliError::not_built(url.backend().feature())),
        None => Ok(url.clone()),
    }
}

/// Why a server's URL could not be read, in its backend's words.
#[cfg(any(feature = "redis", feature = "postgres"))]
fn source_error(backend: Backend, e: dream_tls::UrlSourceError) -> CliError {
    match backend {
        #[cfg(feature = "redis")]
        Backend::Redis => dream::redis::ConfigError::from(e).into(),
        #[cfg(feature = "postgres")]
        Backend::Postgres => dream::postgres::ConfigError::from(e).into(),
        _ => e.into(),
    }
}

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
#[cfg(any(feature = "fs", feature = "sqlite"))]
fn parent_exists(path: &Path) -> Result<(), CliError> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    match parent {
        Some(dir) if !dir.is_dir() => Err(CliError::usage(format!(
            "cannot create the store {}: the directory {} does not exist",
            super::streams::escape(&path.display().to_string()),
            super::streams::escape(&dir.display().to_string())
        ))),
        _ => Ok(()),
    }
}

#[cfg(feature = "fs")]
async fn open_fs(path: &Path) -> Result<Arc<dyn RecordStore>, CliError> {
    parent_exists(path)?;
    Ok(Arc::new(dream::fs::FsStore::open(path).await?))
}

#[cfg(not(feature = "fs"))]
async fn open_fs(_: &Path) -> Result<Arc<dyn RecordStore>, CliError> {
    Err(CliError::not_built(Backend::Fs.feature()))
}

#[cfg(feature = "sqlite")]
async fn open_sqlite(path: &Path) -> Result<Arc<dyn RecordStore>, CliError> {
    parent_exists(path)?;
    Ok(Arc::new(dream::sqlite::SqliteStore::open(path).await?))
}

#[cfg(not(feature = "sqlite"))]
async fn open_sqlite(_: &Path) -> Result<Arc<dyn RecordStore>, CliError> {
    Err(CliError::not_built(Backend::Sqlite.feature()))
}

#[cfg(feature = "redis")]
async fn open_redis(
    url: &StoreUrl,
    url_file: Option<&Path>,
) -> Result<Arc<dyn RecordStore>, CliError> {
    Ok(Arc::new(open_redis_store(url, url_file).await?))
}

#[cfg(feature = "redis")]
async fn open_redis_store(
    url: &StoreUrl,
    url_file: Option<&Path>,
) -> Result<dream::redis::RedisStore, CliError> {
    use dream::redis::{RedisOptions, RedisStore};
    let url = resolve(url, url_file)?;
    let config = RedisOptions::from_store_url(&url)?.with_ca_file_from_env()?;
    Ok(RedisStore::open(config).await?)
}

#[cfg(not(feature = "redis"))]
async fn open_redis(_: &StoreUrl, _: Option<&Path>) -> Result<Arc<dyn RecordStore>, CliError> {
    Err(CliError::not_built(Backend::Redis.feature()))
}

#[cfg(feature = "postgres")]
async fn open_postgres(
    url: &StoreUrl,
    url_file: Option<&Path>,
) -> Result<Arc<dyn RecordStore>, CliError> {
    use dream::postgres::{PostgresOptions, PostgresStore};
    let url = resolve(url, url_file)?;
    let config = PostgresOptions::from_store_url(&url)?;
    Ok(Arc::new(PostgresStore::open(config).await?))
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(_: &StoreUrl, _: Option<&Path>) -> Result<Arc<dyn RecordStore>, CliError> {
    Err(CliError::not_built(Backend::Postgres.feature()))
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
    Err(CliError::not_built("encryption"))
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
    let url = match StoreUrl::parse(url) {
        Ok(url) if url.backend() == Backend::Redis => url,
        _ => return Vec::new(),
    };
    let store = match open_redis_store(&url, url_file).await {
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
