//! Keys: 256-bit key material (wiped on drop) and the key ring that holds several
//! keys by id, one of them active for writes.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aes_gcm::{Aes256Gcm, KeyInit};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use zeroize::Zeroizing;

/// Length of an AES-256 key in bytes.
pub const KEY_LEN: usize = 32;

/// Largest key file read, in bytes (a base64 key is 44 bytes plus a newline).
pub const MAX_KEY_FILE_LEN: u64 = 4096;

/// A key's id, written in clear in every envelope so a reader knows which key to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyId(u32);

impl KeyId {
    /// The key id `id`.
    pub const fn new(id: u32) -> Self {
        KeyId(id)
    }

    /// The id as a number.
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Why key material could not be loaded or a key ring changed. Never shows key bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The material does not have exactly [`KEY_LEN`] bytes.
    #[error("key material must be exactly {KEY_LEN} bytes, got {got}")]
    WrongLength {
        /// How many bytes were given.
        got: usize,
    },
    /// The text is not standard base64.
    #[error("key material is not valid standard base64")]
    InvalidBase64,
    /// The key file could not be read.
    #[error("cannot read key file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The key file is not a regular file.
    #[error("key file {} is not a regular file", path.display())]
    NotAFile {
        /// The file.
        path: PathBuf,
    },
    /// The key file can be read or written by users other than its owner.
    #[error("key file {} is accessible by group or others (mode {mode:o}); restrict it to its owner (chmod 600)", path.display())]
    InsecurePermissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The key file is larger than [`MAX_KEY_FILE_LEN`].
    #[error("key file {} is larger than {MAX_KEY_FILE_LEN} bytes", path.display())]
    FileTooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The environment variable is not set.
    #[error("environment variable {var} is not set")]
    MissingEnv {
        /// Its name.
        var: String,
    },
    /// The environment variable is not valid Unicode.
    #[error("environment variable {var} is not valid Unicode")]
    NotUnicode {
        /// Its name.
        var: String,
    },
    /// The operating system's random generator failed.
    #[error("the operating system's random generator failed")]
    Random,
    /// A key with this id is already in the ring.
    #[error("key {id} is already in the key ring")]
    DuplicateId {
        /// The id.
        id: KeyId,
    },
    /// No key with this id is in the ring.
    #[error("key {id} is not in the key ring")]
    UnknownId {
        /// The id.
        id: KeyId,
    },
}

/// 256 bits of key material, wiped from memory when dropped. `Debug` is redacted.
pub struct KeyMaterial(Zeroizing<[u8; KEY_LEN]>);

impl KeyMaterial {
    /// Key material from exactly [`KEY_LEN`] raw bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, KeyError> {
        let array: [u8; KEY_LEN] = bytes
            .try_into()
            .map_err(|_| KeyError::WrongLength { got: bytes.len() })?;
        Ok(KeyMaterial(Zeroizing::new(array)))
    }

    /// Key material from standard base64 (RFC 4648 with padding, as printed by
    /// `openssl rand -base64 32`); surrounding whitespace is ignored.
    pub fn from_base64(text: &str) -> Result<Self, KeyError> {
        let decoded = Zeroizing::new(
            STANDARD
                .decode(text.trim())
                .map_err(|_| KeyError::InvalidBase64)?,
        );
        Self::from_bytes(&decoded)
    }

    /// Key material from a file holding it in base64. The file must be a regular
    /// file of at most [`MAX_KEY_FILE_LEN`] bytes that neither group nor others can
    /// access (mode `0600` or stricter). Blocking: call it before starting the
    /// runtime or from `spawn_blocking`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, KeyError> {
        use std::os::unix::fs::PermissionsExt;
        let path = path.as_ref();
        let io = |source| KeyError::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(KeyError::NotAFile {
                path: path.to_owned(),
            });
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(KeyError::InsecurePermissions {
                path: path.to_owned(),
                mode,
            });
        }
        if meta.len() > MAX_KEY_FILE_LEN {
            return Err(KeyError::FileTooLarge {
                path: path.to_owned(),
            });
        }
        // Room for the whole file up front, so reading never reallocates and leaves
        // a stray copy of the key behind.
        let mut text = Zeroizing::new(Vec::with_capacity(MAX_KEY_FILE_LEN as usize + 1));
        (&mut file)
            .take(MAX_KEY_FILE_LEN + 1)
            .read_to_end(&mut text)
            .map_err(io)?;
        if text.len() as u64 > MAX_KEY_FILE_LEN {
            return Err(KeyError::FileTooLarge {
                path: path.to_owned(),
            });
        }
        let text = std::str::from_utf8(&text).map_err(|_| KeyError::InvalidBase64)?;
        Self::from_base64(text)
    }

    /// Key material from an environment variable holding it in base64.
    pub fn from_env(var: &str) -> Result<Self, KeyError> {
        let value = std::env::var_os(var).ok_or_else(|| KeyError::MissingEnv {
            var: var.to_owned(),
        })?;
        let text = Zeroizing::new(value.into_string().map_err(|_| KeyError::NotUnicode {
            var: var.to_owned(),
        })?);
        Self::from_base64(&text)
    }

    /// Fresh key material from the operating system's random generator.
    pub fn generate() -> Result<Self, KeyError> {
        let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
        getrandom::fill(bytes.as_mut()).map_err(|_| KeyError::Random)?;
        Ok(KeyMaterial(bytes))
    }

    /// The material in standard base64, for writing a key file.
    pub fn to_base64(&self) -> Zeroizing<String> {
        Zeroizing::new(STANDARD.encode(self.0.as_ref()))
    }

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(&(*self.0).into())
    }
}

impl fmt::Debug for KeyMaterial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyMaterial(<redacted>)")
    }
}

/// Several keys by id: one active for writes, any of them for reads. Holds only
/// the expanded AES keys, which are wiped when the ring is dropped. `Debug` shows
/// key ids only.
#[derive(Clone)]
pub struct KeyRing {
    keys: BTreeMap<KeyId, Arc<Aes256Gcm>>,
    active: KeyId,
}

impl KeyRing {
    /// A ring holding one key, active.
    pub fn new(id: KeyId, material: KeyMaterial) -> Self {
        let mut keys = BTreeMap::new();
        keys.insert(id, Arc::new(material.cipher()));
        KeyRing { keys, active: id }
    }

    /// Adds a key for reading; `DuplicateId` if the id is taken.
    pub fn add(&mut self, id: KeyId, material: KeyMaterial) -> Result<(), KeyError> {
        if self.keys.contains_key(&id) {
            return Err(KeyError::DuplicateId { id });
        }
        self.keys.insert(id, Arc::new(material.cipher()));
        Ok(())
    }

    /// The same ring with another key added for reading.
    pub fn with_key(mut self, id: KeyId, material: KeyMaterial) -> Result<Self, KeyError> {
        self.add(id, material)?;
        Ok(self)
    }

    /// Makes the key `id` (already in the ring) the one new writes use.
    pub fn set_active(&mut self, id: KeyId) -> Result<(), KeyError> {
        if !self.keys.contains_key(&id) {
            return Err(KeyError::UnknownId { id });
        }
        self.active = id;
        Ok(())
    }

    /// The same ring with `id` active.
    pub fn with_active(mut self, id: KeyId) -> Result<Self, KeyError> {
        self.set_active(id)?;
        Ok(self)
    }

    /// The key new writes use.
    pub fn active(&self) -> KeyId {
        self.active
    }

    /// Every key id in the ring, ascending.
    pub fn ids(&self) -> Vec<KeyId> {
        self.keys.keys().copied().collect()
    }

    /// Whether the ring holds key `id`.
    pub fn contains(&self, id: KeyId) -> bool {
        self.keys.contains_key(&id)
    }

    pub(crate) fn cipher(&self, id: KeyId) -> Option<&Aes256Gcm> {
        self.keys.get(&id).map(|c| c.as_ref())
    }

    pub(crate) fn active_cipher(&self) -> &Aes256Gcm {
        self.keys
            .get(&self.active)
            .map(|c| c.as_ref())
            .expect("the active key is always in the ring")
    }

    /// The ring without key `id`; the caller has checked it is not active.
    pub(crate) fn without(&self, id: KeyId) -> KeyRing {
        let mut ring = self.clone();
        ring.keys.remove(&id);
        ring
    }
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("active", &self.active)
            .field("ids", &self.ids())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B64: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    #[test]
    fn base64_round_trip_and_lengths() {
        let m = KeyMaterial::from_base64(&format!("  {B64}\n")).expect("valid");
        assert_eq!(m.to_base64().as_str(), B64);
        assert!(matches!(
            KeyMaterial::from_base64("AAEC"),
            Err(KeyError::WrongLength { got: 3 })
        ));
        assert!(matches!(
            KeyMaterial::from_base64("not base64!"),
            Err(KeyError::InvalidBase64)
        ));
        assert!(matches!(
            KeyMaterial::from_bytes(&[0u8; 31]),
            Err(KeyError::WrongLength { got: 31 })
        ));
    }

    #[test]
    fn debug_is_redacted() {
        let m = KeyMaterial::from_bytes(&[0x41; KEY_LEN]).expect("valid");
        let ring = KeyRing::new(KeyId::new(7), m);
        let ring = ring
            .with_key(KeyId::new(3), KeyMaterial::generate().expect("rng"))
            .expect("add");
        let shown = format!(
            "{ring:?} {:?}",
            KeyMaterial::from_bytes(&[0x41; KEY_LEN]).expect("valid")
        );
        assert_eq!(
            shown,
            "KeyRing { active: KeyId(7), ids: [KeyId(3), KeyId(7)] } KeyMaterial(<redacted>)"
        );
    }

    #[test]
    fn ring_ids_are_unique_and_active_must_exist() {
        let mut ring = KeyRing::new(KeyId::new(1), KeyMaterial::generate().expect("rng"));
        assert!(matches!(
            ring.add(KeyId::new(1), KeyMaterial::generate().expect("rng")),
            Err(KeyError::DuplicateId { .. })
        ));
        assert!(matches!(
            ring.set_active(KeyId::new(2)),
            Err(KeyError::UnknownId { .. })
        ));
        assert_eq!(ring.active(), KeyId::new(1));
    }

    #[test]
    fn key_file_must_be_private_regular_and_small() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("key");
        std::fs::write(&path, format!("{B64}\n")).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let err = KeyMaterial::from_file(&path).expect_err("world-readable");
        assert!(matches!(
            err,
            KeyError::InsecurePermissions { mode: 0o644, .. }
        ));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let m = KeyMaterial::from_file(&path).expect("private key file");
        assert_eq!(m.to_base64().as_str(), B64);

        assert!(matches!(
            KeyMaterial::from_file(dir.path()),
            Err(KeyError::NotAFile { .. })
        ));
        assert!(matches!(
            KeyMaterial::from_file(dir.path().join("missing")),
            Err(KeyError::Io { .. })
        ));
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'A'; MAX_KEY_FILE_LEN as usize + 1]).expect("write");
        std::fs::set_permissions(&big, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(matches!(
            KeyMaterial::from_file(&big),
            Err(KeyError::FileTooLarge { .. })
        ));
    }

    #[test]
    fn env_var_errors_are_typed_and_name_only_the_variable() {
        let err = KeyMaterial::from_env("DREAM_ENCRYPTED_TEST_SURELY_UNSET").expect_err("unset");
        assert!(matches!(err, KeyError::MissingEnv { .. }));
        assert!(
            err.to_string()
                .contains("DREAM_ENCRYPTED_TEST_SURELY_UNSET")
        );
    }
}
