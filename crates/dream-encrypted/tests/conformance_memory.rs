//! The conformance suite over `EncryptedStore<MemoryStore>`.

use std::sync::Arc;

use dream_conformance::Fixture;
use dream_core::testing::MemoryStore;
use dream_encrypted::{EncryptedStore, EncryptionOptions, KeyId, KeyMaterial, KeyRing};

async fn make() -> Fixture {
    let ring = KeyRing::new(KeyId::new(1), KeyMaterial::generate().expect("os rng"));
    // A small counter block, so the suite also exercises block reservations.
    let options = EncryptionOptions::default().counter_block(4);
    let store = EncryptedStore::with_options(MemoryStore::new(), ring, options);
    Fixture::new(Arc::new(store), ())
}

dream_conformance::conformance_suite!(make);
