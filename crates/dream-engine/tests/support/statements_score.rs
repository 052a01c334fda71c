//! The statements corpus's scorer (issue 34), shared by the offline test
//! (tests/statements.rs) and the local model's (dream-embed's
//! tests/local_model_statements.rs): every row is logged as its own session,
//! dreamt offline until nothing is pending, and each durable row's question is
//! asked. With an embedder, memories are embedded and recall ranks by words and
//! by meaning.

use std::collections::BTreeMap;
use std::sync::Arc;

use dream_core::testing::MemoryStore;
use dream_core::{Embedder, ManualClock, Message, Role, SessionId};
use dream_engine::recall::{Recall, RecallOptions, VectorOptions};
use dream_engine::{Dream, Options};
use serde::Deserialize;

#[derive(Deserialize)]
struct Row {
    id: String,
    kind: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    question: String,
    #[serde(default)]
    must: Vec<String>,
    #[serde(default)]
    category: String,
}

/// How many memories recall hands back per question.
const RECALL_LIMIT: usize = 5;

#[derive(Debug, Default)]
pub struct Scores {
    pub durable: usize,
    pub stored: usize,
    pub used: usize,
    pub non_memories: usize,
    pub chatter_stored: usize,
    /// Questions about nothing the file states (`absent` rows), and how many
    /// of them had a memory recalled `used`.
    pub absent: usize,
    pub absent_answered: usize,
    pub by_category: BTreeMap<String, (usize, usize)>,
    pub misses: Vec<String>,
    pub refused: Vec<String>,
    pub stuck: usize,
}

fn rows(file: &str) -> Vec<Row> {
    let path = format!(
        "{}/../dream-engine/tests/fixtures/statements/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .expect("the statements corpus")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a corpus row"))
        .collect()
}

fn holds_all(text: &str, must: &[String]) -> bool {
    let text = text.to_lowercase();
    must.iter().all(|m| text.contains(&m.to_lowercase()))
}

/// Logs every row as its own session, dreams offline until nothing is
/// pending, then asks each durable row's question, and each absent row's (a
/// question about nothing the file states, which must recall nothing `used`).
pub async fn score(file: &str, embedder: Option<Arc<dyn Embedder>>) -> Scores {
    let (absent, rows): (Vec<Row>, Vec<Row>) =
        rows(file).into_iter().partition(|r| r.kind == "absent");
    let clock = ManualClock::new(
        chrono::DateTime::parse_from_rfc3339("2026-03-02T09:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc),
    );
    let store = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
    let options = Options {
        min_sessions: 1,
        min_hours: 0,
        max_pending: 10_000,
        max_memories: 10_000,
        ..Options::default()
    };
    let mut dream = Dream::open(store.clone(), options)
        .unwrap()
        .with_clock(Arc::new(clock.clone()));
    if let Some(embedder) = &embedder {
        dream = dream.with_embedder(embedder.clone());
    }
    let mut sessions: Vec<SessionId> = Vec::new();
    for row in &rows {
        let id = dream
            .log_session(vec![Message::new(Role::User, row.text.clone())])
            .await
            .unwrap();
        sessions.push(id);
        clock.advance(chrono::Duration::seconds(1));
    }
    let mut refused = Vec::new();
    for _ in 0..rows.len() {
        let report = dream.dream(true).await.unwrap();
        refused.extend(
            report
                .refused
                .iter()
                .map(|r| format!("{}: {}", r.action, r.reason)),
        );
        if report.skipped.is_some() || report.pending == 0 {
            break;
        }
    }
    let stuck = dream.stuck_sessions().await.unwrap().len();
    let memories = dream.list().await.unwrap();
    if embedder.is_some() {
        dream.backfill_idle().await;
        dream.backfill_vectors().await.unwrap();
    }
    let options = RecallOptions {
        vectors: embedder.map(VectorOptions::new),
        ..RecallOptions::default()
    };
    let recall = Recall::new(store, Arc::new(clock), options);
    let mut s = Scores {
        refused,
        stuck,
        ..Scores::default()
    };
    for (row, session) in rows.iter().zip(&sessions) {
        let from_it: Vec<&dream_core::Memory> = memories
            .iter()
            .filter(|m| m.sources.contains(session))
            .collect();
        if row.kind == "durable" {
            s.durable += 1;
            if from_it.iter().any(|m| holds_all(&m.content, &row.must)) {
                s.stored += 1;
            }
            let result = recall
                .recall(&row.question, dream.scope(), RECALL_LIMIT)
                .await
                .unwrap();
            if result.used().any(|m| holds_all(&m.content, &row.must)) {
                s.used += 1;
            } else {
                let got: Vec<String> = from_it.iter().map(|m| m.content.clone()).collect();
                s.misses.push(format!(
                    "{} {:?} -> stored {got:?}; asked {:?}",
                    row.id, row.text, row.question
                ));
            }
        } else {
            s.non_memories += 1;
            let entry = s.by_category.entry(row.category.clone()).or_default();
            entry.0 += 1;
            if !from_it.is_empty() {
                s.chatter_stored += 1;
                entry.1 += 1;
                s.misses.push(format!(
                    "{} non-memory stored: {:?}",
                    row.id,
                    from_it.iter().map(|m| &m.content).collect::<Vec<_>>()
                ));
            }
        }
    }
    for row in &absent {
        s.absent += 1;
        let result = recall
            .recall(&row.question, dream.scope(), RECALL_LIMIT)
            .await
            .unwrap();
        let used: Vec<&str> = result.used().map(|m| m.content.as_str()).collect();
        if !used.is_empty() {
            s.absent_answered += 1;
            s.misses.push(format!(
                "{} absent {:?} -> used {used:?}",
                row.id, row.question
            ));
        }
    }
    s
}

pub fn pct(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// Prints the scores of `file`; a blind half's only as aggregates (no
/// category, refusal or miss is shown, whatever `DREAM_CORPUS_MISSES` says).
pub fn report(file: &str, s: &Scores) {
    let held_out = file.starts_with("blind");
    eprintln!("== statements/{file}");
    eprintln!(
        "durable {}: stored {} ({:.1} %), recalled used {} ({:.1} %)",
        s.durable,
        s.stored,
        pct(s.stored, s.durable),
        s.used,
        pct(s.used, s.durable)
    );
    eprintln!(
        "non-memories {}: stored {} ({:.1} %)",
        s.non_memories,
        s.chatter_stored,
        pct(s.chatter_stored, s.non_memories)
    );
    if s.absent > 0 {
        eprintln!(
            "absent questions {}: answered with a used memory {} ({:.1} %)",
            s.absent,
            s.absent_answered,
            pct(s.absent_answered, s.absent)
        );
    }
    for (category, (n, stored)) in s.by_category.iter().filter(|_| !held_out) {
        eprintln!("  {category:<18} {stored}/{n}");
    }
    eprintln!(
        "refusals {}, sessions held for the person {}",
        s.refused.len(),
        s.stuck
    );
    if std::env::var_os("DREAM_CORPUS_MISSES").is_some() && !held_out {
        for r in &s.refused {
            eprintln!("  refused {r}");
        }
        for miss in &s.misses {
            eprintln!("  {miss}");
        }
    }
}
