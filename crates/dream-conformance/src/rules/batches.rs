//! Rules of `write_batch`: applied in order, all or nothing within the
//! atomic size, checked before anything is written.

use std::sync::Arc;

use dream_core::store::{MAX_BATCH_OPS, MAX_LIST_LIMIT};
use dream_core::{
    BatchOp, BatchOutcome, Bytes, Fence, Key, Precondition, Record, RecordStore, StoreError,
    Version, Write,
};

use super::{assert_unsupported, expired_and_taken_over, key, lock, ns, value_of, version_of};

/// What each key held, to compare a store before and after a failed batch.
async fn snapshot(store: &Arc<dyn RecordStore>, keys: &[Key]) -> Vec<Option<Record>> {
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        out.push(store.get(k).await.expect("get"));
    }
    out
}

/// Writes `ops` under `fence` and checks that the batch failed: `check` accepts
/// the error (unwrapped from `PartialBatch` on a store without atomic batches).
/// Nothing may have changed, except, after `PartialBatch`, the applied prefix,
/// which must be visible.
async fn assert_batch_fails(
    store: &Arc<dyn RecordStore>,
    ops: &[BatchOp],
    fence: Option<Fence>,
    check: impl Fn(&StoreError) -> bool,
    what: &str,
) {
    let before = snapshot(store, &batch_keys(ops)).await;
    let result = store.write_batch(ops, fence).await;
    let atomic = store.info().capabilities.is_atomic(ops);
    let (applied, err) = match result {
        Ok(outcomes) => panic!("{what}: expected an error, got {outcomes:?}"),
        Err(StoreError::PartialBatch { applied, source }) => {
            assert!(
                !atomic,
                "{what}: a store with atomic batches answered PartialBatch"
            );
            assert!(
                applied.len() < ops.len(),
                "{what}: PartialBatch applied every operation"
            );
            (applied, *source)
        }
        Err(err) => (Vec::new(), err),
    };
    assert!(check(&err), "{what}: unexpected error {err:?}");
    let after = snapshot(store, &batch_keys(ops)).await;
    for (i, op) in ops.iter().enumerate() {
        match applied.get(i) {
            None => assert_eq!(
                after[i],
                before[i],
                "{what}: operation {i} was not applied, yet {} changed",
                op.key()
            ),
            Some(BatchOutcome::Put(version)) => {
                let record = after[i].as_ref().expect("an applied put is visible");
                assert_eq!(record.version, *version, "{what}: applied put {i}");
                assert_eq!(Some(&record.value), op.value(), "{what}: applied put {i}");
            }
            Some(BatchOutcome::Delete(_)) => {
                assert_eq!(after[i], None, "{what}: applied delete {i}")
            }
        }
    }
}

fn batch_keys(ops: &[BatchOp]) -> Vec<Key> {
    ops.iter().map(|op| op.key().clone()).collect()
}

/// A batch applies its puts and deletes in order, one outcome each, with
/// versions increasing in the batch's order above every earlier version.
pub async fn batch_applies_puts_and_deletes(store: Arc<dyn RecordStore>) {
    let a = key("batch", "a");
    let b = key("batch", "b");
    let va = store
        .put(&a, Bytes::from_static(b"a0"), Write::any())
        .await
        .expect("put a");
    let vb = store
        .put(&b, Bytes::from_static(b"b0"), Write::any())
        .await
        .expect("put b");
    let ops = vec![
        BatchOp::put(key("batch", "c"), &b"c1"[..], Precondition::Absent),
        BatchOp::put(a.clone(), &b"a1"[..], Precondition::Matches(va)),
        BatchOp::delete(b.clone(), Precondition::Matches(vb)),
        BatchOp::delete(key("batch", "missing"), Precondition::Any),
        BatchOp::put(key("other", "a"), Bytes::new(), Precondition::Any),
        BatchOp::delete(key("batch", "never"), Precondition::Absent),
    ];
    let out = store.write_batch(&ops, None).await.expect("write_batch");
    assert_eq!(out.len(), ops.len(), "one outcome per operation");
    let versions: Vec<Version> = out
        .iter()
        .filter_map(|o| match o {
            BatchOutcome::Put(v) => Some(*v),
            BatchOutcome::Delete(_) => None,
        })
        .collect();
    assert_eq!(versions.len(), 3, "three puts: {out:?}");
    assert!(
        versions[0] > vb,
        "batch versions above earlier ones: {out:?}"
    );
    assert!(
        versions.windows(2).all(|w| w[1] > w[0]),
        "versions increase in order: {out:?}"
    );
    assert_eq!(out[2], BatchOutcome::Delete(true));
    assert_eq!(out[3], BatchOutcome::Delete(false));
    assert_eq!(out[5], BatchOutcome::Delete(false));
    let c = store
        .get(&key("batch", "c"))
        .await
        .expect("get")
        .expect("c");
    assert_eq!((c.value.as_ref(), c.version), (&b"c1"[..], versions[0]));
    let a1 = store.get(&a).await.expect("get").expect("a");
    assert_eq!((a1.value.as_ref(), a1.version), (&b"a1"[..], versions[1]));
    assert_eq!(store.get(&b).await.expect("get"), None, "b deleted");
    let empty = store
        .get(&key("other", "a"))
        .await
        .expect("get")
        .expect("empty value");
    assert_eq!((empty.value.len(), empty.version), (0, versions[2]));
    let later = store
        .put(&a, Bytes::from_static(b"a2"), Write::matches(versions[1]))
        .await
        .expect("CAS after the batch");
    assert!(later > versions[2], "the counter moved past the batch");
}

/// An empty batch is `Ok(vec![])` and writes nothing.
pub async fn empty_batch_is_ok(store: Arc<dyn RecordStore>) {
    assert_eq!(
        store.write_batch(&[], None).await.expect("empty batch"),
        Vec::new()
    );
    assert!(store.namespaces().await.expect("namespaces").is_empty());
}

/// One failed precondition is `Conflict` naming that key; on a store with atomic
/// batches nothing is written (otherwise the applied prefix is reported).
pub async fn batch_conflict_writes_nothing(store: Arc<dyn RecordStore>) {
    let present = key("batch", "present");
    let v = store
        .put(&present, Bytes::from_static(b"keep"), Write::any())
        .await
        .expect("put");
    for failing in [
        BatchOp::put(present.clone(), &b"new"[..], Precondition::Absent),
        BatchOp::put(
            present.clone(),
            &b"new"[..],
            Precondition::Matches(Version(v.0 + 1000)),
        ),
        BatchOp::delete(present.clone(), Precondition::Absent),
        BatchOp::put(key("batch", "gone"), &b"x"[..], Precondition::Matches(v)),
    ] {
        let expected_key = failing.key().clone();
        let ops = vec![
            BatchOp::put(key("batch", "first"), &b"1"[..], Precondition::Any),
            BatchOp::delete(key("batch", "second"), Precondition::Any),
            failing,
            BatchOp::put(key("batch", "last"), &b"3"[..], Precondition::Absent),
        ];
        assert_batch_fails(
            &store,
            &ops,
            None,
            |e| matches!(e, StoreError::Conflict { key, .. } if *key == expected_key),
            "batch with a failed precondition",
        )
        .await;
        // Clean up whatever a non-atomic store applied, for the next round.
        for k in batch_keys(&ops) {
            if k != present {
                store.delete(&k, Write::any()).await.expect("delete");
            }
        }
    }
    assert_eq!(version_of(&store, &present).await, Some(v), "present kept");
}

/// A value over `max_value_size` anywhere in a batch is `TooLarge`; nothing is written.
pub async fn batch_too_large_value_writes_nothing(store: Arc<dyn RecordStore>) {
    let max = store.info().capabilities.max_value_size;
    let ops = vec![
        BatchOp::put(key("batch", "small"), &b"x"[..], Precondition::Any),
        BatchOp::put(key("batch", "big"), vec![b'x'; max + 1], Precondition::Any),
    ];
    match store.write_batch(&ops, None).await {
        Err(StoreError::TooLarge {
            size,
            max: reported,
        }) => {
            assert_eq!((size, reported), (max + 1, max));
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(snapshot(&store, &batch_keys(&ops)).await, vec![None, None]);
}

/// More than `MAX_BATCH_OPS` operations is `InvalidBatch` and writes nothing;
/// exactly `MAX_BATCH_OPS` is accepted.
pub async fn batch_over_max_ops_is_refused(store: Arc<dyn RecordStore>) {
    let ops: Vec<BatchOp> = (0..=MAX_BATCH_OPS)
        .map(|i| {
            BatchOp::put(
                key("many", &format!("k{i:04}")),
                Bytes::from(format!("{i}")),
                Precondition::Absent,
            )
        })
        .collect();
    assert!(
        matches!(
            store.write_batch(&ops, None).await,
            Err(StoreError::InvalidBatch { .. })
        ),
        "a batch over MAX_BATCH_OPS is InvalidBatch"
    );
    assert!(
        store.namespaces().await.expect("namespaces").is_empty(),
        "nothing written"
    );
    let out = store
        .write_batch(&ops[..MAX_BATCH_OPS], None)
        .await
        .expect("a batch of exactly MAX_BATCH_OPS");
    assert_eq!(out.len(), MAX_BATCH_OPS);
    let page = store
        .list_versions(&ns("many"), None, MAX_LIST_LIMIT)
        .await
        .expect("list_versions");
    assert_eq!(page.entries.len(), MAX_BATCH_OPS.min(MAX_LIST_LIMIT));
}

/// Two operations on one key in a batch is `InvalidBatch`; nothing is written.
/// The same id in two namespaces is two keys.
pub async fn batch_duplicate_keys_are_refused(store: Arc<dyn RecordStore>) {
    let ops = vec![
        BatchOp::put(key("batch", "x"), &b"1"[..], Precondition::Any),
        BatchOp::put(key("batch", "y"), &b"2"[..], Precondition::Any),
        BatchOp::delete(key("batch", "x"), Precondition::Any),
    ];
    assert!(
        matches!(
            store.write_batch(&ops, None).await,
            Err(StoreError::InvalidBatch { .. })
        ),
        "a key twice is InvalidBatch"
    );
    assert_eq!(
        snapshot(&store, &batch_keys(&ops)).await,
        vec![None, None, None]
    );
    let ops = vec![
        BatchOp::put(key("one", "x"), &b"1"[..], Precondition::Absent),
        BatchOp::put(key("two", "x"), &b"2"[..], Precondition::Absent),
    ];
    store
        .write_batch(&ops, None)
        .await
        .expect("one id in two namespaces");
}

/// A batch under a stale or made-up fence is `LockLost` and writes nothing; under
/// the lock's newest fence it applies. Without fenced writes: `Unsupported`.
pub async fn batch_with_lost_fence_writes_nothing(store: Arc<dyn RecordStore>) {
    let ops = vec![
        BatchOp::put(key("batch", "a"), &b"1"[..], Precondition::Any),
        BatchOp::delete(key("batch", "b"), Precondition::Any),
    ];
    let made_up = Fence {
        lock: lock("never-leased"),
        token: 1,
    };
    if !store.info().capabilities.fenced_writes {
        assert_unsupported(
            store.write_batch(&ops, Some(made_up)).await,
            "fenced batch without fenced writes",
        );
        assert_eq!(value_of(&store, &key("batch", "a")).await, None);
        return;
    }
    store
        .put(&key("batch", "b"), Bytes::from_static(b"b"), Write::any())
        .await
        .expect("put b");
    assert_batch_fails(
        &store,
        &ops,
        Some(made_up),
        |e| matches!(e, StoreError::LockLost { .. }),
        "batch fenced by a lock never leased",
    )
    .await;
    if !store.info().capabilities.leases {
        return;
    }
    let l = lock("dream");
    let (stale, fresh) = expired_and_taken_over(&store, &l).await;
    assert_batch_fails(
        &store,
        &ops,
        Some(stale.fence()),
        |e| matches!(e, StoreError::LockLost { .. }),
        "batch under a stale fence",
    )
    .await;
    let out = store
        .write_batch(&ops, Some(fresh.fence()))
        .await
        .expect("batch under the newest fence");
    assert_eq!(out[1], BatchOutcome::Delete(true));
    assert_eq!(
        value_of(&store, &key("batch", "a")).await.as_deref(),
        Some(&b"1"[..])
    );
    assert!(store.release(fresh).await.expect("release"));
}

/// Racing batches of `Absent` puts over the same two keys: one batch wins both
/// (on a store with atomic batches, no other batch applied anything).
pub async fn concurrent_batches_are_isolated(store: Arc<dyn RecordStore>) {
    let (a, b) = (key("race", "a"), key("race", "b"));
    let batch = |i: usize| {
        vec![
            BatchOp::put(a.clone(), Bytes::from(format!("{i}")), Precondition::Absent),
            BatchOp::put(b.clone(), Bytes::from(format!("{i}")), Precondition::Absent),
        ]
    };
    let atomic = store.info().capabilities.is_atomic(&batch(0));
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            let ops = batch(i);
            tokio::spawn(async move { (i, store.write_batch(&ops, None).await) })
        })
        .collect();
    let mut winners = Vec::new();
    let mut partial = 0;
    for task in tasks {
        let (i, result) = task.await.expect("task");
        match result {
            Ok(out) => {
                assert_eq!(out.len(), 2);
                winners.push(i);
            }
            Err(StoreError::Conflict { .. }) => {}
            Err(StoreError::PartialBatch { applied, source })
                if !atomic && matches!(*source, StoreError::Conflict { .. }) =>
            {
                assert_eq!(applied.len(), 1, "only the first put can apply");
                partial += 1;
            }
            Err(other) => panic!("racing batch: {other:?}"),
        }
    }
    assert_eq!(
        winners.len() + partial,
        1,
        "exactly one batch applied its first put: {winners:?}"
    );
    if atomic {
        let want = Bytes::from(format!("{}", winners[0]));
        assert_eq!(value_of(&store, &a).await, Some(want.clone()));
        assert_eq!(value_of(&store, &b).await, Some(want));
    }
}

/// A value in a batch round-trips byte for byte, as through `put`.
pub async fn batch_round_trips_values(store: Arc<dyn RecordStore>) {
    let big: Vec<u8> = (0..256 * 1024).map(|i| (i * 7 % 253) as u8).collect();
    let values = [
        Bytes::new(),
        Bytes::from_static(b"\0a\0\xff\xfe\x00\x01---\n"),
        Bytes::from("héllo 🌍 日本語".as_bytes().to_vec()),
        Bytes::from(big),
    ];
    let ops: Vec<BatchOp> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            BatchOp::put(
                key("memories", &format!("v{i}")),
                v.clone(),
                Precondition::Any,
            )
        })
        .collect();
    store.write_batch(&ops, None).await.expect("write_batch");
    for (i, v) in values.iter().enumerate() {
        assert_eq!(
            value_of(&store, &key("memories", &format!("v{i}")))
                .await
                .as_ref(),
            Some(v),
            "value {i}"
        );
    }
}
