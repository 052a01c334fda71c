//! Errors of the encryption layer beyond the store contract's.

use dream_core::{LockName, StoreError};

use crate::key::KeyId;

/// A failure of the encryption layer. Store methods return the key-budget
/// variants inside `StoreError::Backend` (find them with
/// [`EncryptionError::from_store_error`]); the administrative methods (rotation,
/// dropping a key) return this type directly. Never shows key material or values.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncryptionError {
    /// The active key has done as many encryptions as its ceiling allows.
    #[error(
        "key {key_id} has reached its limit of {ceiling} encryptions; add a new active key and rotate"
    )]
    KeyExhausted {
        /// The key.
        key_id: KeyId,
        /// The ceiling in force.
        ceiling: u64,
    },
    /// The active key was retired by `drop_key` (perhaps in another process).
    #[error("key {key_id} was retired and can no longer encrypt; make a newer key active")]
    KeyRetired {
        /// The key.
        key_id: KeyId,
    },
    /// Records are still encrypted under the key being dropped.
    #[error("key {key_id} still encrypts {records} record(s); rotate before dropping it")]
    KeyInUse {
        /// The key.
        key_id: KeyId,
        /// How many records use it.
        records: u64,
    },
    /// The key being dropped is the active key.
    #[error("key {key_id} is the active key; make another key active and rotate first")]
    KeyActive {
        /// The key.
        key_id: KeyId,
    },
    /// The key is not in the ring.
    #[error("key {key_id} is not in the key ring")]
    UnknownKey {
        /// The key.
        key_id: KeyId,
    },
    /// Another rotation holds the rotation lock.
    #[error("another rotation holds the lock {lock}; try again later")]
    RotationBusy {
        /// The lock.
        lock: LockName,
    },
    /// The persisted write counter kept changing under us.
    #[error("the write counter of key {key_id} stayed contended; try again")]
    CounterContended {
        /// The key.
        key_id: KeyId,
    },
    /// A record kept changing while rotation tried to re-encrypt it.
    #[error("record {key} kept changing during rotation; run rotation again")]
    RecordContended {
        /// The record.
        key: dream_core::Key,
    },
    /// `encrypt_in_place` on a store that already holds encryption state.
    #[error(
        "this store is already encrypted: `dream --encrypt rekey` changes its key, `--to-plain` decrypts it"
    )]
    NotPlain,
    /// `decrypt_in_place` on a store with no encryption state.
    #[error("this store is not encrypted: there is nothing to decrypt")]
    NotEncrypted,
    /// A read met a store being encrypted or decrypted in place by another
    /// process (see [`crate::convert::ConversionWatch`]).
    #[error(
        "this store is being encrypted or decrypted in place (`dream rekey --from-plain` or `--to-plain`): try again when that has finished"
    )]
    Converting,
    /// An interrupted conversion went the other way.
    #[error(
        "this store is part way through being converted to {}; finish that first by running it again",
        match to { crate::convert::Direction::Encrypted => "encrypted (`rekey --from-plain`)", crate::convert::Direction::Plain => "plain (`rekey --to-plain`)" }
    )]
    ConversionOtherWay {
        /// Where the interrupted conversion goes.
        to: crate::convert::Direction,
    },
    /// An interrupted conversion used another key.
    #[error(
        "this store's interrupted conversion used another key (key id {key_id}); run it again with that key"
    )]
    ConversionKey {
        /// The key it used.
        key_id: KeyId,
    },
    /// The operating system's random generator failed.
    #[error("the operating system's random generator failed")]
    Random,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl EncryptionError {
    /// The encryption error carried by a `StoreError::Backend`, if any.
    pub fn from_store_error(err: &StoreError) -> Option<&EncryptionError> {
        match err {
            StoreError::Backend { source, .. } => source.downcast_ref::<EncryptionError>(),
            _ => None,
        }
    }

    /// This error as a store error: store errors unwrap, the rest become
    /// `Backend` errors carrying this value.
    pub fn into_store_error(self) -> StoreError {
        match self {
            EncryptionError::Store(err) => err,
            other => {
                let retryable = matches!(
                    other,
                    EncryptionError::CounterContended { .. }
                        | EncryptionError::RecordContended { .. }
                        | EncryptionError::RotationBusy { .. }
                        | EncryptionError::Random
                );
                StoreError::Backend {
                    retryable,
                    source: Box::new(other),
                }
            }
        }
    }
}
