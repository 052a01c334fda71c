//! dream-fs passes the shared conformance suite on a fresh temporary directory.

use std::sync::Arc;

use dream_conformance::Fixture;
use dream_fs::FsStore;

async fn make() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = FsStore::open(dir.path().join(".dream"))
        .await
        .expect("open store");
    Fixture::new(Arc::new(store), dir)
}

dream_conformance::conformance_suite!(make);
