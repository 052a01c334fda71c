//! Several OS processes on one PostgreSQL store: lease-guarded read-modify-write
//! with no lost update and no overlap; a holder frozen (SIGSTOP) past its TTL is
//! fenced out when it wakes. Each test re-executes this binary as its children.

mod common;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::SchemaGuard;
use dream_conformance::process::{ChildProcess, child_role};
use dream_core::{Bytes, Key, LockName, Namespace, RecordId, RecordStore, StoreError, Write};
use dream_postgres::PostgresStore;

const SCHEMA_ENV: &str = "DREAM_TEST_SCHEMA";
const ROUNDS_ENV: &str = "DREAM_TEST_ROUNDS";

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

async fn child_store() -> PostgresStore {
    PostgresStore::open(common::config(&env(SCHEMA_ENV)).without_create())
        .await
        .expect("child opens the store")
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The text after `marker` in a child's line.
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

#[test]
fn lease_guarded_read_modify_write_across_processes() {
    if child_role().is_some() {
        return runtime().block_on(rmw_child());
    }
    if !common::available("lease_guarded_read_modify_write_across_processes") {
        return;
    }
    let schema = common::fresh_schema();
    let _guard = SchemaGuard::new(&schema);
    let rt = runtime();
    let store = rt.block_on(common::open(&schema));
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
                &[(SCHEMA_ENV, schema.as_str()), (ROUNDS_ENV, rounds.as_str())],
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

#[test]
fn frozen_holder_is_fenced_out_after_its_ttl() {
    if child_role().is_some() {
        return runtime().block_on(frozen_child());
    }
    if !common::available("frozen_holder_is_fenced_out_after_its_ttl") {
        return;
    }
    let schema = common::fresh_schema();
    let _guard = SchemaGuard::new(&schema);
    let rt = runtime();
    let store = rt.block_on(common::open(&schema));
    let mut child = ChildProcess::spawn(
        "frozen_holder_is_fenced_out_after_its_ttl",
        "holder",
        &[(SCHEMA_ENV, schema.as_str())],
    )
    .unwrap();
    let line = child
        .wait_for_line("LEASED", Duration::from_secs(60))
        .unwrap();
    let frozen_token: u64 = after(&line, "LEASED").parse().unwrap();
    child.stop();

    // 3 × the holder's 1 s TTL, measured by the server's clock.
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

#[test]
fn frozen_holder_is_fenced_out_even_when_nobody_took_the_lock() {
    if child_role().is_some() {
        return runtime().block_on(frozen_child());
    }
    if !common::available("frozen_holder_is_fenced_out_even_when_nobody_took_the_lock") {
        return;
    }
    let schema = common::fresh_schema();
    let _guard = SchemaGuard::new(&schema);
    let rt = runtime();
    let store = rt.block_on(common::open(&schema));
    let mut child = ChildProcess::spawn(
        "frozen_holder_is_fenced_out_even_when_nobody_took_the_lock",
        "holder",
        &[(SCHEMA_ENV, schema.as_str())],
    )
    .unwrap();
    child
        .wait_for_line("LEASED", Duration::from_secs(60))
        .unwrap();
    child.stop();
    std::thread::sleep(Duration::from_secs(3));
    // Nobody takes the lock: the expiry alone (server clock) refuses the writes.
    rt.block_on(store.put(&key("go"), Bytes::from_static(b"1"), Write::any()))
        .unwrap();
    child.resume();
    let result = child
        .wait_for_line("RESULT", Duration::from_secs(60))
        .unwrap();
    assert_eq!(
        after(&result, "RESULT"),
        "put=LockLost delete=LockLost renew=LockLost release=false"
    );
    assert!(child.wait(Duration::from_secs(60)).unwrap().success());
    let record = rt.block_on(store.get(&key("k"))).unwrap().unwrap();
    assert_eq!(record.value.as_ref(), b"from-holder");
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
