//! Hybrid recall with the local model over the development half of the
//! paraphrase fixture (crates/dream-engine/tests/fixtures/statements/dev.jsonl;
//! its blind half is never read here): every durable row's `text` is
//! remembered, its `question` asked, and R@1/R@5/R@10 printed for words only,
//! words with the local model, and the model alone; then the relevance floor
//! over a store of half the memories, every question asked (what it keeps of
//! the answerable ones, what it stops of the others). Run with `--no-capture`
//! to see the tables. Needs DREAM_TEST_MINILM (see tests/common).

use std::sync::Arc;

use dream_core::testing::MemoryStore;
use dream_core::{MemoryKind, Scope, SystemClock};
use dream_embed::LocalEmbedder;
use dream_engine::recall::eval::{self, Score};
use dream_engine::recall::{
    FirewallVerdict, FusionParams, Recall, RecallOptions, RelevanceFloor, VectorOptions, codes,
};
use dream_engine::{Dream, NewMemory, Options, Remembered};
use serde::Deserialize;

mod common;
use common::minilm;

#[derive(Debug, Deserialize)]
struct Row {
    id: String,
    kind: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    question: Option<String>,
}

/// A short name for a memory, as a person would give one: its first words.
fn name_of(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().take(6).collect();
    words.join(" ").chars().take(80).collect()
}

/// The memories of `rows` remembered in a fresh store (each row's id with its
/// memory's id; rows the write gate quarantined are left out), with vectors.
async fn remembered(
    rows: &[&Row],
    embedder: &Arc<LocalEmbedder>,
) -> (Arc<MemoryStore>, Vec<(String, String)>) {
    let store = Arc::new(MemoryStore::new());
    let dream = Dream::open(
        store.clone(),
        Options {
            scope: scope(),
            ..Options::default()
        },
    )
    .unwrap()
    .with_embedder(embedder.clone());
    let mut stored = Vec::new();
    for row in rows {
        let new = NewMemory::new(MemoryKind::Project, name_of(&row.text), row.text.clone());
        if let Remembered::Stored(memory) = dream.remember(new).await.unwrap() {
            stored.push((row.id.clone(), memory.id.as_str().to_owned()));
        }
    }
    dream.backfill_idle().await;
    let report = dream.backfill_vectors().await.unwrap();
    assert_eq!(report.embedded + report.current, stored.len(), "{report:?}");
    (store, stored)
}

fn scope() -> Scope {
    Scope::new("p1").unwrap()
}

fn hybrid(embedder: &Arc<LocalEmbedder>, lexical_weight: f32) -> RecallOptions {
    let mut vectors = VectorOptions::new(embedder.clone());
    vectors.fusion.lexical_weight = lexical_weight;
    RecallOptions {
        vectors: Some(vectors),
        ..RecallOptions::default()
    }
}

/// What the relevance floor does over a store holding half the memories,
/// every question asked: of the questions whose memory is stored and ranked
/// within the limit, how many still have it `used` (kept); of the others, how
/// many memories are `used` all the same, and how many questions admit nothing.
#[derive(Debug, Default)]
struct Floor {
    ranked: usize,
    kept: usize,
    answerable: usize,
    unanswerable: usize,
    used_anyway: usize,
    used_before: usize,
    silent: usize,
}

const LIMIT: usize = 5;

async fn floor(
    store: &Arc<MemoryStore>,
    options: RecallOptions,
    questions: &[(String, Option<String>)],
) -> Floor {
    let recall = Recall::new(store.clone(), Arc::new(SystemClock), options);
    let mut out = Floor::default();
    for (question, gold) in questions {
        let result = recall.recall(question, &scope(), LIMIT).await.unwrap();
        let judged: Vec<&str> = eval::ranked_ids(&result, LIMIT);
        let used: Vec<&str> = result.used().map(|r| r.id.as_str()).collect();
        let admissible = result
            .records
            .iter()
            .take(LIMIT)
            .filter(|r| r.verdict == FirewallVerdict::Used || r.reason.code == codes::NOT_RELEVANT)
            .count();
        match gold {
            Some(gold) => {
                out.answerable += 1;
                if judged.contains(&gold.as_str()) {
                    out.ranked += 1;
                    out.kept += usize::from(used.contains(&gold.as_str()));
                }
            }
            None => {
                out.unanswerable += 1;
                out.used_anyway += used.len();
                out.used_before += admissible;
                out.silent += usize::from(used.is_empty());
            }
        }
    }
    out
}

/// Recall options with `floor`, by words and the local model or words alone.
fn floored(embedder: &Arc<LocalEmbedder>, floor: RelevanceFloor, vectors: bool) -> RecallOptions {
    let mut options = if vectors {
        hybrid(embedder, FusionParams::default().lexical_weight)
    } else {
        RecallOptions::default()
    };
    options.relevance = floor;
    options
}

/// Exploration, when asked (FLOOR_GRID="2.5,0.5,0.12;3,0.6,0.2": margin,
/// coverage with vectors, coverage with words only): each floor's table row.
async fn explore_floors(
    label: &str,
    store: &Arc<MemoryStore>,
    embedder: &Arc<LocalEmbedder>,
    questions: &[(String, Option<String>)],
) {
    let Ok(grid) = std::env::var("FLOOR_GRID") else {
        return;
    };
    for cell in grid.split(';') {
        let v: Vec<f32> = cell.split(',').map(|x| x.parse().unwrap()).collect();
        let f = RelevanceFloor {
            margin: v[0],
            coverage_with_vectors: v[1],
            coverage: v[2],
        };
        for (mode, vectors) in [("words+model", true), ("words", false)] {
            let options = floored(embedder, f, vectors);
            print_floor(
                &format!("{label}{mode} {cell}"),
                &floor(store, options, questions).await,
            );
        }
    }
}

fn print_floor(label: &str, f: &Floor) {
    println!(
        "{label:<34} gold kept {:>3}/{:<3} lost {:>4.1} % | unanswerable: used {:>3} of {:>3} before \
         (stopped {:>5.1} %), silent {:>2}/{}",
        f.kept,
        f.ranked,
        100.0 * (f.ranked - f.kept) as f64 / f.ranked.max(1) as f64,
        f.used_anyway,
        f.used_before,
        100.0 * (f.used_before - f.used_anyway) as f64 / f.used_before.max(1) as f64,
        f.silent,
        f.unanswerable
    );
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
    let all: Vec<&Row> = rows.iter().collect();
    let (store, stored) = remembered(&all, &embedder).await;
    let asked: Vec<(String, String)> = rows
        .iter()
        .filter_map(|row| {
            let (_, memory) = stored.iter().find(|(id, _)| *id == row.id)?;
            Some((row.question.clone().unwrap(), memory.clone()))
        })
        .collect();
    let rank = |options: RecallOptions| {
        let store = store.clone();
        let asked = &asked;
        async move {
            let recall = Recall::new(store, Arc::new(SystemClock), options);
            let mut score = Score::default();
            for (question, gold) in asked {
                let result = recall.recall(question, &scope(), 10).await.unwrap();
                score.add(&eval::ranked_ids(&result, 10), std::slice::from_ref(gold));
            }
            score
        }
    };
    if let Ok(grid) = std::env::var("FUSION_GRID") {
        // Exploration (FUSION_GRID="0.25,0.5,1"): the words' weight, words+model at each.
        for w in grid.split(',') {
            let score = rank(hybrid(&embedder, w.parse().unwrap())).await;
            println!(
                "lexical_weight={w}: R@1 {:.1} R@5 {:.1} R@10 {:.1}",
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
            hybrid(&embedder, FusionParams::default().lexical_weight),
        ),
        (
            "model",
            RecallOptions {
                lexical: false,
                ..hybrid(&embedder, 0.0)
            },
        ),
    ];
    println!(
        "dev.jsonl: {} durable rows, {} remembered, {} quarantined by the write gate",
        rows.len(),
        asked.len(),
        rows.len() - asked.len()
    );
    println!(
        "{:<12} {:>6} {:>6} {:>6} {:>6}",
        "mode", "R@1", "R@5", "R@10", "MRR"
    );
    let mut scores = Vec::new();
    for (mode, options) in modes {
        let score = rank(options).await;
        println!(
            "{mode:<12} {:>6.1} {:>6.1} {:>6.1} {:>6.3}",
            score.recall_at(1),
            score.recall_at(5),
            score.recall_at(10),
            score.mrr()
        );
        scores.push(score);
    }

    // Relevant or silent: half the memories stored, every question asked.
    let half: Vec<&Row> = rows.iter().step_by(2).collect();
    let (store, stored) = remembered(&half, &embedder).await;
    let questions: Vec<(String, Option<String>)> = rows
        .iter()
        .map(|row| {
            let gold = stored.iter().find(|(id, _)| *id == row.id);
            (row.question.clone().unwrap(), gold.map(|(_, m)| m.clone()))
        })
        .collect();
    let with = |floor, vectors| floored(&embedder, floor, vectors);
    explore_floors("", &store, &embedder, &questions).await;
    let words = floor(&store, with(RelevanceFloor::default(), false), &questions).await;
    let hybrid_floor = floor(&store, with(RelevanceFloor::default(), true), &questions).await;
    print_floor("words, default floor", &words);
    print_floor("words+model, default floor", &hybrid_floor);
    let off = floor(&store, with(RelevanceFloor::OFF, true), &questions).await;
    print_floor("words+model, no floor", &off);
    assert_eq!(off.used_anyway, off.used_before, "no floor stops nothing");
    // Words and the model together: never below either alone at R@1 and R@10,
    // above both at R@5 (on this set the questions avoid the memories' words,
    // and the words add little: 88.8 against 88.1 when tuned).
    for depth in [1, 10] {
        assert!(scores[1].recall_at(depth) >= scores[0].recall_at(depth));
        assert!(scores[1].recall_at(depth) >= scores[2].recall_at(depth));
    }
    assert!(scores[1].recall_at(5) > scores[2].recall_at(5));
    assert!(scores[1].recall_at(5) > scores[0].recall_at(5));
    // What the default floor does on this half (margin 2.5, coverage 0.4,
    // 2026-12-07: 72 of 74 kept, 23.6 % of the unanswerable questions'
    // memories stopped; margin 3 and 0.5 kept 70 and stopped 36 %).
    assert!(
        hybrid_floor.kept * 100 >= hybrid_floor.ranked * 95,
        "{hybrid_floor:?}"
    );
    assert!(
        hybrid_floor.used_anyway * 100 <= hybrid_floor.used_before * 80,
        "{hybrid_floor:?}"
    );
    assert!(words.kept * 100 >= words.ranked * 80, "{words:?}");
    assert!(
        words.used_anyway * 100 <= words.used_before * 50,
        "{words:?}"
    );
}

/// The rows of a statements file.
fn statement_rows(file: &str) -> Vec<Row> {
    let path = format!(
        "{}/../dream-engine/tests/fixtures/statements/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The relevance floor over one person's memories (dev4: every durable
/// statement remembered) asked both its durable questions and its absent
/// ones (about nothing the file states, some of them near misses of a stated
/// fact): what the floor keeps of the first, what it stops of the second.
/// FLOOR_GRID explores other floors as in the test above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_model_floor_on_questions_about_nothing_stored() {
    let Some(dir) = minilm() else { return };
    let embedder: Arc<LocalEmbedder> =
        Arc::new(LocalEmbedder::load(&dir, "all-MiniLM-L6-v2").unwrap());
    let rows = statement_rows("dev4.jsonl");
    let durable: Vec<&Row> = rows.iter().filter(|r| r.kind == "durable").collect();
    let (store, stored) = remembered(&durable, &embedder).await;
    let questions: Vec<(String, Option<String>)> = rows
        .iter()
        .filter_map(|row| {
            let question = row.question.clone()?;
            match row.kind.as_str() {
                "durable" => {
                    let gold = stored.iter().find(|(id, _)| *id == row.id)?;
                    Some((question, Some(gold.1.clone())))
                }
                "absent" => Some((question, None)),
                _ => None,
            }
        })
        .collect();
    let with = |floor, vectors| floored(&embedder, floor, vectors);
    explore_floors("dev4 ", &store, &embedder, &questions).await;
    let words = floor(&store, with(RelevanceFloor::default(), false), &questions).await;
    let hybrid_floor = floor(&store, with(RelevanceFloor::default(), true), &questions).await;
    let off = floor(&store, with(RelevanceFloor::OFF, true), &questions).await;
    print_floor("dev4 words, default floor", &words);
    print_floor("dev4 words+model, default floor", &hybrid_floor);
    print_floor("dev4 words+model, no floor", &off);
    assert_eq!(off.silent, 0, "no floor: every question admits something");
    // Floors just under what the default floor measured on this set
    // (2026-12-07, margin 2.5 and coverage 0.4: words+model kept 95 of 98
    // ranked, stopped 26.2 % of what the absent questions would have
    // admitted, 3 of 30 silent; margin 3 and 0.5: 91, 39.6 %, 5 of 30; words
    // kept 77 of 78, 61.1 %).
    assert!(
        hybrid_floor.kept * 100 >= hybrid_floor.ranked * 95,
        "{hybrid_floor:?}"
    );
    assert!(
        hybrid_floor.used_anyway * 100 <= hybrid_floor.used_before * 80,
        "{hybrid_floor:?}"
    );
    assert!(words.kept * 100 >= words.ranked * 95, "{words:?}");
    assert!(
        words.used_anyway * 100 <= words.used_before * 45,
        "{words:?}"
    );
}

/// The blind half, scored only: run once at the end with DREAM_SCORE_BLIND=1,
/// every run logged in crates/dream-engine/tests/fixtures/statements/LOOKS.md.
/// It prints aggregates only (no row, no miss), and nothing is tuned after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_model_scores_the_blind_paraphrases_when_asked() {
    if std::env::var_os("DREAM_SCORE_BLIND").is_none_or(|v| v != "1") {
        eprintln!(
            "SKIPPED: the blind half is scored only with DREAM_SCORE_BLIND=1 (log it in LOOKS.md)"
        );
        return;
    }
    let Some(dir) = minilm() else { return };
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../dream-engine/tests/fixtures/statements/blind.jsonl"
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
    let all: Vec<&Row> = rows.iter().collect();
    let (store, stored) = remembered(&all, &embedder).await;
    let asked: Vec<(String, String)> = rows
        .iter()
        .filter_map(|row| {
            let (_, memory) = stored.iter().find(|(id, _)| *id == row.id)?;
            Some((row.question.clone().unwrap(), memory.clone()))
        })
        .collect();
    println!(
        "blind.jsonl: {} durable rows, {} remembered",
        rows.len(),
        asked.len()
    );
    let modes: [(&str, RecallOptions); 3] = [
        ("words", RecallOptions::default()),
        (
            "words+model",
            hybrid(&embedder, FusionParams::default().lexical_weight),
        ),
        (
            "model",
            RecallOptions {
                lexical: false,
                ..hybrid(&embedder, 0.0)
            },
        ),
    ];
    for (mode, options) in modes {
        let recall = Recall::new(store.clone(), Arc::new(SystemClock), options);
        let mut score = Score::default();
        for (question, gold) in &asked {
            let result = recall.recall(question, &scope(), 10).await.unwrap();
            score.add(&eval::ranked_ids(&result, 10), std::slice::from_ref(gold));
        }
        println!(
            "blind {mode:<12} R@1 {:>5.1} R@5 {:>5.1} R@10 {:>5.1} MRR {:.3}",
            score.recall_at(1),
            score.recall_at(5),
            score.recall_at(10),
            score.mrr()
        );
    }
}
