//! Encryption at rest (AES-256-GCM) over any Dream `RecordStore`.
//!
//! [`EncryptedStore`] wraps a store and encrypts every value before the inner store
//! sees it: memory names, descriptions, bodies and metadata, sessions, audit
//! records, plans, everything the engine keeps in a value.
//!
//! ```no_run
//! # async fn demo(inner: dream_core::testing::MemoryStore) -> Result<(), Box<dyn std::error::Error>> {
//! use dream_encrypted::{EncryptedStore, KeyId, KeyMaterial, KeyRing};
//! let ring = KeyRing::new(KeyId::new(1), KeyMaterial::from_env("DREAM_KEY")?);
//! let store = EncryptedStore::new(inner, ring);
//! # Ok(()) }
//! ```
//!
//! # What it does
//!
//! - Each value is sealed in a versioned [envelope]: magic, format
//!   version, key id, a fresh random 96-bit nonce from the operating system's
//!   generator, then the AES-256-GCM ciphertext and tag. The associated data is the
//!   whole header plus the record's length-prefixed namespace and id, so a value
//!   copied or swapped onto another record, or an edited header, fails to decrypt.
//! - Keys live in a [`KeyRing`]: several keys by id, one active for writes, any of
//!   them for reads. Key material comes from bytes, a key file or an environment
//!   variable (base64), sits in wiped-on-drop buffers, and `Debug` never shows it.
//! - Every decryption failure (wrong key, flipped bit, truncation, a record moved
//!   or swapped, an edited header, an unknown key id, a foreign value) is the same
//!   `StoreError::Corrupt` naming the record and saying nothing about keys. Never
//!   garbage data, never a panic.
//! - [`EncryptedStore::rotate`] re-encrypts every record under the active key, with
//!   compare-and-swap under a lease, resumably, reporting progress;
//!   [`EncryptedStore::drop_key`] refuses while any record still uses the key.
//! - [`EncryptedStore::encrypt_in_place`] encrypts a plaintext store and
//!   [`EncryptedStore::decrypt_in_place`] decrypts one, the same way, behind a
//!   [conversion marker](convert) every other opener can see
//!   ([`conversion_in_progress`]).
//! - A per-key write counter, persisted in the inner store and reserved in blocks
//!   by compare-and-swap, caps encryptions per key well below the 2^32 bound for
//!   random nonces ([`DEFAULT_WRITE_CEILING`] = 2^30). Past it, writes fail with
//!   [`EncryptionError::KeyExhausted`] (inside `StoreError::Backend`) asking for
//!   rotation.
//! - `max_value_size` is the inner store's limit minus [`envelope::OVERHEAD`];
//!   `atomic_batch_bytes` the inner one's minus that overhead for each of a
//!   batch's [`dream_core::store::MAX_BATCH_OPS`] values (unless unlimited).
//!
//! # What the inner store still sees
//!
//! - Namespaces and record ids are in clear: the inner store needs them to find,
//!   list and order records. Ids never derive from body text (they are random or
//!   time-ordered), but their number, their timestamps (time-ordered ids) and the
//!   namespaces in use are visible.
//! - Value lengths (ciphertext = plaintext + 37 bytes), versions, write times and
//!   lease activity.
//! - The reserved namespace [`RESERVED_NAMESPACE`] (`encryption`): one plaintext
//!   JSON record per key, `encryption/key-<id>`, holding
//!   `{"format":1,"reserved":N,"retired":false}`. It holds no key material. Callers
//!   cannot read, write or list it through this layer, and `namespaces()` hides it.
//!
//! # What it does not detect
//!
//! Authentication proves a value was written by a holder of the key for that very
//! record; it cannot prove the value is the newest one:
//!
//! - **Replay**: someone with write access to the inner store who saved an older
//!   ciphertext of a record can put it back (the seeds' snapshot-restore attack);
//!   it decrypts fine. The version lives outside the envelope, because the store
//!   assigns it after the write.
//! - **Deletion** of records, or of a whole namespace, and restoring a whole older
//!   snapshot of the store.
//! - **The write counter** is a guard against accidental overuse of a key, not
//!   against an attacker: it is stored in clear and unauthenticated, so resetting
//!   it only lifts the budget.
//!
//! Nor does it protect data in memory, keys on the host, or values once returned
//! to the caller (decrypted values are handed back as ordinary `Bytes`).

pub mod envelope;

pub mod convert;

mod counter;
mod error;
mod key;
mod rotate;
mod store;

pub use convert::{Conversion, ConversionWatch, Direction, conversion_in_progress};
pub use counter::KeyUsage;
pub use error::EncryptionError;
pub use key::{KEY_LEN, KeyError, KeyId, KeyMaterial, KeyRing, MAX_KEY_FILE_LEN};
pub use rotate::{PAGE_FAILPOINT, RotationProgress};
pub use store::{
    DEFAULT_COUNTER_BLOCK, DEFAULT_WRITE_CEILING, EncryptedStore, EncryptionOptions,
    MAX_WRITE_CEILING, RESERVED_NAMESPACE,
};
