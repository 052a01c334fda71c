//! Rules of listing: `list`, `list_versions` and `namespaces`, sorted by id
//! bytes and paged by cursor.

use std::collections::BTreeSet;
use std::sync::Arc;

use dream_core::{Bytes, RecordId, RecordStore, Version, Write};

use super::{key, ns, value_of, version_of};

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
