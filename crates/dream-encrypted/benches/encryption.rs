//! Encryption benches.
//!
//! - `aes256gcm`: raw AES-256-GCM (the `aes-gcm` crate, no envelope, no store)
//!   encrypt and decrypt throughput for 1 KiB, 4 KiB and 64 KiB.
//! - `store_4k`: `EncryptedStore<dream-fs>` put and get of a 4 KiB value beside
//!   plain dream-fs doing the same durable steps on the same runtime.
//! - `memory_4k`: the same over the in-memory store, isolating the layer's CPU cost.

use std::hint::black_box;

use aes_gcm::{AeadInOut, Aes256Gcm, KeyInit, Nonce, Tag};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_main};
use dream_core::testing::MemoryStore;
use dream_core::{Bytes, Key, Namespace, RecordId, RecordStore, Write};
use dream_encrypted::{EncryptedStore, KeyId, KeyMaterial, KeyRing};
use dream_fs::FsStore;

const SIZES: [usize; 3] = [1024, 4096, 64 * 1024];

fn aes256gcm(c: &mut Criterion) {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).expect("rng");
    let cipher = Aes256Gcm::new(&key.into());
    let aad = [7u8; 48];
    let mut group = c.benchmark_group("aes256gcm");
    for size in SIZES {
        group.throughput(Throughput::Bytes(size as u64));
        let mut buf = vec![0x5au8; size];
        group.bench_with_input(BenchmarkId::new("encrypt", size), &size, |b, _| {
            b.iter(|| {
                let mut nonce = [0u8; 12];
                getrandom::fill(&mut nonce).expect("rng");
                let tag = cipher
                    .encrypt_inout_detached(&Nonce::from(nonce), &aad, buf.as_mut_slice().into())
                    .expect("encrypt");
                black_box(tag)
            })
        });
        let nonce = [3u8; 12];
        let plain = vec![0x5au8; size];
        let mut sealed = plain.clone();
        let tag: Tag = cipher
            .encrypt_inout_detached(&Nonce::from(nonce), &aad, sealed.as_mut_slice().into())
            .expect("encrypt");
        group.bench_with_input(BenchmarkId::new("decrypt", size), &size, |b, _| {
            b.iter(|| {
                let mut buf = sealed.clone();
                cipher
                    .decrypt_inout_detached(
                        &Nonce::from(nonce),
                        &aad,
                        buf.as_mut_slice().into(),
                        &tag,
                    )
                    .expect("decrypt");
                black_box(buf)
            })
        });
    }
    group.finish();
}

/// Put and get of a 4 KiB value: plain dream-fs beside `EncryptedStore<dream-fs>`,
/// each on its own fresh directory, both driven from the same runtime so they
/// make the same thread hops (dream-fs runs its file I/O on the blocking pool).
fn store_4k(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let (plain, encrypted) = runtime.block_on(async {
        let plain = FsStore::open(dir.path().join("plain")).await.expect("open");
        let inner = FsStore::open(dir.path().join("encrypted"))
            .await
            .expect("open");
        let ring = KeyRing::new(KeyId::new(1), KeyMaterial::generate().expect("rng"));
        (plain, EncryptedStore::new(inner, ring))
    });
    let stores: [(&str, &dyn RecordStore); 2] = [("fs", &plain), ("encrypted_fs", &encrypted)];
    put_get(c, "store_4k", &runtime, &stores);
}

/// The same pair over the in-memory store: no disk, so it shows the layer's CPU
/// cost (envelope, AES-GCM, counter) without fsync noise.
fn memory_4k(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let plain = MemoryStore::new();
    let ring = KeyRing::new(KeyId::new(1), KeyMaterial::generate().expect("rng"));
    let encrypted = EncryptedStore::new(MemoryStore::new(), ring);
    let stores: [(&str, &dyn RecordStore); 2] =
        [("memory", &plain), ("encrypted_memory", &encrypted)];
    put_get(c, "memory_4k", &runtime, &stores);
}

/// One group: put then get of a 4 KiB value on each store.
fn put_get(
    c: &mut Criterion,
    group_name: &str,
    runtime: &tokio::runtime::Runtime,
    stores: &[(&str, &dyn RecordStore)],
) {
    let key = Key::new(
        Namespace::new("memories").expect("ns"),
        RecordId::new("bench-record").expect("id"),
    );
    let value = Bytes::from(vec![0x61u8; 4096]);
    let mut group = c.benchmark_group(group_name);
    group.throughput(Throughput::Bytes(value.len() as u64));
    for (name, store) in stores {
        group.bench_function(BenchmarkId::new("put", name), |b| {
            b.to_async(runtime).iter(|| async {
                store
                    .put(&key, value.clone(), Write::any())
                    .await
                    .expect("put")
            })
        });
    }
    for (name, store) in stores {
        runtime
            .block_on(store.put(&key, value.clone(), Write::any()))
            .expect("seed");
        group.bench_function(BenchmarkId::new("get", name), |b| {
            b.to_async(runtime).iter(|| async {
                let record = store.get(&key).await.expect("get").expect("present");
                assert_eq!(record.value.len(), 4096);
                record
            })
        });
    }
    group.finish();
}

mod groups {
    criterion::criterion_group!(benches, super::aes256gcm, super::store_4k, super::memory_4k);
}
criterion_main!(groups::benches);
