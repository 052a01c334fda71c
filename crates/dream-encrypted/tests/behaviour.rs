//! `EncryptedStore`'s behaviour, one suite over every inner store — the
//! in-memory reference store, dream-fs, SQLite, Redis and PostgreSQL:
//! confidentiality and tamper detection through the inner store's API, the
//! reserved namespace, the write counter across reopenings, batched rotation
//! (re-keying) and dropping keys. Each test is a function of the [`Place`] that
//! opens its inner store; [`behaviour_suite!`] instantiates every test per
//! backend. Redis and PostgreSQL come from `DREAM_TEST_REDIS_URL` and
//! `DREAM_TEST_POSTGRES_URL`, each test in its own prefix or schema, destroyed
//! afterwards; without a server a test says SKIPPED and returns, unless
//! `DREAM_REQUIRE_REDIS=1` / `DREAM_REQUIRE_POSTGRES=1` makes that a failure.
//! (dream-fs's own files are looked at in `fs_behaviour.rs`.)

use std::collections::HashMap;
use std::future::Future;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dream_conformance::process::{ChildProcess, child_role};
use dream_core::testing::MemoryStore;
use dream_core::{
    Bytes, Key, Lease, LockName, Namespace, Page, Precondition, Record, RecordId, RecordStore,
    StoreError, StoreInfo, Version, Write, async_trait,
};
use dream_encrypted::envelope::{HEADER_LEN, OVERHEAD};
use dream_encrypted::{
    ConversionWatch, Direction, EncryptedStore, EncryptionError, EncryptionOptions, KeyId,
    KeyMaterial, KeyRing, RotationProgress, conversion_in_progress,
};

mod common;
#[path = "behaviour/interfering.rs"]
mod interfering;
use common::{assert_corrupt, key, material, ring1, ring12};
use interfering::{
    Interference, Interfering, rotation_never_clobbers_a_concurrent_write_or_resurrects_a_delete,
};

/// An inner store as the tests see it.
type Inner = Arc<dyn RecordStore>;

/// Where one test's inner store lives. [`Place::open`] opens it again each time,
/// as a restarted process would.
enum Place {
    Memory(Arc<MemoryStore>),
    Fs(tempfile::TempDir),
    Sqlite(tempfile::TempDir),
    Redis { url: String, prefix: String },
    Postgres { url: String, schema: String },
}

/// `None` (after saying so) when `var` names no server; a failure instead when
/// `require` is set to 1.
fn server_url(var: &str, require: &str, default: Option<&str>) -> Option<String> {
    let url = std::env::var(var).ok().or(default.map(str::to_owned));
    let required = std::env::var(require).is_ok_and(|v| v == "1");
    match url {
        Some(url) => Some(url),
        None if required => panic!("{var} is not set and {require}=1"),
        None => {
            eprintln!("\n*** SKIPPED: {var} is not set ***\n");
            None
        }
    }
}

/// A fresh random name for a prefix or schema.
fn fresh_name(kind: &str) -> String {
    let n: u64 = rand::random();
    format!("dream_enc_{kind}_{n:016x}")
}

impl Place {
    fn memory() -> Option<Place> {
        Some(Place::Memory(Arc::new(MemoryStore::new())))
    }

    fn fs() -> Option<Place> {
        Some(Place::Fs(tempfile::tempdir().expect("tempdir")))
    }

    fn sqlite() -> Option<Place> {
        Some(Place::Sqlite(tempfile::tempdir().expect("tempdir")))
    }

    fn redis() -> Option<Place> {
        let url = server_url("DREAM_TEST_REDIS_URL", "DREAM_REQUIRE_REDIS", None)?;
        Some(Place::Redis {
            url,
            prefix: fresh_name("redis"),
        })
    }

    fn postgres() -> Option<Place> {
        let url = server_url("DREAM_TEST_POSTGRES_URL", "DREAM_REQUIRE_POSTGRES", None)?;
        Some(Place::Postgres {
            url,
            schema: fresh_name("pg"),
        })
    }

    /// Opens the inner store (again).
    async fn open(&self) -> Inner {
        match self {
            Place::Memory(store) => store.clone(),
            Place::Fs(dir) => Arc::new(
                dream_fs::FsStore::open(dir.path().join("store"))
                    .await
                    .expect("open dream-fs"),
            ),
            Place::Sqlite(dir) => Arc::new(
                dream_sqlite::SqliteStore::open(dir.path().join("store.sqlite"))
                    .await
                    .expect("open SQLite"),
            ),
            Place::Redis { url, prefix } => Arc::new(self::open_redis(url, prefix).await),
            Place::Postgres { url, schema } => Arc::new(self::open_postgres(url, schema).await),
        }
    }

    /// Removes what a server-backed store left behind.
    async fn destroy(self) {
        match self {
            Place::Redis { url, prefix } => {
                open_redis(&url, &prefix)
                    .await
                    .destroy()
                    .await
                    .expect("destroy");
            }
            Place::Postgres { url, schema } => {
                open_postgres(&url, &schema)
                    .await
                    .destroy()
                    .await
                    .expect("destroy");
            }
            _ => {}
        }
    }
}

async fn open_redis(url: &str, prefix: &str) -> dream_redis::RedisStore {
    let config = dream_redis::RedisOptions::from_url(url)
        .expect("Redis URL")
        .with_prefix(prefix)
        .expect("prefix");
    dream_redis::RedisStore::open(config)
        .await
        .expect("open Redis")
}

async fn open_postgres(url: &str, schema: &str) -> dream_postgres::PostgresStore {
    let config = dream_postgres::PostgresOptions::from_url(url)
        .expect("PostgreSQL URL")
        .with_schema(schema)
        .expect("schema");
    dream_postgres::PostgresStore::open(config)
        .await
        .expect("open PostgreSQL")
}

/// Runs `test` on a fresh place from `make` on its own multi-thread runtime,
/// then destroys the place.
fn run<T, Fut>(make: fn() -> Option<Place>, test: T)
where
    T: FnOnce(Arc<Place>) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(place) = make() else { return };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let place = Arc::new(place);
        test(place.clone()).await;
        if let Ok(place) = Arc::try_unwrap(place) {
            place.destroy().await;
        }
    });
}

/// One `#[test]` per behaviour, per backend.
macro_rules! behaviour_suite {
    ($($backend:ident),* $(,)?) => {
        $(
            mod $backend {
                behaviour_suite!(@tests $backend;
                    inner_store_sees_only_ciphertext,
                    reserved_namespace_is_refused_and_hidden,
                    max_value_size_is_inner_minus_overhead,
                    every_tamper_kind_is_one_corrupt_error,
                    write_ceiling_refuses_encryption_and_persists,
                    counter_blocks_persist_across_reopen,
                    racing_instances_share_the_ceiling_exactly,
                    rotation_moves_every_record_then_the_old_key_can_go,
                    rotation_refuses_while_another_holds_the_lock_and_stops_on_corrupt_records,
                    rotation_never_clobbers_a_concurrent_write_or_resurrects_a_delete,
                    debug_and_errors_never_show_key_material,
                    rotation_renews_its_lease,
                    rotation_that_loses_its_lease_stops_and_resumes_later,
                    batches_are_encrypted_and_the_reserved_namespace_refused,
                    rotation_survives_a_restart_then_drops_the_old_key,
                    write_counter_survives_restarts,
                    plain_store_encrypted_in_place_and_back_resuming_each_way,
                );
            }
        )*
    };
    (@tests $backend:ident; $($test:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                super::run(super::Place::$backend, |p| super::$test(p));
            }
        )*
    };
}

behaviour_suite!(memory, fs, sqlite, redis, postgres);

fn ring2_only() -> KeyRing {
    KeyRing::new(KeyId::new(2), material(0x22))
}

fn encrypted(inner: &Inner, ring: KeyRing) -> EncryptedStore<Inner> {
    EncryptedStore::new(inner.clone(), ring)
}

fn with_options(inner: &Inner, ring: KeyRing, options: EncryptionOptions) -> EncryptedStore<Inner> {
    EncryptedStore::with_options(inner.clone(), ring, options)
}

fn encryption_error(err: &StoreError) -> &EncryptionError {
    EncryptionError::from_store_error(err)
        .unwrap_or_else(|| panic!("not an encryption error: {err:?}"))
}

async fn inner_store_sees_only_ciphertext(place: Arc<Place>) {
    let inner = place.open().await;
    let store = encrypted(&inner, ring1());
    let k = key("memories", "01HZZZPHRASE");
    let phrase = b"name: favourite-editor\nthe user's editor is emacs-violet-narwhal";
    let version = store
        .put(&k, Bytes::from_static(phrase), Write::absent())
        .await
        .expect("put");

    let raw = inner.get(&k).await.expect("inner get").expect("present");
    assert_eq!(raw.version, version, "versions are the inner store's");
    assert_eq!(raw.value.len(), phrase.len() + OVERHEAD);
    for needle in [&b"emacs-violet-narwhal"[..], b"favourite-editor", b"editor"] {
        assert!(
            !raw.value.windows(needle.len()).any(|w| w == needle),
            "inner store holds plaintext"
        );
    }
    let got = store.get(&k).await.expect("get").expect("present");
    assert_eq!(got.value.as_ref(), phrase);
    assert_eq!(got.version, version);
    let page = store
        .list(&k.namespace, None, 10)
        .await
        .expect("list decrypts");
    assert_eq!(page.entries.len(), 1);
    assert_eq!(page.entries[0].record.value.as_ref(), phrase);

    // Two writes of the same value never produce the same bytes (fresh nonces).
    store
        .put(&k, Bytes::from_static(phrase), Write::matches(version))
        .await
        .expect("rewrite");
    let raw2 = inner.get(&k).await.expect("inner get").expect("present");
    assert_ne!(raw2.value, raw.value);
}

async fn reserved_namespace_is_refused_and_hidden(place: Arc<Place>) {
    let inner = place.open().await;
    let store = encrypted(&inner, ring1());
    store
        .put(
            &key("memories", "a"),
            Bytes::from_static(b"x"),
            Write::any(),
        )
        .await
        .expect("put");
    let reserved = key("encryption", "key-1");
    assert!(matches!(
        store.get(&reserved).await,
        Err(StoreError::InvalidKey { .. })
    ));
    assert!(matches!(
        store
            .put(&reserved, Bytes::from_static(b"{}"), Write::any())
            .await,
        Err(StoreError::InvalidKey { .. })
    ));
    assert!(matches!(
        store.delete(&reserved, Write::any()).await,
        Err(StoreError::InvalidKey { .. })
    ));
    assert!(matches!(
        store.list(&reserved.namespace, None, 10).await,
        Err(StoreError::Unsupported { .. })
    ));
    let outer: Vec<String> = store
        .namespaces()
        .await
        .expect("namespaces")
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(outer, vec!["memories".to_owned()]);
    let mut raw: Vec<String> = inner
        .namespaces()
        .await
        .expect("namespaces")
        .into_iter()
        .map(String::from)
        .collect();
    raw.sort();
    assert_eq!(raw, vec!["encryption".to_owned(), "memories".to_owned()]);
    // The counter record is the documented plaintext JSON, with no key material.
    let counter = inner.get(&reserved).await.expect("get").expect("counter");
    assert_eq!(
        std::str::from_utf8(&counter.value).expect("utf8"),
        r#"{"format":1,"reserved":1024,"retired":false}"#
    );
}

async fn max_value_size_is_inner_minus_overhead(place: Arc<Place>) {
    let inner = place.open().await;
    let store = encrypted(&inner, ring1());
    let max = inner.info().capabilities.max_value_size - OVERHEAD;
    assert_eq!(store.info().capabilities.max_value_size, max);
    assert_eq!(
        store.info().name,
        format!("encrypted({})", inner.info().name)
    );
    let k = key("ns", "k");
    store
        .put(&k, Bytes::from(vec![7u8; max]), Write::any())
        .await
        .expect("exactly max fits");
    match store
        .put(&k, Bytes::from(vec![7u8; max + 1]), Write::any())
        .await
    {
        Err(StoreError::TooLarge { size, max: m }) => {
            assert_eq!((size, m), (max + 1, max));
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(
        store.get(&k).await.expect("get").expect("kept").value.len(),
        max
    );
}

/// Every failure kind, made by writing doctored bytes with the inner store's API.
async fn every_tamper_kind_is_one_corrupt_error(place: Arc<Place>) {
    let inner = place.open().await;
    let store = encrypted(&inner, ring12());
    let a = key("memories", "a");
    let b = key("memories", "b");
    store
        .put(&a, Bytes::from_static(b"secret body of a"), Write::any())
        .await
        .expect("put a");
    store
        .put(&b, Bytes::from_static(b"secret body of b"), Write::any())
        .await
        .expect("put b");
    let good_a = inner.get(&a).await.expect("get").expect("a").value;
    let good_b = inner.get(&b).await.expect("get").expect("b").value;

    let put_raw = |k: Key, bytes: Vec<u8>| {
        let inner = inner.clone();
        async move {
            inner
                .put(&k, Bytes::from(bytes), Write::any())
                .await
                .expect("raw put");
        }
    };

    // Wrong key: same id, other material.
    let wrong = encrypted(&inner, KeyRing::new(KeyId::new(2), material(0x99)));
    assert_corrupt(wrong.get(&a).await, &a, "wrong key");

    // A flipped bit in the ciphertext, and in the tag.
    let mut flipped = good_a.to_vec();
    flipped[HEADER_LEN + 3] ^= 0x40;
    put_raw(a.clone(), flipped).await;
    assert_corrupt(store.get(&a).await, &a, "bit flip in ciphertext");
    let mut flipped = good_a.to_vec();
    *flipped.last_mut().expect("tag") ^= 0x01;
    put_raw(a.clone(), flipped).await;
    assert_corrupt(store.get(&a).await, &a, "bit flip in tag");

    // Truncation: one byte short, into the header, and empty.
    for len in [good_a.len() - 1, HEADER_LEN + 2, 3, 0] {
        put_raw(a.clone(), good_a[..len].to_vec()).await;
        assert_corrupt(store.get(&a).await, &a, "truncation");
    }

    // Swapped records: b's envelope stored at a, and a's at b.
    put_raw(a.clone(), good_b.to_vec()).await;
    put_raw(b.clone(), good_a.to_vec()).await;
    assert_corrupt(store.get(&a).await, &a, "swapped record");
    assert_corrupt(store.get(&b).await, &b, "swapped record");
    // The same envelope under another namespace.
    let moved = key("sessions", "a");
    put_raw(moved.clone(), good_a.to_vec()).await;
    assert_corrupt(store.get(&moved).await, &moved, "moved across namespaces");

    // Edited header: key id pointed at the other key in the ring, and a nonce byte.
    let mut edited = good_a.to_vec();
    edited[8] = 1; // key 2 → key 1
    put_raw(a.clone(), edited).await;
    assert_corrupt(store.get(&a).await, &a, "header key id edited");
    let mut edited = good_a.to_vec();
    edited[HEADER_LEN - 1] ^= 0x80;
    put_raw(a.clone(), edited).await;
    assert_corrupt(store.get(&a).await, &a, "header nonce edited");
    let mut edited = good_a.to_vec();
    edited[4] = 2; // format version
    put_raw(a.clone(), edited).await;
    assert_corrupt(store.get(&a).await, &a, "format version edited");

    // Unknown key id.
    let mut unknown = good_a.to_vec();
    unknown[5..9].copy_from_slice(&77u32.to_be_bytes());
    put_raw(a.clone(), unknown).await;
    assert_corrupt(store.get(&a).await, &a, "unknown key id");

    // Wrong magic, and a plaintext value written behind the layer's back.
    let mut magic = good_a.to_vec();
    magic[0] = b'X';
    put_raw(a.clone(), magic).await;
    assert_corrupt(store.get(&a).await, &a, "wrong magic");
    put_raw(
        a.clone(),
        b"plain text that was never encrypted, long enough".to_vec(),
    )
    .await;
    assert_corrupt(store.get(&a).await, &a, "plaintext value");

    // A listing with one bad record fails naming it; the intact record still reads.
    put_raw(b.clone(), good_b.to_vec()).await;
    assert_corrupt(store.list(&a.namespace, None, 10).await, &a, "list");
    assert_eq!(
        store
            .get(&b)
            .await
            .expect("get b")
            .expect("b")
            .value
            .as_ref(),
        b"secret body of b"
    );
    // Putting the genuine bytes back makes the record readable again.
    put_raw(a.clone(), good_a.to_vec()).await;
    assert_eq!(
        store
            .get(&a)
            .await
            .expect("get a")
            .expect("a")
            .value
            .as_ref(),
        b"secret body of a"
    );
}

async fn write_ceiling_refuses_encryption_and_persists(place: Arc<Place>) {
    let inner = place.open().await;
    let options = EncryptionOptions::default()
        .write_ceiling(5)
        .counter_block(2);
    let store = with_options(&inner, ring1(), options.clone());
    for i in 0..5 {
        store
            .put(
                &key("ns", &format!("k{i}")),
                Bytes::from_static(b"v"),
                Write::any(),
            )
            .await
            .expect("within the ceiling");
    }
    let err = store
        .put(&key("ns", "k5"), Bytes::from_static(b"v"), Write::any())
        .await
        .expect_err("over the ceiling");
    assert!(!err.is_retryable());
    assert!(
        matches!(
            encryption_error(&err),
            EncryptionError::KeyExhausted { key_id, ceiling: 5 } if *key_id == KeyId::new(1)
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("rotate"), "{err}");
    assert_eq!(store.get(&key("ns", "k5")).await.expect("get"), None);
    let usage = store.key_usage(KeyId::new(1)).await.expect("usage");
    assert_eq!(usage.reserved, 5);
    assert!(!usage.retired);

    // A fresh instance (a restart, another process) sees the persisted count.
    drop(store);
    let inner = place.open().await;
    let reopened = with_options(&inner, ring1(), options.clone());
    let err = reopened
        .put(&key("ns", "k6"), Bytes::from_static(b"v"), Write::any())
        .await
        .expect_err("still exhausted after reopening");
    assert!(matches!(
        encryption_error(&err),
        EncryptionError::KeyExhausted { .. }
    ));
    // Reads still work, and rotation to a new key is the way out.
    assert!(reopened.get(&key("ns", "k0")).await.expect("get").is_some());
    // Key 2 has its own budget (rotation takes 5 of it).
    let rotated = with_options(&inner, ring12(), options.write_ceiling(6));
    let done = rotated
        .rotate(|_| ControlFlow::Continue(()))
        .await
        .expect("rotate to key 2");
    assert_eq!(done.reencrypted, 5);
    rotated
        .put(&key("ns", "k6"), Bytes::from_static(b"v"), Write::any())
        .await
        .expect("key 2 has budget");
    rotated.drop_key(KeyId::new(1)).await.expect("drop key 1");
}

async fn counter_blocks_persist_across_reopen(place: Arc<Place>) {
    let inner = place.open().await;
    let options = EncryptionOptions::default().counter_block(10);
    let first = with_options(&inner, ring1(), options.clone());
    for i in 0..3 {
        first
            .put(
                &key("ns", &format!("a{i}")),
                Bytes::from_static(b"v"),
                Write::any(),
            )
            .await
            .expect("put");
    }
    assert_eq!(
        first
            .key_usage(KeyId::new(1))
            .await
            .expect("usage")
            .reserved,
        10
    );
    drop(first);
    let inner = place.open().await;
    let second = with_options(&inner, ring1(), options);
    assert_eq!(
        second
            .key_usage(KeyId::new(1))
            .await
            .expect("usage")
            .reserved,
        10,
        "opening reserves nothing"
    );
    for i in 0..11 {
        second
            .put(
                &key("ns", &format!("b{i}")),
                Bytes::from_static(b"v"),
                Write::any(),
            )
            .await
            .expect("put");
    }
    // The first instance's 7 unused counts are never handed out again.
    assert_eq!(
        second
            .key_usage(KeyId::new(1))
            .await
            .expect("usage")
            .reserved,
        30
    );
}

/// Two instances sharing one inner store, racing until the key is exhausted:
/// every count is used exactly once and the ceiling is never passed.
async fn racing_instances_share_the_ceiling_exactly(place: Arc<Place>) {
    let inner = place.open().await;
    let options = EncryptionOptions::default()
        .write_ceiling(100)
        .counter_block(3);
    let stores = [
        Arc::new(with_options(&inner, ring1(), options.clone())),
        Arc::new(with_options(&inner, ring1(), options)),
    ];
    let mut tasks = Vec::new();
    for (s, store) in stores.iter().enumerate() {
        for t in 0..8 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let mut ok = 0u64;
                for i in 0.. {
                    let k = key("race", &format!("s{s}-t{t}-{i}"));
                    match store
                        .put(&k, Bytes::from_static(b"v"), Write::absent())
                        .await
                    {
                        Ok(_) => ok += 1,
                        Err(err) => {
                            assert!(
                                matches!(
                                    EncryptionError::from_store_error(&err),
                                    Some(EncryptionError::KeyExhausted { .. })
                                ),
                                "{err:?}"
                            );
                            break;
                        }
                    }
                }
                ok
            }));
        }
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.expect("task");
    }
    assert_eq!(total, 100);
    assert_eq!(
        stores[0]
            .key_usage(KeyId::new(1))
            .await
            .expect("usage")
            .reserved,
        100
    );
    let listed = stores[0]
        .list(&Namespace::new("race").expect("ns"), None, 1000)
        .await
        .expect("list");
    assert_eq!(listed.entries.len(), 100);
}

async fn fill(store: &EncryptedStore<Inner>, layout: &[(&str, usize)]) -> Vec<Key> {
    let mut keys = Vec::new();
    for (ns, n) in layout {
        for i in 0..*n {
            let k = key(ns, &format!("r{i:04}"));
            store
                .put(&k, Bytes::from(format!("{ns} record {i}")), Write::absent())
                .await
                .expect("put");
            keys.push(k);
        }
    }
    keys
}

async fn rotation_moves_every_record_then_the_old_key_can_go(place: Arc<Place>) {
    let inner = place.open().await;
    let old = encrypted(&inner, ring1());
    let keys = fill(&old, &[("audit", 40), ("memories", 150), ("sessions", 60)]).await;
    drop(old);

    let options = EncryptionOptions::default().rotation_batch(100);
    let store = with_options(&inner, ring12(), options.clone());
    assert_eq!(store.active_key(), KeyId::new(2));
    let err = store.drop_key(KeyId::new(1)).await.expect_err("in use");
    assert!(
        matches!(err, EncryptionError::KeyInUse { records: 250, .. }),
        "{err:?}"
    );
    assert!(matches!(
        store.drop_key(KeyId::new(2)).await,
        Err(EncryptionError::KeyActive { .. })
    ));
    assert!(matches!(
        store.drop_key(KeyId::new(9)).await,
        Err(EncryptionError::UnknownKey { .. })
    ));

    // Stop after the first page of `memories` (audit's 40 fit in one page).
    let mut seen: Vec<RotationProgress> = Vec::new();
    let partial = store
        .rotate(|p| {
            seen.push(p.clone());
            if p.namespace.as_ref().map(|n| n.as_str()) == Some("memories") {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .await
        .expect("partial rotation");
    assert!(!partial.complete);
    assert_eq!(partial.reencrypted, 140);
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].reencrypted, 40);
    assert_eq!(seen[0].namespaces_done, 1);
    let err = store
        .drop_key(KeyId::new(1))
        .await
        .expect_err("rotation has not finished");
    assert!(
        matches!(err, EncryptionError::KeyInUse { records: 110, .. }),
        "{err:?}"
    );
    // Mid-rotation every record still reads.
    for k in &keys {
        store
            .get(k)
            .await
            .expect("get mid-rotation")
            .expect("present");
    }

    // Resume: only the rest is re-encrypted.
    let mut calls = 0;
    let done = store
        .rotate(|_| {
            calls += 1;
            ControlFlow::Continue(())
        })
        .await
        .expect("resume");
    assert!(done.complete);
    assert_eq!(done.reencrypted, 110);
    assert_eq!(done.already_current, 140);
    assert_eq!(done.scanned, 250);
    assert_eq!(done.namespaces_done, 3);
    assert_eq!(
        calls, 4,
        "one report per page: audit 1, memories 2, sessions 1"
    );

    store.drop_key(KeyId::new(1)).await.expect("drop key 1");
    assert_eq!(store.key_ids(), vec![KeyId::new(2)]);
    assert!(store.key_usage(KeyId::new(1)).await.expect("usage").retired);
    for k in &keys {
        let got = store.get(k).await.expect("get").expect("present");
        let (ns, i) = (k.namespace.as_str(), &k.id.as_str()[1..]);
        assert_eq!(
            got.value,
            Bytes::from(format!("{ns} record {}", i.parse::<usize>().expect("n")))
        );
    }
    // A store holding only key 2 reads everything; one holding only key 1 nothing.
    let only2 = encrypted(&inner, ring2_only());
    for k in &keys {
        only2.get(k).await.expect("key 2 reads").expect("present");
    }
    let only1 = encrypted(&inner, ring1());
    assert_corrupt(
        only1.get(&keys[0]).await,
        &keys[0],
        "old key after rotation",
    );
    // A process still configured with key 1 active can no longer encrypt with it.
    let err = only1
        .put(&key("ns", "late"), Bytes::from_static(b"v"), Write::any())
        .await
        .expect_err("retired");
    assert!(matches!(
        encryption_error(&err),
        EncryptionError::KeyRetired { .. }
    ));
}

async fn rotation_refuses_while_another_holds_the_lock_and_stops_on_corrupt_records(
    place: Arc<Place>,
) {
    let inner = place.open().await;
    let old = encrypted(&inner, ring1());
    fill(&old, &[("memories", 3)]).await;
    let store = encrypted(&inner, ring12());

    let lock = LockName::new("encryption-rotation").expect("lock");
    let lease = inner
        .try_lease(&lock, Duration::from_secs(60))
        .await
        .expect("lease")
        .expect("free");
    let err = store
        .rotate(|_| ControlFlow::Continue(()))
        .await
        .expect_err("busy");
    assert!(
        matches!(err, EncryptionError::RotationBusy { .. }),
        "{err:?}"
    );
    assert!(inner.release(lease).await.expect("release"));

    let bad = key("memories", "r0001");
    inner
        .put(&bad, Bytes::from_static(b"garbage"), Write::any())
        .await
        .expect("raw put");
    match store.rotate(|_| ControlFlow::Continue(())).await {
        Err(EncryptionError::Store(err)) => assert_corrupt(Err::<(), _>(err), &bad, "rotation"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // The lease was released: a retry is not told the rotation is busy.
    let err = store
        .rotate(|_| ControlFlow::Continue(()))
        .await
        .expect_err("still corrupt");
    assert!(matches!(
        err,
        EncryptionError::Store(StoreError::Corrupt { .. })
    ));
    // drop_key refuses too: a record it cannot read might be under any key.
    assert!(matches!(
        store.drop_key(KeyId::new(1)).await,
        Err(EncryptionError::Store(StoreError::Corrupt { .. }))
    ));
}

async fn debug_and_errors_never_show_key_material(place: Arc<Place>) {
    let inner = place.open().await;
    let m = KeyMaterial::generate().expect("rng");
    let b64 = m.to_base64().to_string();
    let store = EncryptedStore::new(inner.clone(), KeyRing::new(KeyId::new(4), m));
    let k = key("memories", "a");
    store
        .put(&k, Bytes::from_static(b"body"), Write::any())
        .await
        .expect("put");
    let mut raw = inner
        .get(&k)
        .await
        .expect("get")
        .expect("present")
        .value
        .to_vec();
    raw[30] ^= 1;
    inner
        .put(&k, Bytes::from(raw), Write::any())
        .await
        .expect("raw put");
    let err = store.get(&k).await.expect_err("corrupt");
    let shown = format!("{store:?} {err} {err:?}");
    assert!(!shown.contains(&b64), "key material shown: {shown}");
    assert!(shown.contains("KeyId(4)"), "ids are shown: {shown}");
    assert!(!err.to_string().contains('4'), "error names no key: {err}");
}

/// Key material from an environment variable, read in a child process (tests
/// cannot set variables in their own process safely).
#[test]
fn key_from_environment_variable() {
    const VAR: &str = "DREAM_ENCRYPTED_TEST_KEY";
    const B64: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    if let Some(role) = child_role() {
        match KeyMaterial::from_env(VAR) {
            Ok(m) if role == "good" && m.to_base64().as_str() == B64 => println!("RESULT ok"),
            Err(dream_encrypted::KeyError::InvalidBase64) if role == "bad" => {
                println!("RESULT invalid")
            }
            other => println!("RESULT unexpected {}", other.is_ok()),
        }
        return;
    }
    for (role, value, want) in [
        ("good", B64, "RESULT ok"),
        ("bad", "%%%not-base64%%%", "RESULT invalid"),
    ] {
        let mut child = ChildProcess::spawn("key_from_environment_variable", role, &[(VAR, value)])
            .expect("spawn");
        let line = child
            .wait_for_line("RESULT", Duration::from_secs(60))
            .expect("child answers");
        assert!(line.ends_with(want), "{line}");
        assert!(child.wait(Duration::from_secs(60)).expect("exit").success());
    }
}

/// A rotation slower than its lease TTL keeps the lease by renewing it.
async fn rotation_renews_its_lease(place: Arc<Place>) {
    let inner = place.open().await;
    let old = encrypted(&inner, ring1());
    let keys = fill(&old, &[("memories", 8)]).await;
    let stalls = keys
        .iter()
        .map(|k| (k.clone(), Interference::Stall(Duration::from_millis(300))))
        .collect();
    // One record a page (one batch each), so the lease is renewed between them.
    let options = EncryptionOptions::default()
        .rotation_ttl(Duration::from_secs(1))
        .rotation_batch(1);
    let store = Arc::new(EncryptedStore::with_options(
        Interfering {
            inner: inner.clone(),
            actions: Mutex::new(stalls),
        },
        ring12(),
        options,
    ));
    let rotation = {
        let store = store.clone();
        tokio::spawn(async move { store.rotate(|_| ControlFlow::Continue(())).await })
    };
    // 1.5 s in (past the 1 s TTL, before the 2.4 s of stalls end) the lock is held.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let lock = LockName::new("encryption-rotation").expect("lock");
    assert!(
        inner
            .try_lease(&lock, Duration::from_secs(1))
            .await
            .expect("try_lease")
            .is_none(),
        "the rotation lease was renewed"
    );
    let done = rotation.await.expect("task").expect("rotation");
    assert!(done.complete);
    assert_eq!(done.reencrypted, 8);
}

/// A rotation stalled past its lease, whose lock another process then took,
/// stops with `LockLost`; its stalled write is refused and nothing is lost.
async fn rotation_that_loses_its_lease_stops_and_resumes_later(place: Arc<Place>) {
    let inner = place.open().await;
    let old = encrypted(&inner, ring1());
    let keys = fill(&old, &[("memories", 3)]).await;
    let stalled = keys[1].clone();
    let options = EncryptionOptions::default().rotation_ttl(Duration::from_secs(1));
    let store = Arc::new(EncryptedStore::with_options(
        Interfering {
            inner: inner.clone(),
            actions: Mutex::new(HashMap::from([(
                stalled.clone(),
                Interference::Stall(Duration::from_millis(4000)),
            )])),
        },
        ring12(),
        options.clone(),
    ));
    let rotation = {
        let store = store.clone();
        tokio::spawn(async move { store.rotate(|_| ControlFlow::Continue(())).await })
    };
    // Wait 3 × TTL, then take the expired lock as another process would.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let lock = LockName::new("encryption-rotation").expect("lock");
    let competitor = inner
        .try_lease(&lock, Duration::from_secs(60))
        .await
        .expect("try_lease")
        .expect("the stalled rotation's lease expired");
    let err = rotation.await.expect("task").expect_err("lease lost");
    assert!(
        matches!(err, EncryptionError::Store(StoreError::LockLost { .. })),
        "{err:?}"
    );
    // The page's batch was refused whole (its fence was lost before the batch
    // began): the stalled record and its page-mates are still under key 1.
    for k in &keys {
        let raw = inner.get(k).await.expect("get").expect("present");
        assert_eq!(&raw.value[5..9], &1u32.to_be_bytes(), "{k}");
    }
    assert!(inner.release(competitor).await.expect("release"));

    let again = with_options(&inner, ring12(), options);
    let done = again
        .rotate(|_| ControlFlow::Continue(()))
        .await
        .expect("resume");
    assert!(done.complete);
    assert_eq!((done.already_current, done.reencrypted), (0, 3));
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(
            again.get(k).await.expect("get").expect("present").value,
            Bytes::from(format!("memories record {i}"))
        );
    }
    again.drop_key(KeyId::new(1)).await.expect("drop key 1");
}

/// A batch is encrypted value by value; the inner store sees only ciphertext,
/// and the reserved namespace is refused before anything is written.
async fn batches_are_encrypted_and_the_reserved_namespace_refused(place: Arc<Place>) {
    use dream_core::{BatchOp, BatchOutcome};
    let inner = place.open().await;
    let store = encrypted(&inner, ring1());
    let phrase = &b"the user's editor is emacs-violet-narwhal"[..];
    let (a, b) = (key("memories", "a"), key("memories", "b"));
    let out = store
        .write_batch(
            &[
                BatchOp::put(a.clone(), phrase, Precondition::Absent),
                BatchOp::put(b.clone(), phrase, Precondition::Absent),
            ],
            None,
        )
        .await
        .expect("write_batch");
    for (k, outcome) in [(&a, out[0]), (&b, out[1])] {
        let raw = inner.get(k).await.expect("inner get").expect("present");
        assert_eq!(BatchOutcome::Put(raw.version), outcome);
        assert_eq!(raw.value.len(), phrase.len() + OVERHEAD);
        assert!(!raw.value.windows(phrase.len()).any(|w| w == phrase));
        let got = store.get(k).await.expect("get").expect("present");
        assert_eq!(got.value.as_ref(), phrase);
    }
    let raw_a = inner.get(&a).await.unwrap().unwrap().value;
    let raw_b = inner.get(&b).await.unwrap().unwrap().value;
    assert_ne!(raw_a, raw_b, "fresh nonce per value");
    let versions = store
        .list_versions(&a.namespace, None, 10)
        .await
        .expect("list_versions");
    assert_eq!(versions.entries.len(), 2);
    let reserved = key("encryption", "x");
    let err = store
        .write_batch(
            &[
                BatchOp::put(key("memories", "c"), phrase, Precondition::Any),
                BatchOp::delete(reserved.clone(), Precondition::Any),
            ],
            None,
        )
        .await
        .expect_err("reserved namespace");
    assert!(matches!(err, StoreError::InvalidKey { .. }), "{err:?}");
    assert_eq!(store.get(&key("memories", "c")).await.unwrap(), None);
    assert!(matches!(
        store.list_versions(&reserved.namespace, None, 10).await,
        Err(StoreError::Unsupported { .. })
    ));
}

async fn rotation_survives_a_restart_then_drops_the_old_key(place: Arc<Place>) {
    let mut keys = Vec::new();
    {
        let store = with_options(&place.open().await, ring1(), EncryptionOptions::default());
        for ns in ["memories", "sessions", "audit"] {
            for i in 0..12 {
                let k = key(ns, &format!("r{i:02}"));
                store
                    .put(&k, Bytes::from(format!("{k} body")), Write::absent())
                    .await
                    .expect("put");
                keys.push(k);
            }
        }
    }
    let options = EncryptionOptions::default().rotation_batch(5);
    let store = with_options(&place.open().await, ring12(), options.clone());
    // Interrupt after two pages.
    let mut pages = 0;
    let partial = store
        .rotate(|_| {
            pages += 1;
            if pages == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .await
        .expect("partial rotation");
    assert!(!partial.complete);
    assert_eq!(partial.reencrypted, 10);
    match store.drop_key(KeyId::new(1)).await {
        Err(EncryptionError::KeyInUse { records: 26, .. }) => {}
        other => panic!("dropping key 1 mid-rotation must be refused: {other:?}"),
    }
    // A restart in the middle: reopen and resume.
    drop(store);
    let store = with_options(&place.open().await, ring12(), options);
    let done = store
        .rotate(|_| ControlFlow::Continue(()))
        .await
        .expect("resume");
    assert!(done.complete);
    assert_eq!((done.reencrypted, done.already_current), (26, 10));
    store.drop_key(KeyId::new(1)).await.expect("drop key 1");
    drop(store);

    // Key 1 is gone for good: a store with only key 2 reads everything.
    let inner = place.open().await;
    let only2 = encrypted(&inner, ring2_only());
    for k in &keys {
        assert_eq!(
            only2.get(k).await.expect("get").expect("present").value,
            Bytes::from(format!("{k} body"))
        );
    }
    for k in &keys {
        let raw = inner.get(k).await.expect("get").expect("present");
        assert_eq!(&raw.value[5..9], &2u32.to_be_bytes(), "{k}");
    }
    assert!(only2.key_usage(KeyId::new(1)).await.expect("usage").retired);
}

async fn write_counter_survives_restarts(place: Arc<Place>) {
    let options = EncryptionOptions::default()
        .write_ceiling(25)
        .counter_block(10);
    let mut written = 0;
    for restart in 0..2 {
        let store = with_options(&place.open().await, ring1(), options.clone());
        for i in 0..4 {
            store
                .put(
                    &key("ns", &format!("r{restart}-{i}")),
                    Bytes::from_static(b"v"),
                    Write::any(),
                )
                .await
                .expect("put");
            written += 1;
        }
        assert_eq!(
            store
                .key_usage(KeyId::new(1))
                .await
                .expect("usage")
                .reserved,
            10 * (restart + 1),
            "each instance reserves its own block"
        );
    }
    // Third instance: counts 20..25 remain, then the ceiling.
    let store = with_options(&place.open().await, ring1(), options.clone());
    let mut ok = 0;
    let err = loop {
        match store
            .put(
                &key("ns", &format!("last-{ok}")),
                Bytes::from_static(b"v"),
                Write::any(),
            )
            .await
        {
            Ok(_) => ok += 1,
            Err(err) => break err,
        }
    };
    assert_eq!(ok, 5);
    assert!(matches!(
        EncryptionError::from_store_error(&err),
        Some(EncryptionError::KeyExhausted { ceiling: 25, .. })
    ));
    drop(store);
    let store = with_options(&place.open().await, ring1(), options);
    let err = store
        .put(&key("ns", "after"), Bytes::from_static(b"v"), Write::any())
        .await
        .expect_err("still exhausted after a restart");
    assert!(matches!(
        EncryptionError::from_store_error(&err),
        Some(EncryptionError::KeyExhausted { .. })
    ));
    assert_eq!(written + ok, 13);
}

/// `encrypt_in_place` stopped after its first page leaves a marker every opener
/// sees and reads through [`ConversionWatch`] that say "converting", never
/// ciphertext or `Corrupt`; resumed with another key it refuses; resumed with
/// the same key it finishes with every record sealed. `decrypt_in_place` does
/// the same back to the exact plaintext bytes, leaving no encryption state.
async fn plain_store_encrypted_in_place_and_back_resuming_each_way(place: Arc<Place>) {
    let inner = place.open().await;
    let mut plain = Vec::new();
    for (ns, n) in [("memories", 230), ("sessions", 3)] {
        for i in 0..n {
            let k = key(ns, &format!("r{i:04}"));
            let value = Bytes::from(format!("{ns} plaintext {i}"));
            inner
                .put(&k, value.clone(), Write::absent())
                .await
                .expect("put");
            plain.push((k, value));
        }
    }
    let options = EncryptionOptions::default().rotation_batch(100);
    let converting = |err: StoreError| {
        assert!(
            matches!(encryption_error(&err), EncryptionError::Converting),
            "{err:?}"
        );
    };
    // A reader of the plain store that opened before the conversion began.
    let plain_reader = ConversionWatch::new(inner.clone(), inner.clone(), false);
    assert_eq!(
        plain_reader
            .get(&plain[0].0)
            .await
            .expect("get")
            .expect("present")
            .value,
        plain[0].1
    );

    let store = with_options(&inner, ring1(), options.clone());
    let stopped = store
        .encrypt_in_place(|_| ControlFlow::Break(()))
        .await
        .expect("first page");
    assert!(!stopped.complete);
    assert_eq!(stopped.reencrypted, 100);
    let marker = conversion_in_progress(&*inner)
        .await
        .expect("marker")
        .expect("present");
    assert_eq!(
        (marker.to, marker.key_id),
        (Direction::Encrypted, KeyId::new(1))
    );
    converting(plain_reader.get(&plain[0].0).await.expect_err("sealed now"));
    converting(
        plain_reader
            .list(&plain[0].0.namespace, None, 10)
            .await
            .expect_err("sealed"),
    );
    assert_eq!(
        plain_reader
            .get(&plain[150].0)
            .await
            .expect("not yet")
            .expect("present")
            .value,
        plain[150].1
    );
    let enc_reader = ConversionWatch::new(encrypted(&inner, ring1()), inner.clone(), true);
    converting(
        enc_reader
            .get(&plain[150].0)
            .await
            .expect_err("still plaintext"),
    );
    match with_options(&inner, ring2_only(), options.clone())
        .encrypt_in_place(|_| ControlFlow::Continue(()))
        .await
    {
        Err(EncryptionError::ConversionKey { key_id }) => assert_eq!(key_id, KeyId::new(1)),
        other => panic!("another key must be refused: {other:?}"),
    }
    match store.decrypt_in_place(|_| ControlFlow::Continue(())).await {
        Err(EncryptionError::ConversionOtherWay {
            to: Direction::Encrypted,
        }) => {}
        other => panic!("the other way must be refused: {other:?}"),
    }
    let done = with_options(&inner, ring1(), options.clone())
        .encrypt_in_place(|_| ControlFlow::Continue(()))
        .await
        .expect("resumed");
    assert!(done.complete);
    assert_eq!(done.reencrypted, plain.len() as u64 - 100);
    assert!(
        conversion_in_progress(&*inner)
            .await
            .expect("read")
            .is_none()
    );
    for (k, value) in &plain {
        let raw = inner.get(k).await.expect("get").expect("present").value;
        assert_eq!(&raw[..4], b"DRME", "{k} sealed");
        assert_eq!(
            &enc_reader
                .get(k)
                .await
                .expect("opens")
                .expect("present")
                .value,
            value
        );
    }
    // Finished: the old plain reader still says so instead of handing ciphertext.
    converting(
        plain_reader
            .get(&plain[0].0)
            .await
            .expect_err("encrypted store"),
    );
    match store.encrypt_in_place(|_| ControlFlow::Continue(())).await {
        Err(EncryptionError::NotPlain) => {}
        other => panic!("an encrypted store is not plain: {other:?}"),
    }

    let store = with_options(&inner, ring1(), options.clone());
    let stopped = store
        .decrypt_in_place(|_| ControlFlow::Break(()))
        .await
        .expect("first page");
    assert_eq!((stopped.complete, stopped.reencrypted), (false, 100));
    converting(
        enc_reader
            .get(&plain[0].0)
            .await
            .expect_err("plaintext now"),
    );
    let done = with_options(&inner, ring1(), options.clone())
        .decrypt_in_place(|_| ControlFlow::Continue(()))
        .await
        .expect("resumed");
    assert!(done.complete);
    for (k, value) in &plain {
        assert_eq!(
            &inner.get(k).await.expect("get").expect("present").value,
            value
        );
    }
    let namespaces = inner.namespaces().await.expect("namespaces");
    assert!(
        namespaces.iter().all(|n| n.as_str() != "encryption"),
        "{namespaces:?}"
    );
    match store.decrypt_in_place(|_| ControlFlow::Continue(())).await {
        Err(EncryptionError::NotEncrypted) => {}
        other => panic!("a plain store is not encrypted: {other:?}"),
    }
}
