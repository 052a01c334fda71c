//! Every report the scanner gives on labelled JSONL corpora, one line per scan, so that
//! a change meant to keep behaviour can be checked by comparing two dumps byte for
//! byte. Each row's `text` (or `json`) is scanned in both modes, with and without the
//! learned stage; a line is `FILE<TAB>ID<TAB>MODE<TAB>learned|rules<TAB>REPORT` with
//! the report (verdict and every finding) as JSON. Rows without an `id` are named by
//! their line number.
//!
//! `cargo run --release -p dream-scan --example dump_reports -- FILE.jsonl... > dump.tsv`

use std::io::Write;

use dream_scan::{Mode, Scanner};
use serde_json::Value;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        return Err("usage: dump_reports FILE.jsonl...".into());
    }
    let scanners: Vec<(&str, &str, Scanner)> =
        [(Mode::Transcript, "transcript"), (Mode::Memory, "memory")]
            .into_iter()
            .flat_map(|(mode, name)| {
                [
                    (name, "learned", Scanner::new(mode)),
                    (name, "rules", Scanner::new(mode).with_learned_stage(false)),
                ]
            })
            .collect();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for path in &paths {
        for (n, line) in std::fs::read_to_string(path)?.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let row: Value = serde_json::from_str(line)?;
            let id = match row.get("id").and_then(Value::as_str) {
                Some(id) => id.to_string(),
                None => format!("line{}", n + 1),
            };
            for (mode, stage, scanner) in &scanners {
                let report = match (row.get("text").and_then(Value::as_str), row.get("json")) {
                    (Some(text), _) => scanner.scan(text),
                    (None, Some(json)) => scanner.scan_json(json),
                    _ => continue,
                };
                writeln!(
                    out,
                    "{path}\t{id}\t{mode}\t{stage}\t{}",
                    serde_json::to_string(&report)?
                )?;
            }
        }
    }
    out.flush()?;
    Ok(())
}
