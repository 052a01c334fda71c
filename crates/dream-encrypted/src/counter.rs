//! The per-key write counter, persisted in the inner store.
//!
//! Random 96-bit nonces stay safe for about 2^32 encryptions under one key. Each
//! key's count lives in the inner store at `encryption/key-<id>` as a small
//! plaintext JSON record `{"format":1,"reserved":N,"retired":false}`. A process
//! reserves a block of counts at a time with a compare-and-swap on that record, then
//! hands them out from memory; every encryption takes one. Counts reserved by a
//! process that exits unused are lost, never handed out twice, so the persisted
//! number is an upper bound on the encryptions done with the key, across processes
//! and restarts. Once it reaches the ceiling the layer refuses to encrypt.

use dream_core::{Bytes, Key, Namespace, RecordId, RecordStore, StoreError, Version, Write};
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use crate::error::EncryptionError;
use crate::key::KeyId;

/// How many compare-and-swap attempts a reservation makes before giving up.
const MAX_ATTEMPTS: usize = 64;

/// The persisted state of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CounterRecord {
    format: u32,
    reserved: u64,
    retired: bool,
}

/// How much a key has been used, as persisted in the inner store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyUsage {
    /// Encryptions reserved so far by every process (an upper bound on those done).
    pub reserved: u64,
    /// Whether `drop_key` retired the key.
    pub retired: bool,
}

/// The reserved namespace's record for key `id`.
pub(crate) fn counter_key(namespace: &Namespace, id: KeyId) -> Key {
    Key::new(
        namespace.clone(),
        RecordId::new(format!("key-{id}")).expect("key-<u32> is a valid id"),
    )
}

fn corrupt(key: &Key) -> StoreError {
    StoreError::Corrupt {
        key: Some(key.clone()),
        reason: "unreadable encryption write counter".to_owned(),
    }
}

/// The counter record at `key` and its version; a key never used reads as a
/// fresh record (nothing reserved, not retired) with no version.
async fn load(
    inner: &dyn RecordStore,
    key: &Key,
) -> Result<(CounterRecord, Option<Version>), StoreError> {
    let Some(record) = inner.get(key).await? else {
        let fresh = CounterRecord {
            format: 1,
            reserved: 0,
            retired: false,
        };
        return Ok((fresh, None));
    };
    let parsed: CounterRecord = serde_json::from_slice(&record.value).map_err(|_| corrupt(key))?;
    if parsed.format != 1 {
        return Err(corrupt(key));
    }
    Ok((parsed, Some(record.version)))
}

async fn store(
    inner: &dyn RecordStore,
    key: &Key,
    record: CounterRecord,
    current: Option<Version>,
) -> Result<bool, StoreError> {
    let value = Bytes::from(serde_json::to_vec(&record).expect("plain struct serializes"));
    let write = match current {
        Some(v) => Write::matches(v),
        None => Write::absent(),
    };
    match inner.put(key, value, write).await {
        Ok(_) => Ok(true),
        Err(StoreError::Conflict { .. }) => Ok(false),
        Err(err) => Err(err),
    }
}

/// Reads key `id`'s usage; a key never used reads as zero.
pub(crate) async fn usage(
    inner: &dyn RecordStore,
    namespace: &Namespace,
    id: KeyId,
) -> Result<KeyUsage, StoreError> {
    let (record, _) = load(inner, &counter_key(namespace, id)).await?;
    Ok(KeyUsage {
        reserved: record.reserved,
        retired: record.retired,
    })
}

/// Marks key `id` retired: no process reserves counts for it any more.
pub(crate) async fn retire(
    inner: &dyn RecordStore,
    namespace: &Namespace,
    id: KeyId,
) -> Result<(), EncryptionError> {
    let key = counter_key(namespace, id);
    for _ in 0..MAX_ATTEMPTS {
        let (mut record, version) = load(inner, &key).await?;
        if record.retired {
            return Ok(());
        }
        record.retired = true;
        if store(inner, &key, record, version).await? {
            return Ok(());
        }
    }
    Err(EncryptionError::CounterContended { key_id: id })
}

/// The counts this process holds for the active key.
#[derive(Debug, Default)]
struct Block {
    key_id: Option<KeyId>,
    next: u64,
    end: u64,
}

/// Hands out counts from blocks reserved in the inner store.
#[derive(Debug, Default)]
pub(crate) struct WriteCounter {
    block: Mutex<Block>,
}

impl WriteCounter {
    /// Takes one count for key `id`, reserving a new block of `block_size` when
    /// this process has none left. Fails once the persisted count reaches `ceiling`.
    pub(crate) async fn take(
        &self,
        inner: &dyn RecordStore,
        namespace: &Namespace,
        id: KeyId,
        block_size: u64,
        ceiling: u64,
    ) -> Result<(), EncryptionError> {
        let mut block = self.block.lock().await;
        if block.key_id != Some(id) {
            *block = Block {
                key_id: Some(id),
                next: 0,
                end: 0,
            };
        }
        if block.next >= block.end {
            let (start, end) = reserve(inner, namespace, id, block_size, ceiling).await?;
            block.next = start;
            block.end = end;
        }
        block.next += 1;
        Ok(())
    }
}

async fn reserve(
    inner: &dyn RecordStore,
    namespace: &Namespace,
    id: KeyId,
    block_size: u64,
    ceiling: u64,
) -> Result<(u64, u64), EncryptionError> {
    let key = counter_key(namespace, id);
    for _ in 0..MAX_ATTEMPTS {
        let (current, version) = load(inner, &key).await?;
        if current.retired {
            return Err(EncryptionError::KeyRetired { key_id: id });
        }
        if current.reserved >= ceiling {
            tracing::warn!(key_id = id.get(), ceiling, "encryption key exhausted");
            return Err(EncryptionError::KeyExhausted {
                key_id: id,
                ceiling,
            });
        }
        let end = current.reserved.saturating_add(block_size).min(ceiling);
        let next = CounterRecord {
            reserved: end,
            ..current
        };
        if store(inner, &key, next, version).await? {
            if end >= ceiling - ceiling / 10 {
                tracing::warn!(
                    key_id = id.get(),
                    reserved = end,
                    ceiling,
                    "encryption key is near its write limit; rotate to a new key"
                );
            }
            return Ok((current.reserved, end));
        }
    }
    Err(EncryptionError::CounterContended { key_id: id })
}
