//! dream-sqlite beside plain rusqlite running the same SQL statements
//! (`dream::sqlite::sql`) on a database of the same schema, with the same
//! pragmas (WAL, `synchronous = FULL`, `secure_delete`, busy timeout, defensive
//! mode) and the same thread hop (`spawn_blocking` onto a locked connection):
//! - put: a 4 KiB value; raw = `BEGIN IMMEDIATE`, read the current version, bump
//!   the counter, upsert, `COMMIT`.
//! - get: a 4 KiB value; raw = the same `SELECT`.
//! - list: a page of 100 records of 4 KiB; raw = the same `SELECT ... LIMIT 101`.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dream::sqlite::rusqlite::config::DbConfig;
use dream::sqlite::rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use dream::sqlite::{SqliteStore, sql};
use dream::{Bytes, Key, Namespace, RecordId, RecordStore, Write};

use crate::Bench;

const VALUE_SIZE: usize = 4096;
const LIST_RECORDS: usize = 100;

fn value(seed: usize) -> Vec<u8> {
    (0..VALUE_SIZE)
        .map(|i| ((i * 31 + seed * 7) % 251) as u8)
        .collect()
}

fn memories() -> Namespace {
    Namespace::new("memories").expect("valid namespace")
}

fn key(id: &str) -> Key {
    Key::new(memories(), RecordId::new(id).expect("valid id"))
}

type Raw = Arc<Mutex<Connection>>;

/// A fresh store, and a second database of the same schema (made by the store,
/// then closed) opened with plain rusqlite and the store's pragmas.
fn setup(bench: &Bench) -> (tempfile::TempDir, Arc<SqliteStore>, Raw) {
    let dir = tempfile::tempdir().expect("temp dir");
    let raw_path = dir.path().join("raw.sqlite");
    let (store, raw_store) = bench.runtime.block_on(async {
        let store = SqliteStore::open(dir.path().join("dream.sqlite"))
            .await
            .expect("open store");
        let raw_store = SqliteStore::open(&raw_path).await.expect("create raw db");
        (store, raw_store)
    });
    bench
        .runtime
        .block_on(raw_store.close())
        .expect("close raw db");
    (
        dir,
        Arc::new(store),
        Arc::new(Mutex::new(raw_open(&raw_path))),
    )
}

fn raw_open(path: &Path) -> Connection {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags).expect("raw open");
    conn.busy_timeout(Duration::from_secs(5))
        .expect("busy_timeout");
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)
        .expect("defensive");
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)
        .expect("untrusted schema");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("synchronous");
    conn.pragma_update(None, "secure_delete", "ON")
        .expect("secure_delete");
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
        .expect("journal_mode");
    assert_eq!(mode, "wal");
    conn
}

fn raw_put(conn: &mut Connection, id: &str, value: &[u8]) -> i64 {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .expect("begin");
    let _current: Option<i64> = tx
        .prepare_cached(sql::CURRENT)
        .expect("prepare")
        .query_row(["memories", id], |row| row.get(0))
        .optional()
        .expect("current");
    let version: i64 = tx
        .prepare_cached(sql::TAKE_VERSIONS)
        .expect("prepare")
        .query_row([1], |row| row.get(0))
        .expect("next version");
    tx.prepare_cached(sql::UPSERT)
        .expect("prepare")
        .execute(dream::sqlite::rusqlite::params![
            "memories", id, version, value
        ])
        .expect("upsert");
    tx.commit().expect("commit");
    version
}

fn raw_get(conn: &Connection, id: &str) -> (i64, Bytes) {
    conn.prepare_cached(sql::GET)
        .expect("prepare")
        .query_row(["memories", id], |row| {
            Ok((
                row.get(0)?,
                Bytes::copy_from_slice(row.get_ref(1)?.as_blob()?),
            ))
        })
        .expect("get")
}

fn raw_list(conn: &Connection, limit: usize) -> Vec<(String, i64, Bytes)> {
    let mut stmt = conn.prepare_cached(sql::LIST).expect("prepare");
    let rows = stmt
        .query_map(
            dream::sqlite::rusqlite::params!["memories", "", (limit + 1) as i64],
            |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    Bytes::copy_from_slice(row.get_ref(2)?.as_blob()?),
                ))
            },
        )
        .expect("list");
    let mut out: Vec<_> = rows.map(|r| r.expect("row")).collect();
    out.truncate(limit);
    out
}

/// `put` group: dream-sqlite put of a 4 KiB value vs the same transaction in rusqlite.
pub fn put(bench: &mut Bench) {
    let (_dir, store, raw) = setup(bench);
    let key = key("bench");
    let value = Bytes::from(value(0));
    bench.group.bench_function("sqlite", |b| {
        b.to_async(bench.runtime).iter(|| {
            let store = store.clone();
            let key = key.clone();
            let value = value.clone();
            async move { store.put(&key, value, Write::any()).await.expect("put") }
        })
    });
    bench.group.bench_function("raw-rusqlite", |b| {
        b.to_async(bench.runtime).iter(|| {
            let raw = raw.clone();
            let value = value.clone();
            async move {
                tokio::task::spawn_blocking(move || {
                    let mut conn = raw.lock().expect("lock");
                    raw_put(&mut conn, "bench", &value)
                })
                .await
                .expect("join")
            }
        })
    });
}

/// `get` group: dream-sqlite get of a 4 KiB value vs the same `SELECT` in rusqlite.
pub fn get(bench: &mut Bench) {
    let (_dir, store, raw) = setup(bench);
    let key = key("bench");
    let value = value(0);
    bench
        .runtime
        .block_on(store.put(&key, Bytes::from(value.clone()), Write::any()))
        .expect("put");
    raw_put(&mut raw.lock().expect("lock"), "bench", &value);
    bench.group.bench_function("sqlite", |b| {
        b.to_async(bench.runtime).iter(|| {
            let store = store.clone();
            let key = key.clone();
            async move { store.get(&key).await.expect("get").expect("present") }
        })
    });
    bench.group.bench_function("raw-rusqlite", |b| {
        b.to_async(bench.runtime).iter(|| {
            let raw = raw.clone();
            async move {
                tokio::task::spawn_blocking(move || raw_get(&raw.lock().expect("lock"), "bench"))
                    .await
                    .expect("join")
            }
        })
    });
}

/// `list` group: a page of 100 records of 4 KiB vs the same `SELECT` in rusqlite.
pub fn list(bench: &mut Bench) {
    let (_dir, store, raw) = setup(bench);
    bench.runtime.block_on(async {
        for i in 0..LIST_RECORDS {
            store
                .put(
                    &key(&format!("r{i:04}")),
                    Bytes::from(value(i)),
                    Write::any(),
                )
                .await
                .expect("put");
        }
    });
    {
        let mut conn = raw.lock().expect("lock");
        for i in 0..LIST_RECORDS {
            raw_put(&mut conn, &format!("r{i:04}"), &value(i));
        }
    }
    let ns = memories();
    bench.group.bench_function("sqlite", |b| {
        b.to_async(bench.runtime).iter(|| {
            let store = store.clone();
            let ns = ns.clone();
            async move {
                let page = store.list(&ns, None, LIST_RECORDS).await.expect("list");
                assert_eq!(page.entries.len(), LIST_RECORDS);
                page
            }
        })
    });
    bench.group.bench_function("raw-rusqlite", |b| {
        b.to_async(bench.runtime).iter(|| {
            let raw = raw.clone();
            async move {
                let page = tokio::task::spawn_blocking(move || {
                    raw_list(&raw.lock().expect("lock"), LIST_RECORDS)
                })
                .await
                .expect("join");
                assert_eq!(page.len(), LIST_RECORDS);
                page
            }
        })
    });
}
