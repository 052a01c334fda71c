//! Helpers shared by the behaviour tests: record keys, fixed key material and
//! rings, and the one `Corrupt` error every decryption failure must be.

use dream_core::{Key, Namespace, RecordId, StoreError};
use dream_encrypted::{KeyId, KeyMaterial, KeyRing};

/// The key of record `id` in namespace `ns`.
pub fn key(ns: &str, id: &str) -> Key {
    Key::new(
        Namespace::new(ns).expect("ns"),
        RecordId::new(id).expect("id"),
    )
}

/// Key material: 32 bytes of `byte`.
pub fn material(byte: u8) -> KeyMaterial {
    KeyMaterial::from_bytes(&[byte; 32]).expect("32 bytes")
}

/// A ring with key 1 active.
pub fn ring1() -> KeyRing {
    KeyRing::new(KeyId::new(1), material(0x11))
}

/// A ring with keys 1 and 2, key 2 active.
pub fn ring12() -> KeyRing {
    ring1()
        .with_key(KeyId::new(2), material(0x22))
        .expect("add")
        .with_active(KeyId::new(2))
        .expect("active")
}

/// Asserts `result` is the one `Corrupt` error naming record `k`.
pub fn assert_corrupt<T: std::fmt::Debug>(result: Result<T, StoreError>, k: &Key, what: &str) {
    match &result {
        Err(
            err @ StoreError::Corrupt {
                key: Some(named), ..
            },
        ) => {
            assert_eq!(named, k, "{what}: names the record");
            assert_eq!(
                err.to_string(),
                format!("corrupt record {k}: encrypted record failed authentication"),
                "{what}: one message for every failure kind"
            );
        }
        other => panic!("{what}: expected Corrupt naming {k}, got {other:?}"),
    }
}
