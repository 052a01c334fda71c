//! Key rotation, encrypting and decrypting a store in place, and dropping keys.

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

/// The failpoint after each page a rotation or conversion wrote (crash tests).
pub const PAGE_FAILPOINT: &str = "encryption.convert.after_page";

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
    /// Records this run converted: re-encrypted under the active key (rotation),
    /// encrypted ([`EncryptedStore::encrypt_in_place`]) or decrypted
    /// ([`EncryptedStore::decrypt_in_place`]).
    pub reencrypted: u64,
    /// Records already in the target form (left alone).
    pub already_current: u64,
    /// Records deleted by someone else while rotation was at them.
    pub vanished: u64,
    /// Whether every record of every namespace is now under the active key
    /// (false when the callback stopped the run early).
    pub complete: bool,
}

/// The rotation lease, renewed every third of its TTL.
pub(crate) struct Guard {
    pub(crate) lease: Option<Lease>,
    fenced: bool,
    renewed: Instant,
}

impl Guard {
    /// The fence each write carries, when the store fences writes.
    pub(crate) fn fence(&self) -> Option<dream_core::Fence> {
        match (&self.lease, self.fenced) {
            (Some(lease), true) => Some(lease.fence()),
            _ => None,
        }
    }
}

/// What a pass over every record turns each record into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// Sealed under the active key, from any key of the ring (rotation).
    Active,
    /// Sealed under the active key, from plaintext (encrypting in place).
    FromPlain,
    /// Plaintext, from any key of the ring (decrypting in place).
    Plain,
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
        let result = self
            .convert_all(&ring, &mut guard, Target::Active, &mut on_progress)
            .await;
        self.release_rotation_lease(guard).await;
        result
    }

    pub(crate) async fn release_rotation_lease(&self, mut guard: Guard) {
        if let Some(lease) = guard.lease.take()
            && let Err(err) = self.inner.release(lease).await
        {
            tracing::warn!(error = %err, "could not release the rotation lease");
        }
    }

    pub(crate) async fn take_rotation_lease(&self) -> Result<Guard, EncryptionError> {
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

    pub(crate) async fn keep_lease(&self, guard: &mut Guard) -> Result<(), EncryptionError> {
        if let Some(lease) = &guard.lease
            && guard.renewed.elapsed() >= self.options.rotation_ttl / 3
        {
            guard.lease = Some(self.inner.renew(lease, self.options.rotation_ttl).await?);
            guard.renewed = Instant::now();
        }
        Ok(())
    }

    /// Brings every record of every user namespace to `target`, page by page.
    pub(crate) async fn convert_all(
        &self,
        ring: &Arc<KeyRing>,
        guard: &mut Guard,
        target: Target,
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
                self.rotate_page(ring, guard, target, records, &mut progress)
                    .await?;
                dream_core::failpoint::failpoint(PAGE_FAILPOINT);
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

    /// Whether `record` is already in `target`'s form. Encrypting in place
    /// counts a record done only when it opens under the active key, so a
    /// plaintext value that happens to look like an envelope is still sealed.
    fn is_current(&self, ring: &KeyRing, target: Target, key: &Key, record: &Record) -> bool {
        match target {
            Target::Active => envelope::key_id(&record.value) == Ok(ring.active()),
            Target::FromPlain => {
                envelope::key_id(&record.value) == Ok(ring.active())
                    && envelope::open(ring, key, record.value.clone()).is_ok()
            }
            Target::Plain => envelope::key_id(&record.value).is_err(),
        }
    }

    /// `record`'s value in `target`'s form.
    async fn converted(
        &self,
        ring: &Arc<KeyRing>,
        target: Target,
        key: &Key,
        record: &Record,
    ) -> Result<Bytes, EncryptionError> {
        Ok(match target {
            Target::Active => {
                let plain = self.open_for_rotation(ring, key, record)?;
                self.seal(ring, key, plain).await?
            }
            Target::FromPlain => self.seal(ring, key, record.value.clone()).await?,
            Target::Plain => self.open_for_rotation(ring, key, record)?,
        })
    }

    /// Converts one page's records not yet in `target`'s form as one fenced
    /// batch, each put conditional on the version listed. Where the batch stops
    /// at a record changed meanwhile, the rest go one by one
    /// ([`Self::rotate_record`] re-reads them).
    async fn rotate_page(
        &self,
        ring: &Arc<KeyRing>,
        guard: &mut Guard,
        target: Target,
        records: Vec<(Key, Record)>,
        progress: &mut RotationProgress,
    ) -> Result<(), EncryptionError> {
        let mut stale = Vec::with_capacity(records.len());
        for (key, record) in records {
            if self.is_current(ring, target, &key, &record) {
                progress.already_current += 1;
            } else {
                stale.push((key, record));
            }
        }
        let mut ops = Vec::with_capacity(stale.len());
        for (key, record) in &stale {
            ops.push(BatchOp::put(
                key.clone(),
                self.converted(ring, target, key, record).await?,
                Precondition::Matches(record.version),
            ));
        }
        let applied = match self.inner.write_batch(&ops, guard.fence()).await {
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
            self.rotate_record(ring, guard, target, &key, record, progress)
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
        target: Target,
        key: &Key,
        mut record: Record,
        progress: &mut RotationProgress,
    ) -> Result<(), EncryptionError> {
        for _ in 0..MAX_RECORD_ATTEMPTS {
            if self.is_current(ring, target, key, &record) {
                progress.already_current += 1;
                return Ok(());
            }
            let value = self.converted(ring, target, key, &record).await?;
            let mut write = Write::matches(record.version);
            if let Some(fence) = guard.fence() {
                write = write.fenced(fence);
            }
            match self.inner.put(key, value, write).await {
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

    pub(crate) async fn user_namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
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
