//! dream-fs beside raw files, interleaved: each iteration runs both sides of a
//! pair back to back (alternating which goes first), so load from other
//! processes hits both alike. A companion to the criterion `store` bench, whose
//! sequential groups drift on a busy machine. Prints medians and ratios.
//!
//! `cargo run --release -p dream-fs --example interleaved [iterations]`
//!
//! The raw side does the same durable steps and the same `spawn_blocking` hop
//! as the store: put = temp write, fsync, rename, directory fsync; get = read
//! plus the same SHA-256 check; list = read the directory, then read and
//! hash-check each of 100 files.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use dream_core::{Bytes, Key, Namespace, RecordId, RecordStore, Write};
use dream_fs::FsStore;
use sha2::{Digest, Sha256};
use tokio::runtime::Runtime;

const VALUE_SIZE: usize = 4096;
const LIST_RECORDS: usize = 100;

fn value(seed: usize) -> Vec<u8> {
    (0..VALUE_SIZE)
        .map(|i| ((i * 31 + seed * 7) % 251) as u8)
        .collect()
}

fn key(id: &str) -> Key {
    Key::new(
        Namespace::new("memories").expect("valid"),
        RecordId::new(id).expect("valid"),
    )
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

fn raw_list(dir: &Path, expected: &HashMap<String, [u8; 32]>) -> Vec<Vec<u8>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf8"))
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort_unstable();
    names
        .iter()
        .map(|n| raw_get(&dir.join(n), &expected[n]))
        .collect()
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

/// Times `store_op` and `raw_op` alternately; returns their medians in µs.
fn compare(
    runtime: &Runtime,
    iterations: usize,
    mut store_op: impl FnMut(&Runtime),
    mut raw_op: impl FnMut(&Runtime),
) -> (f64, f64) {
    let (mut store, mut raw) = (Vec::new(), Vec::new());
    for i in 0..iterations {
        let mut time_store = || {
            let t = Instant::now();
            store_op(runtime);
            store.push(t.elapsed().as_secs_f64() * 1e6);
        };
        if i % 2 == 0 {
            time_store();
            let t = Instant::now();
            raw_op(runtime);
            raw.push(t.elapsed().as_secs_f64() * 1e6);
        } else {
            let t = Instant::now();
            raw_op(runtime);
            raw.push(t.elapsed().as_secs_f64() * 1e6);
            time_store();
        }
    }
    (median(store), median(raw))
}

fn report(name: &str, (store, raw): (f64, f64)) {
    println!(
        "{name:5} fs {store:10.1} µs   raw-file {raw:10.1} µs   ratio {:.2}",
        store / raw
    );
}

fn main() {
    let iterations: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(
        runtime
            .block_on(FsStore::open(dir.path().join(".dream")))
            .expect("open store"),
    );
    let raw: PathBuf = dir.path().join("raw");
    std::fs::create_dir(&raw).expect("raw dir");

    let one = key("bench");
    let v = value(0);
    let bytes = Bytes::from(v.clone());
    let put = compare(
        &runtime,
        iterations,
        |rt| {
            rt.block_on(store.put(&one, bytes.clone(), Write::any()))
                .expect("put");
        },
        |rt| {
            let (raw, v) = (raw.clone(), v.clone());
            rt.block_on(rt.spawn_blocking(move || raw_put(&raw, "bench.md", &v)))
                .expect("join");
        },
    );
    report("put", put);

    let expected: [u8; 32] = Sha256::digest(&v).into();
    let path = raw.join("bench.md");
    let get = compare(
        &runtime,
        iterations * 20,
        |rt| {
            rt.block_on(store.get(&one)).expect("get").expect("present");
        },
        |rt| {
            let path = path.clone();
            rt.block_on(rt.spawn_blocking(move || raw_get(&path, &expected)))
                .expect("join");
        },
    );
    report("get", get);

    let list_dir = dir.path().join("raw-list");
    std::fs::create_dir(&list_dir).expect("list dir");
    let mut hashes = HashMap::new();
    for i in 0..LIST_RECORDS {
        let id = format!("m{i:03}");
        let v = value(i);
        hashes.insert(format!("{id}.md"), <[u8; 32]>::from(Sha256::digest(&v)));
        runtime
            .block_on(store.put(&key(&id), Bytes::from(v.clone()), Write::any()))
            .expect("put");
        raw_put(&list_dir, &format!("{id}.md"), &v);
    }
    runtime
        .block_on(store.delete(&one, Write::any()))
        .expect("delete");
    let hashes = Arc::new(hashes);
    let namespace = Namespace::new("memories").expect("valid");
    let list = compare(
        &runtime,
        iterations,
        |rt| {
            let page = rt
                .block_on(store.list(&namespace, None, 1000))
                .expect("list");
            assert_eq!(page.entries.len(), LIST_RECORDS);
        },
        |rt| {
            let (dir, hashes) = (list_dir.clone(), hashes.clone());
            let n = rt
                .block_on(rt.spawn_blocking(move || raw_list(&dir, &hashes)))
                .expect("join");
            assert_eq!(n.len(), LIST_RECORDS);
        },
    );
    report("list", list);
}
