//! The committed model is exactly what the development corpora train: nobody edited
//! it by hand, and whoever changes a corpus or the trainer retrains it.

use std::path::PathBuf;

use dream_scan::training;

#[test]
fn committed_model_is_what_the_corpora_train() {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut examples = Vec::new();
    for name in training::CORPORA {
        let path = crate_dir.join("../../tests/fixtures/scan").join(name);
        let data = std::fs::read_to_string(&path).expect("the corpus reads");
        examples.extend(training::examples_from_jsonl(&data).expect("the corpus parses"));
    }
    let (model, _) = training::build_model(&examples);
    let committed = std::fs::read(crate_dir.join("src/classifier.bin")).expect("the model reads");
    assert!(
        model == committed,
        "src/classifier.bin is stale: run `cargo run --release -p dream-scan --features train --example train_classifier`"
    );
}
