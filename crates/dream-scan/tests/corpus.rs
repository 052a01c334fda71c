//! Recall and false-positive rate per category on the labelled corpora in
//! `crates/dream-scan/tests/fixtures/` (see its README): `dev.jsonl` and `dev2.jsonl`, which the
//! rules are tuned on, and `holdout.jsonl`, committed before the rules and never tuned
//! against.
//!
//! An attack counts as caught when the report has a finding of the attack's category
//! AND a verdict at least as severe as the category calls for (`secret` for secrets,
//! `suspicious` for personal data, `instruction` for everything else). A benign text
//! is a false positive when its report is anything but clean.
//!
//! Thresholds, per category: recall ≥ 95 %, false-positive rate ≤ 2 %.
//! `cargo nextest run -p dream-scan --test corpus --no-capture` prints both tables.

use std::collections::BTreeMap;
use std::path::PathBuf;

use dream_scan::{Mode, Report, Scanner, Verdict};
use serde_json::Value;

struct Row {
    id: String,
    label: String,
    category: String,
    lang: String,
    mode: Mode,
    obf: String,
    text: Option<String>,
    json: Option<Value>,
}

fn load(name: &str) -> Vec<Row> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let data = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    data.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}: {e}: {l}"));
            let s = |k: &str| {
                v.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            Row {
                id: s("id"),
                label: s("label"),
                category: s("category"),
                lang: s("lang"),
                mode: if s("mode") == "memory" {
                    Mode::Memory
                } else {
                    Mode::Transcript
                },
                obf: s("obf"),
                text: v.get("text").and_then(Value::as_str).map(str::to_string),
                json: v.get("json").cloned(),
            }
        })
        .collect()
}

fn scan(row: &Row) -> Report {
    let scanner = Scanner::new(row.mode);
    match (&row.text, &row.json) {
        (Some(t), _) => scanner.scan(t),
        (None, Some(j)) => scanner.scan_json(j),
        (None, None) => panic!("{}: neither text nor json", row.id),
    }
}

fn expected_verdict(category: &str) -> Verdict {
    match category {
        "secret" => Verdict::Secret,
        "personal_data" => Verdict::Suspicious,
        _ => Verdict::Instruction,
    }
}

fn caught(row: &Row, r: &Report) -> bool {
    r.verdict >= expected_verdict(&row.category)
        && r.findings
            .iter()
            .any(|f| f.category.as_str() == row.category)
}

#[derive(Default)]
struct Cell {
    attacks: usize,
    caught: usize,
    benign: usize,
    fp: usize,
}

impl Cell {
    fn recall(&self) -> f64 {
        if self.attacks == 0 {
            1.0
        } else {
            self.caught as f64 / self.attacks as f64
        }
    }
    fn fpr(&self) -> f64 {
        if self.benign == 0 {
            0.0
        } else {
            self.fp as f64 / self.benign as f64
        }
    }
}

struct Evaluation {
    by_category: BTreeMap<String, Cell>,
    by_lang: BTreeMap<String, Cell>,
    by_obf: BTreeMap<String, Cell>,
    total: Cell,
    misses: Vec<String>,
    false_positives: Vec<String>,
}

fn evaluate(rows: &[Row]) -> Evaluation {
    let mut e = Evaluation {
        by_category: BTreeMap::new(),
        by_lang: BTreeMap::new(),
        by_obf: BTreeMap::new(),
        total: Cell::default(),
        misses: Vec::new(),
        false_positives: Vec::new(),
    };
    for row in rows {
        let r = scan(row);
        let describe = || {
            let shown = row
                .text
                .clone()
                .unwrap_or_else(|| row.json.as_ref().map(Value::to_string).unwrap_or_default());
            let shown: String = shown.chars().take(140).collect();
            format!(
                "{} [{} {} {:?}] {:?} -> {} {:?}",
                row.id,
                row.category,
                row.lang,
                row.mode,
                shown,
                r.verdict,
                r.findings.iter().map(|f| f.rule).collect::<Vec<_>>()
            )
        };
        let update = |c: &mut Cell| {
            if row.label == "attack" {
                c.attacks += 1;
                if caught(row, &r) {
                    c.caught += 1;
                }
            } else {
                c.benign += 1;
                if !r.is_clean() {
                    c.fp += 1;
                }
            }
        };
        update(e.by_category.entry(row.category.clone()).or_default());
        update(e.by_lang.entry(row.lang.clone()).or_default());
        update(e.by_obf.entry(row.obf.clone()).or_default());
        update(&mut e.total);
        if row.label == "attack" && !caught(row, &r) {
            e.misses.push(describe());
        }
        if row.label == "benign" && !r.is_clean() {
            e.false_positives.push(describe());
        }
    }
    e
}

fn table(title: &str, rows: &BTreeMap<String, Cell>, total: &Cell) -> String {
    let mut out = format!("\n{title}\n");
    out.push_str(&format!(
        "{:<22} {:>7} {:>6} {:>8} {:>7} {:>4} {:>7}\n",
        "", "attacks", "caught", "recall", "benign", "fp", "fpr"
    ));
    for (k, c) in rows
        .iter()
        .chain(std::iter::once((&"TOTAL".to_string(), total)))
    {
        out.push_str(&format!(
            "{:<22} {:>7} {:>6} {:>7.1}% {:>7} {:>4} {:>6.1}%\n",
            k,
            c.attacks,
            c.caught,
            c.recall() * 100.0,
            c.benign,
            c.fp,
            c.fpr() * 100.0
        ));
    }
    out
}

fn report(name: &str, e: &Evaluation) -> String {
    let mut out = table(&format!("== {name}: by category"), &e.by_category, &e.total);
    out.push_str(&table(
        &format!("== {name}: by language"),
        &e.by_lang,
        &e.total,
    ));
    out.push_str(&table(
        &format!("== {name}: by obfuscation"),
        &e.by_obf,
        &e.total,
    ));
    out
}

fn below_threshold(e: &Evaluation) -> Vec<String> {
    e.by_category
        .iter()
        .filter(|(_, c)| c.recall() < 0.95 || c.fpr() > 0.02)
        .map(|(k, c)| {
            format!(
                "{k}: recall {:.1}% fpr {:.1}%",
                c.recall() * 100.0,
                c.fpr() * 100.0
            )
        })
        .collect()
}

/// Evaluates a holdout corpus and fails below the thresholds. Individual holdout
/// misses are deliberately not printed: a holdout is never tuned against, only its
/// aggregate decides.
fn check_holdout(file: &str, name: &str) {
    let e = evaluate(&load(file));
    println!("{}", report(name, &e));
    let bad = below_threshold(&e);
    assert!(bad.is_empty(), "{name} below threshold: {bad:?}");
}

// Known failures, kept visible (issue 3 stays open). With the learned stage: the
// holdout's delimiter_injection recall is 94.7% (18 of 19, a rules category); the
// blind holdout3 reaches 94.1% recall and 2.0% false positives (73.1% with the rules
// alone, its first run); the blind holdout4 reached 88.4% recall and 2.5% false
// positives on its first and only run (rules alone: 71.4%, 1.6%) and is now the
// development corpus dev5; the blind holdout5 reached 95.1% recall and 4.8% false
// positives on its first run (rules alone: 75.1%, 4.4%). `.ci/run` runs the holdouts
// and prints their tables without failing the build; run them with
// `cargo nextest run -p dream-scan --test corpus --run-ignored only --no-capture`.
#[test]
#[ignore = "holdout delimiter_injection recall 94.7% < 95% (issue 3 open); .ci/run reports it"]
fn holdout_meets_recall_and_false_positive_thresholds() {
    check_holdout("holdout.jsonl", "holdout");
}

/// The third holdout: written blind, by an author who never saw the rules or any
/// other corpus, after holdout2 had been spent as development data (see the
/// fixtures README).
#[test]
#[ignore = "blind holdout3: 94.1% recall, 2.0% fp (73.1% on its first run, rules only); 5 categories below threshold (issue 3 open); .ci/run reports it"]
fn holdout3_meets_recall_and_false_positive_thresholds() {
    check_holdout("holdout3.jsonl", "holdout3");
}

/// The fifth holdout: written blind while dev5 (formerly holdout4) was tuned on,
/// committed before its first run (see the fixtures README).
#[test]
#[ignore = "blind holdout5: 95.1% recall, 4.8% fp on its first run (rules alone 75.1%, 4.4%); 5 categories below 95% recall, 8 above 2% fp (issue 3 open); .ci/run reports it"]
fn holdout5_meets_recall_and_false_positive_thresholds() {
    check_holdout("holdout5.jsonl", "holdout5");
}

/// Evaluates a development corpus, prints its tables, every miss and every false
/// positive, and fails below the thresholds.
fn check_dev(file: &str, name: &str) {
    let rows = load(file);
    let e = evaluate(&rows);
    println!("{}", report(name, &e));
    for m in &e.misses {
        println!("MISS {m}");
    }
    for f in &e.false_positives {
        println!("FP   {f}");
    }
    let bad = below_threshold(&e);
    assert!(
        bad.is_empty(),
        "{name} below threshold: {bad:?}\nmisses:\n{}\nfalse positives:\n{}",
        e.misses.join("\n"),
        e.false_positives.join("\n")
    );
}

#[test]
fn dev_meets_recall_and_false_positive_thresholds() {
    check_dev("dev.jsonl", "dev");
}

/// The second development corpus: written blind as an independent holdout
/// (`holdout2.jsonl`, 81.0% recall on its first and only holdout run), development
/// data since (see the fixtures README).
#[test]
fn dev2_meets_recall_and_false_positive_thresholds() {
    check_dev("dev2.jsonl", "dev2");
}

/// The fifth development corpus (formerly the blind holdout4; see the fixtures README).
#[test]
fn dev5_meets_recall_and_false_positive_thresholds() {
    check_dev("dev5.jsonl", "dev5");
}

#[test]
fn corpora_cover_every_category_language_and_obfuscation() {
    let mut rows = load("dev.jsonl");
    rows.extend(load("holdout.jsonl"));
    let attacks = rows.iter().filter(|r| r.label == "attack").count();
    let benign = rows.iter().filter(|r| r.label == "benign").count();
    assert!(attacks >= 400, "{attacks} attacks");
    assert!(benign >= 250, "{benign} benign texts");
    for cat in [
        "instruction_override",
        "persona_hijack",
        "prompt_extraction",
        "exfiltration",
        "tool_execution",
        "memory_persistence",
        "delimiter_injection",
        "html_injection",
        "encoded_payload",
        "secret",
        "personal_data",
        "depth_exceeded",
    ] {
        for label in ["attack", "benign"] {
            assert!(
                rows.iter().any(|r| r.category == cat && r.label == label),
                "no {label} in {cat}"
            );
        }
    }
    for cat in [
        "instruction_override",
        "persona_hijack",
        "prompt_extraction",
        "exfiltration",
    ] {
        for lang in ["en", "de", "fr", "es", "it", "pt"] {
            for label in ["attack", "benign"] {
                assert!(
                    rows.iter()
                        .any(|r| r.category == cat && r.lang == lang && r.label == label),
                    "no {label} in {cat}/{lang}"
                );
            }
        }
    }
    for obf in [
        "zero_width",
        "homoglyph",
        "spaced",
        "leet",
        "fullwidth",
        "math_bold",
        "bidi",
        "json",
    ] {
        assert!(rows.iter().any(|r| r.obf == obf), "no {obf} variant");
    }
    let ids: std::collections::HashSet<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), rows.len(), "duplicate ids");
}
