//! Several OS processes on one PostgreSQL store: four writing and leasing at
//! once, lease-guarded read-modify-write and unfenced compare-and-set, with no
//! lost update and no overlap; a holder frozen (SIGSTOP) past its TTL is fenced
//! out when it wakes; a process SIGKILLed in the middle of a batch leaves it
//! whole or absent, and its lease to be taken once it expired by the server's
//! clock. Each test re-executes this binary as its children.

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
    let record = rt.block_on(store.get(&key("cas"))).unwrap().unwrap();
    assert_eq!(
        std::str::from_utf8(&record.value).unwrap(),
        (CHILDREN * ROUNDS).to_string(),
        "no lost compare-and-set increment across processes"
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
        // Between leases, an unfenced compare-and-set increment racing the
        // other processes': tried again on `Conflict` until it lands.
        loop {
            let current = store.get(&key("cas")).await.unwrap();
            let (n, write) = match &current {
                Some(r) => (
                    std::str::from_utf8(&r.value)
                        .unwrap()
                        .parse::<u64>()
                        .unwrap(),
                    Write::matches(r.version),
                ),
                None => (0, Write::absent()),
            };
            match store
                .put(&key("cas"), Bytes::from((n + 1).to_string()), write)
                .await
            {
                Ok(_) => break,
                Err(StoreError::Conflict { .. }) => {
                    assert!(Instant::now() < deadline, "the CAS never landed")
                }
                Err(e) => panic!("CAS increment: {e}"),
            }
        }
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

/// The TTL of the lease a killed child holds.
const KILLED_TTL: Duration = Duration::from_secs(6);

/// How many backends run `pattern` and are in `state` (`Lock`: waiting on a
/// lock; `any`: running at all).
async fn backends(pattern: &str, waiting: bool) -> i64 {
    let pattern = pattern.to_owned();
    common::with_client(move |client| {
        Box::pin(async move {
            client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE $1 \
                     AND state = 'active' AND (NOT $2 OR wait_event_type = 'Lock')",
                    &[&pattern, &waiting],
                )
                .await
                .map(|row| row.get::<_, i64>(0))
                .unwrap_or(0)
        })
    })
    .unwrap()
}

/// A child holding a lease runs a fenced batch `a`, `z` (both `Absent`) that
/// has inserted `a` and waits on `z`, which another transaction (the blocker)
/// inserted and has not committed; the child is SIGKILLed there. The blocker
/// then commits (`commit`: the child's `z` conflicts, its whole batch rolls
/// back) or rolls back (the dead child's statement, already sent, runs to its
/// end). Either way the batch is all there or absent, and the dead child's lease
/// is taken by another process only once it expired by the server's clock.
fn killed_mid_batch(test: &str, blocker_ends_with: &str) {
    if child_role().is_some() {
        return runtime().block_on(killed_child());
    }
    if !common::available(test) {
        return;
    }
    let schema = common::fresh_schema();
    let _guard = SchemaGuard::new(&schema);
    let rt = runtime();
    rt.block_on(async {
        let store = common::open(&schema).await;
        let (blocker, connection) = dream_postgres::tokio_postgres::connect(
            &common::url(),
            dream_postgres::tokio_postgres::NoTls,
        )
        .await
        .expect("blocker connects");
        tokio::spawn(connection);
        blocker
            .batch_execute(&format!(
                "BEGIN; INSERT INTO \"{schema}\".records (namespace, id, version, value, write_id) \
                 VALUES ('ns', 'z', nextval('\"{schema}\".versions'), 'blocker', 'blocker')"
            ))
            .await
            .expect("the blocker inserts z");
        let mut child =
            ChildProcess::spawn(test, "killed", &[(SCHEMA_ENV, schema.as_str())]).unwrap();
        let line = child
            .wait_for_line("LEASED", Duration::from_secs(60))
            .unwrap();
        let child_token: u64 = after(&line, "LEASED").parse().unwrap();
        let pattern = format!("%\"{schema}\".write_batch(%");
        let deadline = Instant::now() + Duration::from_secs(30);
        while backends(&pattern, true).await == 0 {
            assert!(
                Instant::now() < deadline,
                "the child's batch never waited on z"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        child.kill();
        blocker
            .batch_execute(blocker_ends_with)
            .await
            .expect("the blocker ends");
        let deadline = Instant::now() + Duration::from_secs(30);
        while backends(&pattern, false).await > 0 {
            assert!(
                Instant::now() < deadline,
                "the dead child's statement never ended"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        // All of the batch or none of it, and its claim with it.
        let a = store.get(&key("a")).await.unwrap();
        let z = store.get(&key("z")).await.unwrap().map(|r| r.value);
        let claims: i64 = blocker
            .query_one(&format!("SELECT count(*) FROM \"{schema}\".batches"), &[])
            .await
            .unwrap()
            .get(0);
        match blocker_ends_with {
            "COMMIT" => {
                assert!(a.is_none(), "half of the batch is there: {a:?}");
                assert_eq!(z.as_deref(), Some(&b"blocker"[..]));
                assert_eq!(claims, 0, "the rolled-back batch left its claim");
            }
            _ => {
                let applied = a.is_some();
                if applied {
                    assert_eq!(a.unwrap().value.as_ref(), b"batch a");
                    assert_eq!(z.as_deref(), Some(&b"batch z"[..]));
                } else {
                    assert!(z.is_none(), "half of the batch is there: z {z:?}");
                }
                assert_eq!(claims, i64::from(applied));
                eprintln!("the dead child's batch, already sent, was applied: {applied}");
            }
        }

        // The dead holder's lease: refused while live, by the server's clock;
        // taken once it expired, with a greater token; the old fence is refused.
        let row = blocker
            .query_one(
                &format!(
                    "SELECT (extract(epoch FROM expires_at) * 1000)::float8, \
                     (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::float8 \
                     FROM \"{schema}\".leases WHERE lock = 'dream'"
                ),
                &[],
            )
            .await
            .unwrap();
        let (expires_ms, remaining_ms): (f64, f64) = (row.get(0), row.get(1));
        if remaining_ms > 1000.0 {
            assert!(
                store
                    .try_lease(&lock(), Duration::from_secs(30))
                    .await
                    .unwrap()
                    .is_none(),
                "the dead holder's lease was taken {remaining_ms} ms before it expired"
            );
        }
        let deadline = Instant::now() + KILLED_TTL + Duration::from_secs(30);
        let taken = loop {
            if let Some(lease) = store
                .try_lease(&lock(), Duration::from_secs(30))
                .await
                .unwrap()
            {
                break lease;
            }
            assert!(
                Instant::now() < deadline,
                "the dead holder's lease never expired"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let now_ms: f64 = blocker
            .query_one(
                "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert!(
            now_ms >= expires_ms,
            "taken before the server's clock reached the expiry"
        );
        assert!(taken.token() > child_token);
        let stale = dream_core::Lease::new(lock(), child_token, "the dead child".to_owned());
        assert!(matches!(
            store
                .put(
                    &key("a"),
                    Bytes::from_static(b"stale"),
                    Write::any().fenced(stale.fence())
                )
                .await,
            Err(StoreError::LockLost { .. })
        ));
        assert!(store.release(taken).await.unwrap());
    });
}

async fn killed_child() {
    let store = child_store().await;
    let lease = store
        .try_lease(&lock(), KILLED_TTL)
        .await
        .unwrap()
        .expect("free");
    println!("LEASED {}", lease.token());
    let ops = [
        dream_core::BatchOp::put(
            key("a"),
            Bytes::from_static(b"batch a"),
            dream_core::Precondition::Absent,
        ),
        dream_core::BatchOp::put(
            key("z"),
            Bytes::from_static(b"batch z"),
            dream_core::Precondition::Absent,
        ),
    ];
    let outcome = store.write_batch(&ops, Some(lease.fence())).await;
    // Never reached: the parent kills this process while the batch waits.
    println!("RETURNED {outcome:?}");
}

#[test]
fn a_process_killed_mid_batch_leaves_none_of_it_and_its_lease_expires() {
    killed_mid_batch(
        "a_process_killed_mid_batch_leaves_none_of_it_and_its_lease_expires",
        "COMMIT",
    );
}

#[test]
fn a_killed_process_s_sent_batch_is_applied_whole_or_not_at_all() {
    killed_mid_batch(
        "a_killed_process_s_sent_batch_is_applied_whole_or_not_at_all",
        "ROLLBACK",
    );
}
