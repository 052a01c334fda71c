//! Leases expire by the store's clock, and two store instances on one file (as
//! two processes would hold) exclude each other and share one fence sequence.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use dream_core::{
    Bytes, Key, LockName, ManualClock, Namespace, RecordId, RecordStore, StoreError, Write,
};
use dream_sqlite::{SqliteOptions, SqliteStore};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn key(id: &str) -> Key {
    Key::new(
        Namespace::new("ns").expect("namespace"),
        RecordId::new(id).expect("id"),
    )
}

#[test]
fn lease_expiry_follows_the_injected_clock() {
    let dir = tempfile::tempdir().expect("dir");
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap());
    runtime().block_on(async {
        let store = SqliteStore::open_with(
            dir.path().join("db.sqlite"),
            SqliteOptions::new().clock(Arc::new(clock.clone())),
        )
        .await
        .expect("open");
        let lock = LockName::new("dream").expect("lock");
        let first = store
            .try_lease(&lock, Duration::from_secs(60))
            .await
            .expect("try_lease")
            .expect("free");
        clock.advance(chrono::Duration::seconds(59));
        assert!(
            store
                .try_lease(&lock, Duration::from_secs(60))
                .await
                .expect("try_lease")
                .is_none(),
            "held until its expiry"
        );
        let first = store
            .renew(&first, Duration::from_secs(60))
            .await
            .expect("renew");
        clock.advance(chrono::Duration::seconds(59));
        assert!(
            store
                .try_lease(&lock, Duration::from_secs(60))
                .await
                .expect("try_lease")
                .is_none(),
            "renew pushed the expiry out"
        );
        clock.advance(chrono::Duration::seconds(2));
        assert!(matches!(
            store.renew(&first, Duration::from_secs(60)).await,
            Err(StoreError::LockLost { .. })
        ));
        let second = store
            .try_lease(&lock, Duration::from_secs(60))
            .await
            .expect("try_lease")
            .expect("expired lease taken over");
        assert_eq!(second.token(), first.token() + 1);
        assert!(!store.release(first).await.expect("release"));
        assert!(store.release(second).await.expect("release"));
    });
}

#[test]
fn two_instances_on_one_file_exclude_each_other() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("db.sqlite");
    runtime().block_on(async {
        let a = SqliteStore::open(&path).await.expect("open a");
        let b = SqliteStore::open(&path).await.expect("open b");
        let lock = LockName::new("dream").expect("lock");
        let held = a
            .try_lease(&lock, Duration::from_secs(60))
            .await
            .expect("try_lease")
            .expect("free");
        assert!(
            b.try_lease(&lock, Duration::from_secs(60))
                .await
                .expect("try_lease")
                .is_none(),
            "the other instance sees the lease"
        );
        a.put(
            &key("k"),
            Bytes::from_static(b"a"),
            Write::any().fenced(held.fence()),
        )
        .await
        .expect("fenced put");
        assert!(b.release(held.clone()).await.expect("release from b"));
        let next = b
            .try_lease(&lock, Duration::from_secs(60))
            .await
            .expect("try_lease")
            .expect("free after release");
        assert!(next.token() > held.token(), "one fence sequence per file");
        assert!(matches!(
            a.put(
                &key("k"),
                Bytes::from_static(b"stale"),
                Write::any().fenced(held.fence())
            )
            .await,
            Err(StoreError::LockLost { .. })
        ));
        assert_eq!(
            b.get(&key("k"))
                .await
                .expect("get")
                .expect("present")
                .value
                .as_ref(),
            b"a"
        );
    });
}
