//! How often the scanner calls ordinary text an instruction, with and without the
//! learned stage: reads paragraphs (one JSON string per line, as
//! `crates/dream-scan/tests/fixtures/gen/ordinary_paragraphs.py` writes them from the machine's own
//! package documentation) and prints the counts. `--show` prints each paragraph the
//! learned stage alone flags.
//!
//! `cargo run --release -p dream-scan --example ordinary_text -- paragraphs.jsonl`

use std::collections::BTreeMap;

use dream_scan::{Mode, Scanner, Verdict};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: ordinary_text PARAGRAPHS.jsonl [--show]")?;
    let show = args.next().as_deref() == Some("--show");
    let with = Scanner::new(Mode::Transcript);
    let without = Scanner::new(Mode::Transcript).with_learned_stage(false);
    let (mut total, mut by_rules, mut by_both) = (0, 0, 0);
    let mut learned_only: BTreeMap<&str, usize> = BTreeMap::new();
    for line in std::fs::read_to_string(path)?.lines() {
        let text: String = serde_json::from_str(line)?;
        total += 1;
        let rules = without.scan(&text).verdict >= Verdict::Instruction;
        let report = with.scan(&text);
        by_rules += usize::from(rules);
        by_both += usize::from(report.verdict >= Verdict::Instruction);
        if rules {
            continue;
        }
        if let Some(f) = report
            .findings
            .iter()
            .find(|f| f.rule.starts_with("learned."))
        {
            *learned_only.entry(f.rule).or_default() += 1;
            if show {
                println!("--- {}: {}", f.rule, text.replace('\n', " "));
            }
        }
    }
    println!(
        "{total} paragraphs called instruction: rules {by_rules}, rules and learned stage {by_both}"
    );
    println!("flagged by the learned stage alone: {learned_only:?}");
    Ok(())
}
