//! Behaviour beyond the conformance suite, against the real server: the epoch
//! and schema checks, schema versions, concurrent creation, unknown outcomes
//! after a lost connection, and what errors show.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::SchemaGuard;
use dream_core::{Bytes, Key, Namespace, RecordId, RecordStore, StoreError, Write};
use dream_postgres::{PostgresOptions, PostgresStore};

fn key(id: &str) -> Key {
    Key::new(Namespace::new("ns").unwrap(), RecordId::new(id).unwrap())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

/// A fresh schema and its guard, or `None` after the skip notice.
fn setup(test: &str) -> Option<(String, SchemaGuard)> {
    if !common::available(test) {
        return None;
    }
    let schema = common::fresh_schema();
    let guard = SchemaGuard::new(&schema);
    Some((schema, guard))
}

#[test]
fn dropped_schema_is_refused_not_recreated() {
    let Some((schema, _guard)) = setup("dropped_schema_is_refused_not_recreated") else {
        return;
    };
    let rt = runtime();
    let store = rt.block_on(common::open(&schema));
    rt.block_on(store.put(&key("k"), Bytes::from_static(b"v"), Write::any()))
        .unwrap();
    common::execute(&format!("DROP SCHEMA \"{schema}\" CASCADE")).unwrap();
    for result in [
        rt.block_on(store.get(&key("k"))).map(|_| ()),
        rt.block_on(store.put(&key("k"), Bytes::from_static(b"v"), Write::any()))
            .map(|_| ()),
        rt.block_on(store.list(&Namespace::new("ns").unwrap(), None, 10))
            .map(|_| ()),
        rt.block_on(store.try_lease(
            &dream_core::LockName::new("l").unwrap(),
            Duration::from_secs(5),
        ))
        .map(|_| ()),
    ] {
        assert!(
            matches!(result, Err(StoreError::Corrupt { .. })),
            "{result:?}"
        );
    }
    // Re-created by another process: the old handle is refused by the epoch.
    let other = rt.block_on(common::open(&schema));
    let result = rt.block_on(store.put(&key("k"), Bytes::from_static(b"v"), Write::any()));
    assert!(
        matches!(result, Err(StoreError::Incompatible { .. })),
        "{result:?}"
    );
    let result = rt.block_on(store.get(&key("k")));
    assert!(
        matches!(result, Err(StoreError::Incompatible { .. })),
        "{result:?}"
    );
    // The new store is empty, and a caller remembering the old epoch is refused.
    assert_eq!(rt.block_on(other.get(&key("k"))).unwrap(), None);
    let result = rt.block_on(PostgresStore::open(
        common::config(&schema).expecting_epoch(store.epoch()),
    ));
    assert!(
        matches!(result, Err(StoreError::Incompatible { .. })),
        "{result:?}"
    );
}

#[test]
fn lost_meta_row_is_corrupt() {
    let Some((schema, _guard)) = setup("lost_meta_row_is_corrupt") else {
        return;
    };
    let rt = runtime();
    let store = rt.block_on(common::open(&schema));
    rt.block_on(store.put(&key("k"), Bytes::from_static(b"v"), Write::any()))
        .unwrap();
    common::execute(&format!("DELETE FROM \"{schema}\".meta")).unwrap();
    let result = rt.block_on(store.put(&key("k"), Bytes::from_static(b"v"), Write::any()));
    assert!(
        matches!(result, Err(StoreError::Corrupt { .. })),
        "{result:?}"
    );
    let result = rt.block_on(store.get(&key("k")));
    assert!(
        matches!(result, Err(StoreError::Corrupt { .. })),
        "{result:?}"
    );
    let result = rt.block_on(PostgresStore::open(common::config(&schema)));
    assert!(
        matches!(result, Err(StoreError::Corrupt { .. })),
        "{result:?}"
    );
    common::execute(&format!("DROP TABLE \"{schema}\".meta")).unwrap();
    let result = rt.block_on(PostgresStore::open(common::config(&schema)));
    assert!(
        matches!(result, Err(StoreError::Corrupt { .. })),
        "{result:?}"
    );
}

#[test]
fn newer_schema_version_is_incompatible() {
    let Some((schema, _guard)) = setup("newer_schema_version_is_incompatible") else {
        return;
    };
    let rt = runtime();
    let store = rt.block_on(common::open(&schema));
    drop(store);
    common::execute(&format!("UPDATE \"{schema}\".meta SET schema_version = 99")).unwrap();
    let err = rt
        .block_on(PostgresStore::open(common::config(&schema)))
        .unwrap_err();
    assert!(matches!(err, StoreError::Incompatible { .. }), "{err:?}");
    assert!(err.to_string().contains("newer"), "{err}");
}

#[test]
fn foreign_schema_and_missing_store_are_refused() {
    let Some((schema, _guard)) = setup("foreign_schema_and_missing_store_are_refused") else {
        return;
    };
    let rt = runtime();
    let err = rt
        .block_on(PostgresStore::open(
            common::config(&schema).without_create(),
        ))
        .unwrap_err();
    assert!(matches!(err, StoreError::Incompatible { .. }), "{err:?}");
    common::execute(&format!(
        "CREATE SCHEMA \"{schema}\"; CREATE TABLE \"{schema}\".other (x int)"
    ))
    .unwrap();
    let err = rt
        .block_on(PostgresStore::open(common::config(&schema)))
        .unwrap_err();
    assert!(matches!(err, StoreError::Incompatible { .. }), "{err:?}");
    common::execute(&format!(
        "DROP TABLE \"{schema}\".other; CREATE TABLE \"{schema}\".meta (x int)"
    ))
    .unwrap();
    let err = rt
        .block_on(PostgresStore::open(common::config(&schema)))
        .unwrap_err();
    assert!(matches!(err, StoreError::Incompatible { .. }), "{err:?}");
    // An empty schema someone made for the store is adopted.
    common::execute(&format!("DROP TABLE \"{schema}\".meta")).unwrap();
    let store = rt.block_on(common::open(&schema));
    rt.block_on(store.put(&key("k"), Bytes::from_static(b"v"), Write::absent()))
        .unwrap();
}

#[test]
fn concurrent_opens_create_one_store() {
    let Some((schema, _guard)) = setup("concurrent_opens_create_one_store") else {
        return;
    };
    let rt = runtime();
    let epochs = rt.block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let schema = schema.clone();
                tokio::spawn(async move {
                    PostgresStore::open(common::config(&schema).with_pool_size(1))
                        .await
                        .map(|store| store.epoch().to_owned())
                })
            })
            .collect();
        let mut epochs = Vec::new();
        for task in tasks {
            epochs.push(task.await.unwrap().expect("open"));
        }
        epochs
    });
    assert!(epochs.windows(2).all(|w| w[0] == w[1]), "{epochs:?}");
}

#[test]
fn reopening_keeps_records_versions_and_fences() {
    let Some((schema, _guard)) = setup("reopening_keeps_records_versions_and_fences") else {
        return;
    };
    let rt = runtime();
    let lock = dream_core::LockName::new("l").unwrap();
    let (version, token, epoch) = rt.block_on(async {
        let store = common::open(&schema).await;
        let version = store
            .put(&key("k"), Bytes::from_static(b"v"), Write::any())
            .await
            .unwrap();
        let lease = store
            .try_lease(&lock, Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap();
        assert!(store.release(lease.clone()).await.unwrap());
        (version, lease.token(), store.epoch().to_owned())
    });
    rt.block_on(async {
        let store = PostgresStore::open(common::config(&schema).expecting_epoch(epoch.clone()))
            .await
            .unwrap();
        let record = store.get(&key("k")).await.unwrap().unwrap();
        assert_eq!(record.version, version);
        let next = store
            .put(&key("k2"), Bytes::from_static(b"v"), Write::any())
            .await
            .unwrap();
        assert!(next > version);
        let lease = store
            .try_lease(&lock, Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap();
        assert!(lease.token() > token);
        // A released lease's fence no longer writes.
        let stale = dream_core::Fence {
            lock: lock.clone(),
            token,
        };
        let result = store
            .put(
                &key("k"),
                Bytes::from_static(b"x"),
                Write::any().fenced(stale),
            )
            .await;
        assert!(
            matches!(result, Err(StoreError::LockLost { .. })),
            "{result:?}"
        );
        let fence = lease.fence();
        assert!(store.release(lease).await.unwrap());
        let result = store
            .put(
                &key("k"),
                Bytes::from_static(b"x"),
                Write::any().fenced(fence),
            )
            .await;
        assert!(
            matches!(result, Err(StoreError::LockLost { .. })),
            "{result:?}"
        );
    });
}

/// Terminates the backends running the store's `put` while it waits on a row
/// lock another connection holds; returns how many were terminated.
async fn terminate_waiting_put(schema: &str) -> i64 {
    let pattern = format!("%\"{schema}\".put(%");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pattern = pattern.clone();
        let killed = common::with_client(move |client| {
            Box::pin(async move {
                client
                    .query_one(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                         WHERE query LIKE $1 AND wait_event_type = 'Lock'",
                        &[&pattern],
                    )
                    .await
                    .map(|row| row.get::<_, i64>(0))
                    .unwrap_or(0)
            })
        })
        .unwrap();
        if killed > 0 || Instant::now() > deadline {
            return killed;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn a_connection_lost_during_a_write_is_resolved_by_reading_back() {
    let Some((schema, _guard)) =
        setup("a_connection_lost_during_a_write_is_resolved_by_reading_back")
    else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        let store = Arc::new(common::open(&schema).await);
        let first = store
            .put(&key("k"), Bytes::from_static(b"v1"), Write::any())
            .await
            .unwrap();

        // A blocker holds the record's row lock for a while.
        let url = common::url();
        let blocker_schema = schema.clone();
        let blocker = std::thread::spawn(move || {
            let _ = url;
            common::with_client(move |client| {
                Box::pin(async move {
                    client.batch_execute("BEGIN").await.unwrap();
                    client
                        .execute(
                            &format!(
                                "SELECT 1 FROM \"{blocker_schema}\".records WHERE id = 'k' FOR UPDATE"
                            ),
                            &[],
                        )
                        .await
                        .unwrap();
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    client.batch_execute("ROLLBACK").await.unwrap();
                })
            })
            .unwrap();
        });
        tokio::time::sleep(Duration::from_millis(300)).await;

        // A Matches put whose connection dies while it waits: reading back shows
        // the record still at the required version, so it is sent again.
        let writer = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .put(&key("k"), Bytes::from_static(b"v2"), Write::matches(first))
                    .await
            })
        };
        assert!(terminate_waiting_put(&schema).await > 0, "the put never waited");
        let second = writer.await.unwrap().expect("resolved and sent again");
        assert!(second > first);
        blocker.join().unwrap();
        assert_eq!(
            store.get(&key("k")).await.unwrap().unwrap().value.as_ref(),
            b"v2"
        );

        // An unconditional put that loses its connection cannot be told apart
        // from one that committed and was overwritten: unknown, not retried.
        let blocker_schema = schema.clone();
        let blocker = std::thread::spawn(move || {
            common::with_client(move |client| {
                Box::pin(async move {
                    client.batch_execute("BEGIN").await.unwrap();
                    client
                        .execute(
                            &format!(
                                "SELECT 1 FROM \"{blocker_schema}\".records WHERE id = 'k' FOR UPDATE"
                            ),
                            &[],
                        )
                        .await
                        .unwrap();
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    client.batch_execute("ROLLBACK").await.unwrap();
                })
            })
            .unwrap();
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        let writer = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .put(&key("k"), Bytes::from_static(b"v3"), Write::any())
                    .await
            })
        };
        assert!(terminate_waiting_put(&schema).await > 0, "the put never waited");
        let err = writer.await.unwrap().expect_err("unknown outcome");
        assert!(!err.is_retryable(), "{err:?}");
        assert!(err.to_string().contains("unknown") || err.to_string().contains("could not tell"), "{err}");
        blocker.join().unwrap();
        // The store still works afterwards.
        store
            .put(&key("k"), Bytes::from_static(b"v4"), Write::any())
            .await
            .unwrap();
    });
}

#[test]
fn passwords_never_show() {
    if !common::available("passwords_never_show") {
        return;
    }
    let url = common::url();
    let Some((scheme, rest)) = url.split_once("://") else {
        return;
    };
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let secret = "pg-Pa55-NEVER-SHOWN";
    let with_password = format!("{scheme}://nosuchuser:{secret}@{rest}");
    let config = PostgresOptions::from_url(&with_password).unwrap();
    assert!(!format!("{config:?}").contains(secret));
    let rt = runtime();
    match rt.block_on(PostgresStore::open(config)) {
        Ok(store) => assert!(!format!("{store:?}").contains(secret)),
        Err(err) => {
            let shown = format!("{err} {err:?}");
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}

#[test]
fn every_commit_that_writes_from_another_handle_wakes_a_change_watcher() {
    let Some((schema, _guard)) =
        setup("every_commit_that_writes_from_another_handle_wakes_a_change_watcher")
    else {
        return;
    };
    let Some((elsewhere, _guard2)) = setup("a second schema for the change watcher") else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        let reader = common::open(&schema).await;
        let writer = common::open(&schema).await;
        let other = common::open(&elsewhere).await;
        let mut changes = reader
            .watch_changes()
            .await
            .unwrap()
            .expect("PostgreSQL notifies");
        other
            .put(&key("x"), Bytes::from_static(b"1"), Write::any())
            .await
            .unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(500), changes.changed())
                .await
                .is_err(),
            "another schema's write woke the watcher"
        );
        let v = writer
            .put(&key("k"), Bytes::from_static(b"1"), Write::absent())
            .await
            .unwrap();
        assert!(
            tokio::time::timeout(Duration::from_secs(10), changes.changed())
                .await
                .is_ok(),
            "a put wakes it"
        );
        changes.borrow_and_update();
        writer.delete(&key("k"), Write::matches(v)).await.unwrap();
        assert!(
            tokio::time::timeout(Duration::from_secs(10), changes.changed())
                .await
                .is_ok(),
            "a delete wakes it"
        );
    });
}
