//! Several OS processes on one store directory: compare-and-swap increments
//! lose no update, and a lease-guarded section never has two holders.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dream_conformance::process::{ChildProcess, child_role};
use dream_core::{Bytes, Key, LockName, Namespace, RecordId, RecordStore, StoreError, Write};
use dream_fs::{FsOptions, FsStore};

const CAS_ROUNDS: u64 = 40;
const SECTIONS: u64 = 12;
const LEASE_TTL: Duration = Duration::from_secs(10);
const WAIT: Duration = Duration::from_secs(120);

fn counter_key() -> Key {
    Key::new(
        Namespace::new("state").unwrap(),
        RecordId::new("counter").unwrap(),
    )
}

fn env_dir() -> PathBuf {
    PathBuf::from(std::env::var("DREAM_TEST_DIR").expect("DREAM_TEST_DIR"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn open_existing(dir: &Path) -> FsStore {
    FsStore::open_with(dir.join(".dream"), FsOptions::new().create(false))
        .await
        .expect("open the parent's store")
}

/// Children print READY and wait for the parent's `go` file, so they really race.
fn barrier(dir: &Path) {
    println!("READY");
    let deadline = Instant::now() + WAIT;
    while !dir.join("go").exists() {
        assert!(Instant::now() < deadline, "no go signal");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn start_children(test: &str, role: &str, dir: &Path) -> Vec<ChildProcess> {
    let dir_str = dir.to_str().unwrap();
    let mut children: Vec<ChildProcess> = (0..2)
        .map(|_| ChildProcess::spawn(test, role, &[("DREAM_TEST_DIR", dir_str)]).unwrap())
        .collect();
    for child in &mut children {
        child.wait_for_line("READY", WAIT).expect("child ready");
    }
    std::fs::write(dir.join("go"), b"").unwrap();
    children
}

fn number_after(line: &str, tag: &str) -> u64 {
    line.split_once(tag)
        .and_then(|(_, rest)| rest.trim().parse().ok())
        .unwrap_or_else(|| panic!("malformed line {line:?}"))
}

async fn read_counter(store: &FsStore) -> (u64, dream_core::Version) {
    let record = store
        .get(&counter_key())
        .await
        .expect("get")
        .expect("present");
    let n = std::str::from_utf8(&record.value).unwrap().parse().unwrap();
    (n, record.version)
}

#[test]
fn cas_increments_across_processes_lose_nothing() {
    if child_role().is_some() {
        let dir = env_dir();
        let rt = runtime();
        let successes = rt.block_on(async {
            let store = open_existing(&dir).await;
            barrier(&dir);
            let mut successes = 0u64;
            for _ in 0..CAS_ROUNDS {
                let (n, version) = read_counter(&store).await;
                match store
                    .put(
                        &counter_key(),
                        Bytes::from((n + 1).to_string()),
                        Write::matches(version),
                    )
                    .await
                {
                    Ok(_) => successes += 1,
                    Err(StoreError::Conflict { .. }) => {}
                    Err(other) => panic!("CAS put: {other}"),
                }
            }
            successes
        });
        println!("SUCCESSES {successes}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let rt = runtime();
    let store = rt
        .block_on(FsStore::open(tmp.path().join(".dream")))
        .unwrap();
    rt.block_on(store.put(&counter_key(), Bytes::from_static(b"0"), Write::any()))
        .unwrap();
    let mut children = start_children(
        "cas_increments_across_processes_lose_nothing",
        "cas",
        tmp.path(),
    );
    let mut total = 0;
    for child in &mut children {
        let line = child.wait_for_line("SUCCESSES", WAIT).expect("result");
        total += number_after(&line, "SUCCESSES");
        assert!(child.wait(WAIT).unwrap().success(), "child failed");
    }
    let (count, _) = rt.block_on(read_counter(&store));
    assert_eq!(count, total, "final count equals the successful increments");
    assert!(
        total >= CAS_ROUNDS,
        "at least one process made progress each round: {total}"
    );
}

#[test]
fn lease_guarded_section_never_has_two_holders() {
    if child_role().is_some() {
        let dir = env_dir();
        let rt = runtime();
        rt.block_on(async {
            let store = open_existing(&dir).await;
            let lock = LockName::new("dream").unwrap();
            barrier(&dir);
            for _ in 0..SECTIONS {
                let deadline = Instant::now() + WAIT;
                let lease = loop {
                    if let Some(lease) = store.try_lease(&lock, LEASE_TTL).await.expect("try_lease")
                    {
                        break lease;
                    }
                    assert!(Instant::now() < deadline, "lease never granted");
                    tokio::time::sleep(Duration::from_millis(2)).await;
                };
                // Entering the section: the marker must not exist (O_EXCL).
                let marker = dir.join("in-section");
                if std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&marker)
                    .is_err()
                {
                    println!("VIOLATION");
                    panic!("two holders in the section");
                }
                let (n, version) = read_counter(&store).await;
                store
                    .put(
                        &counter_key(),
                        Bytes::from((n + 1).to_string()),
                        Write::matches(version).fenced(lease.fence()),
                    )
                    .await
                    .expect("fenced increment under the lease");
                tokio::time::sleep(Duration::from_millis(5)).await;
                std::fs::remove_file(&marker).unwrap();
                assert!(
                    store.release(lease).await.expect("release"),
                    "lease still held"
                );
            }
        });
        println!("DONE");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let rt = runtime();
    let store = rt
        .block_on(FsStore::open(tmp.path().join(".dream")))
        .unwrap();
    rt.block_on(store.put(&counter_key(), Bytes::from_static(b"0"), Write::any()))
        .unwrap();
    let mut children = start_children(
        "lease_guarded_section_never_has_two_holders",
        "lease",
        tmp.path(),
    );
    for child in &mut children {
        child.wait_for_line("DONE", WAIT).expect("child done");
        assert!(child.wait(WAIT).unwrap().success(), "child failed");
    }
    let (count, _) = rt.block_on(read_counter(&store));
    assert_eq!(count, 2 * SECTIONS, "every section ran exactly once");
    // Two processes took the lock 2 × SECTIONS times: fences went 1..=2 × SECTIONS.
    let lease = rt
        .block_on(store.try_lease(&LockName::new("dream").unwrap(), LEASE_TTL))
        .unwrap()
        .expect("free after the children released it");
    assert_eq!(
        lease.token(),
        2 * SECTIONS + 1,
        "fence counter shared across processes"
    );
}
