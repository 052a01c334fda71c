//! Test doubles (feature `testing`): an in-memory [`RecordStore`] with real leases
//! and fences, a [`ScriptedModel`] that replays given answers in order, and a
//! deterministic [`HashEmbedder`].

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, Utc};

use crate::clock::{Clock, SystemClock};
use crate::embed::{EmbedError, Embedder};
use crate::id::{LockName, Namespace, RecordId};
use crate::llm::{Completion, CompletionRequest, LanguageModel, ModelError, TokenUsage};
use crate::store::{
    BatchOp, BatchOutcome, Capabilities, Changes, DEFAULT_MAX_VALUE_SIZE, Entry, Fence, Key, Lease,
    Page, PageBuilder, Record, RecordStore, StoreError, StoreInfo, Version, VersionEntry,
    VersionPage, Write, check_batch,
};

/// A store held in process memory. Leases expire by its [`Clock`].
#[derive(Debug)]
pub struct MemoryStore {
    state: Mutex<State>,
    clock: Arc<dyn Clock>,
    max_value_size: usize,
}

#[derive(Debug, Default)]
struct State {
    records: BTreeMap<(Namespace, RecordId), Record>,
    last_version: u64,
    newest_fence: HashMap<LockName, u64>,
    leases: HashMap<LockName, Held>,
}

#[derive(Debug)]
struct Held {
    holder: String,
    token: u64,
    expires: DateTime<Utc>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store on the system clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// An empty store whose leases expire by `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        MemoryStore {
            state: Mutex::default(),
            clock,
            max_value_size: DEFAULT_MAX_VALUE_SIZE,
        }
    }

    /// The same store with a different value cap.
    pub fn with_max_value_size(mut self, max: usize) -> Self {
        self.max_value_size = max;
        self
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn ttl_delta(ttl: Duration) -> chrono::Duration {
    chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::MAX)
}

impl State {
    fn check(&self, key: &Key, write: &Write) -> Result<Option<Version>, StoreError> {
        if let Some(fence) = &write.fence {
            self.check_fence(fence)?;
        }
        let current = self.current(key);
        write.pre.check(key, current)?;
        Ok(current)
    }

    fn current(&self, key: &Key) -> Option<Version> {
        self.records
            .get(&(key.namespace.clone(), key.id.clone()))
            .map(|r| r.version)
    }

    fn check_fence(&self, fence: &Fence) -> Result<(), StoreError> {
        if self.newest_fence.get(&fence.lock).copied() == Some(fence.token) {
            Ok(())
        } else {
            Err(StoreError::LockLost {
                lock: fence.lock.clone(),
            })
        }
    }
}

#[async_trait]
impl RecordStore for MemoryStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            name: "memory".to_owned(),
            capabilities: Capabilities {
                cross_process: false,
                leases: true,
                fenced_writes: true,
                durable: false,
                max_value_size: self.max_value_size,
                atomic_batch_bytes: usize::MAX,
                notifies: false,
            },
        }
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        Ok(self
            .state()
            .records
            .get(&(key.namespace.clone(), key.id.clone()))
            .cloned())
    }

    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
        if value.len() > self.max_value_size {
            return Err(StoreError::TooLarge {
                size: value.len(),
                max: self.max_value_size,
            });
        }
        let mut state = self.state();
        state.check(key, &write)?;
        state.last_version += 1;
        let version = Version(state.last_version);
        state.records.insert(
            (key.namespace.clone(), key.id.clone()),
            Record { value, version },
        );
        Ok(version)
    }

    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
        let mut state = self.state();
        let current = state.check(key, &write)?;
        if current.is_some() {
            state
                .records
                .remove(&(key.namespace.clone(), key.id.clone()));
        }
        Ok(current.is_some())
    }

    async fn list(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let mut page = PageBuilder::new(limit);
        let state = self.state();
        use std::ops::Bound;
        let start = match start_after {
            Some(after) => Bound::Excluded((namespace.clone(), after.clone())),
            None => Bound::Included((namespace.clone(), RecordId::new("0").expect("valid"))),
        };
        for ((_, id), record) in state
            .records
            .range((start, Bound::Unbounded))
            .take_while(|((ns, _), _)| ns == namespace)
            .take(page.read_limit())
        {
            page.push(Entry {
                id: id.clone(),
                record: record.clone(),
            });
        }
        Ok(page.finish())
    }

    async fn write_batch(
        &self,
        ops: &[BatchOp],
        fence: Option<Fence>,
    ) -> Result<Vec<BatchOutcome>, StoreError> {
        check_batch(ops, self.max_value_size)?;
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let mut state = self.state();
        if let Some(fence) = &fence {
            state.check_fence(fence)?;
        }
        for op in ops {
            op.pre().check(op.key(), state.current(op.key()))?;
        }
        let mut out = Vec::with_capacity(ops.len());
        for op in ops {
            let slot = (op.key().namespace.clone(), op.key().id.clone());
            match op {
                BatchOp::Put { value, .. } => {
                    state.last_version += 1;
                    let version = Version(state.last_version);
                    state.records.insert(
                        slot,
                        Record {
                            value: value.clone(),
                            version,
                        },
                    );
                    out.push(BatchOutcome::Put(version));
                }
                BatchOp::Delete { .. } => {
                    out.push(BatchOutcome::Delete(state.records.remove(&slot).is_some()));
                }
            }
        }
        Ok(out)
    }

    async fn list_versions(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<VersionPage, StoreError> {
        let page = self.list(namespace, start_after, limit).await?;
        Ok(VersionPage {
            entries: page
                .entries
                .into_iter()
                .map(|e| VersionEntry {
                    id: e.id,
                    version: e.record.version,
                })
                .collect(),
            next: page.next,
        })
    }

    async fn compact(&self) -> Result<(), StoreError> {
        // Deleted values are dropped from the map at once: nothing to reclaim.
        Ok(())
    }

    async fn watch_changes(&self) -> Result<Option<Changes>, StoreError> {
        Ok(None)
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        let mut out: Vec<Namespace> = Vec::new();
        for (ns, _) in self.state().records.keys() {
            if out.last() != Some(ns) {
                out.push(ns.clone());
            }
        }
        Ok(out)
    }

    async fn try_lease(&self, lock: &LockName, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        let now = self.clock.now();
        let mut state = self.state();
        if state
            .leases
            .get(lock)
            .is_some_and(|held| held.expires > now)
        {
            return Ok(None);
        }
        let token = state.newest_fence.get(lock).copied().unwrap_or(0) + 1;
        state.newest_fence.insert(lock.clone(), token);
        let holder = ulid::Ulid::new().to_string();
        state.leases.insert(
            lock.clone(),
            Held {
                holder: holder.clone(),
                token,
                expires: now + ttl_delta(ttl),
            },
        );
        Ok(Some(Lease::new(lock.clone(), token, holder)))
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        let now = self.clock.now();
        let mut state = self.state();
        match state.leases.get_mut(lease.lock()) {
            Some(held)
                if held.holder == lease.holder()
                    && held.token == lease.token()
                    && held.expires > now =>
            {
                held.expires = now + ttl_delta(ttl);
                Ok(lease.clone())
            }
            _ => Err(StoreError::LockLost {
                lock: lease.lock().clone(),
            }),
        }
    }

    async fn release(&self, lease: Lease) -> Result<bool, StoreError> {
        let now = self.clock.now();
        let mut state = self.state();
        let held = state.leases.get(lease.lock()).is_some_and(|held| {
            held.holder == lease.holder() && held.token == lease.token() && held.expires > now
        });
        if held {
            state.leases.remove(lease.lock());
        }
        Ok(held)
    }
}

/// A language model that replays scripted answers in order and records what it
/// was asked. Clones share the script and the record.
#[derive(Debug, Clone, Default)]
pub struct ScriptedModel {
    script: Arc<Mutex<VecDeque<Result<Completion, ModelError>>>>,
    requests: Arc<Mutex<Vec<CompletionRequest>>>,
    delay: Option<Duration>,
}

impl ScriptedModel {
    /// A model with an empty script.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same model, taking `delay` before every answer.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Queues a complete answer with this text.
    pub fn push_text(&self, text: impl Into<String>) -> &Self {
        self.push(Ok(Completion {
            text: text.into(),
            usage: TokenUsage {
                input: 100,
                output: 50,
            },
            model: "scripted".to_owned(),
            truncated: false,
        }))
    }

    /// Queues an answer or an error.
    pub fn push(&self, answer: Result<Completion, ModelError>) -> &Self {
        self.script
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(answer);
        self
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<CompletionRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[async_trait]
impl LanguageModel for ScriptedModel {
    fn describe(&self) -> String {
        "scripted".to_owned()
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, ModelError> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request.clone());
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        let next = self
            .script
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        next.unwrap_or(Err(ModelError::ScriptExhausted))
    }
}

/// A deterministic embedder: each text becomes the unit-length sum of its
/// character trigrams (lowercased, words padded with spaces), each trigram
/// hashed (FNV-1a) to one of `dimensions` slots with a hashed sign. Texts that
/// share trigrams get close vectors; nothing is looked up or canned. Clones share
/// the switches and the call count.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dimensions: usize,
    failing: Arc<std::sync::atomic::AtomicBool>,
    delay: Arc<Mutex<Option<Duration>>>,
    calls: Arc<std::sync::atomic::AtomicUsize>,
}

impl HashEmbedder {
    /// An embedder of `dimensions` (at least 1).
    pub fn new(dimensions: usize) -> Self {
        HashEmbedder {
            dimensions: dimensions.max(1),
            failing: Arc::default(),
            delay: Arc::default(),
            calls: Arc::default(),
        }
    }

    /// While `on`, every call fails with a transport error.
    pub fn set_failing(&self, on: bool) {
        self.failing.store(on, std::sync::atomic::Ordering::SeqCst);
    }

    /// Every later call waits `delay` first (`None`: no wait).
    pub fn set_delay(&self, delay: Option<Duration>) {
        *self.delay.lock().unwrap_or_else(|e| e.into_inner()) = delay;
    }

    /// Calls made so far (failed ones included).
    pub fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The vector of one text (what [`Embedder::embed`] returns for it).
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0f32; self.dimensions];
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let padded: Vec<char> = format!(" {} ", word.to_lowercase()).chars().collect();
            for gram in padded.windows(3) {
                let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
                for c in gram {
                    for byte in c.to_string().bytes() {
                        hash ^= u64::from(byte);
                        hash = hash.wrapping_mul(0x0100_0000_01b3);
                    }
                }
                let slot = (hash % self.dimensions as u64) as usize;
                let sign = if hash >> 63 == 0 { 1.0 } else { -1.0 };
                vector[slot] += sign;
            }
        }
        if vector.iter().all(|x| *x == 0.0) {
            // A text without a word still gets a usable (constant) vector.
            vector[0] = 1.0;
        }
        crate::embed::normalized(vector)
    }
}

#[async_trait]
impl Embedder for HashEmbedder {
    fn model(&self) -> &str {
        "hash-trigram"
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn describe(&self) -> String {
        format!("test:hash-trigram/{}", self.dimensions)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        crate::embed::check_texts(texts)?;
        let delay = *self.delay.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(EmbedError::Model(ModelError::Transport(
                "the test embedder is switched to fail".to_owned(),
            )));
        }
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}

#[cfg(test)]
mod hash_embedder_tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[tokio::test]
    async fn similar_texts_are_closer_than_unrelated_ones() {
        let e = HashEmbedder::new(384);
        let v = e
            .embed(&[
                "The project uses Vitest".to_owned(),
                "tests run with vitest".to_owned(),
                "Deploys go to Fly.io on Fridays".to_owned(),
            ])
            .await
            .unwrap();
        crate::embed::check_vectors(&v, 3, 384).unwrap();
        assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.1);
        assert_eq!(v[0], e.vector("the project USES vitest"));
    }

    #[tokio::test]
    async fn the_switches_work() {
        let e = HashEmbedder::new(8);
        e.set_failing(true);
        assert!(matches!(
            e.embed(&["x".to_owned()]).await,
            Err(EmbedError::Model(ModelError::Transport(_)))
        ));
        e.set_failing(false);
        assert_eq!(e.embed(&["".to_owned()]).await.unwrap()[0][0], 1.0);
        assert_eq!(e.calls(), 2);
        assert!(e.embed(&[]).await.is_err());
    }
}
