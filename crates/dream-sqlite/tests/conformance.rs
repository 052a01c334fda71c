//! The SQLite store passes the conformance suite, each rule on a fresh database
//! file in a temporary directory.

use std::sync::Arc;

use dream_conformance::Fixture;
use dream_sqlite::SqliteStore;

async fn make() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path().join("dream.sqlite"))
        .await
        .expect("open a fresh SQLite store");
    Fixture::new(Arc::new(store), dir)
}

dream_conformance::conformance_suite!(make);
