//! Fills a dream-fs store with N synthetic memories (Markdown records in
//! `memories`, written in batches of 1,000) and sets the generation, for timing
//! the `dream` binary on large stores (with `scripts/bench_cli.py`).
//! The records carry no seal: recall holds them as unverified, which costs the
//! same analysis as an admitted record.
//!
//! Run: `cargo run --example fill_store -p dream-engine -- DIR N` (DIR must not
//! exist yet; `dream --store fs:DIR recall WORD` then reads it).

use chrono::{TimeZone, Utc};
use dream_core::store::{BatchOp, MAX_BATCH_OPS};
use dream_core::{
    Bytes, Key, Memory, MemoryId, MemoryKind, Namespace, Precondition, RecordId, RecordStore,
    Scope, SessionId, Write, render_memory,
};
use dream_fs::FsStore;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Pronounceable synthetic words, the most frequent first.
fn words(rng: &mut StdRng) -> Vec<String> {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ren", "tu", "vas", "po", "zen", "dor", "fa", "gri", "hal", "bex", "nor",
        "sil", "tak",
    ];
    (0..20_000)
        .map(|_| {
            (0..rng.random_range(2..=4))
                .map(|_| SYLLABLES[rng.random_range(0..SYLLABLES.len())])
                .collect()
        })
        .collect()
}

/// `n` words, low indexes much more often (Zipf-like).
fn sentence(rng: &mut StdRng, words: &[String], n: usize) -> String {
    (0..n)
        .map(|_| {
            let x: f64 = rng.random_range(0.0..1.0);
            let i = ((words.len() as f64).powf(x) - 1.0) as usize;
            words[i.min(words.len() - 1)].as_str()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(n)) = (
        args.next(),
        args.next().and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: fill_store DIR N");
        std::process::exit(2);
    };
    let store = FsStore::open(&dir).await.expect("open the store");
    let mut rng = StdRng::seed_from_u64(7);
    let words = words(&mut rng);
    let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let ns = Namespace::new("memories").unwrap();
    let mut batch = Vec::with_capacity(MAX_BATCH_OPS);
    for i in 0..n {
        let mut m = Memory::new(
            MemoryId::new(format!("m{i:07}")).unwrap(),
            MemoryKind::ALL[i % 4],
            sentence(&mut rng, &words, 3),
            sentence(&mut rng, &words, 8),
            sentence(&mut rng, &words, 40),
            t0,
        );
        m.scope = Scope::new("default").unwrap();
        m.sources = vec![SessionId::new("s1").unwrap()];
        m.confidence = 0.9;
        batch.push(BatchOp::Put {
            key: Key::new(ns.clone(), RecordId::new(m.id.as_str()).unwrap()),
            value: Bytes::from(render_memory(&m)),
            pre: Precondition::Any,
        });
        if batch.len() == MAX_BATCH_OPS || i + 1 == n {
            store
                .write_batch(&batch, None)
                .await
                .expect("write a batch");
            batch.clear();
        }
    }
    let generation = Key::new(
        Namespace::new("state").unwrap(),
        RecordId::new("generation").unwrap(),
    );
    store
        .put(&generation, Bytes::from_static(b"1"), Write::any())
        .await
        .expect("set the generation");
    println!("{n} memories in {dir}; a frequent word: {}", words[3]);
}
