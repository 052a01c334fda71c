//! A full dream pass (scripted model, 200 memories, 5 sessions: 5 creates, 1
//! update, 5 prunes) on the in-memory store and on dream-fs, beside a baseline
//! that performs exactly the store operations the pass performs — the same gets,
//! lists, leases, and puts and deletes of the same bytes, recorded from a real
//! pass and replayed — so the difference is Dream's own overhead (planning,
//! gating, scanning, encoding, journaling decisions).
//!
//! Every iteration starts from an identical store (a copy of one template), so
//! the pass and its replay see the same state.

// criterion's macros generate undocumented items.
#![allow(missing_docs)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::{TimeZone, Utc};
use criterion::{Criterion, black_box, criterion_group, criterion_main};
use dream_core::testing::{MemoryStore, ScriptedModel};
use dream_core::{
    BatchOp, Key, Lease, LockName, Memory, MemoryId, MemoryKind, Message, Namespace, Page,
    Precondition, Record, RecordId, RecordStore, Role, StoreError, StoreInfo, Version, Write,
    async_trait, render_memory,
};
use dream_engine::{Dream, Options};
use dream_fs::FsStore;
use serde_json::json;
use tokio::runtime::Runtime;

const MEMORIES: usize = 200;
const SESSIONS: usize = 5;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn options() -> Options {
    Options {
        min_sessions: 1,
        min_hours: 0,
        ..Options::default()
    }
}

fn memory_id(i: usize) -> MemoryId {
    MemoryId::new(format!("mem{i:04}")).unwrap()
}

/// The template's records: 200 memories, written raw.
fn template_memories() -> Vec<(Key, Bytes)> {
    let base = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    (0..MEMORIES)
        .map(|i| {
            let mut m = Memory::new(
                memory_id(i),
                MemoryKind::Project,
                format!("Fact {i}"),
                format!("Something the project decided, number {i}"),
                format!(
                    "The team agreed on convention {i}: modules are named after their domain, \
                     tests live next to the code, and every public item is documented."
                ),
                base + chrono::Duration::minutes(i as i64),
            );
            m.tags = vec!["convention".into()];
            m.sources = vec![dream_core::SessionId::new(format!("s{i}")).unwrap()];
            let key = dream_engine::layout::key(dream_engine::layout::MEMORIES, m.id.clone());
            (key, Bytes::from(render_memory(&m)))
        })
        .collect()
}

async fn fill(store: Arc<dyn RecordStore>) {
    for (key, value) in template_memories() {
        store.put(&key, value, Write::any()).await.unwrap();
    }
    let dream = Dream::open(store, options()).unwrap();
    for i in 0..SESSIONS {
        dream
            .log_session(vec![
                Message::new(
                    Role::User,
                    format!("From now on we name release branches release-{i}."),
                ),
                Message::new(Role::Assistant, "Understood, I will use that naming."),
            ])
            .await
            .unwrap();
    }
}

fn answer() -> String {
    let creates: Vec<_> = (1..=SESSIONS)
        .map(|i| {
            // Batch session S{i} is the (i - 1)th logged: "… release-{i - 1}."
            json!({"name": format!("Release branch {}", i - 1), "description": "branch naming",
                   "kind": "project", "content": format!("Release branches are named release-{}.", i - 1),
                   "tags": ["git"], "sources": [format!("S{i}")], "confidence": 0.9,
                   "evidence": [{"session": format!("S{i}"), "message": 0}]})
        })
        .collect();
    json!({
        "create": creates,
        "update": [{"id": memory_id(MEMORIES - 1).as_str(), "content": "Convention updated: release branches are named release-0.",
                    "sources": ["S1"], "evidence": [{"session": "S1", "message": 0}]}],
        "delete": []
    })
    .to_string()
}

/// A fresh copy of the template store, for one iteration.
trait Backend {
    fn fresh(&mut self, rt: &Runtime) -> Arc<dyn RecordStore>;
}

struct InMemory {
    template: Vec<(Key, Bytes)>,
}

impl InMemory {
    fn new(rt: &Runtime) -> Self {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        rt.block_on(fill(store.clone()));
        let template = rt.block_on(dump(&store));
        InMemory { template }
    }
}

async fn dump(store: &Arc<dyn RecordStore>) -> Vec<(Key, Bytes)> {
    let mut out = Vec::new();
    for ns in store.namespaces().await.unwrap() {
        let page = store.list(&ns, None, 1000).await.unwrap();
        for e in page.entries {
            out.push((Key::new(ns.clone(), e.id), e.record.value));
        }
    }
    out
}

impl Backend for InMemory {
    fn fresh(&mut self, rt: &Runtime) -> Arc<dyn RecordStore> {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        rt.block_on(async {
            for (k, v) in &self.template {
                store.put(k, v.clone(), Write::any()).await.unwrap();
            }
        });
        store
    }
}

struct OnDisk {
    root: tempfile::TempDir,
    template: PathBuf,
    n: usize,
}

impl OnDisk {
    fn new(rt: &Runtime) -> Self {
        let root = tempfile::tempdir().unwrap();
        let template = root.path().join("template");
        rt.block_on(async {
            let store: Arc<dyn RecordStore> = Arc::new(FsStore::open(&template).await.unwrap());
            fill(store).await;
        });
        OnDisk {
            root,
            template,
            n: 0,
        }
    }

    fn copy(&mut self) -> PathBuf {
        self.n += 1;
        let dst = self.root.path().join(format!("copy{}", self.n));
        let status = std::process::Command::new("cp")
            .arg("-a")
            .arg(&self.template)
            .arg(&dst)
            .status()
            .unwrap();
        assert!(status.success());
        // Keep the disk tidy: the previous copy is no longer used.
        let old = self.root.path().join(format!("copy{}", self.n - 1));
        let _ = std::fs::remove_dir_all(old);
        dst
    }
}

impl Backend for OnDisk {
    fn fresh(&mut self, rt: &Runtime) -> Arc<dyn RecordStore> {
        let dir = self.copy();
        Arc::new(rt.block_on(FsStore::open(Path::new(&dir))).unwrap())
    }
}

/// One store operation of a pass, as recorded.
#[derive(Debug, Clone)]
enum Op {
    Get(Key),
    Put(Key, Bytes, Option<LockName>),
    Delete(Key, Option<LockName>),
    List(Namespace, Option<RecordId>, usize),
    ListVersions(Namespace, Option<RecordId>, usize),
    Batch(Vec<BatchOp>, Option<LockName>),
    TryLease(LockName, Duration),
    Release(LockName),
}

/// Forwards to a store and records every operation.
#[derive(Debug)]
struct Recorder {
    inner: Arc<dyn RecordStore>,
    ops: Mutex<Vec<Op>>,
}

impl Recorder {
    fn push(&self, op: Op) {
        self.ops.lock().unwrap().push(op);
    }
}

#[async_trait]
impl RecordStore for Recorder {
    fn info(&self) -> StoreInfo {
        self.inner.info()
    }
    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        self.push(Op::Get(key.clone()));
        self.inner.get(key).await
    }
    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
        self.push(Op::Put(
            key.clone(),
            value.clone(),
            write.fence.as_ref().map(|f| f.lock.clone()),
        ));
        self.inner.put(key, value, write).await
    }
    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
        self.push(Op::Delete(
            key.clone(),
            write.fence.as_ref().map(|f| f.lock.clone()),
        ));
        self.inner.delete(key, write).await
    }
    async fn list(
        &self,
        ns: &Namespace,
        after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.push(Op::List(ns.clone(), after.cloned(), limit));
        self.inner.list(ns, after, limit).await
    }
    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        self.inner.namespaces().await
    }
    async fn try_lease(&self, lock: &LockName, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        self.push(Op::TryLease(lock.clone(), ttl));
        self.inner.try_lease(lock, ttl).await
    }
    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        self.inner.renew(lease, ttl).await
    }
    async fn release(&self, lease: Lease) -> Result<bool, StoreError> {
        self.push(Op::Release(lease.lock().clone()));
        self.inner.release(lease).await
    }
    async fn write_batch(
        &self,
        ops: &[BatchOp],
        fence: Option<dream_core::Fence>,
    ) -> Result<Vec<dream_core::BatchOutcome>, StoreError> {
        self.push(Op::Batch(
            ops.to_vec(),
            fence.as_ref().map(|f| f.lock.clone()),
        ));
        self.inner.write_batch(ops, fence).await
    }
    async fn list_versions(
        &self,
        ns: &Namespace,
        after: Option<&RecordId>,
        limit: usize,
    ) -> Result<dream_core::VersionPage, StoreError> {
        self.push(Op::ListVersions(ns.clone(), after.cloned(), limit));
        self.inner.list_versions(ns, after, limit).await
    }
    async fn compact(&self) -> Result<(), StoreError> {
        self.inner.compact().await
    }

    async fn watch_changes(&self) -> Result<Option<dream_core::Changes>, StoreError> {
        self.inner.watch_changes().await
    }
}

fn dream_on(store: Arc<dyn RecordStore>, model: &ScriptedModel) -> Dream {
    model.push_text(answer());
    Dream::open(store, options())
        .unwrap()
        .with_model(Arc::new(model.clone()))
}

/// Records the store operations of one real pass.
fn record(backend: &mut dyn Backend, rt: &Runtime) -> Vec<Op> {
    let recorder = Arc::new(Recorder {
        inner: backend.fresh(rt),
        ops: Mutex::new(Vec::new()),
    });
    let model = ScriptedModel::new();
    let dream = dream_on(recorder.clone(), &model);
    let report = rt.block_on(dream.dream(true)).unwrap();
    assert_eq!(report.created.len(), SESSIONS, "{report:?}");
    assert_eq!(report.updated.len(), 1);
    assert_eq!(report.pruned.len(), SESSIONS);
    recorder.ops.lock().unwrap().clone()
}

/// Performs exactly the recorded operations.
async fn replay(store: &Arc<dyn RecordStore>, ops: &[Op]) {
    let mut leases: HashMap<LockName, Lease> = HashMap::new();
    let write = |leases: &HashMap<LockName, Lease>, lock: &Option<LockName>| match lock {
        Some(l) => Write::any().fenced(leases[l].fence()),
        None => Write::any(),
    };
    for op in ops {
        match op {
            Op::Get(k) => {
                black_box(store.get(k).await.unwrap());
            }
            Op::Put(k, v, lock) => {
                store.put(k, v.clone(), write(&leases, lock)).await.unwrap();
            }
            Op::Delete(k, lock) => {
                store.delete(k, write(&leases, lock)).await.unwrap();
            }
            Op::List(ns, after, limit) => {
                black_box(store.list(ns, after.as_ref(), *limit).await.unwrap());
            }
            Op::ListVersions(ns, after, limit) => {
                black_box(
                    store
                        .list_versions(ns, after.as_ref(), *limit)
                        .await
                        .unwrap(),
                );
            }
            Op::Batch(batch, lock) => {
                // Unconditional, like the replayed puts and deletes.
                let batch: Vec<BatchOp> = batch
                    .iter()
                    .map(|op| match op.value() {
                        Some(v) => BatchOp::put(op.key().clone(), v.clone(), Precondition::Any),
                        None => BatchOp::delete(op.key().clone(), Precondition::Any),
                    })
                    .collect();
                let fence = lock.as_ref().map(|l| leases[l].fence());
                store.write_batch(&batch, fence).await.unwrap();
            }
            Op::TryLease(l, ttl) => {
                let lease = store.try_lease(l, *ttl).await.unwrap().expect("free lock");
                leases.insert(l.clone(), lease);
            }
            Op::Release(l) => {
                let lease = leases.remove(l).expect("held lease");
                store.release(lease).await.unwrap();
            }
        }
    }
}

fn bench_backend(c: &mut Criterion, name: &str, backend: &mut dyn Backend, rt: &Runtime) {
    let ops = record(backend, rt);
    let mut group = c.benchmark_group("dream_pass");
    group.sample_size(20);
    group.bench_function(format!("{name}/dream"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let model = ScriptedModel::new();
                let dream = dream_on(backend.fresh(rt), &model);
                let start = Instant::now();
                let report = rt.block_on(dream.dream(true)).unwrap();
                total += start.elapsed();
                assert_eq!(report.created.len(), SESSIONS);
            }
            total
        })
    });
    group.bench_function(format!("{name}/baseline"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let store = backend.fresh(rt);
                let start = Instant::now();
                rt.block_on(replay(&store, &ops));
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
}

fn dream_pass(c: &mut Criterion) {
    let rt = runtime();
    let mut memory = InMemory::new(&rt);
    bench_backend(c, "memory", &mut memory, &rt);
    let mut disk = OnDisk::new(&rt);
    bench_backend(c, "fs", &mut disk, &rt);
}

criterion_group!(benches, dream_pass);
criterion_main!(benches);
