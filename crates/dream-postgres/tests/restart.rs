//! The server restarted under running writers, cleanly (`pg_ctl restart -m
//! fast`) and by a crash (`-m immediate`, crash recovery on start), on a private
//! server this test starts (see `common/server.rs`). One store handle is kept
//! throughout: its pool must reconnect on its own. Writers record every write
//! the store acknowledged and every one whose outcome it could not tell:
//! afterwards every acknowledged write is there with its version, every untold
//! one is there in full or not at all, no version was issued twice, no write
//! was retried blindly (a unique key never meets `Conflict`), and the lease
//! taken before the restarts still fences.

mod common;
#[path = "common/server.rs"]
mod server;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dream_core::{
    BatchOp, BatchOutcome, Bytes, Key, LockName, Namespace, Precondition, RecordId, RecordStore,
    StoreError, Version, Write,
};
use dream_postgres::{PostgresOptions, PostgresStore};
use server::PrivateServer;

fn key(id: &str) -> Key {
    Key::new(Namespace::new("ns").unwrap(), RecordId::new(id).unwrap())
}

/// A failed write: whether its error was retryable, and what it wrote.
type Failed = (bool, Vec<(Key, Bytes)>);

/// What the writers saw.
#[derive(Default)]
struct Ledger {
    /// Acknowledged writes of a unique key: key, value, version; in the order
    /// each writer saw them, tagged with the writer.
    acked: Mutex<Vec<(usize, Key, Bytes, Version)>>,
    /// Writes that failed, whether the error was retryable, and what they
    /// wrote: each all there or all absent, and absent when retryable (a
    /// retryable error promises that trying again is safe).
    untold: Mutex<Vec<Failed>>,
    /// How many writes each writer had acknowledged.
    counts: [AtomicUsize; WRITERS],
    /// Acknowledged and untold increments of the counter, its last acknowledged version.
    counter: Mutex<(u64, u64, Option<Version>)>,
    /// Failures that must never happen: a blind retry's `Conflict`, a lost lease.
    wrong: Mutex<Vec<String>>,
    stop: AtomicBool,
}

/// Two put writers, a batch writer, the counter, the lease holder.
const WRITERS: usize = 5;
const COUNTER: usize = 3;

impl Ledger {
    fn ack(&self, writer: usize, key: Key, value: Bytes, version: Version) {
        self.acked
            .lock()
            .unwrap()
            .push((writer, key, value, version));
        self.counts[writer].fetch_add(1, Ordering::SeqCst);
    }

    fn wrong(&self, what: String) {
        self.wrong.lock().unwrap().push(what);
    }

    fn counts(&self) -> Vec<usize> {
        self.counts
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .collect()
    }
}

/// A pause after a failure, so a down server is not hammered.
async fn pause() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

async fn put_writer(store: Arc<PostgresStore>, ledger: Arc<Ledger>, writer: usize) {
    let mut i = 0;
    while !ledger.stop.load(Ordering::SeqCst) {
        i += 1;
        let k = key(&format!("p{writer}-{i}"));
        let value = Bytes::from(format!("put {writer} {i}"));
        match store.put(&k, value.clone(), Write::absent()).await {
            Ok(version) => ledger.ack(writer, k, value, version),
            Err(StoreError::Conflict { .. }) => ledger.wrong(format!("{k}: Conflict on a new key")),
            Err(e) => {
                ledger
                    .untold
                    .lock()
                    .unwrap()
                    .push((e.is_retryable(), vec![(k, value)]));
                pause().await;
            }
        }
    }
}

async fn batch_writer(store: Arc<PostgresStore>, ledger: Arc<Ledger>, writer: usize) {
    let mut i = 0;
    while !ledger.stop.load(Ordering::SeqCst) {
        i += 1;
        let writes: Vec<(Key, Bytes)> = ["a", "b"]
            .iter()
            .map(|half| {
                (
                    key(&format!("b{i}{half}")),
                    Bytes::from(format!("batch {i} {half}")),
                )
            })
            .collect();
        let ops: Vec<BatchOp> = writes
            .iter()
            .map(|(k, v)| BatchOp::put(k.clone(), v.clone(), Precondition::Absent))
            .collect();
        match store.write_batch(&ops, None).await {
            Ok(outcomes) => {
                for ((k, v), outcome) in writes.into_iter().zip(outcomes) {
                    match outcome {
                        BatchOutcome::Put(version) => ledger.ack(writer, k, v, version),
                        other => ledger.wrong(format!("{k}: {other:?}")),
                    }
                }
            }
            Err(StoreError::Conflict { key, .. }) => {
                ledger.wrong(format!("{key}: Conflict on a new key in a batch"))
            }
            Err(e) => {
                ledger
                    .untold
                    .lock()
                    .unwrap()
                    .push((e.is_retryable(), writes));
                pause().await;
            }
        }
    }
}

/// Read-modify-write of one counter by compare-and-set; the only writer of it,
/// so a `Conflict` can only come from a write sent twice.
async fn counter_writer(store: Arc<PostgresStore>, ledger: Arc<Ledger>) {
    let k = key("counter");
    while !ledger.stop.load(Ordering::SeqCst) {
        let Ok(current) = store.get(&k).await else {
            pause().await;
            continue;
        };
        let (n, pre) = match current {
            Some(r) => (
                std::str::from_utf8(&r.value)
                    .unwrap()
                    .parse::<u64>()
                    .unwrap(),
                Write::matches(r.version),
            ),
            None => (0, Write::absent()),
        };
        match store.put(&k, Bytes::from((n + 1).to_string()), pre).await {
            Ok(version) => {
                let mut counter = ledger.counter.lock().unwrap();
                counter.0 += 1;
                counter.2 = Some(version);
                ledger.counts[COUNTER].fetch_add(1, Ordering::SeqCst);
            }
            Err(StoreError::Conflict { .. }) => {
                ledger.wrong("counter: Conflict with no other writer".into())
            }
            Err(_) => {
                ledger.counter.lock().unwrap().1 += 1;
                pause().await;
            }
        }
    }
}

/// Takes a lease once, then writes fenced by it and renews it throughout.
async fn lease_holder(store: Arc<PostgresStore>, ledger: Arc<Ledger>, writer: usize) {
    let lock = LockName::new("holder").unwrap();
    let ttl = Duration::from_secs(120);
    let lease = loop {
        if let Ok(Some(lease)) = store.try_lease(&lock, ttl).await {
            break lease;
        }
        pause().await;
    };
    let mut i = 0;
    while !ledger.stop.load(Ordering::SeqCst) {
        i += 1;
        let k = key(&format!("l-{i}"));
        let value = Bytes::from(format!("fenced {i}"));
        match store
            .put(&k, value.clone(), Write::absent().fenced(lease.fence()))
            .await
        {
            Ok(version) => ledger.ack(writer, k, value, version),
            Err(e @ (StoreError::Conflict { .. } | StoreError::LockLost { .. })) => {
                ledger.wrong(format!("{k}: {e}"))
            }
            Err(e) => {
                ledger
                    .untold
                    .lock()
                    .unwrap()
                    .push((e.is_retryable(), vec![(k, value)]));
                pause().await;
            }
        }
        if i % 5 == 0 {
            // Failing while the server is away is fine; losing the lease is not.
            if let Err(e @ StoreError::LockLost { .. }) = store.renew(&lease, ttl).await {
                ledger.wrong(format!("renew: {e}"));
            }
        }
    }
    match store.release(lease).await {
        Ok(true) => {}
        other => ledger.wrong(format!("release: {other:?}")),
    }
}

/// Waits until every writer acknowledged `more` writes beyond `since`.
async fn every_writer_moves(ledger: &Ledger, since: &[usize], more: usize, after: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let now = ledger.counts();
        if now.iter().zip(since).all(|(n, s)| *n >= s + more) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "after {after} some writer never got a write through: {since:?} → {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn acknowledged_writes_survive_a_restart_and_a_crash_of_the_server() {
    let test = "acknowledged_writes_survive_a_restart_and_a_crash_of_the_server";
    let dir = tempfile::tempdir().expect("temp dir");
    // fsync stays on: what was acknowledged was flushed.
    let server = match PrivateServer::start(dir.path(), "") {
        Ok(server) => server,
        Err(why) => {
            common::skip(test, &format!("could not start a private server: {why}"));
            return;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let config = PostgresOptions::from_url(&server.url("127.0.0.1", ""))
            .expect("URL")
            .with_schema("dream_restart")
            .expect("schema")
            .with_pool_size(4);
        let store = Arc::new(PostgresStore::open(config).await.expect("open"));
        let ledger = Arc::new(Ledger::default());
        let tasks = vec![
            tokio::spawn(put_writer(store.clone(), ledger.clone(), 0)),
            tokio::spawn(put_writer(store.clone(), ledger.clone(), 1)),
            tokio::spawn(batch_writer(store.clone(), ledger.clone(), 2)),
            tokio::spawn(counter_writer(store.clone(), ledger.clone())),
            tokio::spawn(lease_holder(store.clone(), ledger.clone(), 4)),
        ];
        every_writer_moves(&ledger, &[0; WRITERS], 5, "the start").await;
        for mode in ["fast", "immediate"] {
            // (This blocks the thread of `block_on`, not the writers' workers.)
            server
                .restart(mode)
                .unwrap_or_else(|e| panic!("pg_ctl restart -m {mode}: {e}"));
            let since = ledger.counts();
            every_writer_moves(&ledger, &since, 5, &format!("restart -m {mode}")).await;
        }
        ledger.stop.store(true, Ordering::SeqCst);
        for task in tasks {
            task.await.expect("writer task");
        }

        let wrong = ledger.wrong.lock().unwrap().clone();
        assert!(wrong.is_empty(), "{wrong:#?}");

        // Every acknowledged write is there, with its version.
        let acked = ledger.acked.lock().unwrap().clone();
        for (_, k, value, version) in &acked {
            let record = store
                .get(k)
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("acknowledged {k} v{} is gone", version.0));
            assert_eq!((&record.value, record.version), (value, *version), "{k}");
        }
        // No version issued twice, and each writer's rise, across the crash too.
        let mut seen = HashSet::new();
        let counter = *ledger.counter.lock().unwrap();
        for (_, _, _, version) in &acked {
            assert!(seen.insert(version.0), "version {} issued twice", version.0);
        }
        for writer in 0..WRITERS {
            let versions: Vec<u64> = acked
                .iter()
                .filter(|a| a.0 == writer)
                .map(|a| a.3.0)
                .collect();
            assert!(
                versions.windows(2).all(|w| w[0] < w[1]),
                "writer {writer}: {versions:?}"
            );
        }
        // What was not told is there in full or not at all.
        let untold = ledger.untold.lock().unwrap().clone();
        let mut untold_there = 0;
        for (retryable, group) in &untold {
            let mut there = Vec::new();
            for (k, value) in group {
                let record = store.get(k).await.unwrap();
                if let Some(record) = &record {
                    assert_eq!(&record.value, value, "{k}: not the value written");
                }
                there.push(record.is_some());
            }
            assert!(
                there.iter().all(|t| *t) || there.iter().all(|t| !*t),
                "half of a write is there: {group:?} {there:?}"
            );
            assert!(
                !(*retryable && there[0]),
                "a write failed as retryable, yet it was applied: {group:?}"
            );
            untold_there += usize::from(there[0]);
        }
        // The counter: every acknowledged increment, and at most the untold ones more.
        let (acked_increments, untold_increments, last) = counter;
        let record = store.get(&key("counter")).await.unwrap().expect("counter");
        let n: u64 = std::str::from_utf8(&record.value).unwrap().parse().unwrap();
        assert!(
            acked_increments <= n && n <= acked_increments + untold_increments,
            "counter {n}: {acked_increments} acknowledged, {untold_increments} untold"
        );
        assert!(Some(record.version) >= last);
        eprintln!(
            "{} acknowledged writes, {} failed ({} retryable, {} there), counter {n} \
             ({acked_increments} acknowledged, {untold_increments} failed)",
            acked.len(),
            untold.len(),
            untold.iter().filter(|(retryable, _)| *retryable).count(),
            untold_there
        );
    });
    drop(server);
}
