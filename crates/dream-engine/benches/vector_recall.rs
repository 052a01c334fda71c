//! Vector recall benchmarks over 10,000 and 100,000 synthetic memories with
//! 384-dimension vectors (the deterministic `HashEmbedder`), in a `MemoryStore`.
//!
//! Group `vector_recall/<n>`:
//! - `vectors_only`: `recall` with BM25F off (generation and stamp check, the
//!   query's embedding, brute-force centred cosine over the scope's vectors, the
//!   firewall on the candidates, the POLICY);
//! - `hybrid`: the same with BM25F on, fused by reciprocal rank;
//! - `query_embedding`: the test embedder on one query alone (to subtract: the
//!   issue's targets exclude the query's embedding call);
//! - `linear_cosine_scan`: the baseline, a plain linear scan of the same vectors
//!   (one contiguous `f32` array, unit length) keeping the 20 best by cosine.
//!
//! Run: `cargo bench -p dream-engine --bench vector_recall -- --warm-up-time 1 --measurement-time 3`.

// `criterion_group!` generates an undocumented function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use dream_core::testing::{HashEmbedder, MemoryStore};
use dream_core::{
    Bytes, Embedder, Key, Memory, MemoryId, MemoryKind, Namespace, RecordId, RecordStore, Scope,
    SessionId, SystemClock, Write, render_memory,
};
use dream_engine::recall::{Recall, RecallOptions, VectorOptions};
use dream_engine::{Dream, Options, layout};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SIZES: [usize; 2] = [10_000, 100_000];
const DIMS: usize = 384;

/// Pronounceable synthetic words.
fn vocabulary(rng: &mut StdRng) -> Vec<String> {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ren", "tu", "vas", "po", "qui", "zen", "dor", "fa", "gri", "hal", "jun",
        "bex", "nor",
    ];
    (0..20_000)
        .map(|_| {
            let n = rng.random_range(2..=4);
            (0..n)
                .map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())])
                .collect()
        })
        .collect()
}

fn sentence(rng: &mut StdRng, words: &[String], n: usize) -> String {
    (0..n)
        .map(|_| words[rng.random_range(0..words.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `n` memories (90% in scope `proj`) with their vectors stored by a backfill.
fn store_with_vectors(rt: &tokio::runtime::Runtime, n: usize) -> (Arc<MemoryStore>, Vec<String>) {
    let mut rng = StdRng::seed_from_u64(11);
    let words = vocabulary(&mut rng);
    let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let store = Arc::new(MemoryStore::new());
    rt.block_on(async {
        let ns = Namespace::new(layout::MEMORIES).unwrap();
        for i in 0..n {
            let body_len = rng.random_range(20..=60);
            let mut m = Memory::new(
                MemoryId::new(format!("m{i:07}")).unwrap(),
                MemoryKind::ALL[i % 4],
                sentence(&mut rng, &words, 3),
                sentence(&mut rng, &words, 6),
                sentence(&mut rng, &words, body_len),
                t0,
            );
            m.scope = Scope::new(if i % 10 == 0 { "other" } else { "proj" }).unwrap();
            m.sources = vec![SessionId::new("s1").unwrap()];
            m.confidence = 0.9;
            let key = Key::new(ns.clone(), RecordId::new(m.id.as_str()).unwrap());
            store
                .put(&key, Bytes::from(render_memory(&m)), Write::any())
                .await
                .unwrap();
        }
        let options = Options {
            scope: Scope::new("proj").unwrap(),
            ..Options::default()
        };
        let dream = Dream::open(store.clone(), options)
            .unwrap()
            .with_embedder(Arc::new(HashEmbedder::new(DIMS)));
        let report = dream.backfill_vectors().await.unwrap();
        assert_eq!(report.embedded, n);
    });
    let queries = (0..32).map(|_| sentence(&mut rng, &words, 3)).collect();
    (store, queries)
}

/// The baseline: the 20 best rows of `data` (unit rows of `DIMS`) by cosine.
fn linear_scan(data: &[f32], query: &[f32]) -> Vec<(f32, usize)> {
    let mut scored: Vec<(f32, usize)> = data
        .chunks_exact(DIMS)
        .enumerate()
        .map(|(i, row)| (row.iter().zip(query).map(|(a, b)| a * b).sum(), i))
        .collect();
    let by = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0);
    scored.select_nth_unstable_by(19, by);
    scored.truncate(20);
    scored.sort_unstable_by(by);
    scored
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let embedder = HashEmbedder::new(DIMS);
    let scope = Scope::new("proj").unwrap();
    for n in SIZES {
        let (store, queries) = store_with_vectors(&rt, n);
        let recall = |lexical: bool| {
            Recall::new(
                store.clone(),
                Arc::new(SystemClock),
                RecallOptions {
                    lexical,
                    vectors: Some(VectorOptions::new(Arc::new(embedder.clone()))),
                    ..RecallOptions::default()
                },
            )
        };
        let vectors_only = recall(false);
        let hybrid = recall(true);
        // Build the index and load the vectors once, outside the measurement.
        rt.block_on(async {
            for r in [&vectors_only, &hybrid] {
                let first = r.recall(&queries[0], &scope, 10).await.unwrap();
                assert!(!first.records.is_empty());
            }
        });
        let data: Vec<f32> = (0..n)
            .flat_map(|i| embedder.vector(&format!("row {i}")))
            .collect();
        let query_vectors: Vec<Vec<f32>> = queries.iter().map(|q| embedder.vector(q)).collect();

        let mut group = c.benchmark_group(format!("vector_recall/{n}"));
        group.sample_size(20);
        let mut i = 0;
        group.bench_function("vectors_only", |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                rt.block_on(vectors_only.recall(black_box(&queries[i]), &scope, 10))
                    .unwrap()
            })
        });
        group.bench_function("hybrid", |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                rt.block_on(hybrid.recall(black_box(&queries[i]), &scope, 10))
                    .unwrap()
            })
        });
        group.bench_function("query_embedding", |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                rt.block_on(embedder.embed(black_box(&queries[i..=i])))
                    .unwrap()
            })
        });
        group.bench_function("linear_cosine_scan", |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                linear_scan(black_box(&data), &query_vectors[i])
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
