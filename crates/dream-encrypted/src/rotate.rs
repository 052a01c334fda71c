//! Key rotation and dropping keys.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use dream_core::{
    BatchOp, Key, Lease, Namespace, Precondition, Record, RecordId, RecordStore, StoreError, Write,
};

use crate::counter;
use crate::envelope;
use crate::error::EncryptionError;
use crate::key::{KeyId, KeyRing};
use crate::store::EncryptedStore;

/// How many times rotation re-reads a record that changed under it.
const MAX_RECORD_ATTEMPTS: usize = 16;

/// How far a rotation got. Passed to the progress callback after every page and
/// returned at the end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RotationProgress {
    /// The namespace being rotated (the last one, once finished).
    pub namespace: Option<Namespace>,
    /// Namespaces fully rotated so far.
    pub namespaces_done: usize,
    /// Records looked at.
    pub scanned: u64,
    /// Records re-encrypted under the active key by this run.
    pub reencrypted: u64,
    /// Records already under the active key (left alone).
    pub already_current: u64,
    /// Records deleted by someone else while rotation was at them.
    pub vanished: u64,
    /// Whether every record of every namespace is now under the active key
    /// (false when the callback stopped the run early).
    pub complete: bool,
}

/// The rotation lease, renewed every third of its TTL.
struct Guard {
    lease: Option<Lease>,
    fenced: bool,
    renewed: Instant,
}

impl<S: RecordStore> EncryptedStore<S> {
    /// Re-encrypts every record of every namespace under the active key.
    ///
    /// Holds the rotation lease (if the inner store has leases) and writes each
    /// page's records as one batch, each put compare-and-swap on the version it
    /// read, fenced by that lease,
    /// so a record changed meanwhile is re-read, never overwritten, and a record
    /// deleted meanwhile stays deleted. Records already under the active key are
    /// skipped, so a rotation that was interrupted (crash, `LockLost`, or the
    /// callback returning `ControlFlow::Break`) resumes by running it again.
    /// `on_progress` is called after every page; returning `Break` stops cleanly.
    /// A record that cannot be decrypted stops the rotation with `Corrupt`.
    pub async fn rotate(
        &self,
        mut on_progress: impl FnMut(&RotationProgress) -> ControlFlow<()> + Send,
    ) -> Result<RotationProgress, EncryptionError> {
        let ring = self.ring();
        let mut guard = self.take_rotation_lease().await?;
        let result = self.rotate_all(&ring, &mut guard, &mut on_progress).await;
        if let Some(lease) = guard.lease.take()
            && let Err(err) = self.inner.release(lease).await
        {
            tracing::warn!(error = %err, "could not release the rotation lease");
        }
        result
    }

    async fn take_rotation_lease(&self) -> Result<Guard, EncryptionError> {
        let caps = self.inner.info().capabilities;
        if !caps.leases {
            return Ok(Guard {
                lease: None,
                fenced: false,
                renewed: Instant::now(),
            });
        }
        let lock = &self.options.rotation_lock;
        match self
            .inner
            .try_lease(lock, self.options.rotation_ttl)
            .await?
        {
            Some(lease) => Ok(Guard {
                lease: Some(lease),
                fenced: caps.fenced_writes,
                renewed: Instant::now(),
            }),
            None => Err(EncryptionError::RotationBusy { lock: lock.clone() }),
        }
    }

    async fn keep_lease(&self, guard: &mut Guard) -> Result<(), EncryptionError> {
        if let Some(lease) = &guard.lease
            && guard.renewed.elapsed() >= self.options.rotation_ttl / 3
        {
            guard.lease = Some(self.inner.renew(lease, self.options.rotation_ttl).await?);
            guard.renewed = Instant::now();
        }
        Ok(())
    }

    async fn rotate_all(
        &self,
        ring: &Arc<KeyRing>,
        guard: &mut Guard,
        on_progress: &mut (impl FnMut(&RotationProgress) -> ControlFlow<()> + Send),
    ) -> Result<RotationProgress, EncryptionError> {
        let mut progress = RotationProgress::default();
        for namespace in self.user_namespaces().await? {
            progress.namespace = Some(namespace.clone());
            let mut cursor: Option<RecordId> = None;
            loop {
                self.keep_lease(guard).await?;
                let page = self
                    .inner
                    .list(&namespace, cursor.as_ref(), self.options.rotation_batch)
                    .await?;
                self.keep_lease(guard).await?;
                progress.scanned += page.entries.len() as u64;
                let records = page
                    .entries
                    .into_iter()
                    .map(|e| (Key::new(namespace.clone(), e.id), e.record))
                    .collect();
                self.rotate_page(ring, guard, records, &mut progress)
                    .await?;
                cursor = page.next;
                if cursor.is_none() {
                    progress.namespaces_done += 1;
                }
                if on_progress(&progress).is_break() {
                    return Ok(progress);
                }
                if cursor.is_none() {
                    break;
                }
            }
        }
        progress.complete = true;
        Ok(progress)
    }

    /// Re-encrypts one page's records that are not under the active key as one
    /// fenced batch, each put conditional on the version listed. Where the batch
    /// stops at a record changed meanwhile, the rest go one by one
    /// ([`Self::rotate_record`] re-reads them).
    async fn rotate_page(
        &self,
        ring: &Arc<KeyRing>,
        guard: &mut Guard,
        records: Vec<(Key, Record)>,
        progress: &mut RotationProgress,
    ) -> Result<(), EncryptionError> {
        let mut stale = Vec::with_capacity(records.len());
        for (key, record) in records {
            if envelope::key_id(&record.value) == Ok(ring.active()) {
                progress.already_current += 1;
            } else {
                stale.push((key, record));
            }
        }
        let mut ops = Vec::with_capacity(stale.len());
        for (key, record) in &stale {
            let plain = self.open_for_rotation(ring, key, record)?;
            let sealed = self.seal(ring, key, plain).await?;
            ops.push(BatchOp::put(
                key.clone(),
                sealed,
                Precondition::Matches(record.version),
            ));
        }
        let fence = match (&guard.lease, guard.fenced) {
            (Some(lease), true) => Some(lease.fence()),
            _ => None,
        };
        let applied = match self.inner.write_batch(&ops, fence).await {
            Ok(outcomes) => outcomes.len(),
            Err(StoreError::Conflict { .. }) => 0,
            Err(StoreError::PartialBatch { applied, source })
                if matches!(*source, StoreError::Conflict { .. }) =>
            {
                applied.len()
            }
            Err(err) => return Err(err.into()),
        };
        progress.reencrypted += applied as u64;
        for (key, record) in stale.into_iter().skip(applied) {
            self.keep_lease(guard).await?;
            self.rotate_record(ring, guard, &key, record, progress)
                .await?;
        }
        Ok(())
    }

    /// The plaintext of a record met by rotation; `Corrupt` when it fails to open.
    fn open_for_rotation(
        &self,
        ring: &Arc<KeyRing>,
        key: &Key,
        record: &Record,
    ) -> Result<Bytes, EncryptionError> {
        envelope::open(ring, key, record.value.clone()).map_err(|failure| {
            tracing::debug!(record = %key, kind = failure.as_str(), "rotation met a record that fails to open");
            EncryptionError::Store(StoreError::Corrupt {
                key: Some(key.clone()),
                reason: "encrypted record failed authentication".to_owned(),
            })
        })
    }

    async fn rotate_record(
        &self,
        ring: &Arc<KeyRing>,
        guard: &mut Guard,
        key: &Key,
        mut record: Record,
        progress: &mut RotationProgress,
    ) -> Result<(), EncryptionError> {
        for _ in 0..MAX_RECORD_ATTEMPTS {
            if envelope::key_id(&record.value) == Ok(ring.active()) {
                progress.already_current += 1;
                return Ok(());
            }
            let plain = self.open_for_rotation(ring, key, &record)?;
            let sealed = self.seal(ring, key, plain).await?;
            let mut write = Write::matches(record.version);
            if guard.fenced
                && let Some(lease) = &guard.lease
            {
                write = write.fenced(lease.fence());
            }
            match self.inner.put(key, sealed, write).await {
                Ok(_) => {
                    progress.reencrypted += 1;
                    return Ok(());
                }
                Err(StoreError::Conflict { .. }) => match self.inner.get(key).await? {
                    Some(current) => record = current,
                    None => {
                        progress.vanished += 1;
                        return Ok(());
                    }
                },
                Err(err) => return Err(err.into()),
            }
        }
        Err(EncryptionError::RecordContended { key: key.clone() })
    }

    async fn user_namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        let mut namespaces = self.inner.namespaces().await?;
        namespaces.retain(|ns| *ns != self.reserved);
        namespaces.sort();
        Ok(namespaces)
    }

    /// How many records are encrypted under key `id`, scanning every namespace.
    /// Reads only the clear headers; a record whose header is unreadable stops the
    /// count with `Corrupt`, since it might be under any key.
    pub async fn records_under(&self, id: KeyId) -> Result<u64, StoreError> {
        let mut count = 0;
        for namespace in self.user_namespaces().await? {
            let mut cursor: Option<RecordId> = None;
            loop {
                let page = self
                    .inner
                    .list(
                        &namespace,
                        cursor.as_ref(),
                        dream_core::store::MAX_LIST_LIMIT,
                    )
                    .await?;
                for entry in &page.entries {
                    match envelope::key_id(&entry.record.value) {
                        Ok(found) if found == id => count += 1,
                        Ok(_) => {}
                        Err(failure) => {
                            let key = Key::new(namespace.clone(), entry.id.clone());
                            tracing::debug!(record = %key, kind = failure.as_str(), "record with an unreadable envelope header");
                            return Err(StoreError::Corrupt {
                                key: Some(key),
                                reason: "encrypted record failed authentication".to_owned(),
                            });
                        }
                    }
                }
                cursor = page.next;
                if cursor.is_none() {
                    break;
                }
            }
        }
        Ok(count)
    }

    /// Removes key `id` from this store's ring and marks it retired in the inner
    /// store, so no process reserves write counts for it again. Refused while it is
    /// the active key (`KeyActive`) or while any record is still encrypted under it
    /// (`KeyInUse`: rotate first).
    ///
    /// A process that still has `id` active and holds counts it reserved earlier
    /// can write under it until those run out; switch every process to the new
    /// key before rotating, then drop the old one.
    pub async fn drop_key(&self, id: KeyId) -> Result<(), EncryptionError> {
        let ring = self.ring();
        if !ring.contains(id) {
            return Err(EncryptionError::UnknownKey { key_id: id });
        }
        if ring.active() == id {
            return Err(EncryptionError::KeyActive { key_id: id });
        }
        let records = self.records_under(id).await?;
        if records > 0 {
            return Err(EncryptionError::KeyInUse {
                key_id: id,
                records,
            });
        }
        counter::retire(&self.inner, &self.reserved, id).await?;
        self.remove_from_ring(id);
        tracing::info!(key_id = id.get(), "encryption key dropped");
        Ok(())
    }
}
