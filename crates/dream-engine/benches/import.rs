//! Importing memories (issue 16): `Dream::import` of 10,000 memories (ten calls of
//! `MAX_IMPORT`, as `dream import` makes them) into a fresh store, on dream-fs,
//! dream-sqlite and dream-redis. Per backend, in the group `import-<N>`:
//!
//! - `<backend>/dream`: the import end to end (gate, scanner, encoding, store);
//! - `<backend>/dream-store-part`: the time the same import spends inside store
//!   calls (every call of a timing wrapper, summed);
//! - `<backend>/raw-batched`: the records of the import without the gate: the
//!   rendered memories, an audit record each and the generation, in batches of at
//!   most `MAX_BATCH_OPS`, fenced under one lease, with the journal written first
//!   and deleted after where a batch is not atomic;
//! - `<backend>/raw-batched-with-feed`: the same plus the change-feed entry the
//!   engine writes for each memory, in batches of the engine's size (333
//!   memories): the same durable writes as the import's store part.
//!
//! Beside them, backend-independent: `memory/dream` (the import on the in-memory
//! store: the engine's own CPU, gate and scanner included) and `scanner` (the
//! memory scanner alone over the same memories).
//!
//! `DREAM_BENCH_IMPORT` sets the number of memories (default 10,000). Redis comes
//! from `DREAM_TEST_REDIS_URL` (else `redis://127.0.0.1:6379`) under a fresh prefix,
//! deleted after each iteration; without one the Redis rows are skipped.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::{TimeZone, Utc};
use criterion::{
    BenchmarkGroup, Criterion, criterion_group, criterion_main, measurement::WallTime,
};
use dream_core::store::MAX_BATCH_OPS;
use dream_core::testing::MemoryStore;
use dream_core::{
    BatchOp, BatchOutcome, Fence, Key, Lease, LockName, Memory, MemoryId, MemoryKind, Namespace,
    Page, Precondition, Record, RecordId, RecordStore, StoreError, StoreInfo, Version, VersionPage,
    Write, async_trait, render_memory,
};
use dream_engine::{Dream, ImportSource, MAX_IMPORT, Options, layout};
use tokio::runtime::Runtime;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn count() -> usize {
    std::env::var("DREAM_BENCH_IMPORT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// `n` distinct, benign memories of a few hundred bytes, like a person's notes.
fn memories(n: usize) -> Vec<Memory> {
    let base = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    (0..n)
        .map(|i| {
            let at = base + chrono::Duration::seconds(i as i64);
            let mut m = Memory::new(
                MemoryId::new(format!("imp{i:06}")).unwrap(),
                MemoryKind::Project,
                format!("Build note {i}"),
                format!("How service {i} is built and released"),
                format!(
                    "Service {i} builds on runner pool {} with the cached toolchain; its release \
                     notes live in docs/releases/{i}.md and the owners of team {} review them \
                     every week before the Thursday release train leaves.",
                    i % 7,
                    i % 13
                ),
                at,
            );
            m.tags = vec!["build".into(), format!("pool-{}", i % 7)];
            m
        })
        .collect()
}

/// Forwards every call, adding the time spent in it to `nanos`.
#[derive(Debug)]
struct Timed {
    inner: Arc<dyn RecordStore>,
    nanos: Arc<AtomicU64>,
}

impl Timed {
    async fn time<T>(&self, call: impl std::future::Future<Output = T>) -> T {
        let start = Instant::now();
        let out = call.await;
        self.nanos
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        out
    }
}

#[async_trait]
impl RecordStore for Timed {
    fn info(&self) -> StoreInfo {
        self.inner.info()
    }
    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        self.time(self.inner.get(key)).await
    }
    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
        self.time(self.inner.put(key, value, write)).await
    }
    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
        self.time(self.inner.delete(key, write)).await
    }
    async fn list(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.time(self.inner.list(namespace, start_after, limit))
            .await
    }
    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        self.time(self.inner.namespaces()).await
    }
    async fn compact(&self) -> Result<(), StoreError> {
        self.time(self.inner.compact()).await
    }
    async fn watch_changes(&self) -> Result<Option<dream_core::Changes>, StoreError> {
        self.inner.watch_changes().await
    }
    async fn try_lease(&self, lock: &LockName, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        self.time(self.inner.try_lease(lock, ttl)).await
    }
    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        self.time(self.inner.renew(lease, ttl)).await
    }
    async fn release(&self, lease: Lease) -> Result<bool, StoreError> {
        self.time(self.inner.release(lease)).await
    }
    async fn write_batch(
        &self,
        ops: &[BatchOp],
        fence: Option<Fence>,
    ) -> Result<Vec<BatchOutcome>, StoreError> {
        self.time(self.inner.write_batch(ops, fence)).await
    }
    async fn list_versions(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<VersionPage, StoreError> {
        self.time(self.inner.list_versions(namespace, start_after, limit))
            .await
    }
}

/// A fresh, empty store of one backend, and what removes it.
struct Fresh {
    store: Arc<dyn RecordStore>,
    _dir: Option<tempfile::TempDir>,
    redis: Option<Arc<dream_redis::RedisStore>>,
}

impl Fresh {
    fn drop_in(self, rt: &Runtime) {
        drop(self.store);
        if let Some(mut redis) = self.redis {
            // A lease's renewal task may still hold a handle for a moment.
            for _ in 0..100 {
                match Arc::try_unwrap(redis) {
                    Ok(store) => {
                        rt.block_on(store.destroy()).expect("delete the bench keys");
                        return;
                    }
                    Err(shared) => redis = shared,
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            panic!("the Redis store is still shared after the import");
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Backend {
    Fs,
    Sqlite,
    Redis,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Fs => "fs",
            Backend::Sqlite => "sqlite",
            Backend::Redis => "redis",
        }
    }

    /// A fresh store; `None` when the backend cannot run here (Redis absent).
    fn fresh(self, rt: &Runtime) -> Option<Fresh> {
        match self {
            Backend::Fs => {
                let dir = tempfile::tempdir().unwrap();
                let store = rt
                    .block_on(dream_fs::FsStore::open(dir.path().join("store")))
                    .unwrap();
                Some(Fresh {
                    store: Arc::new(store),
                    _dir: Some(dir),
                    redis: None,
                })
            }
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let store = rt
                    .block_on(dream_sqlite::SqliteStore::open(dir.path().join("d.sqlite")))
                    .unwrap();
                Some(Fresh {
                    store: Arc::new(store),
                    _dir: Some(dir),
                    redis: None,
                })
            }
            Backend::Redis => {
                let url = std::env::var("DREAM_TEST_REDIS_URL")
                    .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
                let prefix = format!("bench-import-{}", ulid::Ulid::new());
                let config = dream_redis::RedisOptions::from_url(&url)
                    .ok()?
                    .with_prefix(&prefix)
                    .ok()?
                    .with_connection_timeout(Duration::from_secs(2));
                let store = Arc::new(rt.block_on(dream_redis::RedisStore::open(config)).ok()?);
                Some(Fresh {
                    store: store.clone(),
                    _dir: None,
                    redis: Some(store),
                })
            }
        }
    }
}

/// Imports `memories` as `dream import` does: calls of at most `MAX_IMPORT`.
async fn import(store: Arc<dyn RecordStore>, memories: &[Memory]) {
    let dream = Dream::open(store, Options::default()).expect("open");
    for chunk in memories.chunks(MAX_IMPORT) {
        let report = dream
            .import(chunk.to_vec(), false, ImportSource::Person)
            .await
            .expect("import");
        assert_eq!(report.imported.len(), chunk.len(), "{report:?}");
    }
}

/// The writes of an import without the engine: each memory rendered, an audit
/// record each, the generation, and with `feed` a change-feed entry each as the
/// engine writes them; batches as large as they can be within `MAX_BATCH_OPS`.
fn raw_batches(memories: &[Memory], feed: bool) -> Vec<Vec<BatchOp>> {
    let per_memory = if feed { 3 } else { 2 };
    let per_batch = (MAX_BATCH_OPS - 1) / per_memory;
    let mut seq = 0u64;
    memories
        .chunks(per_batch)
        .enumerate()
        .map(|(b, chunk)| {
            let mut ops = Vec::with_capacity(chunk.len() * per_memory + 1);
            if feed {
                for m in chunk {
                    seq += 1;
                    let entry = serde_json::json!({
                        "seq": seq, "at": m.created_at, "event": "memory-created",
                        "memory": m.id,
                    });
                    ops.push(BatchOp::put(
                        layout::key(layout::FEED, RecordId::new(format!("{seq:020}")).unwrap()),
                        serde_json::to_vec(&entry).unwrap(),
                        Precondition::Absent,
                    ));
                }
            }
            for m in chunk {
                ops.push(BatchOp::put(
                    layout::key(layout::MEMORIES, m.id.clone()),
                    render_memory(m),
                    Precondition::Absent,
                ));
                let audit = serde_json::json!({
                    "id": format!("{}a", m.id), "at": m.created_at, "action": "imported",
                    "actor": "person", "scope": "default", "memory": m.id,
                    "reason": "imported", "hash": format!("{:064}", 0),
                });
                ops.push(BatchOp::put(
                    layout::key(layout::AUDIT, RecordId::new(format!("{}a", m.id)).unwrap()),
                    serde_json::to_vec(&audit).unwrap(),
                    Precondition::Absent,
                ));
            }
            ops.push(BatchOp::put(
                layout::generation_key(),
                (b + 1).to_string(),
                Precondition::Any,
            ));
            ops
        })
        .collect()
}

/// Writes `batches` under one lease, each fenced; where batches are not atomic,
/// a journal holding the batch's values is written first and deleted after.
async fn raw_import(store: Arc<dyn RecordStore>, batches: &[Vec<BatchOp>]) {
    let capabilities = store.info().capabilities;
    let lease = store
        .try_lease(&layout::dream_lock(), Duration::from_secs(60))
        .await
        .unwrap()
        .expect("free");
    let fence = lease.fence();
    for ops in batches {
        let journal = (!capabilities.is_atomic(ops)).then(|| {
            let values: Vec<String> = ops
                .iter()
                .filter_map(|op| op.value().map(|v| String::from_utf8_lossy(v).into_owned()))
                .collect();
            Bytes::from(serde_json::to_vec(&values).unwrap())
        });
        let jkey = layout::journal_key();
        let jversion = match journal {
            Some(j) => Some(
                store
                    .put(&jkey, j, Write::absent().fenced(fence.clone()))
                    .await
                    .unwrap(),
            ),
            None => None,
        };
        store.write_batch(ops, Some(fence.clone())).await.unwrap();
        if let Some(v) = jversion {
            store
                .delete(&jkey, Write::matches(v).fenced(fence.clone()))
                .await
                .unwrap();
        }
    }
    store.release(lease).await.unwrap();
}

fn backend_rows(group: &mut BenchmarkGroup<'_, WallTime>, rt: &Runtime, backend: Backend) {
    let n = count();
    let memories = memories(n);
    if backend.fresh(rt).map(|f| f.drop_in(rt)).is_none() {
        eprintln!(
            "*** SKIPPED the {} import rows: no store ***",
            backend.name()
        );
        return;
    }
    let name = backend.name();
    group.bench_function(format!("{name}/dream"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let fresh = backend.fresh(rt).unwrap();
                let start = Instant::now();
                rt.block_on(import(fresh.store.clone(), &memories));
                total += start.elapsed();
                fresh.drop_in(rt);
            }
            total
        })
    });
    group.bench_function(format!("{name}/dream-store-part"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let fresh = backend.fresh(rt).unwrap();
                let nanos = Arc::new(AtomicU64::new(0));
                let timed = Arc::new(Timed {
                    inner: fresh.store.clone(),
                    nanos: nanos.clone(),
                });
                rt.block_on(import(timed, &memories));
                total += Duration::from_nanos(nanos.load(Ordering::Relaxed));
                fresh.drop_in(rt);
            }
            total
        })
    });
    for (row, feed) in [("raw-batched", false), ("raw-batched-with-feed", true)] {
        let batches = raw_batches(&memories, feed);
        group.bench_function(format!("{name}/{row}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let fresh = backend.fresh(rt).unwrap();
                    let start = Instant::now();
                    rt.block_on(raw_import(fresh.store.clone(), &batches));
                    total += start.elapsed();
                    fresh.drop_in(rt);
                }
                total
            })
        });
    }
}

fn import_group(c: &mut Criterion) {
    let rt = runtime();
    let n = count();
    let mut group = c.benchmark_group(format!("import-{n}"));
    group.sample_size(10);
    let memories = memories(n);
    group.bench_function("memory/dream", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
                let start = Instant::now();
                rt.block_on(import(store, &memories));
                total += start.elapsed();
            }
            total
        })
    });
    let scanner = dream_scan::Scanner::new(dream_scan::Mode::Memory);
    let json: Vec<serde_json::Value> = memories
        .iter()
        .map(|m| {
            serde_json::json!({
                "name": m.name, "description": m.description, "content": m.content,
                "tags": m.tags, "metadata": m.metadata,
            })
        })
        .collect();
    group.bench_function("scanner", |b| {
        b.iter(|| {
            for value in &json {
                std::hint::black_box(scanner.scan_json(value));
            }
        })
    });
    for backend in [Backend::Fs, Backend::Sqlite, Backend::Redis] {
        backend_rows(&mut group, &rt, backend);
    }
    group.finish();
}

criterion_group!(benches, import_group);
criterion_main!(benches);
