//! The rules, one public async function each. Every rule panics with a message
//! naming what broke. A capability the store lacks is asserted to fail with
//! `Unsupported`, never skipped.
//!
//! They come in families, a file each: one record (`records.rs`), listing
//! (`listing.rs`), leases and fences (`leases.rs`), batches (`batches.rs`) and
//! the store as a whole (`store.rs`). Every rule is public here, at
//! `rules::NAME`, where [`conformance_suite!`](crate::conformance_suite) finds
//! it; the helpers below are shared by the families.

use std::sync::Arc;
use std::time::Duration;

use dream_core::{
    Bytes, Fence, Key, Lease, LockName, Namespace, RecordId, RecordStore, StoreError, Version,
    Write,
};

mod batches;
mod leases;
mod listing;
mod records;
mod store;

pub use batches::*;
pub use leases::*;
pub use listing::*;
pub use records::*;
pub use store::*;

/// Lease TTL used where a lease must expire during the rule.
pub const SHORT_TTL: Duration = Duration::from_secs(1);
/// How long rules wait for a `SHORT_TTL` lease to expire (≥ 3 × TTL).
pub const EXPIRY_WAIT: Duration = Duration::from_secs(3);
/// Lease TTL used where a lease must outlive the rule.
pub const LONG_TTL: Duration = Duration::from_secs(60);

fn ns(name: &str) -> Namespace {
    Namespace::new(name).expect("valid namespace")
}

fn key(namespace: &str, id: &str) -> Key {
    Key::new(ns(namespace), RecordId::new(id).expect("valid id"))
}

fn lock(name: &str) -> LockName {
    LockName::new(name).expect("valid lock name")
}

/// A lease on `lock` for `ttl`; `why` says why the lock must be free.
async fn take(store: &Arc<dyn RecordStore>, lock: &LockName, ttl: Duration, why: &str) -> Lease {
    store
        .try_lease(lock, ttl)
        .await
        .expect("try_lease")
        .expect(why)
}

/// Asserts that `lock` is held: `try_lease` is refused.
async fn assert_held(store: &Arc<dyn RecordStore>, lock: &LockName, what: &str) {
    let taken = store.try_lease(lock, LONG_TTL).await.expect("try_lease");
    assert!(taken.is_none(), "{what}");
}

/// A lease on `lock` left to expire, and the lease that then took the lock over.
async fn expired_and_taken_over(store: &Arc<dyn RecordStore>, lock: &LockName) -> (Lease, Lease) {
    let stale = take(store, lock, SHORT_TTL, "free").await;
    tokio::time::sleep(EXPIRY_WAIT).await;
    let fresh = take(store, lock, LONG_TTL, "expired lease is taken over").await;
    (stale, fresh)
}

async fn value_of(store: &Arc<dyn RecordStore>, key: &Key) -> Option<Bytes> {
    store.get(key).await.expect("get").map(|r| r.value)
}

async fn version_of(store: &Arc<dyn RecordStore>, key: &Key) -> Option<Version> {
    store.get(key).await.expect("get").map(|r| r.version)
}

fn assert_conflict<T: std::fmt::Debug>(
    result: Result<T, StoreError>,
    expected_current: Option<Version>,
    what: &str,
) {
    match result {
        Err(StoreError::Conflict { current, .. }) => {
            assert_eq!(
                current, expected_current,
                "{what}: Conflict reports the current version"
            )
        }
        other => panic!("{what}: expected Conflict, got {other:?}"),
    }
}

fn assert_lock_lost<T: std::fmt::Debug>(result: Result<T, StoreError>, what: &str) {
    assert!(
        matches!(result, Err(StoreError::LockLost { .. })),
        "{what}: expected LockLost, got {result:?}"
    );
}

fn assert_unsupported<T: std::fmt::Debug>(result: Result<T, StoreError>, what: &str) {
    assert!(
        matches!(result, Err(StoreError::Unsupported { .. })),
        "{what}: expected Unsupported, got {result:?}"
    );
}

/// True when the store has leases; otherwise asserts every lease call is `Unsupported`.
async fn has_leases(store: &Arc<dyn RecordStore>) -> bool {
    if store.info().capabilities.leases {
        return true;
    }
    assert_unsupported(
        store.try_lease(&lock("l"), LONG_TTL).await,
        "try_lease without leases",
    );
    let fake = dream_core::Lease::new(lock("l"), 1, "nobody".into());
    assert_unsupported(store.renew(&fake, LONG_TTL).await, "renew without leases");
    assert_unsupported(store.release(fake).await, "release without leases");
    false
}

/// True when the store has fenced writes; otherwise asserts a fenced write is `Unsupported`.
async fn has_fences(store: &Arc<dyn RecordStore>) -> bool {
    if store.info().capabilities.fenced_writes {
        return true;
    }
    let fence = Fence {
        lock: lock("l"),
        token: 1,
    };
    assert_unsupported(
        store
            .put(
                &key("ns", "k"),
                Bytes::from_static(b"x"),
                Write::any().fenced(fence),
            )
            .await,
        "fenced put",
    );
    assert_eq!(
        value_of(store, &key("ns", "k")).await,
        None,
        "an unsupported fenced put writes nothing"
    );
    false
}
