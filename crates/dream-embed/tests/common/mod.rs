//! What the local-model tests share.

use std::path::PathBuf;

/// The test model's directory (DREAM_TEST_MINILM), or `None` with a note when
/// it was not fetched (`python3 scripts/fetch-test-models.py`); with
/// DREAM_REQUIRE_MODELS=1 a missing model is a failure.
pub fn minilm() -> Option<PathBuf> {
    match std::env::var_os("DREAM_TEST_MINILM") {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var_os("DREAM_REQUIRE_MODELS").is_some_and(|v| v == "1") => {
            panic!("DREAM_REQUIRE_MODELS=1 but DREAM_TEST_MINILM is unset")
        }
        None => {
            eprintln!("SKIPPED: DREAM_TEST_MINILM is unset (python3 scripts/fetch-test-models.py)");
            None
        }
    }
}
