//! The conformance suite over `EncryptedStore<FsStore>` on a fresh directory.

use std::sync::Arc;

use dream_conformance::Fixture;
use dream_encrypted::{EncryptedStore, EncryptionOptions, KeyId, KeyMaterial, KeyRing};
use dream_fs::FsStore;

async fn make() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let inner = FsStore::open(dir.path().join(".dream"))
        .await
        .expect("open store");
    let ring = KeyRing::new(KeyId::new(1), KeyMaterial::generate().expect("os rng"));
    let options = EncryptionOptions::default().counter_block(4);
    let store = EncryptedStore::with_options(inner, ring, options);
    Fixture::new(Arc::new(store), dir)
}

dream_conformance::conformance_suite!(make);
