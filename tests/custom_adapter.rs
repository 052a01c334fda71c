//! Writing your own adapter: a small store implemented outside the workspace
//! crates, exactly as a third party would, through the facade only — and the
//! conformance suite run on it through the facade's `conformance` feature.
//!
//! This store keeps records in a `BTreeMap` and has no leases: the suite then
//! asserts that every lease call and fenced write answers `Unsupported`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dream::conformance::Fixture;
use dream::store::clamp_list_limit;
use dream::{
    Bytes, Capabilities, Entry, Key, Lease, LockName, Namespace, Page, Precondition, Record,
    RecordId, RecordStore, StoreError, StoreInfo, Version, Write, async_trait,
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
        check(key, inner.1.get(&slot).map(|r| r.version), write.pre)?;
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
        check(key, inner.1.get(&slot).map(|r| r.version), write.pre)?;
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

fn check(key: &Key, current: Option<Version>, pre: Precondition) -> Result<(), StoreError> {
    let ok = match pre {
        Precondition::Any => true,
        Precondition::Absent => current.is_none(),
        Precondition::Matches(v) => current == Some(v),
    };
    if ok {
        Ok(())
    } else {
        Err(StoreError::Conflict {
            key: key.clone(),
            current,
        })
    }
}

async fn make() -> Fixture {
    Fixture::new(Arc::new(MapStore::default()), ())
}

dream::conformance::conformance_suite!(make);
