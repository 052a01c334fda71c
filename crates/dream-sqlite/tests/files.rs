//! The database file: created private, reopened intact, and every hostile or
//! foreign file refused with a typed error and left byte for byte as it was.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dream_core::{Bytes, Key, Namespace, RecordId, RecordStore, StoreError, Write};
use dream_sqlite::rusqlite::Connection;
use dream_sqlite::{Durability, SCHEMA_VERSION, SqliteOptions, SqliteStore};

fn key(ns: &str, id: &str) -> Key {
    Key::new(
        Namespace::new(ns).expect("namespace"),
        RecordId::new(id).expect("id"),
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Opens `path` and expects a refusal; returns the error.
fn open_refused(path: &Path) -> StoreError {
    runtime().block_on(async {
        match SqliteStore::open(path).await {
            Ok(store) => panic!("opened a file that must be refused: {store:?}"),
            Err(err) => err,
        }
    })
}

fn assert_incompatible(err: &StoreError, what: &str) {
    assert!(
        matches!(err, StoreError::Incompatible { .. }),
        "{what}: expected Incompatible, got {err:?}"
    );
}

fn assert_corrupt_or_incompatible(err: &StoreError, what: &str) {
    assert!(
        matches!(
            err,
            StoreError::Corrupt { .. } | StoreError::Incompatible { .. }
        ),
        "{what}: expected Corrupt or Incompatible, got {err:?}"
    );
}

/// Refused, and neither the file nor its absent sidecars changed.
fn assert_refused_untouched(path: &Path, what: &str) -> StoreError {
    let before = std::fs::read(path).expect("read before");
    let mode_before = mode(path);
    let err = open_refused(path);
    assert_eq!(
        std::fs::read(path).expect("read after"),
        before,
        "{what}: file changed"
    );
    assert_eq!(mode(path), mode_before, "{what}: mode changed");
    for suffix in ["-wal", "-shm", "-journal"] {
        assert!(
            !sidecar(path, suffix).exists(),
            "{what}: SQLite created {suffix}"
        );
    }
    err
}

/// A Dream store with some records, closed so that everything is in the main file.
fn make_store(path: &Path, records: usize, size: usize) {
    runtime().block_on(async {
        let store = SqliteStore::open(path).await.expect("open");
        for i in 0..records {
            store
                .put(
                    &key("items", &format!("r{i:04}")),
                    Bytes::from(vec![(i % 251) as u8; size]),
                    Write::any(),
                )
                .await
                .expect("put");
        }
        store.close().await.expect("close");
    });
    assert!(
        !sidecar(path, "-wal").exists(),
        "closing the last connection checkpoints and removes the WAL"
    );
}

#[test]
fn new_file_and_its_sidecars_are_private() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dream.sqlite");
    runtime().block_on(async {
        let store = SqliteStore::open(&path).await.expect("open");
        store
            .put(&key("ns", "k"), Bytes::from_static(b"v"), Write::any())
            .await
            .expect("put");
        assert_eq!(mode(&path), 0o600, "database file");
        for suffix in ["-wal", "-shm"] {
            let side = sidecar(&path, suffix);
            assert!(side.exists(), "{suffix} exists while open");
            assert_eq!(mode(&side), 0o600, "{suffix} file");
        }
        store.close().await.expect("close");
    });
}

#[test]
fn reopen_keeps_records_and_never_reuses_versions() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dream.sqlite");
    let rt = runtime();
    let (va, vb) = rt.block_on(async {
        let store = SqliteStore::open(&path).await.expect("open");
        let va = store
            .put(&key("ns", "a"), Bytes::from_static(b"alpha"), Write::any())
            .await
            .expect("put a");
        let vb = store
            .put(
                &key("ns", "b"),
                Bytes::from_static(b"beta"),
                Write::absent(),
            )
            .await
            .expect("put b");
        assert!(
            store
                .delete(&key("ns", "b"), Write::matches(vb))
                .await
                .expect("delete b")
        );
        store.close().await.expect("close");
        (va, vb)
    });
    rt.block_on(async {
        let store = SqliteStore::open(&path).await.expect("reopen");
        let a = store.get(&key("ns", "a")).await.expect("get").expect("a");
        assert_eq!(a.value.as_ref(), b"alpha");
        assert_eq!(a.version, va);
        assert_eq!(store.get(&key("ns", "b")).await.expect("get"), None);
        let again = store
            .put(
                &key("ns", "b"),
                Bytes::from_static(b"beta"),
                Write::absent(),
            )
            .await
            .expect("put b again");
        assert!(
            again > vb,
            "the deleted record's version is not reused after reopen"
        );
        store.check_integrity().await.expect("integrity");
    });
}

#[test]
fn existing_empty_file_is_initialised() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dream.sqlite");
    std::fs::write(&path, b"").expect("empty file");
    runtime().block_on(async {
        let store = SqliteStore::open(&path).await.expect("open empty file");
        store
            .put(&key("ns", "k"), Bytes::from_static(b"v"), Write::any())
            .await
            .expect("put");
    });
}

#[test]
fn garbage_file_is_incompatible_and_untouched() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dream.sqlite");
    let garbage: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&path, &garbage).expect("write garbage");
    let err = assert_refused_untouched(&path, "garbage");
    assert_incompatible(&err, "garbage");
    assert!(
        !err.to_string().contains("\u{0}"),
        "message is readable: {err}"
    );

    std::fs::write(&path, b"# my notes\nremember the milk\n").expect("write text");
    let err = assert_refused_untouched(&path, "text file");
    assert_incompatible(&err, "text file");
}

#[test]
fn truncated_header_is_refused_and_untouched() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dream.sqlite");
    std::fs::write(&path, b"SQLite for").expect("write");
    let err = assert_refused_untouched(&path, "truncated header");
    assert_corrupt_or_incompatible(&err, "truncated header");
}

/// The value record `i` of [`make_store`] holds.
fn made_value(i: usize, size: usize) -> Vec<u8> {
    vec![(i % 251) as u8; size]
}

/// `Corrupt`, or what `check` says is right; never anything else.
fn corrupt_or<T: std::fmt::Debug>(
    read: Result<T, StoreError>,
    what: &str,
    check: impl FnOnce(&T) -> bool,
) {
    match read {
        Err(StoreError::Corrupt { .. }) => {}
        Ok(value) => assert!(check(&value), "{what}: wrong data read: {value:?}"),
        Err(err) => panic!("{what}: expected Corrupt or the right data, got {err:?}"),
    }
}

/// A damaged store made by [`make_store`]: its open is refused with `Corrupt`,
/// or it opens and every read gives `Corrupt` or the records as written (never
/// other bytes, never a record missing) while every write is refused with
/// `Corrupt`. Either way the file is left byte for byte as it was, its
/// sidecars gone once the store is closed.
fn assert_damage_never_misread_nor_written(path: &Path, records: usize, size: usize, what: &str) {
    let before = std::fs::read(path).expect("read before");
    runtime().block_on(async {
        let store = match SqliteStore::open(path).await {
            Err(StoreError::Corrupt { .. }) => return,
            Err(err) => panic!("{what}: open: expected Corrupt or a store, got {err:?}"),
            Ok(store) => store,
        };
        let items = Namespace::new("items").expect("ns");
        for i in 0..records {
            let read = store.get(&key("items", &format!("r{i:04}"))).await;
            corrupt_or(read, what, |r| {
                r.as_ref()
                    .is_some_and(|r| r.value[..] == made_value(i, size)[..])
            });
        }
        let mut listed = 0usize;
        let mut after: Option<RecordId> = None;
        loop {
            let page = match store.list(&items, after.as_ref(), 50).await {
                Ok(page) => page,
                Err(err) => break corrupt_or::<()>(Err(err), what, |_| true),
            };
            for entry in &page.entries {
                assert_eq!(entry.id.as_str(), format!("r{listed:04}"), "{what}: list");
                assert_eq!(
                    entry.record.value[..],
                    made_value(listed, size)[..],
                    "{what}"
                );
                listed += 1;
            }
            match page.next {
                Some(next) => after = Some(next),
                None => {
                    assert_eq!(listed, records, "{what}: a listing missed records");
                    break;
                }
            }
        }
        let versions = store.list_versions(&items, None, records).await;
        corrupt_or(versions, what, |page| {
            page.entries.len() == records
                && (page.entries.iter().enumerate())
                    .all(|(i, e)| e.id.as_str() == format!("r{i:04}"))
        });
        corrupt_or(store.namespaces().await, what, |ns| {
            ns == std::slice::from_ref(&items)
        });

        let value = || Bytes::from_static(b"new");
        let refusals = [
            store
                .put(&key("items", "new"), value(), Write::any())
                .await
                .err(),
            store
                .put(&key("items", "r0000"), value(), Write::any())
                .await
                .err(),
            store
                .delete(&key("items", "r0001"), Write::any())
                .await
                .err(),
            (store.write_batch(
                &[dream_core::store::BatchOp::Put {
                    key: key("items", "batched"),
                    value: value(),
                    pre: dream_core::Precondition::Any,
                }],
                None,
            ))
            .await
            .err(),
            (store.try_lease(
                &dream_core::LockName::new("dream").expect("lock"),
                Duration::from_secs(5),
            ))
            .await
            .err(),
            store.compact().await.err(),
        ];
        for refusal in refusals {
            assert!(
                matches!(refusal, Some(StoreError::Corrupt { .. })),
                "{what}: a write must be refused with Corrupt, got {refusal:?}"
            );
        }
        store.close().await.expect("close");
    });
    assert_eq!(
        std::fs::read(path).expect("read after"),
        before,
        "{what}: file changed"
    );
    for suffix in ["-wal", "-shm", "-journal"] {
        assert!(
            !sidecar(path, suffix).exists(),
            "{what}: {suffix} left behind"
        );
    }
}

/// A store of 200 records of 1,000 bytes, damaged by `damage` (given the
/// file's bytes and its page size).
fn damaged_store(dir: &Path, damage: impl FnOnce(&mut Vec<u8>, usize)) -> PathBuf {
    let path = dir.join("dream.sqlite");
    make_store(&path, 200, 1000);
    let mut bytes = std::fs::read(&path).expect("read");
    assert!(bytes.len() > 64 * 1024, "the store spans many pages");
    let page_size = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    damage(&mut bytes, page_size);
    std::fs::write(&path, &bytes).expect("write");
    path
}

/// Damage done to a store file's bytes, given its page size.
type Damage = fn(&mut Vec<u8>, usize);

#[test]
fn damaged_database_is_never_misread_nor_written() {
    let damages: [(&str, Damage); 5] = [
        ("truncated", |bytes, _| bytes.truncate(bytes.len() / 2)),
        ("every b-tree page header smashed", |bytes, page_size| {
            for page in 1..bytes.len() / page_size {
                let at = page * page_size;
                bytes[at..at + 12].copy_from_slice(&[0xEE; 12]);
            }
        }),
        ("one page zeroed", |bytes, page_size| {
            let at = bytes.len() / page_size / 2 * page_size;
            bytes[at..at + page_size].fill(0);
        }),
        ("one page header smashed", |bytes, page_size| {
            let at = bytes.len() / page_size / 3 * page_size;
            bytes[at..at + 12].copy_from_slice(&[0xEE; 12]);
        }),
        (
            "one page's cell pointers out of bounds",
            |bytes, page_size| {
                let at = bytes.len() / page_size * 2 / 3 * page_size;
                let header = if matches!(bytes[at], 2 | 5) { 12 } else { 8 };
                bytes[at + header..at + header + 16].fill(0xFF);
            },
        ),
    ];
    for (what, damage) in damages {
        let dir = tempfile::tempdir().expect("dir");
        let path = damaged_store(dir.path(), damage);
        assert_damage_never_misread_nor_written(&path, 200, 1000, what);
    }
}

/// A damaged file not yet in WAL mode: switching it would write, so the open
/// itself checks it and refuses it untouched.
#[test]
fn damaged_database_out_of_wal_mode_is_refused_at_open_untouched() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dream.sqlite");
    make_store(&path, 200, 1000);
    {
        let conn = Connection::open(&path).expect("open raw");
        conn.pragma_update(None, "journal_mode", "delete")
            .expect("leave WAL mode");
    }
    let mut bytes = std::fs::read(&path).expect("read");
    let page_size = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    let at = bytes.len() / page_size / 2 * page_size;
    bytes[at..at + page_size].fill(0);
    std::fs::write(&path, &bytes).expect("write");
    let err = assert_refused_untouched(&path, "damaged rollback-journal file");
    assert!(
        matches!(err, StoreError::Corrupt { .. }),
        "damaged rollback-journal file: expected Corrupt, got {err:?}"
    );
}

#[test]
fn foreign_database_is_incompatible_and_untouched() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("app.sqlite");
    {
        let conn = Connection::open(&path).expect("create foreign db");
        conn.execute_batch(
            "CREATE TABLE users (name TEXT, secret TEXT);
             INSERT INTO users VALUES ('alice', 'hunter2');",
        )
        .expect("foreign schema");
    }
    let err = assert_refused_untouched(&path, "foreign tables");
    assert_incompatible(&err, "foreign tables");
    assert!(!err.to_string().contains("hunter2"));

    let other = dir.path().join("other-app.sqlite");
    {
        let conn = Connection::open(&other).expect("create");
        conn.execute_batch("PRAGMA application_id = 42; CREATE TABLE t (x);")
            .expect("other app");
    }
    let err = assert_refused_untouched(&other, "other application id");
    assert_incompatible(&err, "other application id");
}

#[test]
fn dream_database_with_foreign_objects_is_incompatible() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dream.sqlite");
    make_store(&path, 3, 10);
    {
        let conn = Connection::open(&path).expect("open raw");
        conn.execute_batch(
            "CREATE TRIGGER spy AFTER INSERT ON records BEGIN DELETE FROM records; END;",
        )
        .expect("add trigger");
    }
    let err = assert_refused_untouched(&path, "foreign trigger");
    assert_incompatible(&err, "foreign trigger");
}

#[test]
fn newer_schema_version_is_incompatible_and_untouched() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dream.sqlite");
    make_store(&path, 3, 10);
    {
        let conn = Connection::open(&path).expect("open raw");
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .expect("bump version");
    }
    let err = assert_refused_untouched(&path, "newer schema");
    assert_incompatible(&err, "newer schema");
    assert!(
        err.to_string().contains(&format!("{}", SCHEMA_VERSION + 1)),
        "names the version: {err}"
    );
}

#[test]
fn symlink_and_directory_paths_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let real = dir.path().join("real.sqlite");
    make_store(&real, 1, 10);
    let before = std::fs::read(&real).expect("read");
    let link = dir.path().join("link.sqlite");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let err = open_refused(&link);
    assert_incompatible(&err, "symlink");
    assert_eq!(std::fs::read(&real).expect("read"), before);

    let dangling = dir.path().join("dangling.sqlite");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).expect("symlink");
    let _ = open_refused(&dangling);
    assert!(
        !dir.path().join("nowhere").exists(),
        "no file created through a dangling symlink"
    );

    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    assert_incompatible(&open_refused(&sub), "directory");
}

#[test]
fn tampered_rows_read_as_corrupt() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dream.sqlite");
    make_store(&path, 3, 10);
    {
        let conn = Connection::open(&path).expect("open raw");
        conn.execute_batch(
            "UPDATE records SET value = 'text, not a blob' WHERE id = 'r0000';
             INSERT INTO records (namespace, id, version, value) VALUES ('evil', '../escape', 99, x'00');",
        )
        .expect("tamper");
    }
    runtime().block_on(async {
        let store = SqliteStore::open(&path).await.expect("open");
        match store.get(&key("items", "r0000")).await {
            Err(StoreError::Corrupt { key: Some(k), .. }) => assert_eq!(k, key("items", "r0000")),
            other => panic!("text value: expected Corrupt, got {other:?}"),
        }
        let ns = Namespace::new("evil").expect("ns");
        assert!(matches!(
            store.list(&ns, None, 10).await,
            Err(StoreError::Corrupt { .. })
        ));
        let page = store
            .list(
                &Namespace::new("items").expect("ns"),
                Some(&RecordId::new("r0000").expect("id")),
                10,
            )
            .await
            .expect("untampered rows still list");
        assert_eq!(page.entries.len(), 2);
    });
}

#[test]
fn durability_option_is_reported() {
    let dir = tempfile::tempdir().expect("dir");
    runtime().block_on(async {
        let full = SqliteStore::open(dir.path().join("full.sqlite"))
            .await
            .expect("open");
        assert!(full.info().capabilities.durable);
        let normal = SqliteStore::open_with(
            dir.path().join("normal.sqlite"),
            SqliteOptions::new().durability(Durability::Normal),
        )
        .await
        .expect("open");
        assert!(!normal.info().capabilities.durable);
        assert_eq!(normal.info().name, "sqlite");
        assert!(normal.info().capabilities.cross_process);
    });
}

/// A writer waiting on another connection's lock never stalls the runtime: on a
/// single-threaded runtime a ticker keeps running while a put waits.
#[test]
fn waiting_write_does_not_block_the_runtime() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dream.sqlite");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let store = Arc::new(rt.block_on(SqliteStore::open(&path)).expect("open"));
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let holder_path = path.clone();
    let holder = std::thread::spawn(move || {
        let mut conn = Connection::open(&holder_path).expect("raw open");
        let tx = conn
            .transaction_with_behavior(dream_sqlite::rusqlite::TransactionBehavior::Immediate)
            .expect("raw write lock");
        locked_tx.send(()).expect("signal");
        std::thread::sleep(Duration::from_millis(800));
        tx.commit().expect("raw commit");
    });
    locked_rx.recv().expect("locked");
    rt.block_on(async {
        let started = Instant::now();
        let put = tokio::spawn({
            let store = Arc::clone(&store);
            async move {
                store
                    .put(&key("ns", "k"), Bytes::from_static(b"v"), Write::any())
                    .await
            }
        });
        let mut ticks = 0;
        while !put.is_finished() {
            tokio::time::sleep(Duration::from_millis(10)).await;
            ticks += 1;
        }
        put.await
            .expect("task")
            .expect("put after the lock is released");
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(500),
            "the put waited for the lock: {waited:?}"
        );
        assert!(
            ticks >= 20,
            "the runtime kept running while the put waited: {ticks} ticks in {waited:?}"
        );
    });
    holder.join().expect("holder");
}

#[test]
fn write_lock_held_past_busy_timeout_is_retryable() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("dream.sqlite");
    let rt = runtime();
    let store = rt
        .block_on(SqliteStore::open_with(
            &path,
            SqliteOptions::new().busy_timeout(Duration::from_millis(300)),
        ))
        .expect("open");
    let mut conn = Connection::open(&path).expect("raw open");
    let tx = conn
        .transaction_with_behavior(dream_sqlite::rusqlite::TransactionBehavior::Immediate)
        .expect("raw write lock");
    let err = rt
        .block_on(store.put(&key("ns", "k"), Bytes::from_static(b"v"), Write::any()))
        .expect_err("busy");
    assert!(err.is_retryable(), "busy is retryable: {err:?}");
    tx.rollback().expect("rollback");
    rt.block_on(store.put(&key("ns", "k"), Bytes::from_static(b"v"), Write::any()))
        .expect("put once free");
}
