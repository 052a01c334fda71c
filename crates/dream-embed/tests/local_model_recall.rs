//! Hybrid recall with the local model over the development half of the
//! paraphrase fixture (crates/dream-engine/tests/fixtures/statements/dev.jsonl;
//! its blind half is never read here): every durable row's `text` is
//! remembered, its `question` asked, and R@1/R@5/R@10 printed for words only,
//! words with the local model, and the model alone. Run with
//! `--no-capture` to see the table. Needs DREAM_TEST_MINILM (see local_model.rs).

use std::path::PathBuf;
use std::sync::Arc;

use dream_core::testing::MemoryStore;
use dream_core::{MemoryKind, Scope, SystemClock};
use dream_embed::LocalEmbedder;
use dream_engine::recall::eval::{self, Score};
use dream_engine::recall::{Recall, RecallOptions, VectorOptions};
use dream_engine::{Dream, NewMemory, Options, Remembered};
use serde::Deserialize;

fn minilm() -> Option<PathBuf> {
    match std::env::var_os("DREAM_TEST_MINILM") {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var_os("DREAM_REQUIRE_MODELS").is_some_and(|v| v == "1") => {
            panic!("DREAM_REQUIRE_MODELS=1 but DREAM_TEST_MINILM is unset")
        }
        None => {
            eprintln!("SKIPPED: DREAM_TEST_MINILM is unset (python3 scripts/fetch-test-models.py)");
            None
        }
    }
}

#[derive(Debug, Deserialize)]
struct Row {
    kind: String,
    text: String,
    #[serde(default)]
    question: Option<String>,
}

/// A short name for a memory, as a person would give one: its first words.
fn name_of(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().take(6).collect();
    words.join(" ").chars().take(80).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_model_hybrid_recall_on_the_dev_paraphrases() {
    let Some(dir) = minilm() else { return };
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../dream-engine/tests/fixtures/statements/dev.jsonl"
    );
    let rows: Vec<Row> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Row| r.kind == "durable" && r.question.is_some())
        .collect();
    let embedder: Arc<LocalEmbedder> =
        Arc::new(LocalEmbedder::load(&dir, "all-MiniLM-L6-v2").unwrap());
    let store = Arc::new(MemoryStore::new());
    let scope = Scope::new("p1").unwrap();
    let dream = Dream::open(
        store.clone(),
        Options {
            scope: scope.clone(),
            ..Options::default()
        },
    )
    .unwrap()
    .with_embedder(embedder.clone());
    let mut asked = Vec::new();
    let mut quarantined = 0;
    for row in &rows {
        let new = NewMemory::new(MemoryKind::Project, name_of(&row.text), row.text.clone());
        match dream.remember(new).await.unwrap() {
            Remembered::Stored(memory) => {
                asked.push((row.question.clone().unwrap(), memory.id.as_str().to_owned()))
            }
            Remembered::Quarantined { .. } => quarantined += 1,
        }
    }
    dream.backfill_idle().await;
    let report = dream.backfill_vectors().await.unwrap();
    assert_eq!(report.embedded + report.current, asked.len(), "{report:?}");

    if let Ok(grid) = std::env::var("FUSION_GRID") {
        // Exploration (FUSION_GRID="3,10;2,60"): the vector list's weight and
        // the RRF k, words+model at each.
        for cell in grid.split(';') {
            let (w, k) = cell.split_once(',').unwrap();
            let mut vectors = VectorOptions::new(embedder.clone());
            vectors.fusion.vector_weight = w.parse().unwrap();
            vectors.fusion.k = k.parse().unwrap();
            let recall = Recall::new(
                store.clone(),
                Arc::new(SystemClock),
                RecallOptions {
                    vectors: Some(vectors),
                    ..RecallOptions::default()
                },
            );
            let mut score = Score::default();
            for (question, gold) in &asked {
                let result = recall.recall(question, &scope, 10).await.unwrap();
                score.add(&eval::ranked_ids(&result, 10), std::slice::from_ref(gold));
            }
            println!(
                "w={w} k={k}: R@1 {:.1} R@5 {:.1} R@10 {:.1}",
                score.recall_at(1),
                score.recall_at(5),
                score.recall_at(10)
            );
        }
    }
    let modes: [(&str, RecallOptions); 3] = [
        ("words", RecallOptions::default()),
        (
            "words+model",
            RecallOptions {
                vectors: Some(VectorOptions::new(embedder.clone())),
                ..RecallOptions::default()
            },
        ),
        (
            "model",
            RecallOptions {
                vectors: Some(VectorOptions::new(embedder.clone())),
                lexical: false,
                ..RecallOptions::default()
            },
        ),
    ];
    println!(
        "dev.jsonl: {} durable rows, {} remembered, {quarantined} quarantined by the write gate",
        rows.len(),
        asked.len()
    );
    println!(
        "{:<12} {:>6} {:>6} {:>6} {:>6}",
        "mode", "R@1", "R@5", "R@10", "MRR"
    );
    let mut scores = Vec::new();
    for (mode, options) in modes {
        let recall = Recall::new(store.clone(), Arc::new(SystemClock), options);
        let mut score = Score::default();
        for (question, gold) in &asked {
            let result = recall.recall(question, &scope, 10).await.unwrap();
            let ranked = eval::ranked_ids(&result, 10);
            score.add(&ranked, std::slice::from_ref(gold));
        }
        println!(
            "{mode:<12} {:>6.1} {:>6.1} {:>6.1} {:>6.3}",
            score.recall_at(1),
            score.recall_at(5),
            score.recall_at(10),
            score.mrr()
        );
        scores.push(score);
    }
    // The model must help on reworded questions, not hurt.
    assert!(scores[1].recall_at(5) >= scores[0].recall_at(5));
    assert!(scores[1].recall_at(1) >= scores[0].recall_at(1));
}
