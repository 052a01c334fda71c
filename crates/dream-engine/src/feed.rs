//! The change feed: every [`Event`] any process makes, durable and in order, in the
//! store's `feed` namespace ([`crate::layout::FEED`]).
//!
//! Entry `n` is the record `feed/<n as 20 digits>`, so listing by id is listing in
//! order. An appender writes the entry after the newest one it has seen with
//! `Precondition::Absent`; when another process took that number first, the write
//! conflicts and the appender looks again. An entry is therefore written only
//! after its predecessor exists: the feed has no gaps, except at its start, where
//! appenders trim entries beyond [`crate::Options::feed_retain`]. A reader asking
//! for entries after a cursor the feed no longer holds gets
//! [`DreamError::Resync`], never a silent skip. The feed works with the store
//! contract as it is: the same put, list, delete and batch every backend offers,
//! and an encrypted store encrypts its entries like any record.
//!
//! An event is written with the change it describes, so that a crash can neither
//! lose nor invent it ([`Feed::write_with`]): on a store with atomic batches the
//! entries go first in the change's own batch; elsewhere a journaled change keeps
//! its events in the journal, which appends them (marked with the journal's id,
//! so a roll-forward appends each once) before the change's records are written.
//! Every entry carries its own record's version ([`FeedEntry::version`]).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use dream_core::store::MAX_BATCH_OPS;
use dream_core::{
    BatchOp, BatchOutcome, Changes, Fence, Key, Precondition, RecordId, RecordStore, StoreError,
    Write,
};
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use crate::error::{DreamError, Result};
use crate::events::Event;
use crate::layout;
use crate::records::{from_json, to_json};

/// Most entries one read returns.
pub const MAX_FEED_PAGE: usize = 1000;

/// One entry of the change feed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedEntry {
    /// Its position: 1 for the first event a store ever recorded, then one more
    /// for each. The cursor to resume after it.
    pub seq: u64,
    /// The store version of the entry's own record. The entry is written before
    /// (or, on a store with atomic batches, in one batch with and before) the
    /// records of the change it describes, so every record the change wrote holds
    /// a newer version and every earlier write an older one: a reader holding a
    /// record at version `v` knows that `v > version` already reflects this change
    /// and `v < version` does not. (The exception: on a store without atomic
    /// batches, the entry of a change made outside the store lease — a logged
    /// session, a stored plan — is written after its records.) 0 until the entry
    /// is stored.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub version: u64,
    /// When it was recorded (the writer's clock).
    pub at: DateTime<Utc>,
    /// The journaled change that appended it, so that rolling the journal forward
    /// appends each of its events once (see `Feed::resume`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The record id of entry `seq`.
fn entry_id(seq: u64) -> RecordId {
    RecordId::new(format!("{seq:020}")).expect("digits are a valid id")
}

/// `events` as the entries numbered after `tail`, marked with `commit`; their
/// versions are set once written ([`stamp_versions`]).
fn numbered(
    events: &[Event],
    tail: u64,
    at: DateTime<Utc>,
    commit: Option<&str>,
) -> Vec<FeedEntry> {
    events
        .iter()
        .zip(tail + 1..)
        .map(|(event, seq)| FeedEntry {
            seq,
            version: 0,
            at,
            commit: commit.map(str::to_owned),
            event: event.clone(),
        })
        .collect()
}

/// The write of one entry: a put that refuses a number already taken.
fn entry_op(entry: &FeedEntry) -> BatchOp {
    BatchOp::put(entry_key(entry.seq), to_json(entry), Precondition::Absent)
}

/// Sets each written entry's version from its batch outcome, in order.
fn stamp_versions(entries: &mut [FeedEntry], outcomes: Vec<BatchOutcome>) {
    for (entry, outcome) in entries.iter_mut().zip(outcomes) {
        if let BatchOutcome::Put(version) = outcome {
            entry.version = version.0;
        }
    }
}

fn entry_key(seq: u64) -> Key {
    layout::key(layout::FEED, entry_id(seq))
}

/// The number of a feed record id, or why it is not one.
fn parse_seq(id: &RecordId) -> Result<u64> {
    let text = id.as_str();
    match text.parse::<u64>() {
        Ok(seq) if text.len() == 20 && seq > 0 => Ok(seq),
        _ => Err(DreamError::corrupt(
            &layout::key(layout::FEED, id.clone()),
            "not a feed entry id",
        )),
    }
}

/// Appends to and reads the feed of one store; shared by a handle's clones.
#[derive(Debug)]
pub(crate) struct Feed {
    store: Arc<dyn RecordStore>,
    retain: u64,
    /// The newest entry this process has seen (0: none yet).
    tail: Mutex<u64>,
}

impl Feed {
    pub fn new(store: Arc<dyn RecordStore>, retain: u64) -> Feed {
        Feed {
            store,
            retain,
            tail: Mutex::new(0),
        }
    }

    /// The newest entry at or after `from` (`from` itself when the feed holds
    /// nothing after it).
    async fn newest_after(&self, from: u64) -> Result<u64> {
        let ns = layout::namespace(layout::FEED);
        let mut after = (from > 0).then(|| entry_id(from));
        let mut newest = from;
        loop {
            let page = self
                .store
                .list_versions(&ns, after.as_ref(), dream_core::store::MAX_LIST_LIMIT)
                .await?;
            if let Some(last) = page.entries.last() {
                newest = newest.max(parse_seq(&last.id)?);
            }
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(newest),
            }
        }
    }

    /// Records `event` as the next entry and returns it. For an event that
    /// describes no other write (a change written with others goes through
    /// [`Feed::write_with`]).
    pub async fn append(&self, at: DateTime<Utc>, event: Event) -> Result<FeedEntry> {
        let mut entries = self.append_all(at, &[event], None, None).await?;
        Ok(entries.pop().expect("one event, one entry"))
    }

    /// Appends `events` in order, each as the next entry, marked with `commit`
    /// and written under `fence` when given. The entries go in batches of at most
    /// [`MAX_BATCH_OPS`], each `Absent`: a batch whose first number another
    /// appender took is renumbered after the newest entry and written again; of a
    /// batch stopped part-way by such a conflict (a store without atomic batches)
    /// the applied prefix is kept and the rest renumbered. Entries are written in
    /// order, so each exists only after its predecessor.
    pub async fn append_all(
        &self,
        at: DateTime<Utc>,
        events: &[Event],
        commit: Option<&str>,
        fence: Option<&Fence>,
    ) -> Result<Vec<FeedEntry>> {
        let mut tail = self.tail.lock().await;
        *tail = self.newest_after(*tail).await?;
        let mut out = Vec::with_capacity(events.len());
        let mut rest = events;
        while !rest.is_empty() {
            let chunk = &rest[..rest.len().min(MAX_BATCH_OPS)];
            let mut entries = numbered(chunk, *tail, at, commit);
            let batch: Vec<BatchOp> = entries.iter().map(entry_op).collect();
            let written = match &batch[..] {
                // One entry: a plain put, the cheapest durable write everywhere.
                [BatchOp::Put { key, value, .. }] => {
                    let write = Write {
                        pre: Precondition::Absent,
                        fence: fence.cloned(),
                    };
                    self.store
                        .put(key, value.clone(), write)
                        .await
                        .map(|v| vec![BatchOutcome::Put(v)])
                }
                _ => self.store.write_batch(&batch, fence.cloned()).await,
            };
            let (applied, conflict) = match written {
                Ok(outcomes) => (outcomes, false),
                Err(StoreError::Conflict { .. }) => (Vec::new(), true),
                Err(StoreError::PartialBatch { applied, source })
                    if matches!(*source, StoreError::Conflict { .. }) =>
                {
                    (applied, true)
                }
                Err(e) => return Err(e.into()),
            };
            entries.truncate(applied.len());
            stamp_versions(&mut entries, applied);
            if let Some(last) = entries.last() {
                *tail = last.seq;
            }
            rest = &rest[entries.len()..];
            out.extend(entries);
            if conflict {
                *tail = self.newest_after(*tail + 1).await?;
            }
        }
        let newest = *tail;
        drop(tail);
        if let Some(first) = out.first() {
            self.trim(first.seq, newest).await?;
        }
        Ok(out)
    }

    /// Whether `ops` and an entry for each of `events` fit one batch that this
    /// store writes all or nothing ([`dream_core::Capabilities::is_atomic`]),
    /// whatever numbers the entries get.
    pub fn atomic_with(&self, at: DateTime<Utc>, events: &[Event], ops: &[BatchOp]) -> bool {
        if ops.len() + events.len() > MAX_BATCH_OPS {
            return false;
        }
        let capabilities = self.store.info().capabilities;
        // Only a limit between none and all needs the entries' size.
        match capabilities.atomic_batch_bytes {
            0 => return false,
            usize::MAX => return true,
            _ => {}
        }
        // Numbered as high as entries go (20 digits): no real numbering is longer.
        let highest = numbered(events, u64::MAX - 1 - events.len() as u64, at, None);
        let batch: Vec<BatchOp> = highest
            .iter()
            .map(entry_op)
            .chain(ops.iter().cloned())
            .collect();
        capabilities.is_atomic(&batch)
    }

    /// Writes `ops` under `fence` together with an entry for each of `events`, so
    /// that no crash separates the change from its events. Where that is one
    /// atomic batch ([`Feed::atomic_with`]): the entries first (another appender
    /// taking their numbers rejects the whole batch, and it is renumbered and
    /// written again). Elsewhere the ops are written first, then the entries: a
    /// crash between the two loses the events, never invents them (a change that
    /// must not lose them is journaled, see [`crate::journal`]). The caller keeps
    /// `ops` plus `events` within [`dream_core::store::MAX_BATCH_OPS`].
    pub async fn write_with(
        &self,
        at: DateTime<Utc>,
        events: &[Event],
        ops: &[BatchOp],
        fence: Option<Fence>,
    ) -> Result<Vec<FeedEntry>> {
        if !self.atomic_with(at, events, ops) {
            if !ops.is_empty() {
                self.store.write_batch(ops, fence.clone()).await?;
            }
            return self.append_all(at, events, None, fence.as_ref()).await;
        }
        let mut tail = self.tail.lock().await;
        *tail = self.newest_after(*tail).await?;
        let (mut entries, outcomes) = loop {
            let entries = numbered(events, *tail, at, None);
            let batch: Vec<BatchOp> = entries
                .iter()
                .map(entry_op)
                .chain(ops.iter().cloned())
                .collect();
            match self.store.write_batch(&batch, fence.clone()).await {
                Ok(outcomes) => break (entries, outcomes),
                Err(StoreError::Conflict { key, .. })
                    if key.namespace.as_str() == layout::FEED && !entries.is_empty() =>
                {
                    *tail = self.newest_after(entries[0].seq).await?;
                }
                Err(e) => return Err(e.into()),
            }
        };
        stamp_versions(&mut entries, outcomes);
        if let Some(last) = entries.last() {
            *tail = last.seq;
        }
        let newest = *tail;
        drop(tail);
        if let Some(first) = entries.first() {
            self.trim(first.seq, newest).await?;
        }
        Ok(entries)
    }

    /// The newest entry this process has seen (0: none yet), without reading
    /// the store: every entry appended from now on is numbered after it.
    pub async fn seen(&self) -> u64 {
        *self.tail.lock().await
    }

    /// Appends those of `events` that the journaled change `commit` has not
    /// appended yet: it appends them in order, each marked with `commit`, after
    /// entry `after`, so the entries after `after` marked `commit` are a prefix
    /// of `events`. For rolling a journal forward.
    pub async fn resume(
        &self,
        at: DateTime<Utc>,
        events: &[Event],
        commit: &str,
        after: u64,
        fence: &Fence,
    ) -> Result<Vec<FeedEntry>> {
        let mut done = 0;
        let mut cursor = Some(after);
        loop {
            let page = match self.read(cursor, MAX_FEED_PAGE).await {
                Ok(page) => page,
                // Trimmed past `after`: what is left is read from the oldest entry.
                Err(DreamError::Resync { .. }) if cursor == Some(after) => {
                    cursor = None;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let Some(last) = page.last() else { break };
            cursor = Some(last.seq);
            done += page
                .iter()
                .filter(|e| e.seq > after && e.commit.as_deref() == Some(commit))
                .count();
        }
        let rest = events.get(done..).unwrap_or_default();
        self.append_all(at, rest, Some(commit), Some(fence)).await
    }

    /// Deletes entries older than the newest `retain`, every `retain / 4` appends:
    /// when the entries `first..=newest` just appended hold a multiple of
    /// `retain / 4`. Oldest first, in batches of deletes each matching the
    /// listed version; a batch that conflicts (another appender trimming the
    /// same entries) is retried one entry at a time, an absent entry being fine.
    async fn trim(&self, first: u64, newest: u64) -> Result<()> {
        let step = (self.retain / 4).max(1);
        if newest <= self.retain || newest / step == (first - 1) / step {
            return Ok(());
        }
        let keep_from = newest - self.retain + 1;
        let ns = layout::namespace(layout::FEED);
        loop {
            let page = self.store.list_versions(&ns, None, MAX_BATCH_OPS).await?;
            let listed = page.entries.len();
            let mut stale = Vec::new();
            for entry in page.entries {
                if parse_seq(&entry.id)? >= keep_from {
                    break;
                }
                stale.push((Key::new(ns.clone(), entry.id), entry.version));
            }
            if stale.is_empty() {
                return Ok(());
            }
            let more = page.next.is_some() && stale.len() == listed;
            let batch: Vec<BatchOp> = stale
                .iter()
                .map(|(key, version)| BatchOp::delete(key.clone(), Precondition::Matches(*version)))
                .collect();
            match self.store.write_batch(&batch, None).await {
                Ok(_) if more => {}
                Ok(_) => return Ok(()),
                Err(StoreError::Conflict { .. } | StoreError::PartialBatch { .. }) => {
                    for (key, version) in &stale {
                        match self.store.delete(key, Write::matches(*version)).await {
                            Ok(_) | Err(StoreError::Conflict { .. }) => {}
                            Err(e) => return Err(e.into()),
                        }
                    }
                    return Ok(());
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Up to `limit` entries after `cursor` (`None`: from the oldest retained), in
    /// order. [`DreamError::Resync`] when entries after `cursor` were trimmed, or
    /// when `cursor` is ahead of the feed (the store was replaced or restored).
    pub async fn read(&self, cursor: Option<u64>, limit: usize) -> Result<Vec<FeedEntry>> {
        let ns = layout::namespace(layout::FEED);
        let limit = limit.clamp(1, MAX_FEED_PAGE);
        let after = cursor.filter(|c| *c > 0).map(entry_id);
        let page = self.store.list(&ns, after.as_ref(), limit).await?;
        let mut out = Vec::with_capacity(page.entries.len());
        let mut expect = cursor.map(|c| c + 1);
        for item in page.entries {
            let seq = parse_seq(&item.id)?;
            let key = Key::new(ns.clone(), item.id);
            let mut entry: FeedEntry = from_json(&key, &item.record)?;
            entry.version = item.record.version.0;
            if entry.seq != seq {
                return Err(DreamError::corrupt(
                    &key,
                    "entry number differs from its id",
                ));
            }
            if let Some(want) = expect
                && seq != want
            {
                return Err(DreamError::Resync {
                    cursor: want - 1,
                    reason: format!(
                        "entries {want} to {} are no longer retained",
                        seq.saturating_sub(1)
                    ),
                });
            }
            expect = Some(seq + 1);
            out.push(entry);
        }
        if out.is_empty()
            && let Some(c) = cursor.filter(|c| *c > 0)
            && self.store.get(&entry_key(c)).await?.is_none()
        {
            // Nothing after `c` and `c` itself absent: trimming always keeps the
            // newest entry, so the feed never reached `c`.
            return Err(DreamError::Resync {
                cursor: c,
                reason: "the feed holds no such entry: the store was replaced or restored"
                    .to_owned(),
            });
        }
        Ok(out)
    }
}

/// A reader of the feed from a cursor: every event any process records, in order,
/// each once. Dropping it loses nothing: open a new one at [`Subscription::cursor`].
#[derive(Debug)]
pub struct Subscription {
    feed: Arc<Feed>,
    cursor: Option<u64>,
    buffer: VecDeque<FeedEntry>,
    poll: Duration,
    wake: Option<Changes>,
}

impl Subscription {
    /// Waits for a notice or the poll interval, whichever comes first.
    async fn wait(&mut self) {
        let Some(wake) = &mut self.wake else {
            return tokio::time::sleep(self.poll).await;
        };
        if let Ok(Err(_)) = tokio::time::timeout(self.poll, wake.changed()).await {
            // The notices stopped for good: poll from now on.
            self.wake = None;
        }
    }
}

/// How long [`Subscription::next`] waits between reads of an idle feed, unless
/// [`Subscription::with_poll`] says otherwise.
pub const DEFAULT_POLL: Duration = Duration::from_millis(500);

impl Subscription {
    pub(crate) fn new(feed: Arc<Feed>, cursor: Option<u64>) -> Subscription {
        Subscription {
            feed,
            cursor,
            buffer: VecDeque::new(),
            poll: DEFAULT_POLL,
            wake: None,
        }
    }

    /// The same subscription reading an idle feed every `poll`.
    pub fn with_poll(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// The same subscription woken early, between reads, whenever `changes` moves:
    /// the store's notice that it may have changed
    /// ([`RecordStore::watch_changes`](dream_core::RecordStore::watch_changes)).
    /// A notice only shortens the wait; the feed stays the truth, and without
    /// notices (or once they stop) the subscription polls.
    pub fn with_wakeups(mut self, changes: Changes) -> Self {
        self.wake = Some(changes);
        self
    }

    /// The seq of the last entry handed out (`None`: none yet, and the
    /// subscription started at the oldest retained entry).
    pub fn cursor(&self) -> Option<u64> {
        self.cursor
    }

    /// The entries recorded after the cursor so far (at most [`MAX_FEED_PAGE`]),
    /// without waiting; advances the cursor past them.
    pub async fn poll(&mut self) -> Result<Vec<FeedEntry>> {
        let mut out: Vec<FeedEntry> = self.buffer.drain(..).collect();
        if out.is_empty() {
            out = self.feed.read(self.cursor, MAX_FEED_PAGE).await?;
        }
        if let Some(last) = out.last() {
            self.cursor = Some(last.seq);
        }
        Ok(out)
    }

    /// The next entry, waiting for one when the feed holds nothing newer.
    pub async fn next(&mut self) -> Result<FeedEntry> {
        loop {
            if let Some(entry) = self.buffer.pop_front() {
                self.cursor = Some(entry.seq);
                return Ok(entry);
            }
            // Marked seen before the read: a notice arriving after it is kept.
            if let Some(wake) = &mut self.wake {
                wake.borrow_and_update();
            }
            let page = self.feed.read(self.cursor, MAX_FEED_PAGE).await?;
            if page.is_empty() {
                self.wait().await;
            }
            self.buffer.extend(page);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use dream_core::testing::MemoryStore;

    fn feed(store: &Arc<dyn RecordStore>, retain: u64) -> Arc<Feed> {
        Arc::new(Feed::new(store.clone(), retain))
    }

    fn event(n: usize) -> Event {
        Event::TrashExpired { count: n }
    }

    /// A memory store and the dream lock's lease on it, as a mutation holds it.
    async fn leased_store() -> (Arc<dyn RecordStore>, dream_core::Lease) {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let lease = store
            .try_lease(&layout::dream_lock(), Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap();
        (store, lease)
    }

    #[tokio::test]
    async fn a_record_in_the_feed_namespace_that_is_not_an_entry_is_corrupt() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let f = feed(&store, 100);
        f.append(Utc::now(), event(1)).await.unwrap();
        // A planted record under entry 2's id holding entry 7.
        let planted = FeedEntry {
            seq: 7,
            version: 0,
            at: Utc::now(),
            commit: None,
            event: event(7),
        };
        store
            .put(&entry_key(2), to_json(&planted), Write::absent())
            .await
            .unwrap();
        let err = f.read(None, 10).await.unwrap_err();
        assert!(matches!(err, DreamError::Corrupt { .. }), "{err}");
        // Not JSON at all.
        store
            .put(&entry_key(3), Bytes::from("{not json"), Write::absent())
            .await
            .unwrap();
        let err = f.read(Some(2), 10).await.unwrap_err();
        assert!(matches!(err, DreamError::Corrupt { .. }), "{err}");
        // An id that is no entry number.
        store
            .put(
                &layout::key(layout::FEED, RecordId::new("zzz").unwrap()),
                Bytes::from("{}"),
                Write::absent(),
            )
            .await
            .unwrap();
        let err = f.read(Some(3), 10).await.unwrap_err();
        assert!(matches!(err, DreamError::Corrupt { .. }), "{err}");
    }

    #[tokio::test]
    async fn handles_racing_to_append_get_distinct_consecutive_numbers() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let mut tasks = Vec::new();
        for w in 0..8 {
            // A feed per task, as in separate processes: no shared tail.
            let f = feed(&store, 10_000);
            tasks.push(tokio::spawn(async move {
                for i in 0..25 {
                    f.append(Utc::now(), event(w * 100 + i)).await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let all = feed(&store, 10_000).read(None, 1000).await.unwrap();
        let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=200).collect::<Vec<_>>());
        // Each writer's events are in its own order.
        for w in 0..8 {
            let mine: Vec<usize> = all
                .iter()
                .filter_map(|e| match e.event {
                    Event::TrashExpired { count } if count / 100 == w => Some(count),
                    _ => None,
                })
                .collect();
            assert_eq!(mine, (w * 100..w * 100 + 25).collect::<Vec<_>>());
        }
    }

    #[tokio::test]
    async fn a_cursor_behind_the_retained_window_must_resync() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let f = feed(&store, 8);
        for i in 0..40 {
            f.append(Utc::now(), event(i)).await.unwrap();
        }
        let kept = f.read(None, 1000).await.unwrap();
        assert!(kept.len() >= 8 && kept.len() <= 10, "{}", kept.len());
        assert_eq!(kept.last().unwrap().seq, 40);
        let err = f.read(Some(3), 10).await.unwrap_err();
        assert!(matches!(err, DreamError::Resync { cursor: 3, .. }), "{err}");
        // A cursor inside the window reads on.
        let from = kept[0].seq;
        let rest = f.read(Some(from), 1000).await.unwrap();
        assert_eq!(rest.len(), kept.len() - 1);
    }

    #[tokio::test]
    async fn batched_appends_keep_the_feed_within_its_window() {
        // Steps of 2,500 entries: more than one listing page is trimmed at once,
        // and a batch crossing a step still trims.
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let f = feed(&store, 10_000);
        let events: Vec<Event> = (0..333).map(event).collect();
        for _ in 0..90 {
            f.append_all(Utc::now(), &events, None, None).await.unwrap();
        }
        let kept = layout::list_versions_all(&*store, layout::FEED, usize::MAX)
            .await
            .unwrap();
        assert!(
            kept.len() >= 10_000 && kept.len() <= 10_000 + 2_500,
            "{} entries kept",
            kept.len()
        );
        assert_eq!(parse_seq(&kept.last().unwrap().id).unwrap(), 90 * 333);
        let seqs: Vec<u64> = kept.iter().map(|e| parse_seq(&e.id).unwrap()).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "no gap");
    }

    #[tokio::test]
    async fn a_batch_of_entries_continues_after_another_appender_s() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let f = feed(&store, 10_000);
        f.append(Utc::now(), event(0)).await.unwrap();
        // Another process appends: this handle's tail is now stale.
        feed(&store, 10_000)
            .append(Utc::now(), event(1))
            .await
            .unwrap();
        let events: Vec<Event> = (2..2000).map(event).collect();
        let out = f.append_all(Utc::now(), &events, None, None).await.unwrap();
        assert_eq!(out.first().unwrap().seq, 3);
        assert_eq!(out.last().unwrap().seq, 2000);
        assert!(out.windows(2).all(|w| w[0].version < w[1].version));
        let all = f.read(None, 1000).await.unwrap();
        assert_eq!(all.len(), 1000);
        assert_eq!(all[1].event, event(1));
    }

    #[tokio::test]
    async fn a_notice_wakes_a_waiting_subscription_long_before_its_poll() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let (tx, rx) = tokio::sync::watch::channel(0);
        let mut sub = Subscription::new(feed(&store, 100), None)
            .with_poll(Duration::from_secs(600))
            .with_wakeups(rx);
        let writer = feed(&store, 100);
        let task = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            writer.append(Utc::now(), event(1)).await.unwrap();
            tx.send_modify(|n| *n += 1);
            tx
        });
        let entry = tokio::time::timeout(Duration::from_secs(30), sub.next())
            .await
            .expect("woken by the notice, not the 600 s poll")
            .unwrap();
        assert_eq!(entry.seq, 1);
        // The notices stop: the subscription falls back to polling.
        drop(task.await.unwrap());
        let mut sub = sub.with_poll(Duration::from_millis(10));
        let writer = feed(&store, 100);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            writer.append(Utc::now(), event(2)).await.unwrap();
        });
        let entry = tokio::time::timeout(Duration::from_secs(30), sub.next())
            .await
            .expect("polled")
            .unwrap();
        assert_eq!(entry.seq, 2);
        assert!(sub.wake.is_none());
    }

    #[tokio::test]
    async fn resuming_after_an_entry_older_than_the_newest_still_finds_the_change() {
        let (store, lease) = leased_store().await;
        let other = feed(&store, 100);
        for i in 0..3 {
            other.append(Utc::now(), event(i)).await.unwrap();
        }
        // A handle that has seen nothing journals `after = 0`, appends one of
        // its two events, and dies.
        let f = feed(&store, 100);
        let after = f.seen().await;
        assert_eq!(after, 0);
        let events: Vec<Event> = vec![event(10), event(11)];
        f.append_all(Utc::now(), &events[..1], Some("c2"), None)
            .await
            .unwrap();
        let added = f
            .resume(Utc::now(), &events, "c2", after, &lease.fence())
            .await
            .unwrap();
        assert_eq!(added.len(), 1);
        assert_eq!(added[0].event, event(11));
        assert_eq!(added[0].seq, 5);
    }

    #[tokio::test]
    async fn resuming_a_journaled_change_appends_only_the_events_it_had_not() {
        let (store, lease) = leased_store().await;
        let f = feed(&store, 100);
        f.append(Utc::now(), event(0)).await.unwrap();
        let after = f.seen().await;
        let events: Vec<Event> = (1..=3).map(event).collect();
        // The dead process appended two of its three events, and another
        // process appended one of its own in between.
        f.append_all(Utc::now(), &events[..1], Some("c1"), None)
            .await
            .unwrap();
        f.append(Utc::now(), event(99)).await.unwrap();
        f.append_all(Utc::now(), &events[1..2], Some("c1"), None)
            .await
            .unwrap();
        let added = f
            .resume(Utc::now(), &events, "c1", after, &lease.fence())
            .await
            .unwrap();
        assert_eq!(added.len(), 1);
        assert_eq!(added[0].event, event(3));
        // Resumed again (a second crash): nothing more.
        let again = f
            .resume(Utc::now(), &events, "c1", after, &lease.fence())
            .await
            .unwrap();
        assert!(again.is_empty());
        let all = f.read(None, 100).await.unwrap();
        let seen: Vec<Event> = all.iter().map(|e| e.event.clone()).collect();
        assert_eq!(
            seen,
            vec![event(0), event(1), event(99), event(2), event(3)]
        );
        // Each entry carries its record's version, increasing with its number.
        assert!(all.windows(2).all(|w| w[0].version < w[1].version));
    }

    #[tokio::test]
    async fn on_an_atomic_store_entries_go_first_in_the_change_s_own_batch() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let f = feed(&store, 100);
        let key = layout::key(layout::STATE, RecordId::new("x").unwrap());
        let ops = [BatchOp::put(key.clone(), "v", Precondition::Absent)];
        let entries = f
            .write_with(Utc::now(), &[event(1)], &ops, None)
            .await
            .unwrap();
        let record = store.get(&key).await.unwrap().unwrap();
        assert!(record.version.0 > entries[0].version);
        // A failed precondition rejects the batch: no event without its change.
        let err = f
            .write_with(Utc::now(), &[event(2)], &ops, None)
            .await
            .unwrap_err();
        assert!(
            matches!(err, DreamError::Store(StoreError::Conflict { .. })),
            "{err}"
        );
        assert_eq!(f.read(None, 10).await.unwrap().len(), 1);
        // Another appender took the next number: the batch is renumbered.
        let other = feed(&store, 100);
        other.append(Utc::now(), event(3)).await.unwrap();
        let ops = [BatchOp::put(
            key,
            "w",
            Precondition::Matches(record.version),
        )];
        let entries = f
            .write_with(Utc::now(), &[event(4)], &ops, None)
            .await
            .unwrap();
        assert_eq!(entries[0].seq, 3);
    }

    #[tokio::test]
    async fn a_cursor_ahead_of_the_feed_must_resync() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let f = feed(&store, 100);
        f.append(Utc::now(), event(1)).await.unwrap();
        assert!(f.read(Some(1), 10).await.unwrap().is_empty());
        let err = f.read(Some(5), 10).await.unwrap_err();
        assert!(matches!(err, DreamError::Resync { cursor: 5, .. }), "{err}");
    }

    #[tokio::test]
    async fn a_subscription_hands_out_each_entry_once_and_resumes_from_its_cursor() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let f = feed(&store, 100);
        let mut sub = Subscription::new(f.clone(), None).with_poll(Duration::from_millis(10));
        let writer = feed(&store, 100);
        let task = tokio::spawn(async move {
            for i in 0..30 {
                writer.append(Utc::now(), event(i)).await.unwrap();
                tokio::task::yield_now().await;
            }
        });
        let mut seen = Vec::new();
        for _ in 0..10 {
            seen.push(sub.next().await.unwrap().seq);
        }
        let cursor = sub.cursor();
        drop(sub);
        task.await.unwrap();
        let mut again = Subscription::new(f, cursor);
        seen.extend(again.poll().await.unwrap().iter().map(|e| e.seq));
        assert_eq!(seen, (1..=30).collect::<Vec<_>>());
        assert!(again.poll().await.unwrap().is_empty());
    }
}
