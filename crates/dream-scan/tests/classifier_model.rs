//! The committed model is exactly what the development corpora train: nobody edited
//! it by hand, and whoever changes a corpus or the trainer retrains it.
//!
//! When the model was also trained on external corpora (`src/classifier.meta.json`
//! lists them; see `scripts/fetch_corpora.py`), the check needs their cache with the
//! same package versions; without it the test says so and passes (the text of those
//! corpora is never committed).

use std::path::PathBuf;

use dream_scan::training;

#[test]
fn committed_model_is_what_the_corpora_train() {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let meta: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(crate_dir.join("src/classifier.meta.json")).expect("meta reads"),
    )
    .expect("meta parses");
    let wanted = meta["external"].as_object().cloned().unwrap_or_default();
    let mut examples = Vec::new();
    for name in training::CORPORA {
        let path = crate_dir.join("tests/fixtures").join(name);
        let data = std::fs::read_to_string(&path).expect("the corpus reads");
        examples.extend(training::examples_from_jsonl(&data).expect("the corpus parses"));
    }
    let external = training::external_corpora(&[]).expect("external corpora parse");
    for (source, info) in &wanted {
        let found = external.iter().find(|(s, _, _)| s == source);
        match found {
            Some((_, version, _)) if Some(version.as_str()) == info["version"].as_str() => {}
            _ => {
                eprintln!(
                    "skipped: the model was trained on {source} {}, whose converted corpus is not in {} (run scripts/fetch_corpora.py)",
                    info["version"],
                    training::external_dir().display()
                );
                return;
            }
        }
    }
    for (source, _, rows) in &external {
        if wanted.contains_key(source) {
            examples.extend(rows.iter().cloned());
        }
    }
    let (model, _) = training::build_model(&examples);
    let committed = std::fs::read(crate_dir.join("src/classifier.bin")).expect("the model reads");
    assert!(
        model == committed,
        "src/classifier.bin is stale: run `cargo run --release -p dream-scan --features train --example train_classifier`"
    );
}
