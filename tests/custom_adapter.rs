//! Writing your own adapter: a small store implemented outside the workspace
//! crates, exactly as a third party would, through the facade only — and the
//! conformance suite run on it through the facade's `conformance` feature.
//!
//! This store keeps records in a `BTreeMap` and has no leases: the suite then
//! asserts that every lease call and fenced write answers `Unsupported`.
//!
//! Checks an adapter should not write itself: `Precondition::check` (the one
//! precondition check every store calls) and `store::check_batch` (a batch's
//! size, value sizes and duplicate keys).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dream::conformance::Fixture;
use dream::store::{check_batch, clamp_list_limit};
use dream::{
    BatchOp, BatchOutcome, Bytes, Capabilities, Changes, Entry, Fence, Key, Lease, LockName,
    Namespace, Page, Record, RecordId, RecordStore, StoreError, StoreInfo, Version, VersionEntry,
    VersionPage, Write, async_trait,
};

/// The records, by namespace and id.
type Records = BTreeMap<(Namespace, RecordId), Record>;

/// A map-backed store without leases: the last version issued, and the records.
#[derive(Debug, Default)]
struct MapStore {
    inner: Mutex<(u64, Records)>,
}

const MAX: usize = 2 * 1024 * 1024;

#[async_trait]
impl RecordStore for MapStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            name: "map".into(),
            capabilities: Capabilities {
                cross_process: false,
                leases: false,
                fenced_writes: false,
                durable: false,
                max_value_size: MAX,
                // One mutex around the whole batch: all or nothing.
                atomic_batch_bytes: usize::MAX,
                notifies: false,
            },
        }
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        let inner = self.inner.lock().unwrap();
        Ok(inner
            .1
            .get(&(key.namespace.clone(), key.id.clone()))
            .cloned())
    }

    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
        if write.fence.is_some() {
            return Err(StoreError::Unsupported { op: "fenced write" });
        }
        if value.len() > MAX {
            return Err(StoreError::TooLarge {
                size: value.len(),
                max: MAX,
            });
        }
        let mut inner = self.inner.lock().unwrap();
        let slot = (key.namespace.clone(), key.id.clone());
        write
            .pre
            .check(key, inner.1.get(&slot).map(|r| r.version))?;
        inner.0 += 1;
        let version = Version(inner.0);
        inner.1.insert(slot, Record { value, version });
        Ok(version)
    }

    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
        if write.fence.is_some() {
            return Err(StoreError::Unsupported { op: "fenced write" });
        }
        let mut inner = self.inner.lock().unwrap();
        let slot = (key.namespace.clone(), key.id.clone());
        write
            .pre
            .check(key, inner.1.get(&slot).map(|r| r.version))?;
        Ok(inner.1.remove(&slot).is_some())
    }

    async fn list(
        &self,
        ns: &Namespace,
        after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let limit = clamp_list_limit(limit);
        let inner = self.inner.lock().unwrap();
        let mut entries: Vec<Entry> = inner
            .1
            .iter()
            .filter(|((n, id), _)| n == ns && after.is_none_or(|a| id > a))
            .take(limit + 1)
            .map(|((_, id), record)| Entry {
                id: id.clone(),
                record: record.clone(),
            })
            .collect();
        let more = entries.len() > limit;
        entries.truncate(limit);
        let next = if more {
            entries.last().map(|e| e.id.clone())
        } else {
            None
        };
        Ok(Page { entries, next })
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        let inner = self.inner.lock().unwrap();
        let mut out: Vec<Namespace> = inner.1.keys().map(|(ns, _)| ns.clone()).collect();
        out.dedup();
        Ok(out)
    }

    async fn write_batch(
        &self,
        ops: &[BatchOp],
        fence: Option<Fence>,
    ) -> Result<Vec<BatchOutcome>, StoreError> {
        if fence.is_some() {
            return Err(StoreError::Unsupported { op: "fenced write" });
        }
        check_batch(ops, MAX)?;
        let mut inner = self.inner.lock().unwrap();
        // Every precondition first, so a conflict writes nothing.
        for op in ops {
            let slot = (op.key().namespace.clone(), op.key().id.clone());
            op.pre()
                .check(op.key(), inner.1.get(&slot).map(|r| r.version))?;
        }
        let mut out = Vec::with_capacity(ops.len());
        for op in ops {
            let slot = (op.key().namespace.clone(), op.key().id.clone());
            out.push(match op {
                BatchOp::Put { value, .. } => {
                    inner.0 += 1;
                    let version = Version(inner.0);
                    let value = value.clone();
                    inner.1.insert(slot, Record { value, version });
                    BatchOutcome::Put(version)
                }
                BatchOp::Delete { .. } => BatchOutcome::Delete(inner.1.remove(&slot).is_some()),
            });
        }
        Ok(out)
    }

    async fn list_versions(
        &self,
        ns: &Namespace,
        after: Option<&RecordId>,
        limit: usize,
    ) -> Result<VersionPage, StoreError> {
        let page = self.list(ns, after, limit).await?;
        let entries = page
            .entries
            .into_iter()
            .map(|e| VersionEntry {
                id: e.id,
                version: e.record.version,
            })
            .collect();
        Ok(VersionPage {
            entries,
            next: page.next,
        })
    }

    async fn compact(&self) -> Result<(), StoreError> {
        // Removed values leave the map at once: nothing to reclaim.
        Ok(())
    }

    async fn watch_changes(&self) -> Result<Option<Changes>, StoreError> {
        // Other processes cannot write here: readers poll.
        Ok(None)
    }

    async fn try_lease(&self, _: &LockName, _: Duration) -> Result<Option<Lease>, StoreError> {
        Err(StoreError::Unsupported { op: "try_lease" })
    }

    async fn renew(&self, _: &Lease, _: Duration) -> Result<Lease, StoreError> {
        Err(StoreError::Unsupported { op: "renew" })
    }

    async fn release(&self, _: Lease) -> Result<bool, StoreError> {
        Err(StoreError::Unsupported { op: "release" })
    }
}

async fn make() -> Fixture {
    Fixture::new(Arc::new(MapStore::default()), ())
}

dream::conformance::conformance_suite!(make);
