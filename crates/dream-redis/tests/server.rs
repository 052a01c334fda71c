//! Behaviour that needs a real server: scripts flushed, the server crashed and
//! restarted, a server that comes back empty, foreign and corrupt data, the
//! connection URL (database, password, unix socket), persistence reporting.
//! Tests that flush, restart or wipe the server use a private `redis-server`.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{PrefixGuard, RedisServer, ServerOptions, TestRedis};
use dream_core::{Bytes, Key, LockName, Namespace, RecordId, RecordStore, StoreError, Write};
use dream_redis::redis;
use dream_redis::{ConfigError, RedisOptions, RedisStore};

fn key(ns: &str, id: &str) -> Key {
    Key::new(Namespace::new(ns).unwrap(), RecordId::new(id).unwrap())
}

fn lock(name: &str) -> LockName {
    LockName::new(name).unwrap()
}

fn ns(name: &str) -> Namespace {
    Namespace::new(name).unwrap()
}

fn cached_scripts(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query(conn).unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("number_of_cached_scripts:"))
        .expect("INFO memory reports number_of_cached_scripts")
        .trim()
        .parse()
        .unwrap()
}

fn flush_scripts(conn: &mut redis::Connection) {
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(conn).unwrap();
    assert_eq!(cached_scripts(conn), 0, "SCRIPT FLUSH emptied the cache");
}

fn is_epoch_missing(err: &StoreError) -> bool {
    matches!(err, StoreError::Corrupt { key: None, reason } if reason.contains("epoch key is missing"))
}

fn is_epoch_changed(err: &StoreError) -> bool {
    matches!(err, StoreError::Incompatible { reason } if reason.contains("epoch changed"))
}

/// Runs a blocking server operation off the runtime's workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

async fn private(test: &str, options: ServerOptions) -> Option<RedisServer> {
    let test = test.to_owned();
    blocking(move || common::private_or_skip(&test, options)).await
}

async fn shared(test: &str) -> Option<TestRedis> {
    let test = test.to_owned();
    blocking(move || common::redis_or_skip(&test)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_flush_is_survived_by_every_operation() {
    let Some(server) = private("script_flush", ServerOptions::default()).await else {
        return;
    };
    let store = common::open(&server.url(), "flush").await;
    let mut raw = server.raw();
    let k = key("ns", "k");
    let v1 = store
        .put(&k, Bytes::from_static(b"one"), Write::any())
        .await
        .unwrap();
    assert!(cached_scripts(&mut raw) > 0);

    flush_scripts(&mut raw);
    let v2 = store
        .put(&k, Bytes::from_static(b"two"), Write::matches(v1))
        .await
        .expect("put after SCRIPT FLUSH");
    assert!(cached_scripts(&mut raw) > 0, "the put script was reloaded");

    flush_scripts(&mut raw);
    let record = store
        .get(&k)
        .await
        .expect("get after SCRIPT FLUSH")
        .unwrap();
    assert_eq!((record.value.as_ref(), record.version), (&b"two"[..], v2));

    flush_scripts(&mut raw);
    let page = store
        .list(&ns("ns"), None, 10)
        .await
        .expect("list after flush");
    assert_eq!(page.entries.len(), 1);

    flush_scripts(&mut raw);
    assert_eq!(
        store.namespaces().await.expect("namespaces"),
        vec![ns("ns")]
    );

    flush_scripts(&mut raw);
    let lease = store
        .try_lease(&lock("l"), Duration::from_secs(60))
        .await
        .expect("try_lease after flush")
        .expect("free");

    flush_scripts(&mut raw);
    let lease = store
        .renew(&lease, Duration::from_secs(60))
        .await
        .expect("renew after flush");

    flush_scripts(&mut raw);
    store
        .put(
            &k,
            Bytes::from_static(b"three"),
            Write::any().fenced(lease.fence()),
        )
        .await
        .expect("fenced put after flush");

    flush_scripts(&mut raw);
    assert!(store.release(lease).await.expect("release after flush"));

    flush_scripts(&mut raw);
    assert!(
        store
            .delete(&k, Write::any())
            .await
            .expect("delete after flush")
    );
    assert!(cached_scripts(&mut raw) > 0);

    flush_scripts(&mut raw);
    let reopened = common::open(&server.url(), "flush").await;
    assert_eq!(
        reopened.epoch(),
        store.epoch(),
        "open after flush finds the store"
    );
}

/// A CAS-incrementing writer, fenced by `lease`, counting what it knows landed
/// (`acked`) and what may or may not have (`unknown`: the connection dropped).
struct Writer {
    acked: AtomicU64,
    unknown: AtomicU64,
    stop: AtomicBool,
}

async fn write_loop(store: Arc<RedisStore>, writer: Arc<Writer>, k: Key, lease: dream_core::Lease) {
    while !writer.stop.load(Ordering::SeqCst) {
        let record = match store.get(&k).await {
            Ok(record) => record.expect("counter present"),
            Err(err) if err.is_retryable() => continue,
            Err(err) => panic!("get: {err}"),
        };
        let n: u64 = std::str::from_utf8(&record.value).unwrap().parse().unwrap();
        let write = Write::matches(record.version).fenced(lease.fence());
        match store.put(&k, Bytes::from((n + 1).to_string()), write).await {
            Ok(_) => {
                writer.acked.fetch_add(1, Ordering::SeqCst);
            }
            Err(err) if err.is_retryable() => {
                writer.unknown.fetch_add(1, Ordering::SeqCst);
            }
            // Only after an unknown outcome that did land.
            Err(StoreError::Conflict { .. }) => {
                assert!(
                    writer.unknown.load(Ordering::SeqCst) > 0,
                    "conflict without a cause"
                );
            }
            Err(err) => panic!("fenced CAS put: {err}"),
        }
    }
}

async fn wait_for(what: &str, deadline: Duration, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + deadline;
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_crash_and_restart_mid_run_is_survived() {
    let options = ServerOptions {
        appendonly: true,
        ..ServerOptions::default()
    };
    let Some(server) = private("restart", options).await else {
        return;
    };
    let url = server.url();
    let store = Arc::new(common::open(&url, "restart").await);
    assert!(
        store.info().capabilities.durable,
        "appendonly + fsync always is durable"
    );
    let k = key("ns", "counter");
    let first = store
        .put(&k, Bytes::from_static(b"0"), Write::any())
        .await
        .unwrap();
    let lease = store
        .try_lease(&lock("dream"), Duration::from_secs(120))
        .await
        .unwrap()
        .expect("free");
    let writer = Arc::new(Writer {
        acked: AtomicU64::new(0),
        unknown: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    let task = tokio::spawn(write_loop(
        store.clone(),
        writer.clone(),
        k.clone(),
        lease.clone(),
    ));
    wait_for("writes before the crash", Duration::from_secs(60), || {
        writer.acked.load(Ordering::SeqCst) >= 50
    })
    .await;

    // Crash the server (SIGKILL) mid-run and start it again on the same port and data.
    let server = blocking(move || {
        let mut server = server;
        server.crash();
        std::thread::sleep(Duration::from_millis(300));
        server.start_again();
        server
    })
    .await;
    let at_restart = writer.acked.load(Ordering::SeqCst);
    wait_for("writes after the restart", Duration::from_secs(90), || {
        writer.acked.load(Ordering::SeqCst) >= at_restart + 50
    })
    .await;
    writer.stop.store(true, Ordering::SeqCst);
    task.await.expect("writer");

    let acked = writer.acked.load(Ordering::SeqCst);
    let unknown = writer.unknown.load(Ordering::SeqCst);
    let record = store.get(&k).await.unwrap().unwrap();
    let value: u64 = std::str::from_utf8(&record.value).unwrap().parse().unwrap();
    eprintln!("restart run: {acked} acknowledged writes, {unknown} with unknown outcome");
    assert!(
        acked <= value && value <= acked + unknown,
        "no acknowledged write lost: value {value}, acked {acked}, unknown {unknown}"
    );
    assert!(
        record.version > first,
        "versions kept increasing across the restart"
    );
    // The lease and its fence survived: it is still held and renewable.
    assert!(
        store
            .try_lease(&lock("dream"), Duration::from_secs(60))
            .await
            .unwrap()
            .is_none()
    );
    let lease = store.renew(&lease, Duration::from_secs(60)).await.unwrap();
    assert!(store.release(lease).await.unwrap());
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_comes_back_empty_is_refused() {
    let Some(server) = private("comes_back_empty", ServerOptions::default()).await else {
        return;
    };
    let url = server.url();
    let store = common::open(&url, "wiped").await;
    let k = key("ns", "k");
    store
        .put(&k, Bytes::from_static(b"x"), Write::any())
        .await
        .unwrap();
    let lease = store
        .try_lease(&lock("dream"), Duration::from_secs(60))
        .await
        .unwrap()
        .expect("free");

    // No persistence: the restarted server is empty.
    let server = blocking(move || {
        let mut server = server;
        server.crash();
        server.wipe_data();
        server.start_again();
        server
    })
    .await;

    let err = common::retrying("get after wipe", || store.get(&k))
        .await
        .expect_err("a wiped store is refused");
    assert!(is_epoch_missing(&err), "{err:?}");
    assert!(err.to_string().contains("lost the store's data"), "{err}");
    let refusals: Vec<StoreError> = vec![
        store
            .put(&k, Bytes::from_static(b"y"), Write::any())
            .await
            .unwrap_err(),
        store
            .put(
                &k,
                Bytes::from_static(b"y"),
                Write::any().fenced(lease.fence()),
            )
            .await
            .unwrap_err(),
        store.delete(&k, Write::any()).await.unwrap_err(),
        store.list(&ns("ns"), None, 10).await.unwrap_err(),
        store.namespaces().await.unwrap_err(),
        store
            .try_lease(&lock("dream"), Duration::from_secs(60))
            .await
            .unwrap_err(),
        store
            .renew(&lease, Duration::from_secs(60))
            .await
            .unwrap_err(),
        store.release(lease.clone()).await.unwrap_err(),
    ];
    for err in &refusals {
        assert!(is_epoch_missing(err), "{err:?}");
    }
    let mut raw = server.raw();
    let size: u64 = redis::cmd("DBSIZE").query(&mut raw).unwrap();
    assert_eq!(
        size, 0,
        "refused calls wrote nothing (no version or fence reissued)"
    );

    // Another process creates a new store under the same prefix: the old process
    // is still refused, now because the epoch changed.
    let fresh = common::open(&url, "wiped").await;
    assert_ne!(fresh.epoch(), store.epoch());
    let new_lease = fresh
        .try_lease(&lock("dream"), Duration::from_secs(60))
        .await
        .unwrap()
        .expect("free in the new store");
    assert_eq!(
        new_lease.token(),
        lease.token(),
        "the new store reissues the token"
    );
    let err = store
        .put(
            &k,
            Bytes::from_static(b"z"),
            Write::any().fenced(lease.fence()),
        )
        .await
        .unwrap_err();
    assert!(is_epoch_changed(&err), "{err:?}");
    let err = store.get(&k).await.unwrap_err();
    assert!(is_epoch_changed(&err), "{err:?}");
    assert_eq!(
        fresh.get(&k).await.unwrap(),
        None,
        "the old process wrote nothing"
    );
    // A caller that remembered the old epoch refuses the new store at open.
    let err = RedisStore::open(
        RedisOptions::from_url(&url)
            .unwrap()
            .with_prefix("wiped")
            .unwrap()
            .expecting_epoch(store.epoch()),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, StoreError::Incompatible { .. }), "{err:?}");
}

async fn open_with(
    url: &str,
    prefix: &str,
    f: impl FnOnce(RedisOptions) -> RedisOptions,
) -> Result<RedisStore, StoreError> {
    RedisStore::open(f(RedisOptions::from_url(url)
        .unwrap()
        .with_prefix(prefix)
        .unwrap()))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_or_partial_data_is_refused_at_open() {
    let Some(redis) = shared("open_refusals").await else {
        return;
    };
    let prefix = common::fresh_prefix();
    let _guard = PrefixGuard::new(&redis.url, &prefix);
    let mut raw = common::raw(&redis.url);

    // Nothing there and creation not allowed.
    let err = open_with(&redis.url, &prefix, |c| c.without_create())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Incompatible { .. }), "{err:?}");
    assert!(
        common::keys_under(&mut raw, &prefix).is_empty(),
        "nothing created"
    );

    // Store data without its epoch: a partial loss.
    let _: () = redis::cmd("SET")
        .arg(format!("{{{prefix}}}:version"))
        .arg(41)
        .query(&mut raw)
        .unwrap();
    let err = open_with(&redis.url, &prefix, |c| c).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("epoch key is missing"), "{err}");

    // An epoch key of another program.
    let _: () = redis::cmd("SET")
        .arg(format!("{{{prefix}}}:epoch"))
        .arg("something else")
        .query(&mut raw)
        .unwrap();
    let err = open_with(&redis.url, &prefix, |c| c).await.unwrap_err();
    assert!(matches!(err, StoreError::Incompatible { .. }), "{err:?}");

    // A real store: opens with and without create, and with its epoch expected.
    let _: () = redis::cmd("DEL")
        .arg(format!("{{{prefix}}}:epoch"))
        .arg(format!("{{{prefix}}}:version"))
        .query(&mut raw)
        .unwrap();
    let store = open_with(&redis.url, &prefix, |c| c).await.unwrap();
    let again = open_with(&redis.url, &prefix, |c| {
        c.without_create().expecting_epoch(store.epoch())
    })
    .await
    .unwrap();
    assert_eq!(again.epoch(), store.epoch());
    let err = open_with(&redis.url, &prefix, |c| {
        c.expecting_epoch("dream-redis/1 0000")
    })
    .await
    .unwrap_err();
    assert!(matches!(err, StoreError::Incompatible { .. }), "{err:?}");

    // Deleting the epoch under a running store stops it at once.
    let _: () = redis::cmd("DEL")
        .arg(format!("{{{prefix}}}:epoch"))
        .query(&mut raw)
        .unwrap();
    let err = store.get(&key("ns", "k")).await.unwrap_err();
    assert!(is_epoch_missing(&err), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_records_are_reported_not_returned() {
    let Some(redis) = shared("corrupt_records").await else {
        return;
    };
    let prefix = common::fresh_prefix();
    let _guard = PrefixGuard::new(&redis.url, &prefix);
    let store = common::open(&redis.url, &prefix).await;
    let mut raw = common::raw(&redis.url);
    let rec = |ns: &str, id: &str| format!("{{{prefix}}}:rec:{ns}:{id}");

    // A plain string where a record hash belongs.
    let _: () = redis::cmd("SET")
        .arg(rec("ns", "str"))
        .arg("x")
        .query(&mut raw)
        .unwrap();
    for err in [
        store.get(&key("ns", "str")).await.unwrap_err(),
        store
            .put(&key("ns", "str"), Bytes::from_static(b"v"), Write::any())
            .await
            .unwrap_err(),
    ] {
        assert!(
            matches!(&err, StoreError::Corrupt { key: Some(k), .. } if *k == key("ns", "str")),
            "{err:?}"
        );
    }
    // A version that is not a number; a version without a value.
    let _: () = redis::cmd("HSET")
        .arg(rec("ns", "badver"))
        .arg("n")
        .arg("abc")
        .arg("v")
        .arg("x")
        .query(&mut raw)
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(rec("ns", "noval"))
        .arg("n")
        .arg(5)
        .query(&mut raw)
        .unwrap();
    for id in ["badver", "noval"] {
        let err = store.get(&key("ns", id)).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Corrupt { key: Some(_), .. }),
            "{id}: {err:?}"
        );
    }
    // An index entry naming a missing record, and an invalid id in the index.
    store
        .put(&key("idx", "real"), Bytes::from_static(b"r"), Write::any())
        .await
        .unwrap();
    let _: () = redis::cmd("ZADD")
        .arg(format!("{{{prefix}}}:idx:idx"))
        .arg(0)
        .arg("ghost")
        .query(&mut raw)
        .unwrap();
    let err = store.list(&ns("idx"), None, 10).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt { key: Some(k), .. } if *k == key("idx", "ghost")),
        "{err:?}"
    );
    let _: () = redis::cmd("ZADD")
        .arg(format!("{{{prefix}}}:idx:other"))
        .arg(0)
        .arg("not/valid")
        .query(&mut raw)
        .unwrap();
    let err = store.list(&ns("other"), None, 10).await.unwrap_err();
    assert!(
        matches!(err, StoreError::Corrupt { key: None, .. }),
        "{err:?}"
    );
    // An invalid namespace in the namespace set.
    let _: () = redis::cmd("SADD")
        .arg(format!("{{{prefix}}}:namespaces"))
        .arg("bad namespace")
        .query(&mut raw)
        .unwrap();
    let err = store.namespaces().await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_password_and_unix_socket_from_the_url_and_never_shown() {
    let password = "Pa55-w0rd-NEVER-SHOWN";
    let options = ServerOptions {
        password: Some(password.to_owned()),
        ..ServerOptions::default()
    };
    let Some(mut server) = private("password", options).await else {
        return;
    };
    let url = format!("{}/3", server.url());
    assert!(url.contains(password));
    let config = RedisOptions::from_url(&url)
        .unwrap()
        .with_prefix("pw")
        .unwrap();
    let shown = format!("{config:?}");
    assert!(
        !shown.contains(password) && shown.contains("<redacted>"),
        "{shown}"
    );
    let store = RedisStore::open(config).await.expect("open with password");
    let shown = format!("{store:?}");
    assert!(
        !shown.contains(password) && shown.contains("<redacted>"),
        "{shown}"
    );
    assert!(shown.contains("database: 3"), "{shown}");
    store
        .put(
            &key("ns", "k"),
            Bytes::from_static(b"in db 3"),
            Write::any(),
        )
        .await
        .unwrap();

    // The record is in database 3, not 0.
    let mut raw = server.raw();
    let in_db0: u64 = redis::cmd("DBSIZE").query(&mut raw).unwrap();
    assert_eq!(in_db0, 0);
    let _: () = redis::cmd("SELECT").arg(3).query(&mut raw).unwrap();
    let in_db3: u64 = redis::cmd("DBSIZE").query(&mut raw).unwrap();
    assert!(in_db3 > 0);

    // Over the unix socket, password and database in the query.
    let unix = format!("unix://{}?db=3&pass={password}", server.socket().display());
    let over_unix = RedisStore::open(
        RedisOptions::from_url(&unix)
            .unwrap()
            .with_prefix("pw")
            .unwrap(),
    )
    .await
    .expect("open over the unix socket");
    assert_eq!(
        over_unix.epoch(),
        store.epoch(),
        "same store over the socket"
    );
    assert!(!format!("{over_unix:?}").contains(password));
    assert_eq!(
        over_unix.get(&key("ns", "k")).await.unwrap().unwrap().value,
        Bytes::from_static(b"in db 3")
    );

    // A wrong or missing password: a clear error showing neither password.
    let port = server.url().rsplit(':').next().unwrap().to_owned();
    let wrong = "WRONG-secret-pw-123";
    for bad in [
        format!("redis://:{wrong}@127.0.0.1:{port}/3"),
        format!("redis://127.0.0.1:{port}/3"),
    ] {
        let config = RedisOptions::from_url(&bad)
            .unwrap()
            .with_prefix("pw")
            .unwrap()
            .with_connection_timeout(Duration::from_secs(2));
        let err = RedisStore::open(config).await.expect_err("refused");
        let shown = format!("{err} {err:?}");
        assert!(
            !shown.contains(wrong) && !shown.contains(password),
            "{shown}"
        );
        assert!(!err.is_retryable(), "{shown}");
    }

    // Errors while the server is down show no password either.
    blocking(move || {
        server.crash();
        server
    })
    .await;
    let err = store
        .put(&key("ns", "k"), Bytes::from_static(b"x"), Write::any())
        .await
        .unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(err.is_retryable(), "{shown}");
    assert!(!shown.contains(password), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_file_is_read_only_when_private() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let password = "file-Pa55-NEVER-SHOWN";
    let options = ServerOptions {
        password: Some(password.to_owned()),
        ..ServerOptions::default()
    };
    let Some(server) = private("url_file", options).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("redis-url");
    std::fs::write(&file, format!("  {}/1\n", server.url())).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = RedisOptions::from_file(&file)
        .await
        .expect("private URL file");
    assert_eq!(config.database(), 1);
    let store = RedisStore::open(config.with_prefix("file").unwrap())
        .await
        .unwrap();
    store
        .put(&key("ns", "k"), Bytes::from_static(b"x"), Write::any())
        .await
        .unwrap();

    let check = |err: ConfigError, what: &str| {
        let shown = format!("{err} {err:?}");
        assert!(matches!(err, ConfigError::File { .. }), "{what}: {shown}");
        assert!(!shown.contains(password), "{what}: {shown}");
        shown
    };
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let shown = check(
        RedisOptions::from_file(&file).await.unwrap_err(),
        "group-readable",
    );
    assert!(shown.contains("chmod 600"), "{shown}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.path().join("link");
    symlink(&file, &link).unwrap();
    let shown = check(RedisOptions::from_file(&link).await.unwrap_err(), "symlink");
    assert!(shown.contains("symbolic link"), "{shown}");
    check(
        RedisOptions::from_file(dir.path()).await.unwrap_err(),
        "directory",
    );
    check(
        RedisOptions::from_file(dir.path().join("missing"))
            .await
            .unwrap_err(),
        "missing",
    );
    let big = dir.path().join("big");
    std::fs::write(&big, "x".repeat(5000)).unwrap();
    std::fs::set_permissions(&big, std::fs::Permissions::from_mode(0o600)).unwrap();
    check(
        RedisOptions::from_file(&big).await.unwrap_err(),
        "oversized",
    );
    let empty = dir.path().join("empty");
    std::fs::write(&empty, " \n").unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o600)).unwrap();
    check(RedisOptions::from_file(&empty).await.unwrap_err(), "empty");
    // A private file holding a bad URL: refused without echoing it.
    let bad = dir.path().join("bad");
    std::fs::write(&bad, format!("http://:{password}@host/")).unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o600)).unwrap();
    let err = RedisOptions::from_file(&bad).await.unwrap_err();
    assert!(matches!(err, ConfigError::InvalidUrl { .. }), "{err:?}");
    assert!(!format!("{err} {err:?}").contains(password));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistence_settings_are_reported() {
    for appendonly in [false, true] {
        let options = ServerOptions {
            appendonly,
            ..ServerOptions::default()
        };
        let Some(server) = private("persistence", options).await else {
            return;
        };
        let store = common::open(&server.url(), "doctor").await;
        assert_eq!(store.appendonly_enabled().await.unwrap(), Some(appendonly));
        assert_eq!(store.info().capabilities.durable, appendonly);
        assert_eq!(
            store.eviction_policy().await.unwrap().as_deref(),
            Some("noeviction")
        );
        let mut raw = server.raw();
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("appendonly")
            .arg(if appendonly { "no" } else { "yes" })
            .query(&mut raw)
            .unwrap();
        assert_eq!(store.appendonly_enabled().await.unwrap(), Some(!appendonly));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_stay_under_the_hash_tagged_prefix_and_keys_is_never_used() {
    let Some(server) = private("layout", ServerOptions::default()).await else {
        return;
    };
    let store = common::open(&server.url(), "layout").await;
    let mut raw = server.raw();
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut raw)
        .unwrap();
    for (n, id) in ["a", "b", "c"].iter().enumerate() {
        let k = key(if n % 2 == 0 { "one" } else { "two" }, id);
        let v = store
            .put(&k, Bytes::from_static(b"x"), Write::absent())
            .await
            .unwrap();
        store.get(&k).await.unwrap();
        store
            .put(&k, Bytes::from_static(b"y"), Write::matches(v))
            .await
            .unwrap();
    }
    store.list(&ns("one"), None, 10).await.unwrap();
    store.namespaces().await.unwrap();
    let lease = store
        .try_lease(&lock("dream"), Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    store
        .delete(&key("two", "b"), Write::any().fenced(lease.fence()))
        .await
        .unwrap();
    let lease = store.renew(&lease, Duration::from_secs(60)).await.unwrap();
    store.release(lease).await.unwrap();
    assert_eq!(
        store.namespaces().await.unwrap(),
        vec![ns("one")],
        "an emptied namespace is gone"
    );

    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut raw)
        .unwrap();
    assert!(!stats.contains("cmdstat_keys:"), "KEYS was used:\n{stats}");
    assert!(
        stats.contains("cmdstat_evalsha:"),
        "scripts run by EVALSHA:\n{stats}"
    );
    let mut cursor: u64 = 0;
    let mut all = Vec::new();
    loop {
        let (next, batch): (u64, Vec<String>) =
            redis::cmd("SCAN").arg(cursor).query(&mut raw).unwrap();
        all.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    assert!(!all.is_empty());
    for k in &all {
        assert!(
            k.starts_with("{layout}:"),
            "key outside the hash-tagged prefix: {k}"
        );
    }
    let deleted = store.destroy().await.unwrap();
    assert_eq!(
        deleted as usize,
        all.len(),
        "destroy removes every key of the store"
    );
    let left: u64 = redis::cmd("DBSIZE").query(&mut raw).unwrap();
    assert_eq!(left, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destroy_stops_other_handles_and_spares_other_prefixes() {
    let Some(redis) = shared("destroy").await else {
        return;
    };
    let (a, b) = (common::fresh_prefix(), common::fresh_prefix());
    let _guards = (
        PrefixGuard::new(&redis.url, &a),
        PrefixGuard::new(&redis.url, &b),
    );
    let store = common::open(&redis.url, &a).await;
    let other_handle = common::open(&redis.url, &a).await;
    let neighbour = common::open(&redis.url, &b).await;
    for s in [&store, &neighbour] {
        s.put(&key("ns", "k"), Bytes::from_static(b"x"), Write::any())
            .await
            .unwrap();
    }
    assert!(store.destroy().await.unwrap() >= 4);
    let mut raw = common::raw(&redis.url);
    assert!(common::keys_under(&mut raw, &a).is_empty());
    let err = other_handle.get(&key("ns", "k")).await.unwrap_err();
    assert!(is_epoch_missing(&err), "{err:?}");
    assert!(neighbour.get(&key("ns", "k")).await.unwrap().is_some());

    // A stale handle cannot destroy a store re-created under the same prefix.
    let recreated = common::open(&redis.url, &a).await;
    recreated
        .put(&key("ns", "new"), Bytes::from_static(b"x"), Write::any())
        .await
        .unwrap();
    let err = other_handle.destroy().await.unwrap_err();
    assert!(is_epoch_changed(&err), "{err:?}");
    assert!(recreated.get(&key("ns", "new")).await.unwrap().is_some());
}

/// A batch over `BATCH_SCRIPT_BYTES` of values is split into scripts: a conflict
/// in a later script is `PartialBatch`, naming the first script's outcomes, which
/// are applied; within one script a conflict writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_over_the_script_budget_are_chunked_and_report_what_applied() {
    use dream_core::{BatchOp, BatchOutcome, Precondition};
    let Some(redis) = shared("batch_chunks").await else {
        return;
    };
    let prefix = common::fresh_prefix();
    let _guard = PrefixGuard::new(&redis.url, &prefix);
    let store = common::open(&redis.url, &prefix).await;
    let quarter = dream_redis::BATCH_SCRIPT_BYTES / 4;
    assert!(quarter <= store.info().capabilities.max_value_size);
    assert_eq!(
        store.info().capabilities.atomic_batch_bytes,
        dream_redis::BATCH_SCRIPT_BYTES
    );
    let big = Bytes::from(vec![b'x'; quarter]);
    let mut ops: Vec<BatchOp> = (0..4)
        .map(|i| {
            BatchOp::put(
                key("big", &format!("k{i}")),
                big.clone(),
                Precondition::Absent,
            )
        })
        .collect();
    ops.push(BatchOp::put(
        key("big", "last"),
        &b"x"[..],
        Precondition::Matches(dream_core::Version(1 << 40)),
    ));
    assert!(!store.info().capabilities.is_atomic(&ops));
    match store.write_batch(&ops, None).await {
        Err(StoreError::PartialBatch { applied, source }) => {
            assert_eq!(applied.len(), 4, "the first script (4 values) applied");
            assert!(matches!(*source, StoreError::Conflict { .. }), "{source:?}");
            for (i, outcome) in applied.iter().enumerate() {
                let record = store
                    .get(&key("big", &format!("k{i}")))
                    .await
                    .unwrap()
                    .unwrap();
                assert_eq!(*outcome, BatchOutcome::Put(record.version));
            }
        }
        other => panic!("expected PartialBatch, got {other:?}"),
    }
    assert_eq!(store.get(&key("big", "last")).await.unwrap(), None);
    // The same conflict inside one script writes nothing.
    let small = [
        BatchOp::put(key("small", "a"), &b"a"[..], Precondition::Any),
        BatchOp::put(key("big", "k0"), &b"a"[..], Precondition::Absent),
    ];
    assert!(store.info().capabilities.is_atomic(&small));
    assert!(matches!(
        store.write_batch(&small, None).await,
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(store.get(&key("small", "a")).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_from_another_handle_wakes_a_change_watcher_and_a_restart_does_too() {
    let options = ServerOptions {
        appendonly: true,
        ..ServerOptions::default()
    };
    let Some(server) = private("watch_changes", options).await else {
        return;
    };
    let url = server.url();
    let reader = common::open(&url, "watch").await;
    let writer = common::open(&url, "watch").await;
    let other = common::open(&url, "elsewhere").await;
    let mut changes = reader
        .watch_changes()
        .await
        .unwrap()
        .expect("Redis notifies");
    let woken = |changes: &mut tokio::sync::watch::Receiver<u64>| {
        let mut changes = changes.clone();
        async move {
            tokio::time::timeout(Duration::from_secs(10), changes.changed())
                .await
                .is_ok()
        }
    };
    // A write to another store (another prefix) is not this store's change.
    other
        .put(&key("ns", "x"), Bytes::from_static(b"1"), Write::any())
        .await
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(500), changes.changed())
            .await
            .is_err(),
        "another prefix's write woke the watcher"
    );
    let k = key("ns", "k");
    let v = writer
        .put(&k, Bytes::from_static(b"1"), Write::absent())
        .await
        .unwrap();
    assert!(woken(&mut changes).await, "a put wakes it");
    changes.borrow_and_update();
    writer.delete(&k, Write::matches(v)).await.unwrap();
    assert!(woken(&mut changes).await, "a delete wakes it");
    changes.borrow_and_update();
    writer
        .write_batch(
            &[dream_core::BatchOp::put(
                k.clone(),
                Bytes::from_static(b"2"),
                dream_core::Precondition::Absent,
            )],
            None,
        )
        .await
        .unwrap();
    assert!(woken(&mut changes).await, "a batch wakes it");
    changes.borrow_and_update();
    // The server restarts: the watcher subscribes again and says so.
    let _server = blocking(move || {
        let mut server = server;
        server.crash();
        server.start_again();
        server
    })
    .await;
    assert!(
        tokio::time::timeout(Duration::from_secs(20), changes.changed())
            .await
            .is_ok(),
        "a reconnect counts as a change"
    );
    changes.borrow_and_update();
    // The writer's connection comes back on its own (retryable errors meanwhile).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match writer
            .put(&key("ns", "after"), Bytes::from_static(b"3"), Write::any())
            .await
        {
            Ok(_) => break,
            Err(e) if e.is_retryable() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(
        woken(&mut changes).await,
        "writes after the restart wake it"
    );
}
