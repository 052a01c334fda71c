//! The per-store seal key (see `dream::engine::SealKey`): kept outside the store,
//! in the user's configuration directory, one 0600 file per store location. A
//! store copied or cloned to another location finds no key of its own, so its
//! records do not verify and recall holds them until `dream confirm`.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use dream::core::StoreUrl;
use dream::engine::SealKey;
use sha2::{Digest, Sha256};

use super::CliError;

/// Environment variable naming the configuration directory (default
/// `$XDG_CONFIG_HOME/dream`, then `~/.config/dream`).
pub const CONFIG_DIR_ENV: &str = "DREAM_CONFIG_DIR";

/// The configuration directory.
pub fn config_dir() -> Result<PathBuf, CliError> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var(CONFIG_DIR_ENV) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(dir).join("dream"));
    }
    match var("HOME") {
        Some(home) => Ok(PathBuf::from(home).join(".config").join("dream")),
        None => Err(CliError::usage(format!(
            "no configuration directory for the store's seal key: set {CONFIG_DIR_ENV} or HOME"
        ))),
    }
}

/// Where a store lives, as its seal key is filed: the canonical path of a
/// directory or SQLite file, or a server's URL without its password
/// (`StoreUrl::locator`; `url` resolved, see `stores::resolve`).
pub fn locator(url: &StoreUrl) -> Result<String, CliError> {
    if let Some(path) = url.path() {
        let canonical = canonical(path).map_err(|e| {
            CliError::usage(format!(
                "cannot resolve the store path {}: {e}",
                path.display()
            ))
        })?;
        return Ok(url.moved_to(canonical).to_string());
    }
    url.locator().ok_or_else(|| {
        CliError::usage(format!(
            "the store {url} has no locator before its URL is read"
        ))
    })
}

/// A path made absolute with its links resolved; a last component that does
/// not exist yet (a store not made yet) is joined to its resolved parent, so
/// the store has the same locator before and after it is made.
fn canonical(path: &Path) -> std::io::Result<PathBuf> {
    match fs::canonicalize(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
                return Err(e);
            };
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            Ok(fs::canonicalize(parent)?.join(name))
        }
        other => other,
    }
}

/// The seal key of the store at `locator`, created (0600, in a 0700 directory)
/// the first time this user opens that store to write.
pub fn load_or_create(dir: &Path, locator: &str) -> Result<SealKey, CliError> {
    if let Some(key) = load(dir, locator)? {
        return Ok(key);
    }
    let key = SealKey::generate();
    keep(dir, locator, &key)
}

/// Files `key` as the seal key of the store at `locator` unless it has one
/// already (another process was first): the key in force is returned.
pub fn keep(dir: &Path, locator: &str, key: &SealKey) -> Result<SealKey, CliError> {
    let path = key_path(dir, locator);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path.parent().unwrap_or(dir))
        .map_err(|e| CliError::usage(format!("cannot create {}: {e}", dir.display())))?;
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(mut file) => {
            let failed = |e| key_error(&path, e);
            file.write_all(key.as_bytes()).map_err(failed)?;
            file.sync_all().map_err(failed)?;
            Ok(key.clone())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            load(dir, locator)?.ok_or_else(|| key_error(&path, std::io::ErrorKind::NotFound.into()))
        }
        Err(e) => Err(key_error(&path, e)),
    }
}

/// The seal key of the store at `locator`, if this user has one; never made.
pub fn load(dir: &Path, locator: &str) -> Result<Option<SealKey>, CliError> {
    let path = key_path(dir, locator);
    let failed = |e| key_error(&path, e);
    let mut file = match OpenOptions::new().read(true).open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(failed(e)),
    };
    let meta = file.metadata().map_err(failed)?;
    if meta.mode() & 0o077 != 0 {
        return Err(CliError::usage(format!(
            "the seal key {} is readable or writable by others: chmod 600 it",
            path.display()
        )));
    }
    let mut bytes = Vec::with_capacity(32);
    file.read_to_end(&mut bytes).map_err(failed)?;
    let bytes: [u8; 32] = bytes.try_into().map_err(|_| {
        CliError::usage(format!(
            "the seal key {} is not 32 bytes: remove it and run `dream confirm --all` \
             after reviewing the store",
            path.display()
        ))
    })?;
    Ok(Some(SealKey::from_bytes(bytes)))
}

/// The file holding the seal key of the store at `locator`.
fn key_path(dir: &Path, locator: &str) -> PathBuf {
    let digest = Sha256::new()
        .chain_update(b"dream seal key v1\0")
        .chain_update(locator.as_bytes())
        .finalize();
    let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    dir.join("seal-keys").join(format!("{name}.key"))
}

fn key_error(path: &Path, e: std::io::Error) -> CliError {
    CliError::usage(format!("cannot use the seal key {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(given: &str, full: &str) -> String {
        locator(&StoreUrl::parse(given).unwrap().resolve(full)).unwrap()
    }

    #[test]
    fn postgres_locators_never_hold_a_password() {
        let l = resolved(
            "postgres?schema=team",
            "postgresql://alice:hunter2@db.example:5432/mem",
        );
        assert_eq!(l, "postgres://db.example:5432/mem?schema=team");
    }

    #[test]
    fn redis_locators_never_hold_a_password() {
        let l = resolved("redis?prefix=p", "redis://:hunter2@10.0.0.5:6379/0");
        assert_eq!(l, "redis://10.0.0.5:6379/0?prefix=p");
        assert!(!resolved("redis", "redis://user:pw@host").contains("pw"));
    }

    #[test]
    fn path_locators_are_canonical_before_and_after_the_store_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let canonical = fs::canonicalize(dir.path()).unwrap();
        let url = StoreUrl::parse(&format!("sqlite:{}/./mem.db", dir.path().display())).unwrap();
        let before = locator(&url).unwrap();
        assert_eq!(before, format!("sqlite:{}/mem.db", canonical.display()));
        fs::write(dir.path().join("mem.db"), b"").unwrap();
        assert_eq!(locator(&url).unwrap(), before);
        let unread = StoreUrl::parse("postgres").unwrap();
        assert!(
            locator(&unread).is_err(),
            "no locator before the URL is read"
        );
    }

    #[test]
    fn one_key_per_location_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create(dir.path(), "fs:/a").unwrap();
        let again = load_or_create(dir.path(), "fs:/a").unwrap();
        let b = load_or_create(dir.path(), "fs:/b").unwrap();
        assert_eq!(a.as_bytes(), again.as_bytes());
        assert_ne!(a.as_bytes(), b.as_bytes());
        let file = fs::read_dir(dir.path().join("seal-keys"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(file.metadata().unwrap().mode() & 0o777, 0o600);
        fs::set_permissions(
            file.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o644),
        )
        .unwrap();
        let (x, y) = (
            load_or_create(dir.path(), "fs:/a"),
            load_or_create(dir.path(), "fs:/b"),
        );
        assert!(x.is_err() || y.is_err(), "a key others can read is refused");
    }
}
