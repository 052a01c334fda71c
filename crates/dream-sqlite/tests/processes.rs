//! Several OS processes on one database file: compare-and-swap increments lose
//! nothing, lease-guarded sections never have two holders, a paused holder is
//! fenced out, and a process killed inside a write transaction leaves the file
//! consistent with every committed record intact.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use dream_conformance::process::{ChildProcess, child_role};
use dream_core::{Bytes, Key, LockName, Namespace, RecordId, RecordStore, StoreError, Write};
use dream_sqlite::SqliteStore;

const PROCESSES: usize = 4;
const INCREMENTS: u64 = 100;
const SECTIONS: usize = 25;
const CHILD_TIMEOUT: Duration = Duration::from_secs(180);

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

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("child needs {name}"))
}

fn assert_success(child: &mut ChildProcess, what: &str) {
    let status = child.wait(CHILD_TIMEOUT).expect("child exits");
    assert!(status.success(), "{what} failed: {status:?}");
}

/// Retries an operation while the store reports a retryable (busy) failure.
macro_rules! retrying {
    ($op:expr) => {{
        let mut attempts = 0;
        loop {
            match $op {
                Err(err) if err.is_retryable() && attempts < 20 => {
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                other => break other,
            }
        }
    }};
}

#[test]
fn cas_increments_across_processes_lose_nothing() {
    if let Some(role) = child_role() {
        assert_eq!(role, "incrementer");
        runtime().block_on(async {
            let store = retrying!(SqliteStore::open(env("DB")).await).expect("open");
            let k = key("race", "counter");
            let (mut done, mut conflicts) = (0u64, 0u64);
            while done < INCREMENTS {
                let current = retrying!(store.get(&k).await).expect("get");
                let (next, write) = match current {
                    None => (1, Write::absent()),
                    Some(record) => {
                        let n: u64 = std::str::from_utf8(&record.value)
                            .expect("utf8")
                            .parse()
                            .expect("number");
                        (n + 1, Write::matches(record.version))
                    }
                };
                match retrying!(
                    store
                        .put(&k, Bytes::from(next.to_string()), write.clone())
                        .await
                ) {
                    Ok(_) => done += 1,
                    Err(StoreError::Conflict { .. }) => conflicts += 1,
                    Err(other) => panic!("CAS increment: {other:?}"),
                }
            }
            println!("DONE {done} conflicts {conflicts}");
        });
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dream.sqlite");
    let db = db.to_str().expect("utf8 path");
    // The children race to create and initialise the file as well.
    let mut children: Vec<ChildProcess> = (0..PROCESSES)
        .map(|_| {
            ChildProcess::spawn(
                "cas_increments_across_processes_lose_nothing",
                "incrementer",
                &[("DB", db)],
            )
            .expect("spawn")
        })
        .collect();
    let mut conflicts = 0u64;
    for child in &mut children {
        let line = child
            .wait_for_line("DONE", CHILD_TIMEOUT)
            .expect("child finishes its increments");
        conflicts += line
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .expect("conflict count");
        assert_success(child, "incrementer");
    }
    runtime().block_on(async {
        let store = SqliteStore::open(db).await.expect("open");
        let record = store
            .get(&key("race", "counter"))
            .await
            .expect("get")
            .expect("counter");
        assert_eq!(
            std::str::from_utf8(&record.value).expect("utf8"),
            (PROCESSES as u64 * INCREMENTS).to_string(),
            "no update lost"
        );
        store.check_integrity().await.expect("integrity");
    });
    println!("{conflicts} conflicts were retried across processes");
}

fn append_line(path: &Path, line: &str) {
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .expect("witness file");
    file.write_all(format!("{line}\n").as_bytes())
        .expect("append witness");
}

#[test]
fn lease_guarded_sections_across_processes_never_overlap() {
    if let Some(role) = child_role() {
        assert_eq!(role, "worker");
        let me = env("ME");
        let witness = env("WITNESS");
        runtime().block_on(async {
            let store = retrying!(SqliteStore::open(env("DB")).await).expect("open");
            let lock = LockName::new("section").expect("lock");
            let inside = key("state", "inside");
            let log = key("state", "log");
            for i in 0..SECTIONS {
                let lease = loop {
                    match retrying!(store.try_lease(&lock, Duration::from_secs(10)).await) {
                        Ok(Some(lease)) => break lease,
                        Ok(None) => tokio::time::sleep(Duration::from_millis(5)).await,
                        Err(err) => panic!("try_lease: {err:?}"),
                    }
                };
                let fence = lease.fence();
                append_line(Path::new(&witness), &format!("enter {me}"));
                assert_eq!(
                    retrying!(store.get(&inside).await).expect("get inside"),
                    None,
                    "{me}: somebody else is inside"
                );
                let marker = retrying!(
                    store
                        .put(
                            &inside,
                            Bytes::from(me.clone()),
                            Write::absent().fenced(fence.clone())
                        )
                        .await
                )
                .expect("mark inside");
                tokio::time::sleep(Duration::from_millis(5)).await;
                let current = retrying!(store.get(&log).await).expect("get log");
                let (mut text, write) = match current {
                    Some(record) => (record.value.to_vec(), Write::matches(record.version)),
                    None => (Vec::new(), Write::absent()),
                };
                text.extend_from_slice(format!("{me} {i} {}\n", lease.token()).as_bytes());
                retrying!(
                    store
                        .put(
                            &log,
                            Bytes::from(text.clone()),
                            write.clone().fenced(fence.clone())
                        )
                        .await
                )
                .expect("append under the lease");
                assert!(
                    retrying!(
                        store
                            .delete(&inside, Write::matches(marker).fenced(fence.clone()))
                            .await
                    )
                    .expect("leave"),
                    "{me}: the inside marker was mine"
                );
                append_line(Path::new(&witness), &format!("exit {me}"));
                assert!(
                    retrying!(store.release(lease.clone()).await).expect("release"),
                    "{me}: the lease was still held at release"
                );
            }
            println!("DONE {me}");
        });
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dream.sqlite");
    let witness = dir.path().join("witness.txt");
    let (db_s, witness_s) = (
        db.to_str().expect("utf8").to_owned(),
        witness.to_str().expect("utf8").to_owned(),
    );
    let names: Vec<String> = (0..PROCESSES).map(|i| format!("w{i}")).collect();
    let mut children: Vec<ChildProcess> = names
        .iter()
        .map(|me| {
            ChildProcess::spawn(
                "lease_guarded_sections_across_processes_never_overlap",
                "worker",
                &[("DB", &db_s), ("ME", me), ("WITNESS", &witness_s)],
            )
            .expect("spawn")
        })
        .collect();
    for child in &mut children {
        child
            .wait_for_line("DONE", CHILD_TIMEOUT)
            .expect("worker finishes");
        assert_success(child, "worker");
    }
    // The independent witness: enters and exits strictly alternate, same process.
    let lines: Vec<String> = std::fs::read_to_string(&witness)
        .expect("witness")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 2 * PROCESSES * SECTIONS);
    for pair in lines.chunks(2) {
        let enter = pair[0].strip_prefix("enter ").expect("an enter line");
        let exit = pair[1].strip_prefix("exit ").expect("then its exit line");
        assert_eq!(enter, exit, "never two holders: {pair:?}");
    }
    runtime().block_on(async {
        let store = SqliteStore::open(&db).await.expect("open");
        assert_eq!(store.get(&key("state", "inside")).await.expect("get"), None);
        let log = store
            .get(&key("state", "log"))
            .await
            .expect("get")
            .expect("log");
        let entries: Vec<(String, usize, u64)> = std::str::from_utf8(&log.value)
            .expect("utf8")
            .lines()
            .map(|line| {
                let mut parts = line.split(' ');
                let who = parts.next().expect("who").to_owned();
                let i = parts.next().expect("i").parse().expect("i");
                let token = parts.next().expect("token").parse().expect("token");
                (who, i, token)
            })
            .collect();
        assert_eq!(
            entries.len(),
            PROCESSES * SECTIONS,
            "every section's append survived"
        );
        for pair in entries.windows(2) {
            assert!(pair[1].2 > pair[0].2, "fences increase: {pair:?}");
        }
        for name in &names {
            let mine: Vec<usize> = entries
                .iter()
                .filter(|(who, _, _)| who == name)
                .map(|(_, i, _)| *i)
                .collect();
            assert_eq!(mine, (0..SECTIONS).collect::<Vec<_>>(), "{name}'s sections");
        }
    });
}

#[test]
fn paused_holder_is_fenced_out_after_takeover() {
    if let Some(role) = child_role() {
        assert_eq!(role, "holder");
        let go = env("GO");
        runtime().block_on(async {
            let store = SqliteStore::open(env("DB")).await.expect("open");
            let lock = LockName::new("dream").expect("lock");
            let lease = store
                .try_lease(&lock, Duration::from_secs(1))
                .await
                .expect("try_lease")
                .expect("free");
            println!("HELD {}", lease.token());
            for _ in 0..3000 {
                if Path::new(&go).exists() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let put = store
                .put(
                    &key("ns", "k"),
                    Bytes::from_static(b"stale"),
                    Write::any().fenced(lease.fence()),
                )
                .await;
            println!(
                "PUT {}",
                if matches!(put, Err(StoreError::LockLost { .. })) {
                    "LockLost"
                } else {
                    "accepted"
                }
            );
            let renew = store.renew(&lease, Duration::from_secs(10)).await;
            println!(
                "RENEW {}",
                if matches!(renew, Err(StoreError::LockLost { .. })) {
                    "LockLost"
                } else {
                    "accepted"
                }
            );
            println!("RELEASE {}", store.release(lease).await.expect("release"));
        });
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dream.sqlite");
    let go = dir.path().join("go");
    let rt = runtime();
    let store = rt.block_on(SqliteStore::open(&db)).expect("open");
    let mut child = ChildProcess::spawn(
        "paused_holder_is_fenced_out_after_takeover",
        "holder",
        &[
            ("DB", db.to_str().expect("utf8")),
            ("GO", go.to_str().expect("utf8")),
        ],
    )
    .expect("spawn");
    let held = child
        .wait_for_line("HELD", CHILD_TIMEOUT)
        .expect("child holds the lease");
    // libtest may print "test <name> ... " before the child's first line.
    let child_token: u64 = held
        .rsplit("HELD ")
        .next()
        .and_then(|t| t.trim().parse().ok())
        .expect("token");
    child.stop();
    std::thread::sleep(Duration::from_secs(3));
    rt.block_on(async {
        let lock = LockName::new("dream").expect("lock");
        let lease = store
            .try_lease(&lock, Duration::from_secs(60))
            .await
            .expect("try_lease")
            .expect("the paused holder's lease expired");
        assert!(lease.token() > child_token);
        store
            .put(
                &key("ns", "k"),
                Bytes::from_static(b"fresh"),
                Write::any().fenced(lease.fence()),
            )
            .await
            .expect("fresh fenced put");
        std::fs::write(&go, b"").expect("go");
        child.resume();
        for (marker, want) in [
            ("PUT", "PUT LockLost"),
            ("RENEW", "RENEW LockLost"),
            ("RELEASE", "RELEASE false"),
        ] {
            let line = child
                .wait_for_line(marker, CHILD_TIMEOUT)
                .expect("child reports");
            assert!(
                line.ends_with(want),
                "child reported {line:?}, want {want:?}"
            );
        }
        assert_success(&mut child, "holder");
        let record = store
            .get(&key("ns", "k"))
            .await
            .expect("get")
            .expect("present");
        assert_eq!(
            record.value.as_ref(),
            b"fresh",
            "the stale write changed nothing"
        );
        assert!(store.release(lease).await.expect("release"));
    });
}

#[cfg(feature = "failpoints")]
#[test]
fn killed_inside_a_write_transaction_leaves_the_file_consistent() {
    use std::os::unix::process::ExitStatusExt;

    use dream_core::failpoint::FAILPOINT_ENV;
    use dream_core::{Precondition, Version};
    use dream_sqlite::{FAILPOINT_DELETE, FAILPOINT_PUT};

    const BIG: usize = 6 * 1024 * 1024;

    if let Some(role) = child_role() {
        runtime().block_on(async {
            let store = SqliteStore::open(env("DB")).await.expect("open");
            println!("READY");
            // Bigger than SQLite's page cache, so dirty pages spill into the WAL
            // before the commit that never comes.
            let big = Bytes::from(vec![0x5a; BIG]);
            match role.as_str() {
                "create" => {
                    let _ = store
                        .put(&key("ns", "inflight"), big, Write::absent())
                        .await;
                }
                "overwrite" => {
                    let _ = store.put(&key("ns", "a"), big, Write::any()).await;
                }
                "delete" => {
                    let _ = store.delete(&key("ns", "b"), Write::any()).await;
                }
                other => panic!("unknown role {other}"),
            }
            println!("SURVIVED");
        });
        return;
    }

    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("dream.sqlite");
    let db_s = db.to_str().expect("utf8").to_owned();
    let rt = runtime();
    let store = rt.block_on(SqliteStore::open(&db)).expect("open");
    let mut committed: Vec<(Key, Bytes, Version)> = Vec::new();
    let mut highest = Version(0);
    rt.block_on(async {
        for (id, value) in [("a", "alpha-1"), ("b", "beta"), ("c", "gamma")] {
            let v = store
                .put(&key("ns", id), Bytes::from(value), Write::absent())
                .await
                .expect("put");
            highest = highest.max(v);
        }
        let v = store
            .put(
                &key("ns", "a"),
                Bytes::from_static(b"alpha-2"),
                Write::any(),
            )
            .await
            .expect("update a");
        highest = highest.max(v);
        assert!(
            store
                .delete(&key("ns", "c"), Write::any())
                .await
                .expect("delete c")
        );
        for id in ["a", "b"] {
            let k = key("ns", id);
            let r = store.get(&k).await.expect("get").expect("present");
            committed.push((k, r.value, r.version));
        }
    });

    for (role, failpoint) in [
        ("create", FAILPOINT_PUT),
        ("overwrite", FAILPOINT_PUT),
        ("delete", FAILPOINT_DELETE),
    ] {
        let mut child = ChildProcess::spawn(
            "killed_inside_a_write_transaction_leaves_the_file_consistent",
            role,
            &[("DB", &db_s), (FAILPOINT_ENV, failpoint)],
        )
        .expect("spawn");
        child.wait_for_line("READY", CHILD_TIMEOUT).expect("ready");
        let status = child.wait(CHILD_TIMEOUT).expect("child ends");
        assert_eq!(
            status.signal(),
            Some(9),
            "{role}: the child died by SIGKILL at {failpoint}: {status:?}"
        );
        assert!(
            !child.drain_lines().iter().any(|l| l.contains("SURVIVED")),
            "{role}: the failpoint fired"
        );
        // The store that stayed open sees only committed data and can still write.
        rt.block_on(async {
            for (k, value, version) in &committed {
                let r = store.get(k).await.expect("get").expect("committed record");
                assert_eq!(&r.value, value, "{role}: {k} intact");
                assert_eq!(r.version, *version, "{role}: {k} version");
            }
            assert_eq!(store.get(&key("ns", "inflight")).await.expect("get"), None);
            assert_eq!(store.get(&key("ns", "c")).await.expect("get"), None);
        });
    }

    rt.block_on(async {
        store.close().await.expect("close");
        {
            let conn = dream_sqlite::rusqlite::Connection::open(&db).expect("raw open");
            let check: String = conn
                .query_row("PRAGMA integrity_check", [], |row| row.get(0))
                .expect("integrity_check");
            assert_eq!(check, "ok");
        }
        let store = SqliteStore::open(&db).await.expect("reopen after crashes");
        store.check_integrity().await.expect("integrity");
        for (k, value, version) in &committed {
            let r = store.get(k).await.expect("get").expect("committed record");
            assert_eq!(&r.value, value, "{k} intact after reopen");
            assert_eq!(r.version, *version);
        }
        assert_eq!(store.get(&key("ns", "inflight")).await.expect("get"), None);
        let page = store
            .list(&Namespace::new("ns").expect("ns"), None, 100)
            .await
            .expect("list");
        let ids: Vec<&str> = page.entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        let next = store
            .put(
                &key("ns", "after"),
                Bytes::from_static(b"x"),
                Write::absent(),
            )
            .await
            .expect("put after crashes");
        assert!(
            next > highest,
            "versions are not reused: {next} after {highest}"
        );
        assert!(matches!(
            store
                .put(
                    &key("ns", "a"),
                    Bytes::from_static(b"x"),
                    Write {
                        pre: Precondition::Matches(Version(highest.0 + 1)),
                        fence: None
                    }
                )
                .await,
            Err(StoreError::Conflict { .. })
        ));
    });
}

#[test]
fn processes_racing_to_create_the_file_share_one_store() {
    const ROUNDS: usize = 10;
    const RACERS: usize = 6;
    if let Some(role) = child_role() {
        assert_eq!(role, "racer");
        let me = env("ME");
        runtime().block_on(async {
            let store = match SqliteStore::open(env("DB")).await {
                Ok(store) => store,
                Err(err) => panic!("{me}: open while racing: {err:?}"),
            };
            match store
                .put(
                    &key("racers", &me),
                    Bytes::from(me.clone()),
                    Write::absent(),
                )
                .await
            {
                Ok(_) => println!("DONE {me}"),
                Err(err) => panic!("{me}: put while racing: {err:?}"),
            }
        });
        return;
    }
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().expect("dir");
        let db = dir.path().join("dream.sqlite");
        let db_s = db.to_str().expect("utf8").to_owned();
        let mut children: Vec<ChildProcess> = (0..RACERS)
            .map(|i| {
                ChildProcess::spawn(
                    "processes_racing_to_create_the_file_share_one_store",
                    "racer",
                    &[("DB", &db_s), ("ME", &format!("r{i}"))],
                )
                .expect("spawn")
            })
            .collect();
        for child in &mut children {
            child
                .wait_for_line("DONE", CHILD_TIMEOUT)
                .unwrap_or_else(|e| panic!("round {round}: racer did not finish: {e}"));
            assert_success(child, "racer");
        }
        runtime().block_on(async {
            let store = SqliteStore::open(&db).await.expect("open");
            let page = store
                .list(&Namespace::new("racers").expect("ns"), None, 100)
                .await
                .expect("list");
            assert_eq!(
                page.entries.len(),
                RACERS,
                "round {round}: every racer's record"
            );
        });
    }
}
