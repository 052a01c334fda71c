//! Several processes on one store — dream-fs, dream-sqlite, dream-redis (a
//! private `redis-server`) and dream-postgres (a schema of its own on
//! `DREAM_TEST_POSTGRES_URL`): passes racing while sessions are logged, and
//! processes killed at every failpoint of apply and of a scope purge.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dream_conformance::process::{ChildProcess, child_role};
use dream_core::{RecordStore, parse_memory};
use dream_engine::{AuditAction, Dream, Options, SessionStatus};

use crate::common::*;

const BACKEND_ENV: &str = "DREAM_TEST_BACKEND";
const STORE_ENV: &str = "DREAM_TEST_STORE";
const SIGNAL_ENV: &str = "DREAM_TEST_SIGNAL_DIR";
/// Leases in these tests: 2 s, so a loaded machine renewing late does not lose them.
const LEASE_TTL: Duration = Duration::from_secs(2);

/// A fact the person states, numbered: what the echo model keeps (the engine
/// turns away a proposal from a message that states nothing lasting).
fn fact(label: impl std::fmt::Display) -> String {
    format!("Service {label} listens on port 8080.")
}

fn options() -> Options {
    Options {
        min_sessions: 1,
        min_hours: 0,
        batch_sessions: 100,
        lease_ttl: LEASE_TTL,
        claim_ttl: LEASE_TTL,
        lease_wait: Duration::from_secs(20),
        ..Options::default()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A `redis-server` of this test's own, killed on drop.
struct RedisServer {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// `None` when no `redis-server` can be run here.
    fn start() -> Option<RedisServer> {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--loglevel", "warning"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        let child = match child {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => panic!("starting redis-server: {e}"),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(RedisServer {
            child,
            port,
            _dir: dir,
        })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.backend == "postgres" {
            let location = self.location.clone();
            // Its own runtime on its own thread: drops may run inside a runtime.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async { postgres_store(&location).await.destroy().await })
            })
            .join();
        }
    }
}

/// The PostgreSQL store at `url#schema`.
async fn postgres_store(location: &str) -> dream_postgres::PostgresStore {
    let (url, schema) = location.split_once('#').expect("url#schema");
    let config = dream_postgres::PostgresOptions::from_url(url)
        .unwrap()
        .with_schema(schema)
        .unwrap();
    dream_postgres::PostgresStore::open(config).await.unwrap()
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where one test's store lives, for the parent and its children.
struct Place {
    backend: &'static str,
    location: String,
    signals: tempfile::TempDir,
    _dir: tempfile::TempDir,
    _redis: Option<RedisServer>,
}

impl Place {
    /// `None` (after saying so loudly) when the backend cannot run here.
    fn new(backend: &'static str) -> Option<Place> {
        let dir = tempfile::tempdir().unwrap();
        let mut redis = None;
        let location = match backend {
            "fs" => dir.path().join("store").to_str().unwrap().to_owned(),
            "sqlite" => dir.path().join("dream.sqlite").to_str().unwrap().to_owned(),
            "redis" => match RedisServer::start() {
                Some(server) => {
                    let url = format!("redis://127.0.0.1:{}", server.port);
                    redis = Some(server);
                    url
                }
                None => {
                    if std::env::var("DREAM_REQUIRE_REDIS").is_ok_and(|v| v == "1") {
                        panic!("redis-server is required (DREAM_REQUIRE_REDIS=1)");
                    }
                    eprintln!(
                        "\n*** SKIPPED: no redis-server on PATH for the {backend} test ***\n"
                    );
                    return None;
                }
            },
            "postgres" => match std::env::var("DREAM_TEST_POSTGRES_URL") {
                Ok(url) => format!("{url}#dream_engine_{:016x}", rand::random::<u64>()),
                Err(_) => {
                    if std::env::var("DREAM_REQUIRE_POSTGRES").is_ok_and(|v| v == "1") {
                        panic!("DREAM_TEST_POSTGRES_URL is required (DREAM_REQUIRE_POSTGRES=1)");
                    }
                    eprintln!(
                        "\n*** SKIPPED: DREAM_TEST_POSTGRES_URL is not set for the {backend} test ***\n"
                    );
                    return None;
                }
            },
            other => panic!("unknown backend {other}"),
        };
        Some(Place {
            backend,
            location,
            signals: tempfile::tempdir().unwrap(),
            _dir: dir,
            _redis: redis,
        })
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            (BACKEND_ENV, self.backend.to_owned()),
            (STORE_ENV, self.location.clone()),
            (SIGNAL_ENV, self.signals.path().to_str().unwrap().to_owned()),
        ]
    }
}

async fn open_store(backend: &str, location: &str) -> Arc<dyn RecordStore> {
    match backend {
        "fs" => Arc::new(dream_fs::FsStore::open(location).await.unwrap()),
        "sqlite" => Arc::new(dream_sqlite::SqliteStore::open(location).await.unwrap()),
        "redis" => {
            let config = dream_redis::RedisOptions::from_url(location)
                .unwrap()
                .with_prefix("dream-engine-test")
                .unwrap();
            Arc::new(dream_redis::RedisStore::open(config).await.unwrap())
        }
        "postgres" => Arc::new(postgres_store(location).await),
        other => panic!("unknown backend {other}"),
    }
}

async fn open(backend: &str, location: &str, model: &EchoModel) -> Dream {
    Dream::open(open_store(backend, location).await, options())
        .unwrap()
        .with_model(Arc::new(model.clone()))
}

/// The child's store, from its environment.
async fn open_child(model: &EchoModel) -> (Dream, PathBuf) {
    let backend = std::env::var(BACKEND_ENV).unwrap();
    let location = std::env::var(STORE_ENV).unwrap();
    let signals = PathBuf::from(std::env::var(SIGNAL_ENV).unwrap());
    (open(&backend, &location, model).await, signals)
}

async fn wait_for_go(signals: &Path) {
    while !signals.join("go").exists() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn spawn(test: &str, role: &str, place: &Place, extra: &[(&str, &str)]) -> ChildProcess {
    let env = place.env();
    let mut envs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    envs.extend_from_slice(extra);
    ChildProcess::spawn(test, role, &envs).unwrap()
}

/// Spawns one child per role, waits until each is ready, then lets them all go
/// at once.
fn start_together(test: &str, roles: &[&str], place: &Place) -> Vec<ChildProcess> {
    let mut children: Vec<ChildProcess> = roles
        .iter()
        .map(|role| spawn(test, role, place, &[]))
        .collect();
    for child in &mut children {
        child
            .wait_for_line("READY", Duration::from_secs(60))
            .unwrap();
    }
    std::fs::write(place.signals.path().join("go"), b"go").unwrap();
    children
}

/// Every memory's name, after checking the store is consistent: no journal left,
/// every memory parses, no name twice.
async fn check_consistent(dream: &Dream) -> Vec<String> {
    let journal = dream_engine::layout::journal_key();
    assert!(
        dream.store().get(&journal).await.unwrap().is_none(),
        "a journal was left"
    );
    let ns = dream_engine::layout::namespace(dream_engine::layout::MEMORIES);
    let page = dream.store().list(&ns, None, 1000).await.unwrap();
    let mut names: Vec<String> = page
        .entries
        .iter()
        .map(|e| {
            parse_memory(std::str::from_utf8(&e.record.value).unwrap())
                .unwrap()
                .name
        })
        .collect();
    names.sort();
    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(unique, names, "a memory was duplicated");
    names
}

async fn consumed_sessions(dream: &Dream) -> Vec<String> {
    let ns = dream_engine::layout::namespace(dream_engine::layout::SESSIONS);
    let mut out = Vec::new();
    for e in dream.store().list(&ns, None, 1000).await.unwrap().entries {
        let s: dream_engine::SessionRecord = serde_json::from_slice(&e.record.value).unwrap();
        if s.status == SessionStatus::Consumed {
            out.push(s.messages[0].content.clone());
        }
    }
    out.sort();
    out
}

fn ever() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::UNIX_EPOCH
}

/// The child's side of the race.
fn race_child(role: &str) {
    runtime().block_on(async {
        match role {
            "dreamer" => {
                let model = EchoModel::slow(Duration::from_secs(3));
                let (dream, signals) = open_child(&model).await;
                println!("READY");
                wait_for_go(&signals).await;
                let report = dream.dream(true).await.unwrap();
                println!(
                    "RESULT calls={} consumed={} created={} skipped={:?}",
                    model.calls(),
                    report.sessions_consumed.len(),
                    report.created.len(),
                    report.skipped
                );
            }
            "logger" => {
                let (dream, signals) = open_child(&EchoModel::default()).await;
                println!("READY");
                wait_for_go(&signals).await;
                for i in 100..112 {
                    dream.log_session(user(&fact(i))).await.unwrap();
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                println!("RESULT logged=12");
            }
            "filler" => {
                let (dream, signals) = open_child(&EchoModel::default()).await;
                let dream = Dream::open(dream.store().clone(), bounded_options()).unwrap();
                println!("READY");
                wait_for_go(&signals).await;
                let pid = std::process::id();
                let attempts: Vec<_> = (0..FILL_ATTEMPTS)
                    .map(|i| {
                        let dream = dream.clone();
                        tokio::spawn(async move {
                            dream.log_session(user(&format!("fill {pid} {i}"))).await
                        })
                    })
                    .collect();
                let mut logged = 0;
                for attempt in attempts {
                    match attempt.await.unwrap() {
                        Ok(_) => logged += 1,
                        Err(dream_engine::DreamError::PendingFull { bound, .. }) => {
                            assert_eq!(bound, PENDING_BOUND)
                        }
                        Err(other) => panic!("a logger failed otherwise: {other}"),
                    }
                }
                println!("RESULT logged={logged}");
            }
            other => panic!("unknown role {other}"),
        }
    })
}

/// The pending bound of the filling test, and how many sessions each of its
/// processes tries to log at once.
const PENDING_BOUND: usize = 5;
const FILL_ATTEMPTS: usize = 6;
const FILLERS: usize = 4;

fn bounded_options() -> Options {
    Options {
        max_pending: PENDING_BOUND,
        ..options()
    }
}

/// Four processes log six sessions each, all at once, into a scope bounded to
/// five pending sessions: exactly five are stored, every other call answers
/// `PendingFull` and stores nothing.
fn fill(test: &str, backend: &'static str) {
    if let Some(role) = child_role() {
        return race_child(&role);
    }
    let Some(place) = Place::new(backend) else {
        return;
    };
    let roles = ["filler"; FILLERS];
    let mut children = start_together(test, &roles, &place);
    let mut logged = 0;
    for child in &mut children {
        let line = child
            .wait_for_line("RESULT", Duration::from_secs(120))
            .unwrap();
        logged += line
            .split("logged=")
            .nth(1)
            .unwrap()
            .trim()
            .parse::<usize>()
            .unwrap();
        assert!(child.wait(Duration::from_secs(60)).unwrap().success());
    }
    assert_eq!(logged, PENDING_BOUND, "the bound is exact across processes");
    let rt = runtime();
    rt.block_on(async {
        let store = open_store(backend, &place.location).await;
        let dream = Dream::open(store, bounded_options()).unwrap();
        assert_eq!(dream.stats().await.unwrap().pending_sessions, PENDING_BOUND);
        assert_eq!(dream.stats().await.unwrap().logged_sessions, PENDING_BOUND);
    });
}

#[test]
fn fs_four_processes_filling_the_pending_bound_store_exactly_the_bound() {
    fill(
        "multiprocess::fs_four_processes_filling_the_pending_bound_store_exactly_the_bound",
        "fs",
    );
}

#[test]
fn sqlite_four_processes_filling_the_pending_bound_store_exactly_the_bound() {
    fill(
        "multiprocess::sqlite_four_processes_filling_the_pending_bound_store_exactly_the_bound",
        "sqlite",
    );
}

#[test]
fn redis_four_processes_filling_the_pending_bound_store_exactly_the_bound() {
    fill(
        "multiprocess::redis_four_processes_filling_the_pending_bound_store_exactly_the_bound",
        "redis",
    );
}

#[test]
fn postgres_four_processes_filling_the_pending_bound_store_exactly_the_bound() {
    fill(
        "multiprocess::postgres_four_processes_filling_the_pending_bound_store_exactly_the_bound",
        "postgres",
    );
}

/// Two processes dream at once (a slow model makes them overlap) while a third
/// logs sessions: one pays for the model call, nothing is lost or duplicated.
fn race(test: &str, backend: &'static str) {
    if let Some(role) = child_role() {
        return race_child(&role);
    }
    let Some(place) = Place::new(backend) else {
        return;
    };
    let rt = runtime();
    let parent = rt.block_on(async {
        let parent = open(backend, &place.location, &EchoModel::default()).await;
        for i in 0..6 {
            parent.log_session(user(&fact(i))).await.unwrap();
        }
        parent
    });
    let mut children = start_together(test, &["dreamer", "dreamer", "logger"], &place);
    let mut results = Vec::new();
    for child in &mut children {
        results.push(
            child
                .wait_for_line("RESULT", Duration::from_secs(120))
                .unwrap(),
        );
        assert!(child.wait(Duration::from_secs(60)).unwrap().success());
    }
    let calls: usize = results[..2]
        .iter()
        .map(|r| {
            let n = r.split("calls=").nth(1).unwrap().split(' ').next().unwrap();
            n.parse::<usize>().unwrap()
        })
        .sum();
    assert_eq!(
        calls, 1,
        "exactly one process paid for the model call: {results:?}"
    );
    assert!(
        results[..2]
            .iter()
            .any(|r| r.contains("AnotherPassRunning")),
        "the passes overlapped: {results:?}"
    );

    rt.block_on(async {
        // One memory per consumed session, so far.
        let names = check_consistent(&parent).await;
        let consumed = consumed_sessions(&parent).await;
        assert_eq!(names, consumed, "one memory per consumed session");
        assert!(
            consumed.len() >= 6,
            "the first six were pending when the winner gathered"
        );

        // The parent dreams the rest: every session consumed once, every fact once.
        let report = parent.dream(true).await.unwrap();
        assert_eq!(report.sessions_consumed.len(), 18 - consumed.len());
        let names = check_consistent(&parent).await;
        let mut expected: Vec<String> = (0..6).chain(100..112).map(fact).collect();
        expected.sort();
        assert_eq!(names, expected);
        assert_eq!(parent.stats().await.unwrap().pending_sessions, 0);
        let audit = parent.audit(ever()).await.unwrap();
        let completed = audit
            .iter()
            .filter(|a| a.action == AuditAction::PassCompleted)
            .count();
        assert_eq!(completed, 2);
    });
}

#[test]
fn fs_two_processes_dream_at_once_while_a_third_logs() {
    race(
        "multiprocess::fs_two_processes_dream_at_once_while_a_third_logs",
        "fs",
    );
}

#[test]
fn sqlite_two_processes_dream_at_once_while_a_third_logs() {
    race(
        "multiprocess::sqlite_two_processes_dream_at_once_while_a_third_logs",
        "sqlite",
    );
}

#[test]
fn redis_two_processes_dream_at_once_while_a_third_logs() {
    race(
        "multiprocess::redis_two_processes_dream_at_once_while_a_third_logs",
        "redis",
    );
}

#[test]
fn postgres_two_processes_dream_at_once_while_a_third_logs() {
    race(
        "multiprocess::postgres_two_processes_dream_at_once_while_a_third_logs",
        "postgres",
    );
}

/// What a kill at a failpoint of apply must leave.
#[cfg(feature = "failpoints")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterKill {
    /// Nothing of the pass was written: it happens again.
    Redone,
    /// The journal was left: the next lease holder rolls it forward.
    RolledForward,
    /// The pass was wholly written and nothing is left to do.
    Done,
}

/// The failpoints a pass's apply reaches on `store`, each with what a kill there
/// must leave: on a store with atomic batches one batch (all or none of it, a
/// kill inside the store's transaction included), elsewhere the journal first,
/// then batches of whole records (a kill between two records included), then
/// the journal cleared.
#[cfg(feature = "failpoints")]
fn apply_failpoints(store: &dyn RecordStore) -> Vec<(&'static str, AfterKill)> {
    let info = store.info();
    // A pass's apply is far below any store's atomic limit.
    if info.capabilities.atomic_batch_bytes > 0 {
        let mut points = vec![(dream_engine::ATOMIC_APPLY_FAILPOINTS[0], AfterKill::Redone)];
        if info.name == "sqlite" {
            points.push((dream_sqlite::FAILPOINT_BATCH, AfterKill::Redone));
        }
        points.push((dream_engine::ATOMIC_APPLY_FAILPOINTS[1], AfterKill::Done));
        assert_eq!(dream_engine::ATOMIC_APPLY_FAILPOINTS.len(), 2);
        return points;
    }
    let [before, after, events, records, cleared] = dream_engine::JOURNALED_APPLY_FAILPOINTS else {
        panic!("five journaled failpoints");
    };
    let mut points = vec![
        (*before, AfterKill::Redone),
        (*after, AfterKill::RolledForward),
        (*events, AfterKill::RolledForward),
    ];
    if info.name == "fs" {
        points.push(("fs.batch.after_temp_writes", AfterKill::RolledForward));
        points.push(("fs.batch.after_first_apply", AfterKill::RolledForward));
    }
    points.push((*records, AfterKill::RolledForward));
    points.push((*cleared, AfterKill::Done));
    points
}

/// The change feed after a pass that a killed process may have begun: one
/// `memory-created` for each stored memory and no other (none lost, none
/// invented), one `pass-completed`, and every memory's record newer than its
/// event's entry.
#[cfg(feature = "failpoints")]
async fn check_feed_matches_memories(dream: &Dream, failpoint: &str) {
    use dream_engine::Event;
    let feed = dream.subscribe(None).poll().await.unwrap();
    let mut created: Vec<(String, u64)> = feed
        .iter()
        .filter_map(|e| match &e.event {
            Event::MemoryCreated { memory } => Some((memory.to_string(), e.version)),
            _ => None,
        })
        .collect();
    created.sort();
    let ns = dream_engine::layout::namespace(dream_engine::layout::MEMORIES);
    let stored: Vec<(String, u64)> = dream
        .store()
        .list(&ns, None, 1000)
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| (e.id.to_string(), e.record.version.0))
        .collect();
    let ids = |v: &[(String, u64)]| v.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(&created),
        ids(&stored),
        "{failpoint}: the feed's memory-created events are not the stored memories"
    );
    for ((id, event_version), (_, record_version)) in created.iter().zip(&stored) {
        assert!(
            record_version > event_version,
            "{failpoint}: memory {id} at v{record_version} is not newer than its event v{event_version}"
        );
    }
    let completed = feed
        .iter()
        .filter(|e| matches!(e.event, Event::PassCompleted { .. }))
        .count();
    assert_eq!(completed, 1, "{failpoint}: pass-completed events");
}

/// A process killed at each failpoint of apply; a second `Dream`, open before the
/// crash, then dreams: the store is consistent and the pass either fully
/// happened (rolled forward from the journal) or happens again.
#[cfg(feature = "failpoints")]
fn crash(test: &str, backend: &'static str) {
    use std::os::unix::process::ExitStatusExt;

    if let Some(role) = child_role() {
        assert_eq!(role, "crasher");
        return runtime().block_on(async {
            let (dream, _) = open_child(&EchoModel::default()).await;
            let report = dream.dream(true).await;
            println!("SURVIVED {report:?}");
        });
    }
    let points = {
        let Some(place) = Place::new(backend) else {
            return;
        };
        let store = runtime().block_on(open_store(backend, &place.location));
        apply_failpoints(&*store)
    };
    for (failpoint, after_kill) in points {
        let Some(place) = Place::new(backend) else {
            return;
        };
        let rt = runtime();
        let parent_model = EchoModel::default();
        let parent = rt.block_on(async {
            let parent = open(backend, &place.location, &parent_model).await;
            for i in 0..3 {
                parent.log_session(user(&fact(i))).await.unwrap();
            }
            parent
        });
        let fp = [(dream_core::failpoint::FAILPOINT_ENV, failpoint)];
        let mut child = spawn(test, "crasher", &place, &fp);
        let status = child.wait(Duration::from_secs(120)).unwrap();
        assert_eq!(
            status.signal(),
            Some(9),
            "{failpoint}: the child did not die at its failpoint: {:?}",
            child.drain_lines()
        );

        rt.block_on(async {
            // Past every lease of the dead process (3 × TTL).
            tokio::time::sleep(LEASE_TTL * 3).await;
            let report = parent.dream(true).await.unwrap();
            let names = check_consistent(&parent).await;
            assert_eq!(names, (0..3).map(fact).collect::<Vec<_>>(), "{failpoint}");
            check_feed_matches_memories(&parent, failpoint).await;
            let stats = parent.stats().await.unwrap();
            assert_eq!(stats.pending_sessions, 0, "{failpoint}");
            assert_eq!(
                stats.generation, 1,
                "{failpoint}: exactly one pass happened"
            );
            assert!(parent.last_success().await.unwrap().is_some());
            let audit = parent.audit(ever()).await.unwrap();
            let completed = audit
                .iter()
                .filter(|a| a.action == AuditAction::PassCompleted)
                .count();
            assert_eq!(completed, 1, "{failpoint}");
            let rolled = audit
                .iter()
                .any(|a| a.action == AuditAction::JournalRolledForward);
            if after_kill == AfterKill::RolledForward {
                // The pass fully happens: rolled forward by the fresh lease holder.
                assert!(rolled, "{failpoint}");
                assert!(report.rolled_forward.is_some(), "{failpoint}");
                assert_eq!(parent_model.calls(), 0, "{failpoint}");
                assert_eq!(
                    report.skipped,
                    Some(dream_engine::SkipReason::NothingPending)
                );
            } else if after_kill == AfterKill::Done {
                assert!(!rolled, "{failpoint}");
                assert_eq!(parent_model.calls(), 0, "{failpoint}");
            } else {
                // Nothing was applied: the pass happens again.
                assert!(!rolled, "{failpoint}");
                assert_eq!(parent_model.calls(), 1, "{failpoint}");
                assert_eq!(report.created.len(), 3, "{failpoint}");
            }
        });
    }
}

#[cfg(feature = "failpoints")]
#[test]
fn fs_a_process_killed_at_each_failpoint_of_apply_leaves_a_consistent_store() {
    crash(
        "multiprocess::fs_a_process_killed_at_each_failpoint_of_apply_leaves_a_consistent_store",
        "fs",
    );
}

#[cfg(feature = "failpoints")]
#[test]
fn sqlite_a_process_killed_at_each_failpoint_of_apply_leaves_a_consistent_store() {
    crash(
        "multiprocess::sqlite_a_process_killed_at_each_failpoint_of_apply_leaves_a_consistent_store",
        "sqlite",
    );
}

#[cfg(feature = "failpoints")]
#[test]
fn postgres_a_process_killed_at_each_failpoint_of_apply_leaves_a_consistent_store() {
    crash(
        "multiprocess::postgres_a_process_killed_at_each_failpoint_of_apply_leaves_a_consistent_store",
        "postgres",
    );
}

#[cfg(feature = "failpoints")]
#[test]
fn redis_a_process_killed_at_each_failpoint_of_apply_leaves_a_consistent_store() {
    crash(
        "multiprocess::redis_a_process_killed_at_each_failpoint_of_apply_leaves_a_consistent_store",
        "redis",
    );
}

/// Every record but the audit log, the generation and the journal: key → (value, version).
#[cfg(feature = "failpoints")]
async fn records_but_bookkeeping(store: &dyn RecordStore) -> Vec<(String, Vec<u8>, u64)> {
    use dream_engine::layout;
    let mut out = Vec::new();
    for ns in store.namespaces().await.unwrap() {
        if [layout::AUDIT, layout::JOURNAL, layout::FEED].contains(&ns.as_str()) {
            continue;
        }
        for e in store.list(&ns, None, 1000).await.unwrap().entries {
            if e.id.as_str() != layout::GENERATION {
                out.push((
                    format!("{ns}/{}", e.id),
                    e.record.value.to_vec(),
                    e.record.version.0,
                ));
            }
        }
    }
    out
}

/// A process killed at each failpoint of a scope purge (its own, then those of
/// the apply of its first chunk): the next process to take the lease — here one
/// remembering something in a third scope — completes the purge; nothing of the
/// scope is left and the other scope's records are byte-identical.
#[cfg(feature = "failpoints")]
fn purge_crash(test: &str, backend: &'static str) {
    use std::os::unix::process::ExitStatusExt;

    let acme = dream_core::Scope::new("acme").unwrap();
    let in_scope = |store: Arc<dyn RecordStore>, scope: &str, model: &EchoModel| {
        Dream::open(
            store,
            Options {
                scope: dream_core::Scope::new(scope).unwrap(),
                ..options()
            },
        )
        .unwrap()
        .with_model(Arc::new(model.clone()))
    };
    if let Some(role) = child_role() {
        assert_eq!(role, "purger");
        return runtime().block_on(async {
            let (dream, _) = open_child(&EchoModel::default()).await;
            let report = dream.purge_scope(&acme).await;
            println!("SURVIVED {report:?}");
        });
    }
    // A purge's chunks commit like a pass's apply: one batch where batches are
    // atomic (as a purge this small is on every backend but dream-fs), the journal
    // first elsewhere.
    let apply = if backend != "fs" {
        dream_engine::ATOMIC_APPLY_FAILPOINTS
    } else {
        dream_engine::JOURNALED_APPLY_FAILPOINTS
    };
    let failpoints = dream_engine::PURGE_FAILPOINTS.iter().chain(apply);
    for failpoint in failpoints {
        let Some(place) = Place::new(backend) else {
            return;
        };
        let rt = runtime();
        let model = EchoModel::default();
        let (store, beta_before) = rt.block_on(async {
            let store = open_store(backend, &place.location).await;
            for scope in ["acme", "beta"] {
                let dream = in_scope(store.clone(), scope, &model);
                for i in 0..3 {
                    dream
                        .log_session(user(&fact(format!("{scope} {i}"))))
                        .await
                        .unwrap();
                }
                dream.dream(true).await.unwrap();
            }
            let beta: Vec<_> = records_but_bookkeeping(&*store)
                .await
                .into_iter()
                .filter(|(k, v, _)| {
                    !String::from_utf8_lossy(v).contains("acme")
                        && !k.ends_with(&dream_engine::layout::short_hash("acme"))
                })
                .collect();
            (store, beta)
        });
        let fp = [(dream_core::failpoint::FAILPOINT_ENV, *failpoint)];
        let mut child = spawn(test, "purger", &place, &fp);
        let status = child.wait(Duration::from_secs(120)).unwrap();
        assert_eq!(
            status.signal(),
            Some(9),
            "{failpoint}: the child did not die at its failpoint: {:?}",
            child.drain_lines()
        );
        rt.block_on(async {
            tokio::time::sleep(LEASE_TTL * 3).await;
            let gamma = in_scope(store.clone(), "gamma", &model);
            gamma
                .remember(dream_engine::NewMemory::new(
                    dream_core::MemoryKind::Project,
                    "gamma",
                    "Gamma runs on port 7.",
                ))
                .await
                .unwrap();
            let bytes = String::from_utf8_lossy(&all_bytes(&*store).await).into_owned();
            assert!(
                !bytes.contains("acme fact"),
                "{failpoint}: the purge completed"
            );
            assert!(
                store
                    .get(&dream_engine::layout::purge_key())
                    .await
                    .unwrap()
                    .is_none(),
                "{failpoint}: the purge record is cleared"
            );
            let beta_after: Vec<_> = records_but_bookkeeping(&*store)
                .await
                .into_iter()
                .filter(|(_, v, _)| !String::from_utf8_lossy(v).contains("Gamma"))
                .collect();
            assert_eq!(
                beta_after, beta_before,
                "{failpoint}: beta is byte-identical"
            );
            let audit = in_scope(store.clone(), "acme", &model)
                .audit(ever())
                .await
                .unwrap();
            let purges = audit
                .iter()
                .filter(|a| a.action == AuditAction::ScopePurged)
                .count();
            assert_eq!(purges, 1, "{failpoint}: one purge, completed once");
            check_consistent(&gamma).await;
        });
    }
}

#[cfg(feature = "failpoints")]
#[test]
fn fs_a_scope_purge_killed_at_each_failpoint_completes_on_the_next_lease() {
    purge_crash(
        "multiprocess::fs_a_scope_purge_killed_at_each_failpoint_completes_on_the_next_lease",
        "fs",
    );
}

#[cfg(feature = "failpoints")]
#[test]
fn sqlite_a_scope_purge_killed_at_each_failpoint_completes_on_the_next_lease() {
    purge_crash(
        "multiprocess::sqlite_a_scope_purge_killed_at_each_failpoint_completes_on_the_next_lease",
        "sqlite",
    );
}

#[cfg(feature = "failpoints")]
#[test]
fn redis_a_scope_purge_killed_at_each_failpoint_completes_on_the_next_lease() {
    purge_crash(
        "multiprocess::redis_a_scope_purge_killed_at_each_failpoint_completes_on_the_next_lease",
        "redis",
    );
}

#[cfg(feature = "failpoints")]
#[test]
fn postgres_a_scope_purge_killed_at_each_failpoint_completes_on_the_next_lease() {
    purge_crash(
        "multiprocess::postgres_a_scope_purge_killed_at_each_failpoint_completes_on_the_next_lease",
        "postgres",
    );
}

// ---------------------------------------------------------------------------
// Every fact kept under random kills (issue 34).

/// Facts each killed-and-restarted worker logs.
const FACTS_PER_WORKER: usize = 8;

/// The fact worker `k` logs `i`-th: a decision with numbered names.
fn numbered_fact(k: usize, i: usize) -> String {
    format!(
        "We decided that the Juniper{k}x{i} team deploys its svc{k}x{i} service with Deployer{k}x{i}X."
    )
}

/// The messages of every session in the store, whatever its status.
async fn logged_texts(store: &dyn RecordStore) -> Vec<String> {
    let ns = dream_engine::layout::namespace(dream_engine::layout::SESSIONS);
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = store.list(&ns, after.as_ref(), 1000).await.unwrap();
        for e in page.entries {
            let s: dream_engine::SessionRecord = serde_json::from_slice(&e.record.value).unwrap();
            out.extend(s.messages.into_iter().map(|m| m.content));
        }
        match page.next {
            Some(next) => after = Some(next),
            None => return out,
        }
    }
}

/// A worker: logs its facts it has not logged yet (the store says which), and
/// dreams offline after each; it may be killed at any moment and started again.
fn kill_child(role: &str) {
    let k: usize = role.strip_prefix("worker-").unwrap().parse().unwrap();
    runtime().block_on(async {
        let backend = std::env::var(BACKEND_ENV).unwrap();
        let location = std::env::var(STORE_ENV).unwrap();
        let store = open_store(&backend, &location).await;
        let dream = Dream::open(store.clone(), options()).unwrap();
        println!("READY");
        for i in 0..FACTS_PER_WORKER {
            let fact = numbered_fact(k, i);
            if !logged_texts(store.as_ref()).await.contains(&fact) {
                dream.log_session(user(&fact)).await.unwrap();
            }
            // A pass may lose to another process or find its lease stolen by a
            // kill: whatever it did not apply stays pending for the next one.
            let _ = dream.dream(true).await;
        }
        println!("DONE");
    });
}

/// Four workers log and dream on one store while the parent kills one at
/// random every few hundred milliseconds and starts it again; then one clean
/// pass. Every fact, numbered names included, is a memory.
fn kept_under_kills(test: &str, backend: &'static str) {
    if let Some(role) = child_role() {
        return kill_child(&role);
    }
    let Some(place) = Place::new(backend) else {
        return;
    };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("kill schedule seed {seed}");
    let mut state = seed | 1;
    let mut next = move |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    let roles = ["worker-0", "worker-1", "worker-2", "worker-3"];
    let mut children: Vec<Option<ChildProcess>> = roles
        .iter()
        .map(|role| Some(spawn(test, role, &place, &[])))
        .collect();
    let mut done = [false; 4];
    let mut kills = 0;
    let deadline = Instant::now() + Duration::from_secs(150);
    while done.iter().any(|d| !d) {
        assert!(Instant::now() < deadline, "the workers did not finish");
        std::thread::sleep(Duration::from_millis(150 + next(600)));
        for (i, child) in children.iter_mut().enumerate() {
            if let Some(c) = child
                && c.drain_lines().iter().any(|l| l.contains("DONE"))
            {
                done[i] = true;
            }
        }
        // Kill a random worker that is still at work, and start it again; no
        // more kills in the last third of the time, so the run ends.
        let victim = next(4) as usize;
        if !done[victim] && kills < 24 {
            if let Some(mut c) = children[victim].take() {
                c.kill();
                kills += 1;
            }
            children[victim] = Some(spawn(test, roles[victim], &place, &[]));
        }
    }
    eprintln!("{kills} kills");
    for child in children.iter_mut().flatten() {
        assert!(child.wait(Duration::from_secs(60)).unwrap().success());
    }
    let rt = runtime();
    rt.block_on(async {
        let store = open_store(backend, &place.location).await;
        let dream = Dream::open(store, options()).unwrap();
        // A killed worker's claim lasts its TTL: a pass skipped for it waits.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let report = dream.dream(true).await.unwrap();
            let stats = dream.stats().await.unwrap();
            if stats.pending_sessions == 0 && stats.stuck_sessions == 0 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "sessions still pending: {report:?}"
            );
            if report.skipped.is_some() {
                tokio::time::sleep(LEASE_TTL / 2).await;
            }
        }
        check_consistent(&dream).await;
        let contents: Vec<String> = dream
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.content)
            .collect();
        for k in 0..4 {
            for i in 0..FACTS_PER_WORKER {
                let token = format!("Deployer{k}x{i}X");
                assert!(
                    contents
                        .iter()
                        .any(|c| c.contains(&token) && c.contains(&format!("Juniper{k}x{i}"))),
                    "fact {k}/{i} lost (seed {seed}): {contents:#?}"
                );
            }
        }
        assert_eq!(dream.stats().await.unwrap().pending_sessions, 0);
    });
}

#[test]
fn fs_four_processes_killed_at_random_keep_every_fact() {
    kept_under_kills(
        "multiprocess::fs_four_processes_killed_at_random_keep_every_fact",
        "fs",
    );
}

#[test]
fn sqlite_four_processes_killed_at_random_keep_every_fact() {
    kept_under_kills(
        "multiprocess::sqlite_four_processes_killed_at_random_keep_every_fact",
        "sqlite",
    );
}

#[test]
fn redis_four_processes_killed_at_random_keep_every_fact() {
    kept_under_kills(
        "multiprocess::redis_four_processes_killed_at_random_keep_every_fact",
        "redis",
    );
}

#[test]
fn postgres_four_processes_killed_at_random_keep_every_fact() {
    kept_under_kills(
        "multiprocess::postgres_four_processes_killed_at_random_keep_every_fact",
        "postgres",
    );
}
