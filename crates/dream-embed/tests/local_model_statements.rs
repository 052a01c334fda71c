//! What the person says, kept and found by meaning (issues 34 and 38): the
//! statements corpus dreamt offline, as in dream-engine's tests/statements.rs
//! (one scorer, `statements_score`), with every memory embedded by the local
//! model and recall ranking by words and meaning. Prints, per set, the share
//! of durable statements kept, recalled `used` when asked in other words, and
//! of non-memories stored. The blind half is scored only when
//! DREAM_SCORE_BLIND=1 (every such run is logged in the corpus's LOOKS.md).
//! Needs DREAM_TEST_MINILM (see tests/common).

use std::sync::Arc;

use dream_embed::LocalEmbedder;

#[path = "../../dream-engine/tests/support/statements_score.rs"]
mod statements_score;
use statements_score::{pct, report, score};

mod common;
use common::minilm;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_model_keeps_and_finds_the_statements_by_meaning() {
    let Some(dir) = minilm() else { return };
    let embedder = Arc::new(LocalEmbedder::load(&dir, "all-MiniLM-L6-v2").unwrap());
    let mut files = vec!["dev.jsonl", "dev2.jsonl", "dev4.jsonl"];
    if std::env::var_os("DREAM_SCORE_BLIND").is_some_and(|v| v == "1") {
        files.extend(["blind.jsonl", "blind4.jsonl"]);
    }
    for file in files {
        let words = score(file, None).await;
        let meaning = score(file, Some(embedder.clone())).await;
        report(&format!("{file} (words)"), &words);
        report(&format!("{file} (words and the local model)"), &meaning);
        // The model must find by meaning what words miss, never lose what they find.
        assert!(meaning.used >= words.used, "{file}: the model lost answers");
        assert_eq!(meaning.stored, words.stored, "{file}: the same pass");
        assert!(
            pct(meaning.used, meaning.durable) >= 50.0,
            "{file}: recalled used {:.1} %",
            pct(meaning.used, meaning.durable)
        );
    }
}
