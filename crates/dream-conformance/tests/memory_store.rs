//! The in-memory store from dream-core's `testing` feature passes the suite.

use std::sync::Arc;

use dream_conformance::Fixture;
use dream_core::testing::MemoryStore;

async fn make() -> Fixture {
    Fixture::new(Arc::new(MemoryStore::new()), ())
}

dream_conformance::conformance_suite!(make);
