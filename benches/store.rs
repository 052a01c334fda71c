//! The `store` bench: one group per operation (put, get, list), one `BenchmarkId`
//! per backend, each beside a raw baseline doing the same durable steps and the
//! same thread hop. Each backend's functions live in `benches/store/<backend>.rs`.

// criterion_group! and criterion_main! generate undocumented functions.
#![allow(missing_docs)]

use criterion::{
    BenchmarkGroup, Criterion, criterion_group, criterion_main, measurement::WallTime,
};
use tokio::runtime::Runtime;

#[cfg(feature = "fs")]
#[path = "store/fs.rs"]
mod fs;
#[cfg(feature = "redis")]
#[path = "store/redis.rs"]
mod redis;
#[cfg(feature = "sqlite")]
#[path = "store/sqlite.rs"]
mod sqlite;

/// A group under construction and the runtime its async code runs on.
pub struct Bench<'a, 'c> {
    /// The criterion group (one per operation).
    pub group: &'a mut BenchmarkGroup<'c, WallTime>,
    /// A multi-thread runtime shared by the whole bench.
    pub runtime: &'a Runtime,
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn put(c: &mut Criterion) {
    let runtime = runtime();
    let mut group = c.benchmark_group("put");
    let mut _bench = Bench {
        group: &mut group,
        runtime: &runtime,
    };
    #[cfg(feature = "fs")]
    fs::put(&mut _bench);
    #[cfg(feature = "sqlite")]
    sqlite::put(&mut _bench);
    #[cfg(feature = "redis")]
    redis::put(&mut _bench);
    group.finish();
}

fn get(c: &mut Criterion) {
    let runtime = runtime();
    let mut group = c.benchmark_group("get");
    let mut _bench = Bench {
        group: &mut group,
        runtime: &runtime,
    };
    #[cfg(feature = "fs")]
    fs::get(&mut _bench);
    #[cfg(feature = "sqlite")]
    sqlite::get(&mut _bench);
    #[cfg(feature = "redis")]
    redis::get(&mut _bench);
    group.finish();
}

fn list(c: &mut Criterion) {
    let runtime = runtime();
    let mut group = c.benchmark_group("list");
    let mut _bench = Bench {
        group: &mut group,
        runtime: &runtime,
    };
    #[cfg(feature = "fs")]
    fs::list(&mut _bench);
    #[cfg(feature = "sqlite")]
    sqlite::list(&mut _bench);
    #[cfg(feature = "redis")]
    redis::list(&mut _bench);
    group.finish();
}

criterion_group!(benches, put, get, list);
criterion_main!(benches);
