//! Batches against the real server, beyond the conformance suite: the schema
//! migration that adds them, a resend of one batch applies it once, racing
//! batches over the same keys in opposite orders, and a connection lost while a
//! batch waits.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::SchemaGuard;
use dream_core::{
    BatchOp, BatchOutcome, Bytes, Key, Namespace, Precondition, RecordId, RecordStore, StoreError,
    Write,
};
use dream_postgres::PostgresStore;

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

fn setup(test: &str) -> Option<(String, SchemaGuard)> {
    if !common::available(test) {
        return None;
    }
    let schema = common::fresh_schema();
    let guard = SchemaGuard::new(&schema);
    Some((schema, guard))
}

#[test]
fn a_version_1_store_migrates_to_batches() {
    let Some((schema, _guard)) = setup("a_version_1_store_migrates_to_batches") else {
        return;
    };
    let rt = runtime();
    let store = rt.block_on(common::open(&schema));
    let v1 = rt
        .block_on(store.put(&key("old"), Bytes::from_static(b"kept"), Write::any()))
        .unwrap();
    drop(store);
    // Back to what schema version 1 created.
    common::execute(&format!(
        "DROP TRIGGER notify_change ON \"{schema}\".records; \
         DROP FUNCTION \"{schema}\".notify_change; \
         DROP FUNCTION \"{schema}\".write_batch; DROP TABLE \"{schema}\".batches; \
         UPDATE \"{schema}\".meta SET schema_version = 1"
    ))
    .unwrap();
    let store = rt.block_on(common::open(&schema));
    let out = rt
        .block_on(store.write_batch(
            &[
                BatchOp::put(key("old"), &b"new"[..], Precondition::Matches(v1)),
                BatchOp::put(key("fresh"), &b"x"[..], Precondition::Absent),
            ],
            None,
        ))
        .unwrap();
    assert!(matches!(out[0], BatchOutcome::Put(v) if v > v1), "{out:?}");
    let version: i32 = common::with_client({
        let schema = schema.clone();
        move |client| {
            Box::pin(async move {
                client
                    .query_one(
                        &format!("SELECT schema_version FROM \"{schema}\".meta"),
                        &[],
                    )
                    .await
                    .unwrap()
                    .get(0)
            })
        }
    })
    .unwrap();
    assert_eq!(version, 3, "migrated through batches to change notices");
}

/// Calls the batch function directly, as a resend after a lost connection does.
fn call_batch(schema: &str, epoch: &str, write_id: &str, id: &str) -> (i32, Option<Vec<i64>>) {
    let (schema, epoch, write_id, id) = (
        schema.to_owned(),
        epoch.to_owned(),
        write_id.to_owned(),
        id.to_owned(),
    );
    common::with_client(move |client| {
        Box::pin(async move {
            let row = client
                .query_one(
                    &format!(
                        "SELECT o_status, o_outcomes FROM \"{schema}\".write_batch($1, $2, NULL, NULL, \
                         ARRAY['ns', 'ns'], ARRAY[$3, 'gone'], ARRAY['any', 'any'], \
                         ARRAY[NULL, NULL]::bigint[], ARRAY['\\x01'::bytea, NULL])"
                    ),
                    &[&epoch, &write_id, &id],
                )
                .await
                .unwrap();
            (row.get(0), row.get(1))
        })
    })
    .unwrap()
}

#[test]
fn a_resent_batch_applies_once() {
    let Some((schema, _guard)) = setup("a_resent_batch_applies_once") else {
        return;
    };
    let rt = runtime();
    let store = rt.block_on(common::open(&schema));
    rt.block_on(store.put(&key("gone"), Bytes::from_static(b"g"), Write::any()))
        .unwrap();
    let (status, first) = call_batch(&schema, store.epoch(), "w1", "x");
    assert_eq!(status, 0);
    let first = first.expect("outcomes");
    assert_eq!(first.len(), 2);
    assert_eq!(first[1], 1, "the delete removed the record");
    let record = rt.block_on(store.get(&key("x"))).unwrap().unwrap();
    assert_eq!(record.version.0 as i64, first[0]);
    // The same write id again: the stored outcomes, nothing applied twice.
    let (status, again) = call_batch(&schema, store.epoch(), "w1", "x");
    assert_eq!((status, again.as_ref()), (0, Some(&first)));
    assert_eq!(
        rt.block_on(store.get(&key("x"))).unwrap().unwrap().version,
        record.version
    );
    // A failed batch leaves no claim: its write id can still apply later.
    let (status, outcomes) = call_batch(&schema, "not the epoch", "w2", "y");
    assert_eq!((status, outcomes), (4, None));
    let (status, outcomes) = call_batch(&schema, store.epoch(), "w2", "y");
    assert_eq!(status, 0);
    assert_eq!(outcomes.map(|o| o[1]), Some(0), "already deleted");
}

#[test]
fn racing_batches_in_opposite_orders_all_apply() {
    let Some((schema, _guard)) = setup("racing_batches_in_opposite_orders_all_apply") else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        let store = Arc::new(common::open(&schema).await);
        let ids: Vec<String> = (0..20).map(|i| format!("k{i:02}")).collect();
        let tasks: Vec<_> = (0..16)
            .map(|t| {
                let store = store.clone();
                let mut ids = ids.clone();
                if t % 2 == 1 {
                    ids.reverse();
                }
                tokio::spawn(async move {
                    for round in 0..5 {
                        let ops: Vec<BatchOp> = ids
                            .iter()
                            .map(|id| {
                                BatchOp::put(
                                    key(id),
                                    Bytes::from(format!("{t}/{round}")),
                                    Precondition::Any,
                                )
                            })
                            .collect();
                        store.write_batch(&ops, None).await.expect("racing batch");
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        // Every record holds the value of one batch: the last one committed.
        let page = store
            .list(&Namespace::new("ns").unwrap(), None, 100)
            .await
            .unwrap();
        assert_eq!(page.entries.len(), ids.len());
        let first = &page.entries[0].record.value;
        assert!(page.entries.iter().all(|e| e.record.value == *first));
    });
}

/// Terminates the backends running the store's `write_batch` while it waits on
/// a row lock another connection holds; returns how many were terminated.
async fn terminate_waiting_batch(schema: &str) -> i64 {
    let pattern = format!("%\"{schema}\".write_batch(%");
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
fn a_batch_losing_its_connection_is_resolved_and_applied_once() {
    let Some((schema, _guard)) =
        setup("a_batch_losing_its_connection_is_resolved_and_applied_once")
    else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        let store: Arc<PostgresStore> = Arc::new(common::open(&schema).await);
        store
            .put(&key("k"), Bytes::from_static(b"v1"), Write::any())
            .await
            .unwrap();
        // A blocker holds the record's row lock for a while.
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
        // Unconditional operations, which a single put could not resolve: the
        // batch's write id tells that it did not commit, and it is sent again.
        let writer = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .write_batch(
                        &[
                            BatchOp::put(key("new"), &b"n"[..], Precondition::Any),
                            BatchOp::put(key("k"), &b"v2"[..], Precondition::Any),
                        ],
                        None,
                    )
                    .await
            })
        };
        assert!(
            terminate_waiting_batch(&schema).await > 0,
            "the batch never waited"
        );
        let out = writer.await.unwrap().expect("resolved and sent again");
        blocker.join().unwrap();
        let k = store.get(&key("k")).await.unwrap().unwrap();
        assert_eq!(k.value.as_ref(), b"v2");
        assert_eq!(out[1], BatchOutcome::Put(k.version));
        let new = store.get(&key("new")).await.unwrap().unwrap();
        assert_eq!(out[0], BatchOutcome::Put(new.version));
        // A conflict in a batch names its key and the current version.
        let err = store
            .write_batch(
                &[
                    BatchOp::put(key("other"), &b"o"[..], Precondition::Any),
                    BatchOp::delete(key("k"), Precondition::Absent),
                ],
                None,
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::Conflict { key: c, current: Some(v) } if *c == key("k") && *v == k.version),
            "{err:?}"
        );
        assert_eq!(store.get(&key("other")).await.unwrap(), None);
    });
}
