//! dream-postgres beside raw tokio-postgres on a connection of the store's own
//! pool (same server, same tables, statements prepared once):
//! - `put`: a 4 KiB value; raw = the upsert of the store's `put` function, sent
//!   as a plain statement (no epoch check, no fence check, no function call).
//! - `get`: a 4 KiB value; raw = `SELECT version, value` by primary key.
//! - `lease`: `try_lease` + `release`; raw = the lease row's upsert with a fence
//!   from the sequence, then the release `UPDATE`.
//! - `list`: 100 records of 4 KiB; raw = the page `SELECT … ORDER BY id LIMIT`.
//!
//! The server comes from `DREAM_TEST_POSTGRES_URL`, else
//! `postgres://postgres@127.0.0.1:5432/test`; a fresh schema is used and dropped
//! afterwards. Without a server the bench is skipped with a notice.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use dream_core::{Bytes, Key, LockName, Namespace, RecordId, RecordStore, Write};
use dream_postgres::{PostgresOptions, PostgresStore};

const VALUE_SIZE: usize = 4096;
const LIST_RECORDS: usize = 100;

fn value(seed: usize) -> Vec<u8> {
    (0..VALUE_SIZE)
        .map(|i| ((i * 31 + seed * 7) % 251) as u8)
        .collect()
}

fn key(id: &str) -> Key {
    Key::new(
        Namespace::new("memories").expect("namespace"),
        RecordId::new(id).expect("id"),
    )
}

fn stores(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let url = std::env::var("DREAM_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let schema = format!("bench_{:016x}", rand::random::<u64>());
    let config = PostgresOptions::from_url(&url)
        .expect("PostgreSQL URL")
        .with_schema(&schema)
        .expect("schema");
    let store = match runtime.block_on(PostgresStore::open(config)) {
        Ok(store) => store,
        Err(err) => {
            eprintln!("*** SKIPPED the PostgreSQL benches: no server ({err}) ***");
            return;
        }
    };
    let raw = runtime
        .block_on(store.connection())
        .expect("a pooled connection");
    let s = format!("\"{schema}\"");
    let prepare = |sql: String| runtime.block_on(raw.prepare(&sql)).expect("prepare");

    let mut group = c.benchmark_group("put");
    let put_key = key("bench-put");
    let put_value = Bytes::from(value(0));
    group.bench_function("postgres", |b| {
        b.to_async(&runtime).iter(|| async {
            store
                .put(&put_key, put_value.clone(), Write::any())
                .await
                .expect("put")
        })
    });
    let raw_put = prepare(format!(
        "INSERT INTO {s}.records AS r (namespace, id, version, value, write_id) \
         VALUES ($1, $2, nextval('{s}.versions'), $3, $4) \
         ON CONFLICT (namespace, id) DO UPDATE \
           SET version = nextval('{s}.versions'), value = EXCLUDED.value, write_id = EXCLUDED.write_id \
         RETURNING r.version"
    ));
    let raw_value = value(0);
    group.bench_function("raw-tokio-postgres", |b| {
        b.to_async(&runtime).iter(|| async {
            let row = raw
                .query_one(
                    &raw_put,
                    &[&"raw", &"bench-put", &raw_value.as_slice(), &"raw-write"],
                )
                .await
                .expect("raw upsert");
            row.get::<_, i64>(0)
        })
    });
    group.finish();

    let mut group = c.benchmark_group("get");
    let get_key = key("bench-get");
    runtime
        .block_on(store.put(&get_key, Bytes::from(value(1)), Write::any()))
        .expect("seed");
    runtime
        .block_on(raw.execute(
            &format!(
                "INSERT INTO {s}.records (namespace, id, version, value, write_id) \
                 VALUES ('raw', 'bench-get', nextval('{s}.versions'), $1, 'raw')"
            ),
            &[&value(1).as_slice()],
        ))
        .expect("seed raw");
    group.bench_function("postgres", |b| {
        b.to_async(&runtime).iter(|| async {
            let record = store.get(&get_key).await.expect("get").expect("present");
            assert_eq!(record.value.len(), VALUE_SIZE);
        })
    });
    let raw_get = prepare(format!(
        "SELECT version, value FROM {s}.records WHERE namespace = $1 AND id = $2"
    ));
    group.bench_function("raw-tokio-postgres", |b| {
        b.to_async(&runtime).iter(|| async {
            let row = raw
                .query_one(&raw_get, &[&"raw", &"bench-get"])
                .await
                .expect("raw get");
            let value: &[u8] = row.get(1);
            assert_eq!(value.len(), VALUE_SIZE);
        })
    });
    group.finish();

    let mut group = c.benchmark_group("lease");
    let lock = LockName::new("bench").expect("lock");
    let ttl = Duration::from_secs(30);
    group.bench_function("postgres", |b| {
        b.to_async(&runtime).iter(|| async {
            let lease = store
                .try_lease(&lock, ttl)
                .await
                .expect("try_lease")
                .expect("free");
            assert!(store.release(lease).await.expect("release"));
        })
    });
    let raw_acquire = prepare(format!(
        "INSERT INTO {s}.leases AS l (lock, fence, holder, expires_at, released) \
         VALUES ($1, nextval('{s}.fences'), $2, clock_timestamp() + $3::bigint * interval '1 millisecond', false) \
         ON CONFLICT (lock) DO UPDATE \
           SET fence = nextval('{s}.fences'), holder = EXCLUDED.holder, \
               expires_at = clock_timestamp() + $3::bigint * interval '1 millisecond', released = false \
           WHERE l.released OR l.expires_at <= clock_timestamp() \
         RETURNING l.fence"
    ));
    let raw_release = prepare(format!(
        "UPDATE {s}.leases l SET released = true \
         WHERE l.lock = $1 AND l.holder = $2 AND l.fence = $3 \
           AND NOT l.released AND l.expires_at > clock_timestamp()"
    ));
    let ttl_ms = ttl.as_millis() as i64;
    group.bench_function("raw-tokio-postgres", |b| {
        b.to_async(&runtime).iter(|| async {
            let row = raw
                .query_one(&raw_acquire, &[&"raw-bench", &"raw-holder", &ttl_ms])
                .await
                .expect("raw acquire");
            let fence: i64 = row.get(0);
            let released = raw
                .execute(&raw_release, &[&"raw-bench", &"raw-holder", &fence])
                .await
                .expect("raw release");
            assert_eq!(released, 1);
        })
    });
    group.finish();

    let mut group = c.benchmark_group("list");
    let list_ns = Namespace::new("listed").expect("namespace");
    for i in 0..LIST_RECORDS {
        let id = RecordId::new(format!("r{i:04}")).expect("id");
        runtime
            .block_on(store.put(
                &Key::new(list_ns.clone(), id),
                Bytes::from(value(i)),
                Write::any(),
            ))
            .expect("seed list");
    }
    group.bench_function("postgres", |b| {
        b.to_async(&runtime).iter(|| async {
            let page = store
                .list(&list_ns, None, LIST_RECORDS)
                .await
                .expect("list");
            assert_eq!(page.entries.len(), LIST_RECORDS);
        })
    });
    let raw_list = prepare(format!(
        "SELECT id, version, value FROM {s}.records \
         WHERE namespace = $1 AND id > $2 ORDER BY id LIMIT $3"
    ));
    group.bench_function("raw-tokio-postgres", |b| {
        b.to_async(&runtime).iter(|| async {
            let rows = raw
                .query(&raw_list, &[&"listed", &"", &(LIST_RECORDS as i64)])
                .await
                .expect("raw list");
            assert_eq!(rows.len(), LIST_RECORDS);
        })
    });
    group.finish();

    drop(raw);
    runtime
        .block_on(store.destroy())
        .expect("drop the bench schema");
}

criterion_group!(benches, stores);
criterion_main!(benches);
