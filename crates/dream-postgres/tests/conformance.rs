//! The conformance suite against the real server: each rule gets a fresh random
//! schema (dropped afterwards) on `DREAM_TEST_POSTGRES_URL`.

mod common;

use std::sync::Arc;

use dream_conformance::Fixture;

async fn make() -> Fixture {
    let up = tokio::task::spawn_blocking(|| common::available("the conformance suite"))
        .await
        .expect("probe PostgreSQL");
    if !up {
        // The suite's macro cannot skip a rule, and nothing is there to test:
        // end this test process after the loud notice above.
        std::process::exit(0);
    }
    let schema = common::fresh_schema();
    let guard = common::SchemaGuard::new(&schema);
    let store = common::open(&schema).await;
    // Dropped in order: the store (its pool), then the guard (drops the schema).
    Fixture::new(Arc::new(store), guard)
}

dream_conformance::conformance_suite!(make);
