//! The rules, one public async function each. Every rule panics with a message
//! naming what broke. A capability the store lacks is asserted to fail with
//! `Unsupported`, never skipped.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use dream_core::store::{MAX_BATCH_OPS, MAX_LIST_LIMIT};
use dream_core::{
    BatchOp, BatchOutcome, Bytes, Fence, Key, LockName, Namespace, Precondition, Record, RecordId,
    RecordStore, StoreError, Version, Write,
};

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

/// Empty, 1-byte, 1 MiB, binary-with-NUL and Unicode values come back byte for byte.
pub async fn round_trips_values(store: Arc<dyn RecordStore>) {
    let big: Vec<u8> = (0..1024 * 1024).map(|i| (i * 31 % 251) as u8).collect();
    let values: Vec<(&str, Bytes)> = vec![
        ("empty", Bytes::new()),
        ("one", Bytes::from_static(b"x")),
        ("big", Bytes::from(big)),
        ("binary", Bytes::from_static(b"\0a\0\xff\xfe\x00\x01---\n")),
        (
            "unicode",
            Bytes::from("héllo 🌍 日本語 \u{200B} עברית\r\n".as_bytes().to_vec()),
        ),
    ];
    for (id, value) in values {
        let k = key("values", id);
        let version = store
            .put(&k, value.clone(), Write::any())
            .await
            .expect("put");
        let record = store.get(&k).await.expect("get").expect("present");
        assert_eq!(record.value, value, "{id} round trip");
        assert_eq!(record.version, version, "{id} version");
    }
}

/// A missing key is `Ok(None)`, and an empty namespace lists empty.
pub async fn missing_key_reads_as_absent(store: Arc<dyn RecordStore>) {
    assert_eq!(store.get(&key("ns", "nothing")).await.expect("get"), None);
    let page = store.list(&ns("ns"), None, 10).await.expect("list");
    assert!(
        page.entries.is_empty() && page.next.is_none(),
        "empty list: {page:?}"
    );
}

/// `Matches` on a missing key is a `Conflict` and writes nothing.
pub async fn matches_on_missing_key_conflicts(store: Arc<dyn RecordStore>) {
    let k = key("ns", "k");
    assert_conflict(
        store
            .put(&k, Bytes::from_static(b"x"), Write::matches(Version(1)))
            .await,
        None,
        "put Matches on missing",
    );
    assert_eq!(value_of(&store, &k).await, None);
}

/// `Absent` on a present key is a `Conflict` and leaves the value.
pub async fn absent_on_present_key_conflicts(store: Arc<dyn RecordStore>) {
    let k = key("ns", "k");
    let v1 = store
        .put(&k, Bytes::from_static(b"first"), Write::absent())
        .await
        .expect("first Absent put");
    assert_conflict(
        store
            .put(&k, Bytes::from_static(b"second"), Write::absent())
            .await,
        Some(v1),
        "second Absent put",
    );
    assert_eq!(value_of(&store, &k).await.as_deref(), Some(&b"first"[..]));
}

/// `Matches` with a stale version conflicts; with the current one it succeeds.
pub async fn matches_with_wrong_version_conflicts(store: Arc<dyn RecordStore>) {
    let k = key("ns", "k");
    let v1 = store
        .put(&k, Bytes::from_static(b"1"), Write::any())
        .await
        .expect("put");
    let v2 = store
        .put(&k, Bytes::from_static(b"2"), Write::matches(v1))
        .await
        .expect("CAS put");
    assert!(v2 > v1, "versions increase: {v1} then {v2}");
    assert_conflict(
        store
            .put(&k, Bytes::from_static(b"3"), Write::matches(v1))
            .await,
        Some(v2),
        "stale CAS",
    );
    assert_eq!(value_of(&store, &k).await.as_deref(), Some(&b"2"[..]));
}

/// Deleting a missing key is `Ok(false)` (with `Any` or `Absent`), `Matches` conflicts.
pub async fn delete_of_missing_key_is_false(store: Arc<dyn RecordStore>) {
    let k = key("ns", "gone");
    assert!(!store.delete(&k, Write::any()).await.expect("delete Any"));
    assert!(
        !store
            .delete(&k, Write::absent())
            .await
            .expect("delete Absent")
    );
    assert_conflict(
        store.delete(&k, Write::matches(Version(7))).await,
        None,
        "delete Matches on missing",
    );
}

/// Delete removes the record and honours its precondition.
pub async fn delete_removes_and_honours_preconditions(store: Arc<dyn RecordStore>) {
    let k = key("ns", "k");
    let v1 = store
        .put(&k, Bytes::from_static(b"x"), Write::any())
        .await
        .expect("put");
    assert_conflict(
        store.delete(&k, Write::matches(Version(v1.0 + 1000))).await,
        Some(v1),
        "delete with wrong version",
    );
    assert_conflict(
        store.delete(&k, Write::absent()).await,
        Some(v1),
        "delete Absent of present",
    );
    assert_eq!(
        version_of(&store, &k).await,
        Some(v1),
        "failed deletes change nothing"
    );
    assert!(store.delete(&k, Write::matches(v1)).await.expect("delete"));
    assert_eq!(store.get(&k).await.expect("get"), None);
    assert!(!store.delete(&k, Write::any()).await.expect("second delete"));
}

/// put, delete, put, then `Matches(first)` conflicts: no ABA.
pub async fn no_aba_after_delete_and_put(store: Arc<dyn RecordStore>) {
    let k = key("ns", "k");
    let first = store
        .put(&k, Bytes::from_static(b"a"), Write::any())
        .await
        .expect("put");
    assert!(store.delete(&k, Write::any()).await.expect("delete"));
    let second = store
        .put(&k, Bytes::from_static(b"a"), Write::absent())
        .await
        .expect("put again");
    assert_ne!(first, second, "a version is never reused");
    assert_conflict(
        store
            .put(&k, Bytes::from_static(b"b"), Write::matches(first))
            .await,
        Some(second),
        "ABA",
    );
}

/// Versions from a store-wide counter: each write's version is above every earlier one.
pub async fn versions_are_never_reused(store: Arc<dyn RecordStore>) {
    let mut seen = Vec::new();
    for round in 0..5 {
        for id in ["a", "b", "c"] {
            let k = key(if round % 2 == 0 { "one" } else { "two" }, id);
            seen.push(
                store
                    .put(&k, Bytes::from(format!("{round}")), Write::any())
                    .await
                    .expect("put"),
            );
            if round % 2 == 1 {
                store.delete(&k, Write::any()).await.expect("delete");
            }
        }
    }
    for pair in seen.windows(2) {
        assert!(
            pair[1] > pair[0],
            "versions strictly increase across keys: {seen:?}"
        );
    }
}

/// A value over `max_value_size` is `TooLarge`; nothing is written or replaced.
pub async fn too_large_value_is_refused_and_nothing_written(store: Arc<dyn RecordStore>) {
    let max = store.info().capabilities.max_value_size;
    let k = key("ns", "big");
    let over = Bytes::from(vec![b'x'; max + 1]);
    match store.put(&k, over.clone(), Write::any()).await {
        Err(StoreError::TooLarge {
            size,
            max: reported,
        }) => {
            assert_eq!(size, max + 1);
            assert_eq!(reported, max);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(store.get(&k).await.expect("get"), None, "nothing written");
    let v = store
        .put(&k, Bytes::from_static(b"small"), Write::any())
        .await
        .expect("small put");
    assert!(matches!(
        store.put(&k, over, Write::matches(v)).await,
        Err(StoreError::TooLarge { .. })
    ));
    assert_eq!(version_of(&store, &k).await, Some(v), "old value kept");
    assert_eq!(value_of(&store, &k).await.as_deref(), Some(&b"small"[..]));
    if max <= 32 * 1024 * 1024 {
        store
            .put(&k, Bytes::from(vec![b'y'; max]), Write::any())
            .await
            .expect("a value of exactly max bytes fits");
    }
}

/// Ids differing only in case are distinct records (or, on a case-insensitive
/// filesystem, the second is refused with `InvalidKey` and the first kept).
pub async fn ids_differing_in_case_are_distinct(store: Arc<dyn RecordStore>) {
    let lower = key("ns", "abc");
    let upper = key("ns", "ABC");
    store
        .put(&lower, Bytes::from_static(b"lower"), Write::absent())
        .await
        .expect("put lower");
    match store
        .put(&upper, Bytes::from_static(b"upper"), Write::absent())
        .await
    {
        Ok(_) => assert_eq!(
            value_of(&store, &upper).await.as_deref(),
            Some(&b"upper"[..])
        ),
        Err(StoreError::InvalidKey { .. }) => assert_eq!(value_of(&store, &upper).await, None),
        Err(other) => panic!("case-distinct id: {other:?}"),
    }
    assert_eq!(
        value_of(&store, &lower).await.as_deref(),
        Some(&b"lower"[..])
    );
}

/// `list` returns entries sorted by id bytes, in pages joined by the cursor.
pub async fn list_is_sorted_and_paginated(store: Arc<dyn RecordStore>) {
    let mut ids: Vec<String> = [
        "b", "B", "a", "a-1", "a_1", "a1", "A0", "z9", "0x", "Z", "a-", "9",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    ids.extend((0..25).map(|i| format!("k{:03}", (i * 7) % 25)));
    for id in &ids {
        store
            .put(&key("items", id), Bytes::from(id.clone()), Write::any())
            .await
            .expect("put");
    }
    store
        .put(&key("other", "a"), Bytes::from_static(b"x"), Write::any())
        .await
        .expect("put other");
    let expected: BTreeSet<Vec<u8>> = ids.iter().map(|s| s.as_bytes().to_vec()).collect();
    let mut got = Vec::new();
    let mut cursor: Option<RecordId> = None;
    let mut pages = 0;
    loop {
        let page = store
            .list(&ns("items"), cursor.as_ref(), 7)
            .await
            .expect("list");
        assert!(page.entries.len() <= 7, "page size");
        pages += 1;
        assert!(pages < 20, "pagination terminates");
        for entry in &page.entries {
            assert_eq!(
                entry.record.value.as_ref(),
                entry.id.as_str().as_bytes(),
                "entry value"
            );
            got.push(entry.id.as_str().as_bytes().to_vec());
        }
        match page.next {
            Some(next) => {
                assert_eq!(
                    Some(&next),
                    page.entries.last().map(|e| &e.id),
                    "cursor is the last id"
                );
                cursor = Some(next);
            }
            None => break,
        }
    }
    assert_eq!(
        got,
        expected.iter().cloned().collect::<Vec<_>>(),
        "all ids, once each, in byte order"
    );
    // A cursor that is not itself a stored id still works.
    let after = RecordId::new("a0").expect("valid");
    let page = store
        .list(&ns("items"), Some(&after), 1000)
        .await
        .expect("list after");
    let first = page.entries.first().map(|e| e.id.as_str().to_owned());
    assert_eq!(first.as_deref(), Some("a1"));
}

/// Limits are clamped to `1..=MAX_LIST_LIMIT`.
pub async fn list_limit_is_clamped(store: Arc<dyn RecordStore>) {
    for id in ["a", "b", "c"] {
        store
            .put(&key("ns", id), Bytes::from_static(b"x"), Write::any())
            .await
            .expect("put");
    }
    let page = store.list(&ns("ns"), None, 0).await.expect("list 0");
    assert_eq!(page.entries.len(), 1, "limit 0 is clamped to 1");
    assert!(page.next.is_some());
    let page = store
        .list(&ns("ns"), None, usize::MAX)
        .await
        .expect("list max");
    assert_eq!(page.entries.len(), 3);
    assert!(page.next.is_none());
}

/// The same id in two namespaces is two records.
pub async fn namespaces_are_isolated(store: Arc<dyn RecordStore>) {
    let a = key("alpha", "same");
    let b = key("beta", "same");
    store
        .put(&a, Bytes::from_static(b"a"), Write::any())
        .await
        .expect("put a");
    store
        .put(&b, Bytes::from_static(b"b"), Write::any())
        .await
        .expect("put b");
    let page = store.list(&ns("alpha"), None, 100).await.expect("list");
    assert_eq!(page.entries.len(), 1);
    assert_eq!(page.entries[0].record.value.as_ref(), b"a");
    assert!(store.delete(&a, Write::any()).await.expect("delete"));
    assert_eq!(value_of(&store, &b).await.as_deref(), Some(&b"b"[..]));
}

/// `namespaces()` names every namespace holding a record.
pub async fn namespaces_are_complete(store: Arc<dyn RecordStore>) {
    assert!(
        store.namespaces().await.expect("namespaces").is_empty(),
        "a fresh store has no namespaces"
    );
    for name in ["memories", "sessions", "audit"] {
        store
            .put(&key(name, "x"), Bytes::from_static(b"x"), Write::any())
            .await
            .expect("put");
    }
    let got: BTreeSet<String> = store
        .namespaces()
        .await
        .expect("namespaces")
        .into_iter()
        .map(String::from)
        .collect();
    let want: BTreeSet<String> = ["memories", "sessions", "audit"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(got, want);
}

/// 16 concurrent `Absent` puts of one key: exactly one wins.
pub async fn concurrent_absent_puts_have_one_winner(store: Arc<dyn RecordStore>) {
    let k = key("race", "k");
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            let k = k.clone();
            tokio::spawn(async move {
                (
                    i,
                    store
                        .put(&k, Bytes::from(format!("{i}")), Write::absent())
                        .await,
                )
            })
        })
        .collect();
    let mut winners = Vec::new();
    for task in tasks {
        let (i, result) = task.await.expect("task");
        match result {
            Ok(_) => winners.push(i),
            Err(StoreError::Conflict { .. }) => {}
            Err(other) => panic!("racing Absent put: {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one winner: {winners:?}");
    assert_eq!(
        value_of(&store, &k).await,
        Some(Bytes::from(format!("{}", winners[0])))
    );
}

/// 16 tasks doing compare-and-swap increments: the final count equals the successes.
pub async fn concurrent_cas_increments_lose_nothing(store: Arc<dyn RecordStore>) {
    let k = key("race", "counter");
    store
        .put(&k, Bytes::from_static(b"0"), Write::any())
        .await
        .expect("init");
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let store = store.clone();
            let k = k.clone();
            tokio::spawn(async move {
                let mut successes = 0u64;
                for _ in 0..20 {
                    let record = store.get(&k).await.expect("get").expect("present");
                    let n: u64 = std::str::from_utf8(&record.value)
                        .expect("utf8")
                        .parse()
                        .expect("number");
                    match store
                        .put(
                            &k,
                            Bytes::from((n + 1).to_string()),
                            Write::matches(record.version),
                        )
                        .await
                    {
                        Ok(_) => successes += 1,
                        Err(StoreError::Conflict { .. }) => {}
                        Err(other) => panic!("CAS increment: {other:?}"),
                    }
                }
                successes
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await.expect("task");
    }
    let value = value_of(&store, &k).await.expect("present");
    assert_eq!(
        std::str::from_utf8(&value).expect("utf8"),
        total.to_string(),
        "no lost update"
    );
    assert!(total > 0);
}

/// `try_lease` is exclusive: `None` while held; free again after release.
pub async fn lease_is_exclusive(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await {
        return;
    }
    let l = lock("dream");
    let first = store
        .try_lease(&l, LONG_TTL)
        .await
        .expect("try_lease")
        .expect("free lock");
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            let l = l.clone();
            tokio::spawn(async move { store.try_lease(&l, LONG_TTL).await })
        })
        .collect();
    for racer in racers {
        assert!(
            racer.await.expect("task").expect("try_lease").is_none(),
            "held lock is not granted again"
        );
    }
    let other = store
        .try_lease(&lock("other"), LONG_TTL)
        .await
        .expect("try_lease")
        .expect("locks are independent");
    assert!(store.release(other).await.expect("release"));
    assert!(
        store.release(first).await.expect("release"),
        "release of a held lease is true"
    );
    let again = store.try_lease(&l, LONG_TTL).await.expect("try_lease");
    assert!(again.is_some(), "released lock can be taken");
}

/// Fence tokens strictly increase per lock.
pub async fn fences_strictly_increase(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await {
        return;
    }
    let l = lock("dream");
    let mut last = 0;
    for _ in 0..5 {
        let lease = store
            .try_lease(&l, LONG_TTL)
            .await
            .expect("try_lease")
            .expect("free");
        assert!(lease.token() > last, "fence {} after {last}", lease.token());
        assert_eq!(
            lease.fence(),
            Fence {
                lock: l.clone(),
                token: lease.token()
            }
        );
        last = lease.token();
        assert!(store.release(lease).await.expect("release"));
    }
}

/// An expired lease is taken over, and the stale holder's fenced write is refused.
pub async fn expired_lease_is_taken_over_and_stale_fence_refused(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await || !has_fences(&store).await {
        return;
    }
    let l = lock("dream");
    let k = key("ns", "k");
    let stale = store
        .try_lease(&l, SHORT_TTL)
        .await
        .expect("try_lease")
        .expect("free");
    store
        .put(
            &k,
            Bytes::from_static(b"stale-ok"),
            Write::any().fenced(stale.fence()),
        )
        .await
        .expect("fenced put while held");
    tokio::time::sleep(EXPIRY_WAIT).await;
    let fresh = store
        .try_lease(&l, LONG_TTL)
        .await
        .expect("try_lease")
        .expect("expired lease is taken over");
    assert!(fresh.token() > stale.token());
    assert_lock_lost(
        store
            .put(
                &k,
                Bytes::from_static(b"stale"),
                Write::any().fenced(stale.fence()),
            )
            .await,
        "stale fenced put",
    );
    assert_eq!(
        value_of(&store, &k).await.as_deref(),
        Some(&b"stale-ok"[..]),
        "stale write changed nothing"
    );
    store
        .put(
            &k,
            Bytes::from_static(b"fresh"),
            Write::any().fenced(fresh.fence()),
        )
        .await
        .expect("fresh fenced put");
    assert_lock_lost(
        store.renew(&stale, LONG_TTL).await,
        "renew by the stale holder",
    );
    assert!(
        !store.release(stale).await.expect("release stale"),
        "stale release is false"
    );
    assert!(
        store
            .try_lease(&l, LONG_TTL)
            .await
            .expect("try_lease")
            .is_none(),
        "the stale release freed nothing"
    );
    assert!(store.release(fresh).await.expect("release fresh"));
}

/// Renew after expiry is `LockLost`, even if nobody took the lock.
pub async fn renew_after_expiry_is_lock_lost(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await {
        return;
    }
    let l = lock("dream");
    let lease = store
        .try_lease(&l, SHORT_TTL)
        .await
        .expect("try_lease")
        .expect("free");
    tokio::time::sleep(EXPIRY_WAIT).await;
    assert_lock_lost(store.renew(&lease, LONG_TTL).await, "renew after expiry");
    assert!(
        store
            .try_lease(&l, LONG_TTL)
            .await
            .expect("try_lease")
            .is_some(),
        "an expired lock is free"
    );
}

/// Renew keeps the fence and pushes the expiry out.
pub async fn renew_keeps_the_fence_and_extends(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await {
        return;
    }
    let l = lock("dream");
    let lease = store
        .try_lease(&l, SHORT_TTL)
        .await
        .expect("try_lease")
        .expect("free");
    let renewed = store.renew(&lease, LONG_TTL).await.expect("renew");
    assert_eq!(renewed.token(), lease.token(), "renew keeps the fence");
    tokio::time::sleep(EXPIRY_WAIT).await;
    assert!(
        store
            .try_lease(&l, LONG_TTL)
            .await
            .expect("try_lease")
            .is_none(),
        "renewed lease still held"
    );
    if store.info().capabilities.fenced_writes {
        store
            .put(
                &key("ns", "k"),
                Bytes::from_static(b"x"),
                Write::any().fenced(renewed.fence()),
            )
            .await
            .expect("fenced put");
    }
    let again = store.renew(&renewed, LONG_TTL).await.expect("renew again");
    assert!(store.release(again).await.expect("release"));
}

/// `release` is true while held, false once lost (expired, or taken by another).
pub async fn release_reports_whether_still_held(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await {
        return;
    }
    let l = lock("dream");
    let expired = store
        .try_lease(&l, SHORT_TTL)
        .await
        .expect("try_lease")
        .expect("free");
    tokio::time::sleep(EXPIRY_WAIT).await;
    assert!(
        !store.release(expired).await.expect("release expired"),
        "expired lease: release is false"
    );
    let first = store
        .try_lease(&l, SHORT_TTL)
        .await
        .expect("try_lease")
        .expect("free");
    tokio::time::sleep(EXPIRY_WAIT).await;
    let second = store
        .try_lease(&l, LONG_TTL)
        .await
        .expect("try_lease")
        .expect("free after expiry");
    assert!(
        !store.release(first).await.expect("release lost"),
        "taken-over lease: release is false"
    );
    assert!(
        store
            .try_lease(&l, LONG_TTL)
            .await
            .expect("try_lease")
            .is_none(),
        "second still holds it"
    );
    assert!(store.release(second).await.expect("release"));
}

/// A fenced delete by a stale holder is `LockLost` and deletes nothing.
pub async fn fenced_delete_is_checked(store: Arc<dyn RecordStore>) {
    if !has_leases(&store).await || !has_fences(&store).await {
        return;
    }
    let l = lock("dream");
    let k = key("ns", "k");
    store
        .put(&k, Bytes::from_static(b"x"), Write::any())
        .await
        .expect("put");
    let stale = store
        .try_lease(&l, SHORT_TTL)
        .await
        .expect("try_lease")
        .expect("free");
    tokio::time::sleep(EXPIRY_WAIT).await;
    let fresh = store
        .try_lease(&l, LONG_TTL)
        .await
        .expect("try_lease")
        .expect("free");
    assert_lock_lost(
        store.delete(&k, Write::any().fenced(stale.fence())).await,
        "stale fenced delete",
    );
    assert!(value_of(&store, &k).await.is_some(), "nothing deleted");
    assert!(
        store
            .delete(&k, Write::any().fenced(fresh.fence()))
            .await
            .expect("fresh fenced delete")
    );
}

/// A fence for a lock never leased, or with a made-up token, is refused.
pub async fn fence_for_unknown_lock_is_refused(store: Arc<dyn RecordStore>) {
    if !has_fences(&store).await {
        return;
    }
    let k = key("ns", "k");
    let made_up = Fence {
        lock: lock("never-leased"),
        token: 1,
    };
    assert_lock_lost(
        store
            .put(&k, Bytes::from_static(b"x"), Write::any().fenced(made_up))
            .await,
        "fence of unknown lock",
    );
    assert_eq!(store.get(&k).await.expect("get"), None);
    if store.info().capabilities.leases {
        let lease = store
            .try_lease(&lock("real"), LONG_TTL)
            .await
            .expect("try_lease")
            .expect("free");
        let future = Fence {
            lock: lease.lock().clone(),
            token: lease.token() + 1,
        };
        assert_lock_lost(
            store
                .put(&k, Bytes::from_static(b"x"), Write::absent().fenced(future))
                .await,
            "future token",
        );
        assert_eq!(store.get(&k).await.expect("get"), None);
        assert!(store.release(lease).await.expect("release"));
    }
}

/// Error messages name keys and sizes, never values.
pub async fn errors_never_display_values(store: Arc<dyn RecordStore>) {
    let secret = "sk-conformance-SECRET-value-0123456789";
    let k = key("ns", "k");
    store
        .put(&k, Bytes::from(secret), Write::any())
        .await
        .expect("put");
    let err = store
        .put(&k, Bytes::from(secret), Write::absent())
        .await
        .expect_err("conflict");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(secret), "error shows the value: {shown}");
    assert!(
        shown.contains("ns/k") || shown.contains("\"k\"") || shown.contains("(k)"),
        "error names the key: {shown}"
    );
}

/// `info()` is stable and sane.
pub async fn info_is_consistent(store: Arc<dyn RecordStore>) {
    let info = store.info();
    assert!(!info.name.is_empty());
    assert_eq!(info, store.info());
    assert!(
        info.capabilities.max_value_size >= 1024 * 1024,
        "stores accept at least 1 MiB"
    );
    if info.capabilities.fenced_writes {
        assert!(info.capabilities.leases, "fences come from leases");
    }
    let _ = Precondition::Any;
}

/// What each key held, to compare a store before and after a failed batch.
async fn snapshot(store: &Arc<dyn RecordStore>, keys: &[Key]) -> Vec<Option<Record>> {
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        out.push(store.get(k).await.expect("get"));
    }
    out
}

/// Checks a failed batch: `check` accepts the error (unwrapped from
/// `PartialBatch` on a store without atomic batches). Nothing may have changed,
/// except, after `PartialBatch`, the applied prefix, which must be visible.
async fn assert_batch_failed(
    store: &Arc<dyn RecordStore>,
    ops: &[BatchOp],
    before: &[Option<Record>],
    result: Result<Vec<BatchOutcome>, StoreError>,
    check: impl Fn(&StoreError) -> bool,
    what: &str,
) {
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
    let after = snapshot(
        store,
        &ops.iter().map(|op| op.key().clone()).collect::<Vec<_>>(),
    )
    .await;
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
        let before = snapshot(&store, &batch_keys(&ops)).await;
        let result = store.write_batch(&ops, None).await;
        assert_batch_failed(
            &store,
            &ops,
            &before,
            result,
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
    let before = snapshot(&store, &batch_keys(&ops)).await;
    let result = store.write_batch(&ops, Some(made_up)).await;
    assert_batch_failed(
        &store,
        &ops,
        &before,
        result,
        |e| matches!(e, StoreError::LockLost { .. }),
        "batch fenced by a lock never leased",
    )
    .await;
    if !store.info().capabilities.leases {
        return;
    }
    let l = lock("dream");
    let stale = store
        .try_lease(&l, SHORT_TTL)
        .await
        .expect("try_lease")
        .expect("free");
    tokio::time::sleep(EXPIRY_WAIT).await;
    let fresh = store
        .try_lease(&l, LONG_TTL)
        .await
        .expect("try_lease")
        .expect("expired lease is taken over");
    let before = snapshot(&store, &batch_keys(&ops)).await;
    let result = store.write_batch(&ops, Some(stale.fence())).await;
    assert_batch_failed(
        &store,
        &ops,
        &before,
        result,
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

/// `list_versions` lists the same ids as `list`, sorted by id bytes, with the
/// same versions and the same cursors.
pub async fn list_versions_matches_list(store: Arc<dyn RecordStore>) {
    let mut ids: Vec<String> = [
        "b", "B", "a", "a-1", "a_1", "a1", "A0", "z9", "0x", "Z", "9",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    ids.extend((0..20).map(|i| format!("k{:03}", (i * 7) % 20)));
    for id in &ids {
        store
            .put(&key("items", id), Bytes::from(id.clone()), Write::any())
            .await
            .expect("put");
    }
    for ns_name in ["items", "memories"] {
        store
            .put(
                &key(ns_name, "gone"),
                Bytes::from_static(b"x"),
                Write::any(),
            )
            .await
            .expect("put");
        store
            .delete(&key(ns_name, "gone"), Write::any())
            .await
            .expect("delete");
    }
    store
        .put(&key("other", "a"), Bytes::from_static(b"x"), Write::any())
        .await
        .expect("put other");
    let expected: Vec<Vec<u8>> = ids
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    for limit in [1, 7, 1000] {
        let mut got = Vec::new();
        let mut cursor: Option<RecordId> = None;
        let mut pages = 0;
        loop {
            let versions = store
                .list_versions(&ns("items"), cursor.as_ref(), limit)
                .await
                .expect("list_versions");
            let page = store
                .list(&ns("items"), cursor.as_ref(), limit)
                .await
                .expect("list");
            assert!(versions.entries.len() <= limit, "page size");
            pages += 1;
            assert!(pages <= ids.len() + 1, "pagination terminates");
            let listed: Vec<(RecordId, Version)> = page
                .entries
                .iter()
                .map(|e| (e.id.clone(), e.record.version))
                .collect();
            let versioned: Vec<(RecordId, Version)> = versions
                .entries
                .iter()
                .map(|e| (e.id.clone(), e.version))
                .collect();
            assert_eq!(versioned, listed, "list_versions agrees with list");
            assert_eq!(versions.next, page.next, "the same cursor as list");
            for (id, _) in &versioned {
                got.push(id.as_str().as_bytes().to_vec());
            }
            match versions.next {
                Some(next) => {
                    assert_eq!(Some(&next), versions.entries.last().map(|e| &e.id));
                    cursor = Some(next);
                }
                None => break,
            }
        }
        assert_eq!(
            got, expected,
            "all ids, once each, in byte order (limit {limit})"
        );
    }
    let after = RecordId::new("a0").expect("valid");
    let page = store
        .list_versions(&ns("items"), Some(&after), 1)
        .await
        .expect("list_versions after");
    assert_eq!(page.entries.first().map(|e| e.id.as_str()), Some("a1"));
    let v = version_of(&store, &key("items", "a1")).await;
    assert_eq!(page.entries.first().map(|e| e.version), v);
    let empty = store
        .list_versions(&ns("memories"), None, 10)
        .await
        .expect("list_versions of an emptied namespace");
    assert!(
        empty.entries.is_empty() && empty.next.is_none(),
        "{empty:?}"
    );
    let none = store
        .list_versions(&ns("nothing"), None, 10)
        .await
        .expect("list_versions of a missing namespace");
    assert!(none.entries.is_empty() && none.next.is_none());
}

/// `list_versions` clamps its limit like `list` and sees new versions at once.
pub async fn list_versions_limit_is_clamped_and_fresh(store: Arc<dyn RecordStore>) {
    for id in ["a", "b", "c"] {
        store
            .put(&key("ns", id), Bytes::from_static(b"x"), Write::any())
            .await
            .expect("put");
    }
    let page = store
        .list_versions(&ns("ns"), None, 0)
        .await
        .expect("limit 0");
    assert_eq!(page.entries.len(), 1, "limit 0 is clamped to 1");
    assert!(page.next.is_some());
    let page = store
        .list_versions(&ns("ns"), None, usize::MAX)
        .await
        .expect("limit max");
    assert_eq!(page.entries.len(), 3);
    assert!(page.next.is_none());
    let v = store
        .put(&key("ns", "b"), Bytes::from_static(b"y"), Write::any())
        .await
        .expect("put");
    let page = store
        .list_versions(&ns("ns"), None, 10)
        .await
        .expect("list_versions");
    assert_eq!(page.entries[1].version, v, "a new version is listed");
}

/// `compact` keeps every live record with its value and version, and a deleted
/// or overwritten value stays gone; the store works as before afterwards.
pub async fn compact_keeps_live_records_and_drops_removed_ones(store: Arc<dyn RecordStore>) {
    store.compact().await.expect("compact an empty store");
    let kept = key("compact", "kept");
    let replaced = key("compact", "replaced");
    let removed = key("compact", "removed");
    store
        .put(&kept, Bytes::from_static(b"still here"), Write::any())
        .await
        .expect("put kept");
    store
        .put(&replaced, Bytes::from_static(b"old value"), Write::any())
        .await
        .expect("put replaced");
    store
        .put(&replaced, Bytes::from_static(b"new value"), Write::any())
        .await
        .expect("overwrite replaced");
    store
        .put(&removed, Bytes::from_static(b"forget me"), Write::any())
        .await
        .expect("put removed");
    assert!(
        store.delete(&removed, Write::any()).await.expect("delete"),
        "the record was there"
    );
    let before_kept = store.get(&kept).await.expect("get").expect("kept");
    let before_replaced = store.get(&replaced).await.expect("get").expect("replaced");
    store.compact().await.expect("compact");
    assert_eq!(
        store.get(&kept).await.expect("get"),
        Some(before_kept.clone()),
        "compact keeps a live record's value and version"
    );
    assert_eq!(
        store.get(&replaced).await.expect("get"),
        Some(before_replaced),
        "compact keeps the newest value of an overwritten record"
    );
    assert_eq!(
        store.get(&removed).await.expect("get"),
        None,
        "a deleted record stays deleted"
    );
    let next = store
        .put(
            &kept,
            Bytes::from_static(b"after"),
            Write::matches(before_kept.version),
        )
        .await
        .expect("a write after compact");
    assert!(next > before_kept.version, "versions keep increasing");
}
