//! dream-redis beside raw commands on the store's own `ConnectionManager` (same
//! connection, same runtime, no extra thread hop):
//! - put: a 4 KiB value; raw = `SET`.
//! - get: a 4 KiB value; raw = `GET`.
//! - list: 100 records of 4 KiB; raw = `ZRANGEBYLEX` on an index plus `MGET`.
//!
//! Redis comes from `DREAM_TEST_REDIS_URL`, else `redis://127.0.0.1:6379`; without
//! one the Redis benches are skipped with a notice. Each run uses a fresh random
//! prefix and deletes its keys afterwards.

use std::sync::Arc;

use dream::redis::redis::{self, AsyncCommands, aio::ConnectionManager};
use dream::redis::{RedisOptions, RedisStore};
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

/// A store under a fresh prefix, its raw connection and the prefix; `None`
/// (with a notice) when no Redis answers.
fn setup(bench: &Bench) -> Option<(Arc<RedisStore>, ConnectionManager, String)> {
    let url = std::env::var("DREAM_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let prefix = format!("bench-{:016x}", rand_u64());
    let config = RedisOptions::from_url(&url)
        .expect("Redis URL")
        .with_prefix(&prefix)
        .expect("prefix")
        .with_connection_timeout(std::time::Duration::from_secs(2));
    match bench.runtime.block_on(RedisStore::open(config)) {
        Ok(store) => {
            let conn = store.connection();
            Some((Arc::new(store), conn, prefix))
        }
        Err(err) => {
            eprintln!("*** SKIPPED the Redis benches: no Redis ({err}) ***");
            None
        }
    }
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

fn cleanup(bench: &Bench, store: Arc<RedisStore>) {
    let store = Arc::try_unwrap(store).expect("bench holds the last handle");
    bench
        .runtime
        .block_on(store.destroy())
        .expect("delete the bench keys");
}

/// `put` group: dream-redis put (CAS script, version counter, index) vs raw `SET`.
pub fn put(bench: &mut Bench) {
    let Some((store, conn, prefix)) = setup(bench) else {
        return;
    };
    let key = key("bench");
    let value = Bytes::from(value(0));
    bench.group.bench_function("redis", |b| {
        b.to_async(bench.runtime).iter(|| {
            let (store, key, value) = (store.clone(), key.clone(), value.clone());
            async move { store.put(&key, value, Write::any()).await.expect("put") }
        })
    });
    let raw_key = format!("{{{prefix}}}:raw:bench");
    bench.group.bench_function("raw-redis", |b| {
        b.to_async(bench.runtime).iter(|| {
            let (mut conn, raw_key, value) = (conn.clone(), raw_key.clone(), value.clone());
            async move {
                let () = conn.set(&raw_key, value.as_ref()).await.expect("SET");
            }
        })
    });
    cleanup(bench, store);
}

/// `get` group: dream-redis get (epoch-checked script) vs raw `GET`.
pub fn get(bench: &mut Bench) {
    let Some((store, conn, prefix)) = setup(bench) else {
        return;
    };
    let key = key("bench");
    let value = Bytes::from(value(0));
    let raw_key = format!("{{{prefix}}}:raw:bench");
    bench.runtime.block_on(async {
        store
            .put(&key, value.clone(), Write::any())
            .await
            .expect("seed");
        let () = conn
            .clone()
            .set(&raw_key, value.as_ref())
            .await
            .expect("seed raw");
    });
    bench.group.bench_function("redis", |b| {
        b.to_async(bench.runtime).iter(|| {
            let (store, key) = (store.clone(), key.clone());
            async move {
                let record = store.get(&key).await.expect("get").expect("present");
                assert_eq!(record.value.len(), VALUE_SIZE);
            }
        })
    });
    bench.group.bench_function("raw-redis", |b| {
        b.to_async(bench.runtime).iter(|| {
            let (mut conn, raw_key) = (conn.clone(), raw_key.clone());
            async move {
                let bytes: Vec<u8> = conn.get(&raw_key).await.expect("GET");
                assert_eq!(bytes.len(), VALUE_SIZE);
            }
        })
    });
    cleanup(bench, store);
}

/// `list` group: a page of 100 records vs raw `ZRANGEBYLEX` + `MGET`.
pub fn list(bench: &mut Bench) {
    let Some((store, conn, prefix)) = setup(bench) else {
        return;
    };
    let index = format!("{{{prefix}}}:raw:idx");
    bench.runtime.block_on(async {
        let mut raw = conn.clone();
        for i in 0..LIST_RECORDS {
            let id = format!("m{i:04}");
            let bytes = value(i);
            store
                .put(&key(&id), Bytes::from(bytes.clone()), Write::any())
                .await
                .expect("seed");
            let () = raw
                .set(format!("{{{prefix}}}:raw:rec:{id}"), &bytes)
                .await
                .expect("seed raw");
            let () = redis::cmd("ZADD")
                .arg(&index)
                .arg(0)
                .arg(&id)
                .query_async(&mut raw)
                .await
                .expect("seed raw index");
        }
    });
    bench.group.bench_function("redis", |b| {
        b.to_async(bench.runtime).iter(|| {
            let store = store.clone();
            async move {
                let page = store
                    .list(&memories(), None, LIST_RECORDS)
                    .await
                    .expect("list");
                assert_eq!(page.entries.len(), LIST_RECORDS);
            }
        })
    });
    let record_prefix = format!("{{{prefix}}}:raw:rec:");
    bench.group.bench_function("raw-redis", |b| {
        b.to_async(bench.runtime).iter(|| {
            let (mut conn, index, record_prefix) =
                (conn.clone(), index.clone(), record_prefix.clone());
            async move {
                let ids: Vec<String> = redis::cmd("ZRANGEBYLEX")
                    .arg(&index)
                    .arg("-")
                    .arg("+")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(LIST_RECORDS + 1)
                    .query_async(&mut conn)
                    .await
                    .expect("ZRANGEBYLEX");
                let keys: Vec<String> = ids
                    .iter()
                    .map(|id| format!("{record_prefix}{id}"))
                    .collect();
                let values: Vec<Vec<u8>> = conn.mget(&keys).await.expect("MGET");
                assert_eq!(values.len(), LIST_RECORDS);
            }
        })
    });
    cleanup(bench, store);
}
