//! The offline consolidator scored on a labelled corpus of the project's own
//! sentences (`tests/fixtures/consolidate/`): precision and recall per category,
//! on the development half and on the blind half (scored, never tuned on).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use dream_core::{Message, Role, SessionId};
use dream_engine::{Batch, BatchSession, RuleBasedConsolidator};
use serde::Deserialize;

#[derive(Deserialize)]
struct Row {
    id: String,
    messages: Vec<Message>,
    expect: Vec<Expected>,
    note: String,
}

#[derive(Deserialize)]
struct Expected {
    must: Vec<String>,
}

#[derive(Default, Clone, Copy)]
struct Score {
    expected: usize,
    produced: usize,
    matched: usize,
}

impl Score {
    fn add(&mut self, other: Score) {
        self.expected += other.expected;
        self.produced += other.produced;
        self.matched += other.matched;
    }
    fn precision(&self) -> f64 {
        if self.produced == 0 {
            1.0
        } else {
            self.matched as f64 / self.produced as f64
        }
    }
    fn recall(&self) -> f64 {
        if self.expected == 0 {
            1.0
        } else {
            self.matched as f64 / self.expected as f64
        }
    }
}

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-02T09:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

/// One row's score: produced memories matched one to one against expected ones.
fn score(row: &Row) -> Score {
    score_with(row).0
}

/// [`score`], with what was produced.
fn score_with(row: &Row) -> (Score, Vec<String>) {
    let batch = Batch {
        now: t0(),
        scope: Default::default(),
        sessions: vec![BatchSession {
            reference: "S1".into(),
            id: SessionId::new("01S1").unwrap(),
            created_at: t0(),
            messages: row.messages.clone(),
            flags: Vec::new(),
        }],
        memories: Vec::new(),
    };
    let plan = RuleBasedConsolidator::new().plan(&batch);
    // Superseded creates are history, not what the person means now.
    let superseded: Vec<&String> = plan.creates.iter().flat_map(|c| &c.supersedes).collect();
    let mut produced: Vec<String> = plan
        .creates
        .iter()
        .filter(|c| !superseded.contains(&&c.handle))
        .map(|c| c.content.to_lowercase())
        .collect();
    let total = produced.len();
    let all = produced.clone();
    let mut matched = 0;
    for e in &row.expect {
        let hit = produced
            .iter()
            .position(|p| e.must.iter().all(|t| p.contains(&t.to_lowercase())));
        if let Some(i) = hit {
            produced.remove(i);
            matched += 1;
        }
    }
    let score = Score {
        expected: row.expect.len(),
        produced: total,
        matched,
    };
    (score, all)
}

/// The corpus's totals, per category, and each row not matched exactly (its id,
/// what it expected, what was produced).
fn run(file: &str) -> (Score, BTreeMap<String, Score>, Vec<String>) {
    let path = format!(
        "{}/tests/fixtures/consolidate/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("corpus");
    let mut total = Score::default();
    let mut by: BTreeMap<String, Score> = BTreeMap::new();
    let mut misses = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let row: Row = serde_json::from_str(line).expect("a corpus row");
        assert!(row.messages.iter().all(|m| m.role != Role::System));
        let (s, produced) = score_with(&row);
        if s.matched != s.expected || s.produced != s.matched {
            let expected: Vec<&Vec<String>> = row.expect.iter().map(|e| &e.must).collect();
            misses.push(format!(
                "{} expected {expected:?} produced {produced:?}",
                row.id
            ));
        }
        total.add(s);
        let category = row.note.split(':').next().unwrap_or("").trim().to_owned();
        by.entry(category).or_default().add(s);
    }
    (total, by, misses)
}

fn report(file: &str) -> Score {
    let (total, by, misses) = run(file);
    eprintln!("== {file}");
    eprintln!(
        "{:<16} {:>8} {:>8} {:>9} {:>7}",
        "category", "expected", "produced", "precision", "recall"
    );
    for (category, s) in &by {
        eprintln!(
            "{category:<16} {:>8} {:>8} {:>8.1}% {:>6.1}%",
            s.expected,
            s.produced,
            100.0 * s.precision(),
            100.0 * s.recall()
        );
    }
    eprintln!(
        "{:<16} {:>8} {:>8} {:>8.1}% {:>6.1}%   ({} rows not exact)",
        "all",
        total.expected,
        total.produced,
        100.0 * total.precision(),
        100.0 * total.recall(),
        misses.len()
    );
    if std::env::var_os("DREAM_CORPUS_MISSES").is_some() {
        for miss in &misses {
            eprintln!("  {miss}");
        }
    }
    total
}

#[test]
fn development_half() {
    let total = report("dev.jsonl");
    // Floors just under the measured numbers: a regression fails.
    // Issue 34 (statements kept in the person's own words) raised recall from
    // 0.86 to 0.975; precision fell from 0.97 to 0.93, mostly on further lasting
    // statements the labels do not list ("I'm the backend lead here").
    assert!(
        total.precision() >= 0.93,
        "precision {:.3}",
        total.precision()
    );
    assert!(total.recall() >= 0.97, "recall {:.3}", total.recall());
}

#[test]
fn blind_half() {
    let total = report("blind.jsonl");
    assert!(total.expected > 100, "the blind half is scored whole");
    // Never tuned on; floors under its scores guard against regressions.
    // Issue 34: recall 0.77 -> 0.95, precision 0.95 -> 0.907.
    assert!(
        total.precision() >= 0.90,
        "precision {:.3}",
        total.precision()
    );
    // durable::passing (what is true only now, undecided or someone else's is
    // not memory; issue 34's chatter fix) lowered this half's recall to 0.944,
    // read from the failing run's total only (no row looked at).
    assert!(total.recall() >= 0.94, "recall {:.3}", total.recall());
}

#[test]
fn tool_and_assistant_text_never_yields_a_memory() {
    for file in ["dev.jsonl", "blind.jsonl"] {
        let path = format!(
            "{}/tests/fixtures/consolidate/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let row: Row = serde_json::from_str(line).unwrap();
            let only_others = Row {
                messages: row
                    .messages
                    .iter()
                    .filter(|m| m.role != Role::User)
                    .cloned()
                    .collect(),
                expect: Vec::new(),
                ..row
            };
            assert_eq!(score(&only_others).produced, 0, "{}", only_others.id);
        }
    }
}
