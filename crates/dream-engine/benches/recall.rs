//! Recall benchmarks over 1,000, 10,000 and 100,000 synthetic memories in a
//! `MemoryStore`.
//!
//! - `recall/<n>`: `recall` (generation check, BM25F ranking, the firewall on the
//!   candidates, the POLICY) beside `substring_scan`, a plain linear
//!   case-insensitive substring scan of the same memories (pre-lower-cased once)
//!   for the same query words. Both run on the same current-thread runtime and both
//!   read `state/generation` from the store first, so they make the same store call
//!   and the same thread hop.
//! - Before the groups, per size: per-call p50/p90 latency of 320 recalls each with
//!   sub-words on, on without pseudo-relevance feedback, and off, interleaved so
//!   all see the same machine load (`latency at <n> …`).
//! - `recall_no_feedback/<n>`: sub-words on, feedback off
//!   (`RankParams::feedback_terms = 0`): what the second ranking costs.
//! - `recall_lexical/<n>`: the same recall with sub-word matching off
//!   (`RecallOptions::subwords = false`); the index's size with and without
//!   sub-words is printed once per size (`index bytes …`).
//! - `index/<n>`: `cold_build` (list, decode, scan, tokenise and index every
//!   record, then one recall) beside `list_and_decode` (list and `parse_memory`
//!   every record, nothing else); `refresh_one_change` rewrites one memory, bumps
//!   the generation and recalls (the incremental rebuild).
//! - `index/<n>`: `cold_persisted` is `cold_build` with the persisted index present
//!   (a fresh `Recall`, as in a new process, with `RecallOptions::persist`: it
//!   loads the index, ranks, and reads again only the memories it shows), to
//!   compare with `cold_build` (no persisted state) at the same size; beside it
//!   `persisted_raw_read`, the floor of any load: the manifest and every chunk
//!   of the `recall` namespace read from the store, nothing decoded or hashed.
//! - `sqlite/100000` (only with `DREAM_BENCH_SQLITE=1`: filling takes minutes):
//!   the same pairs on dream-sqlite, each iteration a new store handle as a new
//!   `dream recall` process opens: `cold_persisted` (open, load the persisted
//!   index, rank, judge, read again what it shows) beside `persisted_raw_read`
//!   (open, read the chunks); `cold_build` (open, build the index from every
//!   record, not persisted, and one recall: the first recall after an import,
//!   but for writing the index) beside `list_and_decode` (open, list and
//!   `parse_memory` every record).
//!
//! Run: `cargo bench -p dream-engine --bench recall -- --warm-up-time 1 --measurement-time 3`.

// `criterion_group!` generates an undocumented function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dream_core::store::MAX_LIST_LIMIT;
use dream_core::testing::MemoryStore;
use dream_core::{
    Bytes, Key, Memory, MemoryId, MemoryKind, Namespace, RecordId, RecordStore, Scope, SessionId,
    SystemClock, Write, parse_memory, render_memory,
};
use dream_engine::recall::{Recall, RecallOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// A vocabulary of pronounceable synthetic words plus common English ones.
fn vocabulary(rng: &mut StdRng) -> Vec<String> {
    const SYLLABLES: [&str; 24] = [
        "ka", "lo", "mi", "ren", "tu", "vas", "po", "qui", "zen", "dor", "fa", "gri", "hal", "jun",
        "bex", "nor", "sil", "tak", "ur", "wen", "yol", "cre", "dru", "eph",
    ];
    let mut words: Vec<String> = [
        "the",
        "and",
        "deploy",
        "test",
        "runner",
        "database",
        "release",
        "review",
        "config",
        "server",
        "client",
        "cache",
        "index",
        "query",
        "build",
        "pipeline",
        "user",
        "prefers",
        "project",
        "uses",
        "with",
        "for",
        "on",
        "every",
        "monday",
        "migration",
        "schema",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    while words.len() < 20_000 {
        let n = rng.random_range(2..=4);
        let w: String = (0..n)
            .map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())])
            .collect();
        words.push(w);
    }
    words
}

/// A Zipf-like pick: low indexes are much more frequent.
fn pick<'a>(rng: &mut StdRng, words: &'a [String]) -> &'a str {
    let x: f64 = rng.random_range(0.0..1.0);
    let i = ((words.len() as f64).powf(x) - 1.0) as usize;
    &words[i.min(words.len() - 1)]
}

fn sentence(rng: &mut StdRng, words: &[String], n: usize) -> String {
    (0..n)
        .map(|_| pick(rng, words))
        .collect::<Vec<_>>()
        .join(" ")
}

fn memories(n: usize) -> (Vec<Memory>, Vec<String>) {
    let mut rng = StdRng::seed_from_u64(7);
    let words = vocabulary(&mut rng);
    let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let memories = (0..n)
        .map(|i| {
            let name_len = rng.random_range(2..=4);
            let desc_len = rng.random_range(5..=10);
            let body_len = rng.random_range(20..=60);
            let mut m = Memory::new(
                MemoryId::new(format!("m{i:07}")).unwrap(),
                MemoryKind::ALL[i % 4],
                sentence(&mut rng, &words, name_len),
                sentence(&mut rng, &words, desc_len),
                sentence(&mut rng, &words, body_len),
                t0,
            );
            m.tags = vec![pick(&mut rng, &words).to_owned()];
            // 90% in the recalled scope, 10% elsewhere.
            m.scope = Scope::new(if i % 10 == 0 { "other" } else { "proj" }).unwrap();
            m.sources = vec![SessionId::new("s1").unwrap()];
            m.confidence = 0.9;
            m
        })
        .collect();
    // Queries: half with two words of middling frequency, half pairing one of the
    // most frequent words (in ~5-20% of memories) with a middling one.
    let queries = (0..32)
        .map(|i| {
            if i % 2 == 0 {
                format!("{} {}", words[200 + i * 37], words[1000 + i * 91])
            } else {
                format!("{} {}", words[2 + i % 24], words[1000 + i * 91])
            }
        })
        .collect();
    (memories, queries)
}

fn memories_key(id: &str) -> Key {
    Key::new(
        Namespace::new("memories").unwrap(),
        RecordId::new(id).unwrap(),
    )
}

fn generation_key() -> Key {
    Key::new(
        Namespace::new("state").unwrap(),
        RecordId::new("generation").unwrap(),
    )
}

async fn fill(store: &dyn RecordStore, memories: &[Memory]) {
    for m in memories {
        store
            .put(
                &memories_key(m.id.as_str()),
                render_memory(m).into(),
                Write::any(),
            )
            .await
            .unwrap();
    }
    store
        .put(&generation_key(), Bytes::from_static(b"1"), Write::any())
        .await
        .unwrap();
}

async fn bump(store: &MemoryStore) {
    let current: u64 = match store.get(&generation_key()).await.unwrap() {
        Some(r) => std::str::from_utf8(&r.value).unwrap().parse().unwrap(),
        None => 0,
    };
    store
        .put(
            &generation_key(),
            Bytes::from((current + 1).to_string()),
            Write::any(),
        )
        .await
        .unwrap();
}

/// The baseline: read the generation, then a linear substring scan.
async fn substring_scan(store: &MemoryStore, lowered: &[String], query: &[String]) -> Vec<usize> {
    let _ = store.get(&generation_key()).await.unwrap();
    let mut hits = Vec::new();
    for (i, text) in lowered.iter().enumerate() {
        if query.iter().any(|q| text.contains(q.as_str())) {
            hits.push(i);
        }
    }
    hits.truncate(5);
    hits
}

fn bench_recall(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let scope = Scope::new("proj").unwrap();
    let mut group = c.benchmark_group("recall");
    for n in SIZES {
        let (mems, queries) = memories(n);
        let store = Arc::new(MemoryStore::new());
        rt.block_on(fill(&store, &mems));
        let recall = Recall::new(
            store.clone(),
            Arc::new(SystemClock),
            RecallOptions::default(),
        );
        // Build the index once; every measured recall then finds it current.
        let first = rt.block_on(recall.recall(&queries[0], &scope, 5)).unwrap();
        assert!(first.used().count() > 0, "queries must match something");
        let lowered: Vec<String> = mems
            .iter()
            .map(|m| format!("{} {} {}", m.name, m.description, m.content).to_lowercase())
            .collect();
        let query_words: Vec<Vec<String>> = queries
            .iter()
            .map(|q| q.split_whitespace().map(str::to_lowercase).collect())
            .collect();
        let lexical = Recall::new(
            store.clone(),
            Arc::new(SystemClock),
            RecallOptions {
                subwords: false,
                ..RecallOptions::default()
            },
        );
        rt.block_on(lexical.recall(&queries[0], &scope, 5)).unwrap();
        let mut options = RecallOptions::default();
        options.rank.feedback_terms = 0;
        let no_feedback = Recall::new(store.clone(), Arc::new(SystemClock), options);
        rt.block_on(no_feedback.recall(&queries[0], &scope, 5))
            .unwrap();
        let on = rt.block_on(recall.index_bytes()).unwrap();
        let off = rt.block_on(lexical.index_bytes()).unwrap();
        eprintln!(
            "index bytes at {n}: sub-words on {} (ranking {}, vocabulary {}, sub-words {}); \
off {} (ranking {}, vocabulary {}); ratio {:.3}",
            on.total(),
            on.ranking,
            on.vocabulary,
            on.subwords,
            off.total(),
            off.ranking,
            off.vocabulary,
            on.total() as f64 / off.total() as f64
        );
        // Per-call latency percentiles, the three configurations interleaved
        // (rotating which goes first) so all see the same machine load (the
        // criterion groups below report means).
        let configs = [&recall, &no_feedback, &lexical];
        let mut times: [Vec<f64>; 3] = Default::default();
        for round in 0..10 {
            for (k, q) in queries.iter().enumerate() {
                for j in 0..configs.len() {
                    let c = (round + k + j) % configs.len();
                    let start = std::time::Instant::now();
                    black_box(rt.block_on(configs[c].recall(q, &scope, 5)).unwrap());
                    times[c].push(start.elapsed().as_secs_f64() * 1e6);
                }
            }
        }
        let pct = |v: &mut Vec<f64>, p: f64| {
            v.sort_by(f64::total_cmp);
            v[((v.len() - 1) as f64 * p).round() as usize]
        };
        let [on_times, no_feedback_times, off_times] = &mut times;
        eprintln!(
            "latency at {n} ({} calls each): sub-words on p50 {:.0} µs p90 {:.0} µs; \
on without feedback p50 {:.0} µs p90 {:.0} µs; off p50 {:.0} µs p90 {:.0} µs",
            on_times.len(),
            pct(on_times, 0.5),
            pct(on_times, 0.9),
            pct(no_feedback_times, 0.5),
            pct(no_feedback_times, 0.9),
            pct(off_times, 0.5),
            pct(off_times, 0.9)
        );
        let mut i = 0usize;
        group.bench_function(BenchmarkId::new("recall", n), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(rt.block_on(recall.recall(&queries[i], &scope, 5)).unwrap())
            })
        });
        let mut i = 0usize;
        group.bench_function(BenchmarkId::new("recall_no_feedback", n), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(
                    rt.block_on(no_feedback.recall(&queries[i], &scope, 5))
                        .unwrap(),
                )
            })
        });
        let mut i = 0usize;
        group.bench_function(BenchmarkId::new("recall_lexical", n), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(rt.block_on(lexical.recall(&queries[i], &scope, 5)).unwrap())
            })
        });
        let mut i = 0usize;
        group.bench_function(BenchmarkId::new("substring_scan", n), |b| {
            b.iter(|| {
                i = (i + 1) % query_words.len();
                black_box(rt.block_on(substring_scan(&store, &lowered, &query_words[i])))
            })
        });
    }
    group.finish();
}

fn bench_index(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let scope = Scope::new("proj").unwrap();
    let mut group = c.benchmark_group("index");
    group.sample_size(10);
    for n in SIZES {
        let (mems, queries) = memories(n);
        let store = Arc::new(MemoryStore::new());
        rt.block_on(fill(&store, &mems));
        group.bench_function(BenchmarkId::new("cold_build", n), |b| {
            b.iter(|| {
                let recall = Recall::new(
                    store.clone(),
                    Arc::new(SystemClock),
                    RecallOptions::default(),
                );
                black_box(rt.block_on(recall.recall(&queries[0], &scope, 5)).unwrap())
            })
        });
        // No seal key: the records are trusted as they are, as in `cold_build`,
        // so both judge the same way (the manifest's MAC is not what is measured).
        let persisting = || RecallOptions {
            persist: true,
            ..RecallOptions::default()
        };
        // The first process writes the persisted index.
        let first = Recall::new(store.clone(), Arc::new(SystemClock), persisting());
        rt.block_on(first.recall(&queries[0], &scope, 5)).unwrap();
        group.bench_function(BenchmarkId::new("cold_persisted", n), |b| {
            b.iter(|| {
                let recall = Recall::new(store.clone(), Arc::new(SystemClock), persisting());
                black_box(rt.block_on(recall.recall(&queries[0], &scope, 5)).unwrap())
            })
        });
        group.bench_function(BenchmarkId::new("persisted_raw_read", n), |b| {
            b.iter(|| black_box(rt.block_on(raw_read(&*store))))
        });
        group.bench_function(BenchmarkId::new("list_and_decode", n), |b| {
            b.iter(|| black_box(rt.block_on(list_and_decode(&*store))))
        });
        let recall = Recall::new(
            store.clone(),
            Arc::new(SystemClock),
            RecallOptions::default(),
        );
        rt.block_on(recall.recall(&queries[0], &scope, 5)).unwrap();
        let mut changed = mems[n / 2].clone();
        let mut k = 0u64;
        group.bench_function(BenchmarkId::new("refresh_one_change", n), |b| {
            b.iter(|| {
                k += 1;
                changed.content = format!("revised {k} {}", mems[n / 2].content);
                rt.block_on(async {
                    store
                        .put(
                            &memories_key(changed.id.as_str()),
                            render_memory(&changed).into(),
                            Write::any(),
                        )
                        .await
                        .unwrap();
                    bump(&store).await;
                    black_box(recall.recall(&queries[0], &scope, 5).await.unwrap())
                })
            })
        });
    }
    group.finish();
}

/// The generation read, then every memory listed and decoded (`parse_memory`):
/// how many decode.
async fn list_and_decode(store: &dyn RecordStore) -> usize {
    let mut decoded = 0usize;
    each_value(store, "memories", MAX_LIST_LIMIT, |value| {
        let text = std::str::from_utf8(value).unwrap();
        decoded += usize::from(parse_memory(text).is_ok());
    })
    .await;
    decoded
}

/// Every value of the `recall` namespace (the persisted index's manifest and
/// chunks) read through `store`, after the generation: their total length.
async fn raw_read(store: &dyn RecordStore) -> usize {
    let mut bytes = 0usize;
    each_value(store, "recall", 8, |value| bytes += value.len()).await;
    bytes
}

/// Reads the generation, then lists namespace `ns` through `store`, `limit`
/// records a page, handing each value to `each`.
async fn each_value(store: &dyn RecordStore, ns: &str, limit: usize, mut each: impl FnMut(&[u8])) {
    let _ = store.get(&generation_key()).await.unwrap();
    let ns = Namespace::new(ns).unwrap();
    let mut after: Option<RecordId> = None;
    loop {
        let page = store.list(&ns, after.as_ref(), limit).await.unwrap();
        for e in &page.entries {
            each(&e.record.value);
        }
        match page.next {
            Some(next) => after = Some(next),
            None => return,
        }
    }
}

/// `cold_persisted` beside `persisted_raw_read` at 100,000 memories on
/// dream-sqlite (see the module docs); only with `DREAM_BENCH_SQLITE=1`.
fn bench_sqlite(c: &mut Criterion) {
    if std::env::var_os("DREAM_BENCH_SQLITE").is_none() {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let n = 100_000;
    let scope = Scope::new("proj").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.sqlite");
    let open = || async { Arc::new(dream_sqlite::SqliteStore::open(&path).await.unwrap()) };
    let (mems, queries) = memories(n);
    let persisting = || RecallOptions {
        persist: true,
        ..RecallOptions::default()
    };
    rt.block_on(async {
        let store = open().await;
        for batch in mems.chunks(1_000) {
            let ops: Vec<_> = batch
                .iter()
                .map(|m| dream_core::store::BatchOp::Put {
                    key: memories_key(m.id.as_str()),
                    value: render_memory(m).into(),
                    pre: dream_core::Precondition::Any,
                })
                .collect();
            store.write_batch(&ops, None).await.unwrap();
        }
        fill(&*store, &[]).await;
        let first = Recall::new(store, Arc::new(SystemClock), persisting());
        first.recall(&queries[0], &scope, 5).await.unwrap();
    });
    let mut group = c.benchmark_group("sqlite");
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("cold_persisted", n), |b| {
        b.iter(|| {
            rt.block_on(async {
                let recall = Recall::new(open().await, Arc::new(SystemClock), persisting());
                black_box(recall.recall(&queries[0], &scope, 5).await.unwrap())
            })
        })
    });
    group.bench_function(BenchmarkId::new("persisted_raw_read", n), |b| {
        b.iter(|| black_box(rt.block_on(async { raw_read(&*open().await).await })))
    });
    group.bench_function(BenchmarkId::new("cold_build", n), |b| {
        b.iter(|| {
            rt.block_on(async {
                let recall = Recall::new(
                    open().await,
                    Arc::new(SystemClock),
                    RecallOptions::default(),
                );
                black_box(recall.recall(&queries[0], &scope, 5).await.unwrap())
            })
        })
    });
    group.bench_function(BenchmarkId::new("list_and_decode", n), |b| {
        b.iter(|| black_box(rt.block_on(async { list_and_decode(&*open().await).await })))
    });
    group.finish();
}

criterion_group!(benches, bench_recall, bench_index, bench_sqlite);
criterion_main!(benches);
