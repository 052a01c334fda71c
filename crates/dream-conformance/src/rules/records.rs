//! Rules of one record: values round-trip, preconditions hold (racing writers
//! included), versions are never reused, limits and errors are kept.

use std::sync::Arc;

use dream_core::{Bytes, RecordStore, StoreError, Version, Write};

use super::{assert_conflict, key, ns, value_of, version_of};

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
