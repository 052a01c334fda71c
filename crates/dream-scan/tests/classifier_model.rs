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
    let mut examples =
        training::committed_examples(&crate_dir.join("tests/fixtures")).expect("the corpora parse");
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

/// A tool-output attack names its carrier as `category` and its class in `sub`: it
/// trains as that class's category (before, every such row was silently skipped and
/// the model never saw a single tool-output attack); a class nobody mapped is an
/// error, not a dropped row.
#[test]
fn tool_output_attacks_train_as_their_class_and_unknown_classes_are_refused() {
    use dream_scan::Category;
    let rows = [
        r#"{"id":"a","label":"attack","category":"email","mode":"transcript","text":"t1","sub":"email|attack|transfer_money"}"#,
        r#"{"id":"b","label":"attack","category":"web_page","mode":"transcript","text":"t2","sub":"web_page|include_token|end"}"#,
        r#"{"id":"c","label":"attack","category":"csv","mode":"transcript","text":"t3","sub":"csv|attack|obfuscated"}"#,
        r#"{"id":"d","label":"benign","category":"csv","mode":"transcript","text":"t4","sub":"csv|benign|-"}"#,
    ]
    .join("\n");
    let examples = training::examples_from_jsonl(&rows).expect("rows parse");
    let got: Vec<(&str, Option<Category>)> = examples
        .iter()
        .map(|e| (e.id.as_str(), e.category))
        .collect();
    assert_eq!(
        got,
        [
            ("a", Some(Category::ToolExecution)),
            ("b", Some(Category::PersonaHijack)),
            ("d", None),
        ],
        "an obfuscated row is the rules' and is left out"
    );
    let unknown = r#"{"id":"e","label":"attack","category":"email","mode":"transcript","text":"t","sub":"email|attack|brand_new_class"}"#;
    let err = training::examples_from_jsonl(unknown).expect_err("unknown class refused");
    assert!(err.contains("unknown class"), "{err}");
}

/// Every committed corpus parses, and every tool-output corpus contributes attacks
/// to training (none of its rows is dropped for want of a class).
#[test]
fn every_training_corpus_yields_its_attacks() {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for name in training::CORPORA {
        let data = std::fs::read_to_string(crate_dir.join("tests/fixtures").join(name))
            .expect("the corpus reads");
        let examples = training::examples_from_jsonl(&data).expect("the corpus parses");
        assert!(
            examples.iter().any(|e| e.category.is_some()),
            "{name}: no attack trains"
        );
    }
}
