//! Ordinary talk is never flagged (issue 36, part 4): the share of the benign
//! conversational set `tests/fixtures/benign_chat/` that the scanner calls
//! `instruction`, per file and per mode, and which rules did it.
//!
//! Every row is scanned as the scanner receives a user's turn: `Scanner::scan` of its
//! text, in [`Mode::Transcript`] (a transcript at log time) and in [`Mode::Memory`]
//! (the same words proposed as a memory, or recalled). Targets: no memory-style
//! instruction flagged, at most 0.1 % of chat turns.
//!
//! The dev halves run always and print every flagged row. The blind halves
//! (`blind.jsonl`, `memory_instructions_blind.jsonl`) are for scoring only: their tests
//! are ignored by default, print aggregates only (never a row), and each run is
//! logged in `benign_chat/LOOKS.md`:
//! `cargo nextest run -p dream-scan --test benign_chat --run-ignored only --no-capture`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use dream_scan::{Mode, Scanner, Verdict};
use serde_json::Value;

fn load(name: &str) -> Vec<(String, String)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/benign_chat")
        .join(name);
    let data = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    data.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: {e}"));
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (s("id"), s("text"))
        })
        .collect()
}

/// One file in one mode: rows flagged `instruction` (or worse), by the rule of each
/// flagged row's instruction findings.
struct Measured {
    rows: usize,
    flagged: Vec<(String, String, Vec<&'static str>)>,
    by_rule: BTreeMap<&'static str, usize>,
}

impl Measured {
    fn share(&self) -> f64 {
        self.flagged.len() as f64 / self.rows.max(1) as f64
    }
}

fn measure(rows: &[(String, String)], mode: Mode) -> Measured {
    let scanner = Scanner::new(mode);
    let mut m = Measured {
        rows: rows.len(),
        flagged: Vec::new(),
        by_rule: BTreeMap::new(),
    };
    for (id, text) in rows {
        let report = scanner.scan(text);
        if report.verdict < Verdict::Instruction {
            continue;
        }
        let mut rules: Vec<&'static str> = report
            .findings
            .iter()
            .filter(|f| f.category.is_instruction())
            .map(|f| f.rule)
            .collect();
        rules.sort_unstable();
        rules.dedup();
        for r in &rules {
            *m.by_rule.entry(r).or_default() += 1;
        }
        m.flagged.push((id.clone(), text.clone(), rules));
    }
    m
}

/// Scans `file` in both modes, prints the shares (and, for a dev half, every flagged
/// row), and asserts at most `max_share` flagged in each mode.
fn check(file: &str, blind: bool, max_share: [f64; 2]) {
    let rows = load(file);
    let mut failures = Vec::new();
    for (mode, max) in [Mode::Transcript, Mode::Memory].into_iter().zip(max_share) {
        let m = measure(&rows, mode);
        println!(
            "{file} [{mode:?}]: {} of {} flagged instruction ({:.2} %); by rule {:?}",
            m.flagged.len(),
            m.rows,
            100.0 * m.share(),
            m.by_rule
        );
        if !blind {
            for (id, text, rules) in &m.flagged {
                println!("  FLAGGED {id} {rules:?} {text:?}");
            }
        }
        if m.share() > max + 1e-12 {
            failures.push(format!(
                "{mode:?}: {:.2} % > {:.2} %",
                100.0 * m.share(),
                100.0 * max
            ));
        }
    }
    assert!(failures.is_empty(), "{file}: {failures:?}");
}

/// The targets of issue 36.
const CHAT: f64 = 0.001;
const MEMORY_INSTRUCTIONS: f64 = 0.0;

#[test]
fn chat_dev_is_not_flagged() {
    check("dev.jsonl", false, [CHAT, CHAT]);
}

#[test]
fn memory_instructions_dev_are_not_flagged() {
    check(
        "memory_instructions_dev.jsonl",
        false,
        [MEMORY_INSTRUCTIONS, MEMORY_INSTRUCTIONS],
    );
}

#[test]
#[ignore = "blind half: scored deliberately, aggregates only, each run logged in benign_chat/LOOKS.md"]
fn chat_blind_is_not_flagged() {
    check("blind.jsonl", true, [CHAT, CHAT]);
}

#[test]
#[ignore = "blind half: scored deliberately, aggregates only, each run logged in benign_chat/LOOKS.md"]
fn memory_instructions_blind_are_not_flagged() {
    check(
        "memory_instructions_blind.jsonl",
        true,
        [MEMORY_INSTRUCTIONS, MEMORY_INSTRUCTIONS],
    );
}
