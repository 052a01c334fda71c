//! Recall and false positives on a labelled JSONL corpus whose categories are not
//! the scanner's (the pyrit/spikee conversions `scripts/fetch_corpora.py` writes, or
//! any fixture file): an attack is caught when the verdict is `instruction` or worse
//! (`secret` rows: `secret`; `personal_data` rows: `suspicious`), whatever category
//! the finding names; a benign row is a false positive when its verdict is not
//! `clean`. Prints one table per source category and one per `sub` field's second
//! `|`-separated part (spikee's instruction type) when present, or its third when the
//! second is the label (`CARRIER|attack|CLASS`).
//!
//! `cargo run --release -p dream-scan --example eval_external -- FILE.jsonl [--rules-only] [--show-misses] [--show-fp]`

use std::collections::BTreeMap;

use dream_scan::{Mode, Scanner, Verdict};
use serde_json::Value;

#[derive(Default)]
struct Cell {
    attacks: usize,
    caught: usize,
    benign: usize,
    fp: usize,
    /// Benign rows called `instruction` (not only suspicious).
    fp_instruction: usize,
}

fn print(title: &str, t: &BTreeMap<String, Cell>) {
    println!(
        "{title:<34} {:>7} {:>7} {:>7} {:>7} {:>5} {:>7}",
        "attacks", "caught", "recall", "benign", "fp", "fpr"
    );
    let mut total = Cell::default();
    for (k, c) in t {
        row(k, c);
        total.attacks += c.attacks;
        total.caught += c.caught;
        total.benign += c.benign;
        total.fp += c.fp;
        total.fp_instruction += c.fp_instruction;
    }
    row("TOTAL", &total);
}

fn row(k: &str, c: &Cell) {
    let pct = |a: usize, b: usize| {
        if b == 0 {
            "-".to_string()
        } else {
            format!("{:.1}%", 100.0 * a as f64 / b as f64)
        }
    };
    println!(
        "{k:<34} {:>7} {:>7} {:>7} {:>7} {:>5} {:>7} {:>7}",
        c.attacks,
        c.caught,
        pct(c.caught, c.attacks),
        c.benign,
        c.fp,
        pct(c.fp, c.benign),
        pct(c.fp_instruction, c.benign)
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .ok_or("usage: eval_external FILE.jsonl [--rules-only] [--show-misses] [--show-fp]")?;
    let rules_only = args.iter().any(|a| a == "--rules-only");
    let show_misses = args.iter().any(|a| a == "--show-misses");
    let show_fp = args.iter().any(|a| a == "--show-fp");
    let mut by_cat: BTreeMap<String, Cell> = BTreeMap::new();
    let mut by_sub: BTreeMap<String, Cell> = BTreeMap::new();
    let mut by_lang: BTreeMap<String, Cell> = BTreeMap::new();
    for line in std::fs::read_to_string(path)?.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)?;
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let mode = if s("mode") == "memory" {
            Mode::Memory
        } else {
            Mode::Transcript
        };
        let scanner = Scanner::new(mode).with_learned_stage(!rules_only);
        let report = match (v.get("text").and_then(Value::as_str), v.get("json")) {
            (Some(t), _) => scanner.scan(t),
            (None, Some(j)) => scanner.scan_json(j),
            _ => continue,
        };
        let cat = s("category");
        let need = match cat.as_str() {
            "secret" => Verdict::Secret,
            "personal_data" => Verdict::Suspicious,
            _ => Verdict::Instruction,
        };
        let attack = s("label") == "attack";
        let hit = if attack {
            report.verdict >= need
        } else {
            report.verdict != Verdict::Clean
        };
        let sub = s("sub");
        // `CARRIER|CLASS|…`, or `CARRIER|attack|CLASS` (the label second, the class third).
        let parts: Vec<&str> = sub.split('|').collect();
        let sub = match parts.get(1) {
            Some(&"attack") | Some(&"benign") => parts.get(2).copied().unwrap_or(""),
            other => other.copied().unwrap_or(""),
        }
        .to_string();
        for (i, (t, k)) in [
            (&mut by_cat, cat.clone()),
            (&mut by_sub, sub.clone()),
            (&mut by_lang, s("lang")),
        ]
        .into_iter()
        .enumerate()
        {
            if k.is_empty() && i > 0 {
                continue;
            }
            let c = t.entry(k).or_default();
            if attack {
                c.attacks += 1;
                c.caught += usize::from(hit);
            } else {
                c.benign += 1;
                c.fp += usize::from(hit);
                c.fp_instruction += usize::from(report.verdict >= Verdict::Instruction);
            }
        }
        if (attack && !hit && show_misses) || (!attack && hit && show_fp) {
            let text = v
                .get("text")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| v.get("json").map(Value::to_string).unwrap_or_default());
            let text: String = text
                .chars()
                .take(400)
                .collect::<String>()
                .replace('\n', "⏎");
            println!(
                "--- {} [{} {}] {} {:?}: {text}",
                s("id"),
                cat,
                sub,
                report.verdict,
                report.findings.iter().map(|f| f.rule).collect::<Vec<_>>()
            );
        }
    }
    print("by category", &by_cat);
    if !by_sub.is_empty() {
        println!();
        print("by instruction type", &by_sub);
    }
    println!();
    print("by language", &by_lang);
    Ok(())
}
