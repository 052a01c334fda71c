//! The conformance suite against a real Redis: each rule gets a fresh random
//! prefix (deleted afterwards) on the shared Redis (`DREAM_TEST_REDIS_URL`) or on
//! its own `redis-server`.

mod common;

use std::sync::Arc;

use dream_conformance::Fixture;

async fn make() -> Fixture {
    let redis = tokio::task::spawn_blocking(|| common::redis_or_skip("the conformance suite"))
        .await
        .expect("start Redis");
    let Some(redis) = redis else {
        // The suite's macro cannot skip a rule, and nothing is there to test:
        // end this test process after the loud notice above.
        std::process::exit(0);
    };
    let prefix = common::fresh_prefix();
    let store = common::open(&redis.url, &prefix).await;
    // Dropped in order: the store, then the prefix guard (deletes the keys), then
    // the private server, if any.
    Fixture::new(
        Arc::new(store),
        (common::PrefixGuard::new(&redis.url, &prefix), redis),
    )
}

dream_conformance::conformance_suite!(make);
