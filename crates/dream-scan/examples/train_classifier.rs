//! Trains the learned stage's model from the development corpora and writes
//! `src/classifier.bin`, printing what cross-validation measured.
//!
//! `cargo run --release -p dream-scan --features train --example train_classifier`

use std::path::PathBuf;

use dream_scan::training;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut examples = Vec::new();
    for name in training::CORPORA {
        let path = crate_dir.join("../../tests/fixtures/scan").join(name);
        let data = std::fs::read_to_string(&path)?;
        examples.extend(training::examples_from_jsonl(&data).map_err(|e| format!("{name}: {e}"))?);
    }
    let (model, report) = training::build_model(&examples);
    println!(
        "{} examples; threshold {:.2}",
        examples.len(),
        report.threshold
    );
    println!(
        "{:<22} {:>7} {:>7} {:>7}",
        "category", "caught", "of", "recall"
    );
    for (category, (caught, total)) in &report.recall {
        let recall = 100.0 * *caught as f64 / (*total).max(1) as f64;
        println!("{category:<22} {caught:>7} {total:>7} {recall:>6.1}%");
    }
    let (flagged, benign) = report.false_positives;
    let rate = 100.0 * flagged as f64 / benign.max(1) as f64;
    println!(
        "{:<22} {flagged:>7} {benign:>7} {rate:>6.1}%",
        "false positives"
    );
    std::fs::write(crate_dir.join("src/classifier.bin"), model)?;
    Ok(())
}
