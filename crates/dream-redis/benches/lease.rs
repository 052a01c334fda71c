//! The `lease` group: dream-redis `try_lease` + `release` (epoch check, fence
//! counter, compare-and-delete, two scripts) beside raw `SET NX PX` + `DEL` on the
//! store's own connection (the plain Redis lock without fencing or an ownership
//! check). Redis comes from `DREAM_TEST_REDIS_URL`, else `redis://127.0.0.1:6379`;
//! a fresh random prefix is used and deleted afterwards.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use dream_core::{LockName, RecordStore};
use dream_redis::redis;
use dream_redis::{RedisOptions, RedisStore};

fn lease(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let url = std::env::var("DREAM_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let prefix = format!("bench-{:016x}", rand::random::<u64>());
    let config = RedisOptions::from_url(&url)
        .expect("Redis URL")
        .with_prefix(&prefix)
        .expect("prefix")
        .with_connection_timeout(Duration::from_secs(2));
    let store = match runtime.block_on(RedisStore::open(config)) {
        Ok(store) => store,
        Err(err) => {
            eprintln!("*** SKIPPED the lease bench: no Redis ({err}) ***");
            return;
        }
    };
    let conn = store.connection();
    let lock = LockName::new("bench").expect("lock name");
    let ttl = Duration::from_secs(30);

    let mut group = c.benchmark_group("lease");
    group.bench_function("redis", |b| {
        b.to_async(&runtime).iter(|| async {
            let lease = store
                .try_lease(&lock, ttl)
                .await
                .expect("try_lease")
                .expect("free");
            assert!(store.release(lease).await.expect("release"));
        })
    });
    let raw_key = format!("{{{prefix}}}:raw:lock");
    group.bench_function("raw-redis", |b| {
        b.to_async(&runtime).iter(|| {
            let (mut conn, raw_key) = (conn.clone(), raw_key.clone());
            async move {
                let set: Option<String> = redis::cmd("SET")
                    .arg(&raw_key)
                    .arg("holder")
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl.as_millis() as u64)
                    .query_async(&mut conn)
                    .await
                    .expect("SET NX PX");
                assert!(set.is_some(), "free");
                let deleted: u64 = redis::cmd("DEL")
                    .arg(&raw_key)
                    .query_async(&mut conn)
                    .await
                    .expect("DEL");
                assert_eq!(deleted, 1);
            }
        })
    });
    group.finish();
    runtime
        .block_on(store.destroy())
        .expect("delete the bench keys");
}

criterion_group!(benches, lease);
criterion_main!(benches);
