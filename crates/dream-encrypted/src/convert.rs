//! Encrypting a plaintext store in place and decrypting an encrypted one.
//!
//! A conversion first writes a marker, `encryption/conversion`, a plaintext JSON
//! record `{"format":1,"to":"encrypted"|"plain","key":ID}` in the reserved
//! namespace; then converts every record, page by page, under the rotation lease
//! like [`EncryptedStore::rotate`]; and removes the marker last (decrypting
//! removes the key counters just before it, leaving a plain store). While the
//! marker is there the store is neither plain nor encrypted:
//! [`conversion_in_progress`] tells every other opener so, and running the same
//! conversion again resumes it, since records already converted are skipped.

use std::ops::ControlFlow;

use dream_core::{Bytes, Key, Namespace, RecordId, RecordStore, StoreError, Version, Write};
use serde::{Deserialize, Serialize};

use crate::error::EncryptionError;
use crate::key::KeyId;
use crate::rotate::{Guard, RotationProgress, Target};
use crate::store::{EncryptedStore, RESERVED_NAMESPACE};

/// The marker's record id in the reserved namespace.
const MARKER_ID: &str = "conversion";

/// The failpoint after the marker is written, before any record is converted.
pub const MARKER_FAILPOINT: &str = "encryption.convert.after_marker";
/// The failpoint after every record is converted, before the marker (and, when
/// decrypting, the key counters) are removed.
pub const CLEANUP_FAILPOINT: &str = "encryption.convert.before_cleanup";

/// Which way a conversion goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// A plaintext store being encrypted ([`EncryptedStore::encrypt_in_place`]).
    Encrypted,
    /// An encrypted store being decrypted ([`EncryptedStore::decrypt_in_place`]).
    Plain,
}

/// A conversion started and not finished (running now, or interrupted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conversion {
    /// Which way it goes.
    pub to: Direction,
    /// The key it encrypts under or decrypts with.
    pub key_id: KeyId,
}

/// The marker as stored.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MarkerRecord {
    format: u32,
    to: Direction,
    key: u32,
}

fn reserved() -> Namespace {
    Namespace::new(RESERVED_NAMESPACE).expect("valid namespace")
}

fn marker_key() -> Key {
    Key::new(
        reserved(),
        RecordId::new(MARKER_ID).expect("valid record id"),
    )
}

/// The conversion in progress on the store `inner` (the plain store under any
/// encryption layer), if any. A marker it cannot read is `Corrupt`.
pub async fn conversion_in_progress(
    inner: &dyn RecordStore,
) -> Result<Option<Conversion>, StoreError> {
    Ok(load_marker(inner).await?.map(|(conversion, _)| conversion))
}

async fn load_marker(inner: &dyn RecordStore) -> Result<Option<(Conversion, Version)>, StoreError> {
    let key = marker_key();
    let Some(record) = inner.get(&key).await? else {
        return Ok(None);
    };
    let corrupt = || StoreError::Corrupt {
        key: Some(key.clone()),
        reason: "unreadable encryption conversion marker".to_owned(),
    };
    let marker: MarkerRecord = serde_json::from_slice(&record.value).map_err(|_| corrupt())?;
    if marker.format != 1 {
        return Err(corrupt());
    }
    let conversion = Conversion {
        to: marker.to,
        key_id: KeyId::new(marker.key),
    };
    Ok(Some((conversion, record.version)))
}

/// Whether `inner` holds encryption state (key counters) besides a marker.
async fn has_key_counters(inner: &dyn RecordStore) -> Result<bool, StoreError> {
    let page = inner.list_versions(&reserved(), None, 2).await?;
    Ok(page.entries.iter().any(|e| e.id.as_str() != MARKER_ID))
}

impl<S: RecordStore> EncryptedStore<S> {
    /// Encrypts every record of a plaintext inner store under the active key.
    ///
    /// Refused with [`EncryptionError::NotPlain`] when the store already holds
    /// encryption state. Writes the conversion marker, converts every record
    /// under the rotation lease (fenced, compare-and-swap on the version read,
    /// as [`Self::rotate`]), sweeping again until a sweep finds nothing left,
    /// then removes the marker. Interrupted (crash, `LockLost`, `Break`), it
    /// resumes when run again with the same key; another key is
    /// [`EncryptionError::ConversionKey`]. Progress as for rotation.
    pub async fn encrypt_in_place(
        &self,
        on_progress: impl FnMut(&RotationProgress) -> ControlFlow<()> + Send,
    ) -> Result<RotationProgress, EncryptionError> {
        self.convert_in_place(Direction::Encrypted, on_progress)
            .await
    }

    /// Decrypts every record of an encrypted inner store with the ring's keys,
    /// leaving a plain store: the marker, then every record, then the key
    /// counters and the marker removed. Refused with
    /// [`EncryptionError::NotEncrypted`] on a store with no encryption state.
    /// Resumable like [`Self::encrypt_in_place`]; the active key must be the one
    /// an interrupted run used. A record no key of the ring opens stops it with
    /// `Corrupt`.
    pub async fn decrypt_in_place(
        &self,
        on_progress: impl FnMut(&RotationProgress) -> ControlFlow<()> + Send,
    ) -> Result<RotationProgress, EncryptionError> {
        self.convert_in_place(Direction::Plain, on_progress).await
    }

    async fn convert_in_place(
        &self,
        to: Direction,
        mut on_progress: impl FnMut(&RotationProgress) -> ControlFlow<()> + Send,
    ) -> Result<RotationProgress, EncryptionError> {
        let mut guard = self.take_rotation_lease().await?;
        let result = self.convert_held(to, &mut guard, &mut on_progress).await;
        self.release_rotation_lease(guard).await;
        result
    }

    async fn convert_held(
        &self,
        to: Direction,
        guard: &mut Guard,
        on_progress: &mut (impl FnMut(&RotationProgress) -> ControlFlow<()> + Send),
    ) -> Result<RotationProgress, EncryptionError> {
        let ring = self.ring();
        let inner: &dyn RecordStore = &self.inner;
        let marker = match load_marker(inner).await? {
            Some((found, version)) => {
                if found.to != to {
                    return Err(EncryptionError::ConversionOtherWay { to: found.to });
                }
                if found.key_id != ring.active() {
                    return Err(EncryptionError::ConversionKey {
                        key_id: found.key_id,
                    });
                }
                version
            }
            None => {
                let encrypted = has_key_counters(inner).await?;
                match to {
                    Direction::Encrypted if encrypted => return Err(EncryptionError::NotPlain),
                    Direction::Plain if !encrypted => return Err(EncryptionError::NotEncrypted),
                    _ => {}
                }
                let record = MarkerRecord {
                    format: 1,
                    to,
                    key: ring.active().get(),
                };
                let value = Bytes::from(serde_json::to_vec(&record).expect("plain struct"));
                let version = inner
                    .put(&marker_key(), value, self.fenced(guard, Write::absent()))
                    .await?;
                dream_core::failpoint::failpoint(MARKER_FAILPOINT);
                version
            }
        };
        let target = match to {
            Direction::Encrypted => Target::FromPlain,
            Direction::Plain => Target::Plain,
        };
        // A writer that opened the store before the marker went in may still
        // write in the old form: sweep again until a sweep converts nothing.
        let mut total: Option<RotationProgress> = None;
        loop {
            let before = total.as_ref().map_or(0, |t| t.reencrypted);
            let sweep = self
                .convert_all(&ring, guard, target, &mut |p: &RotationProgress| {
                    let mut shown = p.clone();
                    shown.reencrypted += before;
                    shown.complete = false;
                    on_progress(&shown)
                })
                .await?;
            let (converted, complete) = (sweep.reencrypted, sweep.complete);
            let mut sum = match total.take() {
                None => sweep,
                Some(mut sum) => {
                    sum.reencrypted += sweep.reencrypted;
                    sum.vanished += sweep.vanished;
                    sum.namespace = sweep.namespace;
                    sum
                }
            };
            sum.complete = false;
            if !complete {
                return Ok(sum);
            }
            total = Some(sum);
            if converted == 0 {
                break;
            }
        }
        let mut total = total.unwrap_or_default();
        dream_core::failpoint::failpoint(CLEANUP_FAILPOINT);
        if to == Direction::Plain {
            self.remove_key_counters(guard).await?;
        }
        self.keep_lease(guard).await?;
        inner
            .delete(&marker_key(), self.fenced(guard, Write::matches(marker)))
            .await?;
        total.complete = true;
        Ok(total)
    }

    /// `write` fenced by the rotation lease, when the store fences writes.
    fn fenced(&self, guard: &Guard, write: Write) -> Write {
        match guard.fence() {
            Some(fence) => write.fenced(fence),
            None => write,
        }
    }

    /// Deletes every key counter (the reserved namespace but the marker).
    async fn remove_key_counters(&self, guard: &mut Guard) -> Result<(), EncryptionError> {
        let inner: &dyn RecordStore = &self.inner;
        let mut cursor: Option<RecordId> = None;
        loop {
            self.keep_lease(guard).await?;
            let page = inner
                .list_versions(&reserved(), cursor.as_ref(), 100)
                .await?;
            for entry in &page.entries {
                if entry.id.as_str() == MARKER_ID {
                    continue;
                }
                let key = Key::new(reserved(), entry.id.clone());
                inner.delete(&key, self.fenced(guard, Write::any())).await?;
            }
            cursor = page.next;
            if cursor.is_none() {
                return Ok(());
            }
        }
    }
}

/// Reads through a store opened before a conversion began, so that a read
/// meeting the conversion's work is [`EncryptionError::Converting`] instead of
/// ciphertext handed over as plaintext or a wrong-key `Corrupt`.
///
/// `store` is what the caller reads through (the plain store, or an
/// [`EncryptedStore`] over it) and `raw` the plain store under it, where the
/// marker lives. Over a plaintext store, a value in an envelope is checked;
/// over an encrypted one, a value that fails to open. Either is the
/// conversion's doing when a marker is there, or when the store has since
/// changed form; else it passes through unchanged. Other reads and every write
/// are forwarded as they are.
#[derive(Debug)]
pub struct ConversionWatch<S> {
    store: S,
    raw: std::sync::Arc<dyn RecordStore>,
    encrypted: bool,
}

impl<S: RecordStore> ConversionWatch<S> {
    /// Watches reads through `store`, an encrypted one when `encrypted`, over `raw`.
    pub fn new(store: S, raw: std::sync::Arc<dyn RecordStore>, encrypted: bool) -> Self {
        ConversionWatch {
            store,
            raw,
            encrypted,
        }
    }

    /// Whether the store is being or has been converted away from the form it
    /// was opened in.
    async fn converted_under_us(&self) -> Result<bool, StoreError> {
        if load_marker(&*self.raw).await?.is_some() {
            return Ok(true);
        }
        Ok(has_key_counters(&*self.raw).await? != self.encrypted)
    }

    /// `Converting` when `value` (read as plaintext) is in an envelope because
    /// of a conversion.
    async fn check_value(&self, value: &[u8]) -> Result<(), StoreError> {
        if !self.encrypted
            && crate::envelope::key_id(value).is_ok()
            && self.converted_under_us().await?
        {
            return Err(EncryptionError::Converting.into_store_error());
        }
        Ok(())
    }

    /// `Converting` instead of `err` when a conversion explains it.
    async fn explain(&self, err: StoreError) -> StoreError {
        if self.encrypted
            && matches!(err, StoreError::Corrupt { .. })
            && self.converted_under_us().await.unwrap_or(false)
        {
            return EncryptionError::Converting.into_store_error();
        }
        err
    }
}

#[dream_core::async_trait]
impl<S: RecordStore> RecordStore for ConversionWatch<S> {
    fn info(&self) -> dream_core::StoreInfo {
        self.store.info()
    }

    async fn get(&self, key: &Key) -> Result<Option<dream_core::Record>, StoreError> {
        match self.store.get(key).await {
            Ok(Some(record)) => {
                self.check_value(&record.value).await?;
                Ok(Some(record))
            }
            Ok(None) => Ok(None),
            Err(err) => Err(self.explain(err).await),
        }
    }

    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
        self.store.put(key, value, write).await
    }

    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
        self.store.delete(key, write).await
    }

    async fn list(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<dream_core::Page, StoreError> {
        match self.store.list(namespace, start_after, limit).await {
            Ok(page) => {
                for entry in &page.entries {
                    self.check_value(&entry.record.value).await?;
                }
                Ok(page)
            }
            Err(err) => Err(self.explain(err).await),
        }
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        self.store.namespaces().await
    }

    async fn try_lease(
        &self,
        lock: &dream_core::LockName,
        ttl: std::time::Duration,
    ) -> Result<Option<dream_core::Lease>, StoreError> {
        self.store.try_lease(lock, ttl).await
    }

    async fn renew(
        &self,
        lease: &dream_core::Lease,
        ttl: std::time::Duration,
    ) -> Result<dream_core::Lease, StoreError> {
        self.store.renew(lease, ttl).await
    }

    async fn release(&self, lease: dream_core::Lease) -> Result<bool, StoreError> {
        self.store.release(lease).await
    }

    async fn write_batch(
        &self,
        ops: &[dream_core::BatchOp],
        fence: Option<dream_core::Fence>,
    ) -> Result<Vec<dream_core::BatchOutcome>, StoreError> {
        self.store.write_batch(ops, fence).await
    }

    async fn list_versions(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<dream_core::VersionPage, StoreError> {
        self.store
            .list_versions(namespace, start_after, limit)
            .await
    }

    async fn compact(&self) -> Result<(), StoreError> {
        self.store.compact().await
    }

    async fn watch_changes(&self) -> Result<Option<dream_core::Changes>, StoreError> {
        self.store.watch_changes().await
    }
}
