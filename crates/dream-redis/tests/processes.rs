//! Several OS processes on one Redis store: lease-guarded read-modify-write with
//! no lost update and no overlap; a holder frozen past its TTL is fenced out; a
//! killed holder's lease is taken over after its TTL; the URL comes from the
//! environment. Each test re-executes this binary as its children.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{PrefixGuard, ServerOptions};
use dream_conformance::process::{ChildProcess, child_role};
use dream_core::{Bytes, Key, LockName, Namespace, RecordId, RecordStore, StoreError, Write};
use dream_redis::{RedisOptions, RedisStore};

const PREFIX_ENV: &str = "DREAM_TEST_PREFIX";
const CHILD_URL_ENV: &str = "DREAM_TEST_CHILD_REDIS_URL";
const ROUNDS_ENV: &str = "DREAM_TEST_ROUNDS";
const TTL_ENV: &str = "DREAM_TEST_TTL_MS";

fn key(id: &str) -> Key {
    Key::new(Namespace::new("ns").unwrap(), RecordId::new(id).unwrap())
}

fn lock() -> LockName {
    LockName::new("dream").unwrap()
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("child needs {name}"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn child_store() -> RedisStore {
    let config = RedisOptions::from_url(&env(CHILD_URL_ENV))
        .unwrap()
        .with_prefix(&env(PREFIX_ENV))
        .unwrap()
        .without_create();
    RedisStore::open(config)
        .await
        .expect("child opens the store")
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The text after `marker` in a child's line (libtest may print its own
/// `test name ... ` before the child's output on the same line).
fn after<'a>(line: &'a str, marker: &str) -> &'a str {
    let at = line.find(marker).expect("marker in line");
    line[at + marker.len()..].trim()
}

fn kind<T>(result: &Result<T, StoreError>) -> &'static str {
    match result {
        Ok(_) => "Ok",
        Err(StoreError::LockLost { .. }) => "LockLost",
        Err(StoreError::Conflict { .. }) => "Conflict",
        Err(_) => "Other",
    }
}

// ---------------------------------------------------------------------------

#[test]
fn lease_guarded_read_modify_write_across_processes() {
    if child_role().is_some() {
        return runtime().block_on(rmw_child());
    }
    let Some(redis) = common::redis_or_skip("lease_guarded_read_modify_write_across_processes")
    else {
        return;
    };
    let prefix = common::fresh_prefix();
    let _guard = PrefixGuard::new(&redis.url, &prefix);
    let rt = runtime();
    let store = rt.block_on(common::open(&redis.url, &prefix));
    rt.block_on(store.put(&key("counter"), Bytes::from_static(b"0"), Write::any()))
        .unwrap();

    const CHILDREN: usize = 4;
    const ROUNDS: usize = 15;
    let rounds = ROUNDS.to_string();
    let mut children: Vec<ChildProcess> = (0..CHILDREN)
        .map(|i| {
            ChildProcess::spawn(
                "lease_guarded_read_modify_write_across_processes",
                &format!("worker-{i}"),
                &[
                    (CHILD_URL_ENV, redis.url.as_str()),
                    (PREFIX_ENV, prefix.as_str()),
                    (ROUNDS_ENV, rounds.as_str()),
                ],
            )
            .unwrap()
        })
        .collect();
    let mut sections: Vec<(u128, u128, usize)> = Vec::new();
    for (i, child) in children.iter_mut().enumerate() {
        let line = child
            .wait_for_line("SECTIONS", Duration::from_secs(180))
            .unwrap_or_else(|e| panic!("worker {i}: {e}"));
        for pair in after(&line, "SECTIONS").split_whitespace() {
            let (start, end) = pair.split_once('-').expect("start-end");
            sections.push((start.parse().unwrap(), end.parse().unwrap(), i));
        }
        assert!(
            child.wait(Duration::from_secs(60)).unwrap().success(),
            "worker {i}"
        );
    }
    assert_eq!(sections.len(), CHILDREN * ROUNDS);
    sections.sort();
    for pair in sections.windows(2) {
        let ((_, end, a), (start, _, b)) = (pair[0], pair[1]);
        assert!(
            start > end,
            "critical sections overlap: worker {a} until {end}, worker {b} from {start}"
        );
    }
    let record = rt.block_on(store.get(&key("counter"))).unwrap().unwrap();
    assert_eq!(
        std::str::from_utf8(&record.value).unwrap(),
        (CHILDREN * ROUNDS).to_string(),
        "no lost update"
    );
}

async fn rmw_child() {
    let store = child_store().await;
    let rounds: usize = env(ROUNDS_ENV).parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(150);
    let mut sections = String::new();
    for _ in 0..rounds {
        let lease = loop {
            if let Some(lease) = store
                .try_lease(&lock(), Duration::from_secs(10))
                .await
                .expect("try_lease")
            {
                break lease;
            }
            assert!(Instant::now() < deadline, "never got the lease");
            let pause = 1 + rand::random::<u64>() % 10;
            tokio::time::sleep(Duration::from_millis(pause)).await;
        };
        let start = now_nanos();
        let record = store.get(&key("counter")).await.unwrap().expect("counter");
        let n: u64 = std::str::from_utf8(&record.value).unwrap().parse().unwrap();
        // Widen the window an overlapping holder would need.
        tokio::time::sleep(Duration::from_millis(3)).await;
        store
            .put(
                &key("counter"),
                Bytes::from((n + 1).to_string()),
                Write::matches(record.version).fenced(lease.fence()),
            )
            .await
            .expect("fenced CAS inside the critical section");
        let end = now_nanos();
        assert!(
            store.release(lease).await.unwrap(),
            "lease held until release"
        );
        sections.push_str(&format!(" {start}-{end}"));
    }
    println!("SECTIONS{sections}");
}

// ---------------------------------------------------------------------------

#[test]
fn frozen_holder_is_fenced_out_after_its_ttl() {
    if child_role().is_some() {
        return runtime().block_on(frozen_child());
    }
    let Some(redis) = common::redis_or_skip("frozen_holder_is_fenced_out_after_its_ttl") else {
        return;
    };
    let prefix = common::fresh_prefix();
    let _guard = PrefixGuard::new(&redis.url, &prefix);
    let rt = runtime();
    let store = rt.block_on(common::open(&redis.url, &prefix));
    let mut child = ChildProcess::spawn(
        "frozen_holder_is_fenced_out_after_its_ttl",
        "holder",
        &[
            (CHILD_URL_ENV, redis.url.as_str()),
            (PREFIX_ENV, prefix.as_str()),
        ],
    )
    .unwrap();
    let line = child
        .wait_for_line("LEASED", Duration::from_secs(60))
        .unwrap();
    let frozen_token: u64 = after(&line, "LEASED").parse().unwrap();
    child.stop();

    // 3 × the holder's 1 s TTL.
    std::thread::sleep(Duration::from_secs(3));
    let taker = rt
        .block_on(store.try_lease(&lock(), Duration::from_secs(60)))
        .unwrap()
        .expect("the frozen holder's lease expired");
    assert!(taker.token() > frozen_token);
    rt.block_on(store.put(
        &key("k"),
        Bytes::from_static(b"from-taker"),
        Write::any().fenced(taker.fence()),
    ))
    .expect("the new holder writes");
    rt.block_on(store.put(&key("go"), Bytes::from_static(b"1"), Write::any()))
        .unwrap();
    child.resume();

    let result = child
        .wait_for_line("RESULT", Duration::from_secs(60))
        .unwrap();
    assert_eq!(
        after(&result, "RESULT"),
        "put=LockLost delete=LockLost renew=LockLost release=false",
        "the resumed holder is refused everywhere"
    );
    assert!(child.wait(Duration::from_secs(60)).unwrap().success());
    let record = rt.block_on(store.get(&key("k"))).unwrap().unwrap();
    assert_eq!(
        record.value.as_ref(),
        b"from-taker",
        "the stale write changed nothing"
    );
    assert!(
        rt.block_on(store.release(taker)).unwrap(),
        "the taker still holds it"
    );
}

async fn frozen_child() {
    let store = child_store().await;
    let lease = store
        .try_lease(&lock(), Duration::from_secs(1))
        .await
        .unwrap()
        .expect("free");
    store
        .put(
            &key("k"),
            Bytes::from_static(b"from-holder"),
            Write::any().fenced(lease.fence()),
        )
        .await
        .expect("fenced write while held");
    println!("LEASED {}", lease.token());
    // The parent freezes this process here, lets the lease expire, takes it,
    // writes, sets `go` and resumes this process.
    let deadline = Instant::now() + Duration::from_secs(120);
    while store.get(&key("go")).await.unwrap().is_none() {
        assert!(Instant::now() < deadline, "never told to go");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let put = store
        .put(
            &key("k"),
            Bytes::from_static(b"from-stale-holder"),
            Write::any().fenced(lease.fence()),
        )
        .await;
    let delete = store
        .delete(&key("k"), Write::any().fenced(lease.fence()))
        .await;
    let renew = store.renew(&lease, Duration::from_secs(1)).await;
    let release = store.release(lease).await.unwrap();
    println!(
        "RESULT put={} delete={} renew={} release={release}",
        kind(&put),
        kind(&delete),
        kind(&renew)
    );
}

// ---------------------------------------------------------------------------

const CRASH_POINT: &str = "redis-test-lease-holder-crash";

#[test]
fn killed_holder_is_taken_over_after_its_ttl() {
    if child_role().is_some() {
        return runtime().block_on(killed_child());
    }
    let Some(redis) = common::redis_or_skip("killed_holder_is_taken_over_after_its_ttl") else {
        return;
    };
    let prefix = common::fresh_prefix();
    let _guard = PrefixGuard::new(&redis.url, &prefix);
    let rt = runtime();
    let store = rt.block_on(common::open(&redis.url, &prefix));
    const TTL: Duration = Duration::from_secs(3);
    let ttl_ms = TTL.as_millis().to_string();
    let mut child = ChildProcess::spawn(
        "killed_holder_is_taken_over_after_its_ttl",
        "holder",
        &[
            (CHILD_URL_ENV, redis.url.as_str()),
            (PREFIX_ENV, prefix.as_str()),
            (TTL_ENV, ttl_ms.as_str()),
            (dream_core::failpoint::FAILPOINT_ENV, CRASH_POINT),
        ],
    )
    .unwrap();
    let line = child
        .wait_for_line("LEASED", Duration::from_secs(60))
        .unwrap();
    let seen = Instant::now();
    let dead_token: u64 = after(&line, "LEASED").parse().unwrap();
    let status = child.wait(Duration::from_secs(60)).unwrap();
    assert_eq!(
        status.signal(),
        Some(9),
        "the holder died at its failpoint: {status:?}"
    );

    assert!(
        rt.block_on(store.try_lease(&lock(), Duration::from_secs(60)))
            .unwrap()
            .is_none(),
        "the dead holder's lease is still held before its TTL"
    );
    let taken = loop {
        if let Some(lease) = rt
            .block_on(store.try_lease(&lock(), Duration::from_secs(60)))
            .unwrap()
        {
            break lease;
        }
        assert!(seen.elapsed() < TTL * 3, "not taken over within 3 × TTL");
        std::thread::sleep(Duration::from_millis(50));
    };
    let waited = seen.elapsed();
    assert!(
        waited + Duration::from_millis(500) >= TTL,
        "taken over after {waited:?}, before the {TTL:?} TTL"
    );
    assert!(taken.token() > dead_token);
    let dead_fence = dream_core::Fence {
        lock: lock(),
        token: dead_token,
    };
    let stale = rt.block_on(store.put(
        &key("k"),
        Bytes::from_static(b"stale"),
        Write::any().fenced(dead_fence),
    ));
    assert!(
        matches!(stale, Err(StoreError::LockLost { .. })),
        "{stale:?}"
    );
    rt.block_on(store.put(
        &key("k"),
        Bytes::from_static(b"new"),
        Write::any().fenced(taken.fence()),
    ))
    .unwrap();
    assert!(rt.block_on(store.release(taken)).unwrap());
}

async fn killed_child() {
    let store = child_store().await;
    let ttl = Duration::from_millis(env(TTL_ENV).parse().unwrap());
    let lease = store.try_lease(&lock(), ttl).await.unwrap().expect("free");
    println!("LEASED {}", lease.token());
    dream_core::failpoint::failpoint(CRASH_POINT);
    panic!("the failpoint {CRASH_POINT} did not kill this process");
}

// ---------------------------------------------------------------------------

#[test]
fn url_with_password_comes_from_the_environment() {
    if child_role().is_some() {
        return runtime().block_on(async {
            let config = RedisOptions::from_env()
                .expect("DREAM_REDIS_URL")
                .with_prefix(&env(PREFIX_ENV))
                .unwrap();
            let store = RedisStore::open(config).await.expect("open from env");
            store
                .put(&key("k"), Bytes::from_static(b"from-env"), Write::any())
                .await
                .unwrap();
            println!("WROTE {store:?}");
        });
    }
    let password = "env-Pa55-NEVER-SHOWN";
    let options = ServerOptions {
        password: Some(password.to_owned()),
        ..ServerOptions::default()
    };
    let Some(server) =
        common::private_or_skip("url_with_password_comes_from_the_environment", options)
    else {
        return;
    };
    let url = format!("{}/2", server.url());
    let mut child = ChildProcess::spawn(
        "url_with_password_comes_from_the_environment",
        "env",
        &[(dream_redis::URL_ENV, url.as_str()), (PREFIX_ENV, "env")],
    )
    .unwrap();
    let line = child
        .wait_for_line("WROTE", Duration::from_secs(60))
        .unwrap();
    assert!(!line.contains(password), "Debug shows the password: {line}");
    assert!(
        line.contains("<redacted>") && line.contains("database: 2"),
        "{line}"
    );
    assert!(child.wait(Duration::from_secs(60)).unwrap().success());
    let rt = runtime();
    let store = rt.block_on(common::open(&url, "env"));
    let record = rt.block_on(store.get(&key("k"))).unwrap().unwrap();
    assert_eq!(record.value.as_ref(), b"from-env");
}
