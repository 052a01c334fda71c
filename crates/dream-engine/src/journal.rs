//! The journal: how a multi-record mutation becomes all-or-nothing.
//!
//! A mutation that fits one batch the store writes all or nothing (at most
//! [`MAX_BATCH_OPS`] writes whose values total at most
//! [`dream_core::Capabilities::atomic_batch_bytes`], its events included) is one
//! fenced batch: the store applies all of it or none (a failed precondition
//! rejects the whole batch), and no journal is written.
//!
//! Elsewhere (a store without atomic batches, or a larger mutation), under the
//! store lease, the writer first
//! stores `journal/current` holding every write of the mutation (the new bytes,
//! the version and hash it expects to replace, the hash it will leave), then
//! applies the writes as fenced batches (each record whole, made durable together),
//! then deletes the journal. If the process dies in between, the next process that
//! takes the lease rolls the journal forward before doing anything else: each
//! write is applied when the record still holds its pre-image, skipped when it
//! already holds its post-image. Opening a store never touches a journal.
//!
//! The events of the mutation go with it: in the atomic batch, first
//! ([`Feed::write_with`]), or in the journal, appended to the change feed right
//! after the journal is stored and before the records are written, each marked
//! with the journal's id, so that a roll-forward appends exactly those the dead
//! process had not ([`Feed::resume`]). No crash loses or invents an event.

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use dream_core::failpoint::failpoint;
use dream_core::store::MAX_BATCH_OPS;
use dream_core::{
    BatchOp, Key, Namespace, Precondition, Record, RecordId, RecordStore, StoreError, Version,
    Write,
};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::events::Event;
use crate::feed::{Feed, FeedEntry};
use crate::layout::{self, hash_bytes};
use crate::lease::HeldLease;
use crate::records::{from_json, to_json};

/// The failpoints of an apply that is one atomic batch, in the order they are
/// reached. With the `failpoints` feature, setting `DREAM_FAILPOINT` to one of
/// them kills the process there.
pub const ATOMIC_APPLY_FAILPOINTS: &[&str] = &["apply-before-batch", "apply-after-batch"];

/// The failpoints of a journaled apply (one that is not an atomic batch), in the
/// order they are reached.
pub const JOURNALED_APPLY_FAILPOINTS: &[&str] = &[
    "apply-before-journal",
    "apply-after-journal",
    "apply-after-events",
    "apply-after-records",
    "apply-after-journal-clear",
];

/// One write of a journaled mutation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Op {
    /// The record's namespace.
    pub ns: Namespace,
    /// The record's id.
    pub id: RecordId,
    /// The new value (UTF-8); `None` deletes the record.
    #[serde(default)]
    pub value: Option<String>,
    /// The version it replaces, as read under the lease; `None`: it must be absent.
    #[serde(default)]
    pub expect: Option<u64>,
    /// SHA-256 of the bytes it replaces; `None`: absent.
    #[serde(default)]
    pub pre: Option<String>,
    /// SHA-256 of the bytes it leaves; `None`: it deletes.
    #[serde(default)]
    pub post: Option<String>,
}

impl Op {
    /// Leaves `value` (deletes, when `None`) where the record read had version
    /// `expect` and bytes hashing to `pre` (`None`: no record).
    fn new(key: Key, value: Option<String>, expect: Option<u64>, pre: Option<String>) -> Op {
        Op {
            post: value.as_deref().map(|v| hash_bytes(v.as_bytes())),
            ns: key.namespace,
            id: key.id,
            value,
            expect,
            pre,
        }
    }

    /// Creates a record that must not exist yet.
    pub fn create(key: Key, value: impl Into<String>) -> Op {
        Op::new(key, Some(value.into()), None, None)
    }

    /// Replaces `current` (or creates, when `None`).
    pub fn put(key: Key, value: impl Into<String>, current: Option<&Record>) -> Op {
        let expect = current.map(|r| r.version.0);
        let pre = current.map(|r| hash_bytes(&r.value));
        Op::new(key, Some(value.into()), expect, pre)
    }

    /// Deletes `current`.
    pub fn delete(key: Key, current: &Record) -> Op {
        let pre = hash_bytes(&current.value);
        Op::new(key, None, Some(current.version.0), Some(pre))
    }

    /// Replaces the record read at `version` with bytes hashing to `hash`.
    pub fn replace(key: Key, value: impl Into<String>, version: u64, hash: &str) -> Op {
        Op::new(
            key,
            Some(value.into()),
            Some(version),
            Some(hash.to_owned()),
        )
    }

    /// Deletes the record read at `version` with bytes hashing to `hash`.
    pub fn remove(key: Key, version: u64, hash: &str) -> Op {
        Op::new(key, None, Some(version), Some(hash.to_owned()))
    }

    /// The record's key.
    pub fn key(&self) -> Key {
        Key::new(self.ns.clone(), self.id.clone())
    }

    fn precondition(&self) -> Precondition {
        match self.expect {
            Some(v) => Precondition::Matches(Version(v)),
            None => Precondition::Absent,
        }
    }

    /// The op as a batch operation with its precondition.
    pub fn batch_op(&self) -> BatchOp {
        let pre = self.precondition();
        match &self.value {
            Some(value) => BatchOp::put(self.key(), Bytes::copy_from_slice(value.as_bytes()), pre),
            None => BatchOp::delete(self.key(), pre),
        }
    }
}

/// The stored journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Journal {
    /// The pass or operation it belongs to.
    pub id: String,
    /// When it was written.
    pub at: DateTime<Utc>,
    /// The writes, in order.
    pub ops: Vec<Op>,
    /// The events the mutation records in the change feed, in order.
    #[serde(default)]
    pub events: Vec<Event>,
    /// The newest feed entry this process had seen when the journal was stored
    /// ([`Feed::seen`]): the mutation's events are appended after it.
    #[serde(default)]
    pub feed_after: u64,
}

/// What running a journal did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Writes found neither at their pre- nor at their post-image, and skipped.
    pub mismatches: Vec<Key>,
}

/// Applies every op fenced by `lease`, with the journal's events: as one atomic
/// batch where they fit one ([`Feed::atomic_with`]), else journal first, then the events, then
/// the batches, then the journal cleared. The caller holds the lease and has
/// rolled any leftover journal forward. Returns the feed entries written.
pub(crate) async fn run(
    store: &Arc<dyn RecordStore>,
    feed: &Feed,
    lease: &HeldLease,
    journal: &Journal,
) -> Result<(Outcome, Vec<FeedEntry>)> {
    let fence = lease.fence();
    let batch: Vec<BatchOp> = journal.ops.iter().map(Op::batch_op).collect();
    if feed.atomic_with(journal.at, &journal.events, &batch) {
        failpoint("apply-before-batch");
        lease.check()?;
        let entries = feed
            .write_with(journal.at, &journal.events, &batch, Some(fence))
            .await?;
        failpoint("apply-after-batch");
        return Ok((Outcome::default(), entries));
    }
    let journal = Journal {
        // No store read: the append right after looks for the newest entry.
        feed_after: feed.seen().await,
        ..journal.clone()
    };
    let jkey = layout::journal_key();
    failpoint("apply-before-journal");
    lease.check()?;
    let jversion = store
        .put(
            &jkey,
            to_json(&journal),
            Write::absent().fenced(fence.clone()),
        )
        .await?;
    failpoint("apply-after-journal");
    let entries = feed
        .append_all(journal.at, &journal.events, Some(&journal.id), Some(&fence))
        .await?;
    failpoint("apply-after-events");
    let outcome = apply_batches(store, lease, &journal.ops).await?;
    failpoint("apply-after-records");
    lease.check()?;
    store
        .delete(&jkey, Write::matches(jversion).fenced(fence))
        .await?;
    failpoint("apply-after-journal-clear");
    Ok((outcome, entries))
}

/// Rolls a leftover journal forward, if there is one. Only call right after taking
/// the lease, before anything else. Returns the journal's id and the outcome.
pub(crate) async fn roll_forward(
    store: &Arc<dyn RecordStore>,
    feed: &Feed,
    lease: &HeldLease,
) -> Result<Option<(String, Outcome)>> {
    let jkey = layout::journal_key();
    let Some(record) = store.get(&jkey).await? else {
        return Ok(None);
    };
    let journal: Journal = from_json(&jkey, &record)?;
    tracing::info!(journal = %journal.id, ops = journal.ops.len(), "rolling a leftover journal forward");
    lease.check()?;
    feed.resume(
        journal.at,
        &journal.events,
        &journal.id,
        journal.feed_after,
        &lease.fence(),
    )
    .await?;
    let mut outcome = Outcome::default();
    careful_all(store, lease, &journal.ops, &mut outcome).await?;
    lease.check()?;
    store
        .delete(&jkey, Write::matches(record.version).fenced(lease.fence()))
        .await?;
    if !outcome.mismatches.is_empty() {
        tracing::warn!(journal = %journal.id, skipped = outcome.mismatches.len(),
            "journal writes skipped: records held neither their pre- nor their post-image");
    }
    Ok(Some((journal.id, outcome)))
}

/// Applies `ops` as fenced batches of at most [`MAX_BATCH_OPS`]. Where a batch
/// stops at a failed precondition, the rest of it is applied one op at a time
/// after looking at each record ([`careful`]).
async fn apply_batches(
    store: &Arc<dyn RecordStore>,
    lease: &HeldLease,
    ops: &[Op],
) -> Result<Outcome> {
    let mut outcome = Outcome::default();
    for chunk in ops.chunks(MAX_BATCH_OPS) {
        lease.check()?;
        let batch: Vec<BatchOp> = chunk.iter().map(Op::batch_op).collect();
        let rest = match store.write_batch(&batch, Some(lease.fence())).await {
            Ok(_) => continue,
            Err(StoreError::Conflict { .. }) => chunk,
            Err(StoreError::PartialBatch { applied, source })
                if matches!(*source, StoreError::Conflict { .. }) =>
            {
                &chunk[applied.len()..]
            }
            Err(e) => return Err(e.into()),
        };
        careful_all(store, lease, rest, &mut outcome).await?;
    }
    Ok(outcome)
}

/// Applies each op with [`careful`], noting the ones skipped.
async fn careful_all(
    store: &Arc<dyn RecordStore>,
    lease: &HeldLease,
    ops: &[Op],
    outcome: &mut Outcome,
) -> Result<()> {
    for op in ops {
        lease.check()?;
        let key = op.key();
        if !careful(store, lease, op, &key).await? {
            outcome.mismatches.push(key);
        }
    }
    Ok(())
}

/// Applies `op` after looking at the record: `Ok(false)` when it holds neither
/// the op's pre-image nor its post-image (the op is skipped).
async fn careful(
    store: &Arc<dyn RecordStore>,
    lease: &HeldLease,
    op: &Op,
    key: &Key,
) -> Result<bool> {
    let current = store.get(key).await?;
    let at_pre = match (&current, op.expect) {
        (None, None) => true,
        (Some(r), Some(v)) => r.version.0 == v || op.pre.as_deref() == Some(&hash_bytes(&r.value)),
        _ => false,
    };
    let at_post = match (&current, &op.post) {
        (None, None) => true,
        (Some(r), Some(post)) => &hash_bytes(&r.value) == post,
        _ => false,
    };
    if at_post && !at_pre {
        return Ok(true);
    }
    if !at_pre {
        return Ok(false);
    }
    let pre = match &current {
        Some(r) => Write::matches(r.version),
        None => Write::absent(),
    };
    write(store, lease, op, key, pre).await?;
    Ok(true)
}

async fn write(
    store: &Arc<dyn RecordStore>,
    lease: &HeldLease,
    op: &Op,
    key: &Key,
    pre: Write,
) -> Result<()> {
    let w = pre.fenced(lease.fence());
    match &op.value {
        Some(value) => {
            store
                .put(key, Bytes::copy_from_slice(value.as_bytes()), w)
                .await?;
        }
        None => {
            store.delete(key, w).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::DreamError;
    use dream_core::testing::MemoryStore;
    use std::time::Duration;

    fn feed(store: &Arc<dyn RecordStore>) -> Feed {
        Feed::new(store.clone(), 100)
    }

    fn k(id: &str) -> Key {
        layout::key(layout::STATE, RecordId::new(id).unwrap())
    }

    async fn setup() -> (Arc<dyn RecordStore>, HeldLease) {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let lease = take_lease(&store).await;
        (store, lease)
    }

    /// The dream lock for 5 s, which must be free.
    async fn take_lease(store: &Arc<dyn RecordStore>) -> HeldLease {
        HeldLease::try_take(store, &layout::dream_lock(), Duration::from_secs(5))
            .await
            .unwrap()
            .unwrap()
    }

    /// Writes `value` at `key` under `write`, which must succeed.
    async fn put(
        store: &Arc<dyn RecordStore>,
        key: &Key,
        value: impl Into<Bytes>,
        write: Write,
    ) -> Version {
        store.put(key, value.into(), write).await.unwrap()
    }

    /// Writes `value` to record `id` and returns the record as stored.
    async fn stored(store: &Arc<dyn RecordStore>, id: &str, value: &'static str) -> Record {
        let version = put(store, &k(id), value, Write::any()).await;
        Record {
            value: Bytes::from(value),
            version,
        }
    }

    /// Writes "old" to record `b` and returns the record as stored.
    async fn old_b(store: &Arc<dyn RecordStore>) -> Record {
        stored(store, "b", "old").await
    }

    /// Stores `journal` as a crash before its writes leaves it.
    async fn leave_journal(store: &Arc<dyn RecordStore>, journal: &Journal) {
        put(
            store,
            &layout::journal_key(),
            to_json(journal),
            Write::absent(),
        )
        .await;
    }

    /// A journal of `ops` without events.
    fn journal(id: &str, ops: Vec<Op>) -> Journal {
        Journal {
            id: id.into(),
            at: Utc::now(),
            ops,
            events: Vec::new(),
            feed_after: 0,
        }
    }

    async fn assert_no_journal(store: &Arc<dyn RecordStore>) {
        let journal = store.get(&layout::journal_key()).await.unwrap();
        assert!(journal.is_none(), "the journal is cleared");
    }

    async fn value(store: &Arc<dyn RecordStore>, id: &str) -> Option<String> {
        store
            .get(&k(id))
            .await
            .unwrap()
            .map(|r| String::from_utf8(r.value.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_journal_applies_every_op_and_clears_itself() {
        let (store, lease) = setup().await;
        let b = old_b(&store).await;
        let c = stored(&store, "c", "gone").await;
        let journal = journal(
            "p1",
            vec![
                Op::create(k("a"), "new"),
                Op::put(k("b"), "newer", Some(&b)),
                Op::delete(k("c"), &c),
            ],
        );
        let (outcome, _) = run(&store, &feed(&store), &lease, &journal).await.unwrap();
        assert!(outcome.mismatches.is_empty());
        assert_eq!(value(&store, "a").await.as_deref(), Some("new"));
        assert_eq!(value(&store, "b").await.as_deref(), Some("newer"));
        assert_eq!(value(&store, "c").await, None);
        assert_no_journal(&store).await;
    }

    #[tokio::test]
    async fn roll_forward_finishes_a_half_applied_journal_exactly_once() {
        let (store, lease) = setup().await;
        let b = old_b(&store).await;
        let journal = journal(
            "p2",
            vec![
                Op::create(k("a"), "new"),
                Op::put(k("b"), "newer", Some(&b)),
            ],
        );
        // A crash after the journal and the first write.
        leave_journal(&store, &journal).await;
        put(&store, &k("a"), "new", Write::absent()).await;
        lease.release().await;

        let lease = take_lease(&store).await;
        let (id, outcome) = roll_forward(&store, &feed(&store), &lease)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(id, "p2");
        assert!(outcome.mismatches.is_empty());
        assert_eq!(value(&store, "a").await.as_deref(), Some("new"));
        assert_eq!(value(&store, "b").await.as_deref(), Some("newer"));
        assert!(
            roll_forward(&store, &feed(&store), &lease)
                .await
                .unwrap()
                .is_none()
        );
    }

    #[tokio::test]
    async fn roll_forward_skips_records_it_does_not_recognise() {
        let (store, lease) = setup().await;
        let b = old_b(&store).await;
        let journal = journal("p3", vec![Op::put(k("b"), "newer", Some(&b))]);
        leave_journal(&store, &journal).await;
        put(&store, &k("b"), "tampered", Write::any()).await;
        let (_, outcome) = roll_forward(&store, &feed(&store), &lease)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(outcome.mismatches, vec![k("b")]);
        assert_eq!(value(&store, "b").await.as_deref(), Some("tampered"));
    }

    #[tokio::test]
    async fn a_lost_lease_stops_the_journal_before_any_write() {
        let clock = dream_core::ManualClock::new(Utc::now());
        let store: Arc<dyn RecordStore> =
            Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
        let lease = HeldLease::try_take(&store, &layout::dream_lock(), Duration::from_secs(1))
            .await
            .unwrap()
            .unwrap();
        clock.advance(chrono::Duration::seconds(10));
        let _thief = store
            .try_lease(&layout::dream_lock(), Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap();
        let journal = journal("p4", vec![Op::create(k("a"), "new")]);
        let err = run(&store, &feed(&store), &lease, &journal)
            .await
            .unwrap_err();
        assert!(matches!(err, DreamError::LockLost { .. }), "{err}");
        assert!(store.get(&k("a")).await.unwrap().is_none());
        assert_no_journal(&store).await;
    }

    /// A memory store whose batches are atomic only up to `atomic_batch_bytes`
    /// (default 0: none is) that notes, at every batch, whether the journal was
    /// already stored.
    #[derive(Debug, Default)]
    struct NonAtomic {
        inner: MemoryStore,
        atomic_batch_bytes: usize,
        journal_seen: std::sync::Mutex<Vec<bool>>,
        puts: std::sync::atomic::AtomicUsize,
    }

    /// A [`NonAtomic`] store atomic up to `atomic_batch_bytes`, as a store, and
    /// the dream lock on it.
    async fn non_atomic(
        atomic_batch_bytes: usize,
    ) -> (Arc<NonAtomic>, Arc<dyn RecordStore>, HeldLease) {
        let inner = Arc::new(NonAtomic {
            atomic_batch_bytes,
            ..NonAtomic::default()
        });
        let store: Arc<dyn RecordStore> = inner.clone();
        let lease = take_lease(&store).await;
        (inner, store, lease)
    }

    #[async_trait::async_trait]
    impl RecordStore for NonAtomic {
        fn info(&self) -> dream_core::StoreInfo {
            let mut info = self.inner.info();
            info.capabilities.atomic_batch_bytes = self.atomic_batch_bytes;
            info
        }
        async fn get(&self, key: &Key) -> std::result::Result<Option<Record>, StoreError> {
            self.inner.get(key).await
        }
        async fn put(
            &self,
            key: &Key,
            value: Bytes,
            write: Write,
        ) -> std::result::Result<Version, StoreError> {
            self.puts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.inner.put(key, value, write).await
        }
        async fn delete(&self, key: &Key, write: Write) -> std::result::Result<bool, StoreError> {
            self.inner.delete(key, write).await
        }
        async fn list(
            &self,
            namespace: &Namespace,
            start_after: Option<&RecordId>,
            limit: usize,
        ) -> std::result::Result<dream_core::Page, StoreError> {
            self.inner.list(namespace, start_after, limit).await
        }
        async fn namespaces(&self) -> std::result::Result<Vec<Namespace>, StoreError> {
            self.inner.namespaces().await
        }
        async fn compact(&self) -> std::result::Result<(), StoreError> {
            self.inner.compact().await
        }
        async fn watch_changes(
            &self,
        ) -> std::result::Result<Option<dream_core::Changes>, StoreError> {
            self.inner.watch_changes().await
        }
        async fn try_lease(
            &self,
            lock: &dream_core::LockName,
            ttl: Duration,
        ) -> std::result::Result<Option<dream_core::Lease>, StoreError> {
            self.inner.try_lease(lock, ttl).await
        }
        async fn renew(
            &self,
            lease: &dream_core::Lease,
            ttl: Duration,
        ) -> std::result::Result<dream_core::Lease, StoreError> {
            self.inner.renew(lease, ttl).await
        }
        async fn release(&self, lease: dream_core::Lease) -> std::result::Result<bool, StoreError> {
            self.inner.release(lease).await
        }
        async fn write_batch(
            &self,
            ops: &[BatchOp],
            fence: Option<dream_core::Fence>,
        ) -> std::result::Result<Vec<dream_core::BatchOutcome>, StoreError> {
            let journal = self.inner.get(&layout::journal_key()).await?.is_some();
            self.journal_seen.lock().unwrap().push(journal);
            self.inner.write_batch(ops, fence).await
        }
        async fn list_versions(
            &self,
            namespace: &Namespace,
            start_after: Option<&RecordId>,
            limit: usize,
        ) -> std::result::Result<dream_core::VersionPage, StoreError> {
            self.inner
                .list_versions(namespace, start_after, limit)
                .await
        }
    }

    #[tokio::test]
    async fn on_an_atomic_store_a_failed_precondition_rejects_the_whole_mutation() {
        let (store, lease) = setup().await;
        let b = old_b(&store).await;
        let stale = Record {
            version: Version(b.version.0 + 1000),
            ..b
        };
        let journal = journal(
            "p5",
            vec![
                Op::create(k("a"), "new"),
                Op::put(k("b"), "newer", Some(&stale)),
            ],
        );
        let err = run(&store, &feed(&store), &lease, &journal)
            .await
            .unwrap_err();
        assert!(
            matches!(err, DreamError::Store(StoreError::Conflict { .. })),
            "{err}"
        );
        assert_eq!(
            value(&store, "a").await,
            None,
            "nothing of the batch written"
        );
        assert_eq!(value(&store, "b").await.as_deref(), Some("old"));
        assert_no_journal(&store).await;
    }

    #[tokio::test]
    async fn without_atomic_batches_a_mutation_s_events_go_in_one_batch_not_a_put_each() {
        let (inner, store, lease) = non_atomic(0).await;
        let n = 300;
        let journal = Journal {
            id: "p9".into(),
            at: Utc::now(),
            ops: (0..n)
                .map(|i| Op::create(k(&format!("n{i}")), format!("v{i}")))
                .collect(),
            events: (0..n)
                .map(|i| crate::events::Event::TrashExpired { count: i })
                .collect(),
            feed_after: 0,
        };
        let feed = Feed::new(store.clone(), 10_000);
        let (_, entries) = run(&store, &feed, &lease, &journal).await.unwrap();
        assert_eq!(entries.len(), n);
        // The journal is the only put; the events and the records are a batch each,
        // both written after the journal.
        assert_eq!(inner.puts.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(*inner.journal_seen.lock().unwrap(), vec![true, true]);
        let record = store.get(&k("n0")).await.unwrap().unwrap();
        assert!(entries.iter().all(|e| e.version < record.version.0));
        assert_no_journal(&store).await;
    }

    #[tokio::test]
    async fn a_mutation_is_journaled_only_when_it_and_its_events_exceed_the_atomic_limit() {
        let limit = 4096;
        let (inner, store, lease) = non_atomic(limit).await;
        let feed = Feed::new(store.clone(), 10_000);
        let mutation = |id: &str, value: String| Journal {
            id: id.into(),
            at: Utc::now(),
            ops: vec![Op::create(k(id), value)],
            events: vec![crate::events::Event::TrashExpired { count: 1 }],
            feed_after: 0,
        };
        // Values and entry well within the limit: one batch, no journal.
        run(
            &store,
            &feed,
            &lease,
            &mutation("small", "x".repeat(limit / 2)),
        )
        .await
        .unwrap();
        assert_eq!(*inner.journal_seen.lock().unwrap(), vec![false]);
        assert_eq!(inner.puts.load(std::sync::atomic::Ordering::SeqCst), 0);
        // The value alone fits, the value and its event's entry do not: journaled.
        inner.journal_seen.lock().unwrap().clear();
        run(
            &store,
            &feed,
            &lease,
            &mutation("large", "x".repeat(limit - 8)),
        )
        .await
        .unwrap();
        assert_eq!(*inner.journal_seen.lock().unwrap(), vec![true]);
        assert_eq!(inner.puts.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(
            value(&store, "large").await.map(|v| v.len()),
            Some(limit - 8)
        );
        assert_no_journal(&store).await;
    }

    #[tokio::test]
    async fn without_atomic_batches_the_journal_is_stored_before_the_batch_and_cleared_after() {
        let (inner, store, lease) = non_atomic(0).await;
        let b = old_b(&store).await;
        // One op more than a batch holds: two batches, both after the journal.
        let mut ops: Vec<Op> = (0..MAX_BATCH_OPS)
            .map(|i| Op::create(k(&format!("n{i}")), format!("v{i}")))
            .collect();
        ops.push(Op::put(k("b"), "newer", Some(&b)));
        let journal = journal("p6", ops);
        let (outcome, _) = run(&store, &feed(&store), &lease, &journal).await.unwrap();
        assert!(outcome.mismatches.is_empty());
        assert_eq!(*inner.journal_seen.lock().unwrap(), vec![true, true]);
        assert_eq!(value(&store, "n999").await.as_deref(), Some("v999"));
        assert_eq!(value(&store, "b").await.as_deref(), Some("newer"));
        assert_no_journal(&store).await;
    }

    #[tokio::test]
    async fn without_atomic_batches_a_conflict_skips_only_the_record_it_names() {
        let (_, store, lease) = non_atomic(0).await;
        let b = old_b(&store).await;
        put(&store, &k("b"), "tampered", Write::any()).await;
        let journal = journal(
            "p7",
            vec![
                Op::create(k("a"), "new"),
                Op::put(k("b"), "newer", Some(&b)),
            ],
        );
        let (outcome, _) = run(&store, &feed(&store), &lease, &journal).await.unwrap();
        assert_eq!(outcome.mismatches, vec![k("b")]);
        assert_eq!(value(&store, "a").await.as_deref(), Some("new"));
        assert_eq!(value(&store, "b").await.as_deref(), Some("tampered"));
        assert_no_journal(&store).await;
    }
}
