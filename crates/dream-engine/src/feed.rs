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
//! contract as it is: the same put, list and delete every backend offers, and an
//! encrypted store encrypts its entries like any record.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use dream_core::{Key, RecordId, RecordStore, StoreError, Write};
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, watch};

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
    /// When it was recorded (the writer's clock).
    pub at: DateTime<Utc>,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

/// The record id of entry `seq`.
fn entry_id(seq: u64) -> RecordId {
    RecordId::new(format!("{seq:020}")).expect("digits are a valid id")
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

    /// Records `event` as the next entry and returns it.
    pub async fn append(&self, at: DateTime<Utc>, event: Event) -> Result<FeedEntry> {
        let mut tail = self.tail.lock().await;
        *tail = self.newest_after(*tail).await?;
        let mut entry = FeedEntry {
            seq: *tail + 1,
            at,
            event,
        };
        loop {
            match self
                .store
                .put(&entry_key(entry.seq), to_json(&entry), Write::absent())
                .await
            {
                Ok(_) => break,
                Err(StoreError::Conflict { .. }) => {
                    *tail = self.newest_after(entry.seq).await?;
                    entry.seq = *tail + 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
        *tail = entry.seq;
        drop(tail);
        self.trim(entry.seq).await?;
        Ok(entry)
    }

    /// Deletes entries older than the newest `retain`, every `retain / 4` appends.
    async fn trim(&self, newest: u64) -> Result<()> {
        let step = (self.retain / 4).max(1);
        if newest <= self.retain || !newest.is_multiple_of(step) {
            return Ok(());
        }
        let keep_from = newest - self.retain + 1;
        let ns = layout::namespace(layout::FEED);
        let page = self
            .store
            .list_versions(&ns, None, dream_core::store::MAX_LIST_LIMIT)
            .await?;
        for entry in page.entries {
            if parse_seq(&entry.id)? >= keep_from {
                break;
            }
            // Another appender may trim the same entry: its absence is fine.
            let key = Key::new(ns.clone(), entry.id);
            match self.store.delete(&key, Write::matches(entry.version)).await {
                Ok(_) | Err(StoreError::Conflict { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
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
            let entry: FeedEntry = from_json(&key, &item.record)?;
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
    wake: Option<watch::Receiver<u64>>,
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
    /// a backend's notice that the store may have changed (Redis pub/sub,
    /// PostgreSQL `LISTEN`). A notice only shortens the wait; the feed stays the
    /// truth, and without notices (or once they stop) the subscription polls.
    pub fn with_wakeups(mut self, changes: watch::Receiver<u64>) -> Self {
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

    #[tokio::test]
    async fn a_record_in_the_feed_namespace_that_is_not_an_entry_is_corrupt() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let f = feed(&store, 100);
        f.append(Utc::now(), event(1)).await.unwrap();
        // A planted record under entry 2's id holding entry 7.
        let planted = FeedEntry {
            seq: 7,
            at: Utc::now(),
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
    async fn a_notice_wakes_a_waiting_subscription_long_before_its_poll() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let (tx, rx) = watch::channel(0);
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
