//! dream-fs beside raw files doing the same durable steps and the same thread
//! hop (`spawn_blocking`):
//! - put: a 4 KiB value; raw = temp write, fsync, rename, directory fsync.
//! - get: a 4 KiB value; raw = read plus the same SHA-256 check against a
//!   known hash.
//! - list: 100 records of 4 KiB; raw = read the directory, sort, read and
//!   hash-check every file.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dream::fs::FsStore;
use dream::{Bytes, Key, Namespace, RecordId, RecordStore, Write};
use sha2::{Digest, Sha256};

use crate::Bench;

const VALUE_SIZE: usize = 4096;
const LIST_RECORDS: usize = 100;

fn value(seed: usize) -> Vec<u8> {
    (0..VALUE_SIZE)
        .map(|i| ((i * 31 + seed * 7) % 251) as u8)
        .collect()
}

fn memories() -> Namespace {
    Namespace::new("memories").expect("valid namespace")
}

fn key(id: &str) -> Key {
    Key::new(memories(), RecordId::new(id).expect("valid id"))
}

/// A fresh store in a temp dir, plus a sibling directory for the raw baseline.
fn setup(bench: &Bench) -> (tempfile::TempDir, Arc<FsStore>, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = bench
        .runtime
        .block_on(FsStore::open(dir.path().join(".dream")))
        .expect("open store");
    let raw = dir.path().join("raw");
    std::fs::create_dir(&raw).expect("raw dir");
    (dir, Arc::new(store), raw)
}

fn raw_put(dir: &Path, name: &str, value: &[u8]) {
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .expect("create temp");
    file.write_all(value).expect("write");
    file.sync_all().expect("fsync");
    drop(file);
    std::fs::rename(&tmp, dir.join(name)).expect("rename");
    File::open(dir)
        .expect("open dir")
        .sync_all()
        .expect("fsync dir");
}

fn raw_get(path: &Path, expected: &[u8; 32]) -> Vec<u8> {
    let bytes = std::fs::read(path).expect("read");
    let hash: [u8; 32] = Sha256::digest(&bytes).into();
    assert_eq!(&hash, expected, "hash check");
    bytes
}

/// `put` group: dream-fs put of a 4 KiB value vs a raw durable file write.
pub fn put(bench: &mut Bench) {
    let (_dir, store, raw) = setup(bench);
    let key = key("bench");
    let value = Bytes::from(value(0));
    bench.group.bench_function("fs", |b| {
        b.to_async(bench.runtime).iter(|| {
            let store = store.clone();
            let key = key.clone();
            let value = value.clone();
            async move { store.put(&key, value, Write::any()).await.expect("put") }
        })
    });
    bench.group.bench_function("raw-file", |b| {
        b.to_async(bench.runtime).iter(|| {
            let raw = raw.clone();
            let value = value.clone();
            async move {
                tokio::task::spawn_blocking(move || raw_put(&raw, "bench.md", &value))
                    .await
                    .expect("join")
            }
        })
    });
}

/// `get` group: dream-fs get of a 4 KiB value vs a raw read with the same hash check.
pub fn get(bench: &mut Bench) {
    let (_dir, store, raw) = setup(bench);
    let key = key("bench");
    let value = value(0);
    let expected: [u8; 32] = Sha256::digest(&value).into();
    bench
        .runtime
        .block_on(store.put(&key, Bytes::from(value.clone()), Write::any()))
        .expect("put");
    raw_put(&raw, "bench.md", &value);
    let path = raw.join("bench.md");
    bench.group.bench_function("fs", |b| {
        b.to_async(bench.runtime).iter(|| {
            let store = store.clone();
            let key = key.clone();
            async move { store.get(&key).await.expect("get").expect("present") }
        })
    });
    bench.group.bench_function("raw-file", |b| {
        b.to_async(bench.runtime).iter(|| {
            let path = path.clone();
            async move {
                tokio::task::spawn_blocking(move || raw_get(&path, &expected))
                    .await
                    .expect("join")
            }
        })
    });
}

/// `list` group: dream-fs list of 100 records vs raw directory read plus
/// reading and hash-checking every file.
pub fn list(bench: &mut Bench) {
    let (_dir, store, raw) = setup(bench);
    let mut expected = HashMap::new();
    for i in 0..LIST_RECORDS {
        let id = format!("m{i:03}");
        let value = value(i);
        expected.insert(format!("{id}.md"), <[u8; 32]>::from(Sha256::digest(&value)));
        bench
            .runtime
            .block_on(store.put(&key(&id), Bytes::from(value.clone()), Write::any()))
            .expect("put");
        raw_put(&raw, &format!("{id}.md"), &value);
    }
    let expected = Arc::new(expected);
    let namespace = memories();
    bench.group.bench_function("fs", |b| {
        b.to_async(bench.runtime).iter(|| {
            let store = store.clone();
            let namespace = namespace.clone();
            async move {
                let page = store.list(&namespace, None, 1000).await.expect("list");
                assert_eq!(page.entries.len(), LIST_RECORDS);
                page
            }
        })
    });
    bench.group.bench_function("raw-file", |b| {
        b.to_async(bench.runtime).iter(|| {
            let raw = raw.clone();
            let expected = expected.clone();
            async move {
                tokio::task::spawn_blocking(move || {
                    let mut names: Vec<String> = std::fs::read_dir(&raw)
                        .expect("read dir")
                        .map(|e| e.expect("entry").file_name().into_string().expect("utf8"))
                        .filter(|n| !n.starts_with('.'))
                        .collect();
                    names.sort_unstable();
                    let values: Vec<Vec<u8>> = names
                        .iter()
                        .map(|n| raw_get(&raw.join(n), &expected[n]))
                        .collect();
                    assert_eq!(values.len(), LIST_RECORDS);
                    values
                })
                .await
                .expect("join")
            }
        })
    });
}
