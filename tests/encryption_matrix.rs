//! Encryption over every backend: the conformance suite on `EncryptedStore` over
//! dream-fs, dream-sqlite, dream-redis and dream-postgres (the in-memory store and dream-fs are
//! also covered inside dream-encrypted). Backends never depend on each other, so
//! the matrix lives here, at the root.

use std::sync::Arc;

use dream::conformance::Fixture;
use dream::encrypted::{EncryptedStore, KeyId, KeyMaterial, KeyRing};

fn ring() -> KeyRing {
    KeyRing::new(
        KeyId::new(7),
        KeyMaterial::from_bytes(&[0x5a; 32]).expect("32-byte key"),
    )
}

mod fs {
    use super::*;

    async fn make() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let inner = dream::fs::FsStore::open(dir.path().join("store"))
            .await
            .expect("open fs");
        Fixture::new(Arc::new(EncryptedStore::new(inner, ring())), dir)
    }

    dream::conformance::conformance_suite!(make);
}

mod sqlite {
    use super::*;

    async fn make() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let inner = dream::sqlite::SqliteStore::open(dir.path().join("dream.db"))
            .await
            .expect("open sqlite");
        Fixture::new(Arc::new(EncryptedStore::new(inner, ring())), dir)
    }

    dream::conformance::conformance_suite!(make);
}

#[path = "../crates/dream-redis/tests/common/mod.rs"]
mod redis_common;

mod redis {
    use super::*;

    async fn make() -> Fixture {
        let redis = tokio::task::spawn_blocking(|| {
            redis_common::redis_or_skip("the encrypted Redis matrix")
        })
        .await
        .expect("start Redis");
        let Some(redis) = redis else {
            // Nothing to test and the macro cannot skip: end after the loud notice.
            std::process::exit(0);
        };
        let prefix = redis_common::fresh_prefix();
        let inner = redis_common::open(&redis.url, &prefix).await;
        Fixture::new(
            Arc::new(EncryptedStore::new(inner, ring())),
            (redis_common::PrefixGuard::new(&redis.url, &prefix), redis),
        )
    }

    dream::conformance::conformance_suite!(make);
}

#[path = "../crates/dream-postgres/tests/common/mod.rs"]
mod postgres_common;

mod postgres {
    use super::*;

    async fn make() -> Fixture {
        let up = tokio::task::spawn_blocking(|| {
            postgres_common::available("the encrypted PostgreSQL matrix")
        })
        .await
        .expect("probe PostgreSQL");
        if !up {
            // Nothing to test and the macro cannot skip: end after the loud notice.
            std::process::exit(0);
        }
        let schema = postgres_common::fresh_schema();
        let guard = postgres_common::SchemaGuard::new(&schema);
        let inner = postgres_common::open(&schema).await;
        Fixture::new(Arc::new(EncryptedStore::new(inner, ring())), guard)
    }

    dream::conformance::conformance_suite!(make);
}
