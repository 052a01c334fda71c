//! Finding or starting a Redis for the tests.
//!
//! - `DREAM_TEST_REDIS_URL` names a Redis to share (each test uses a fresh random
//!   prefix and deletes its keys afterwards);
//! - otherwise each test starts its own `redis-server` (from `PATH`, or
//!   `DREAM_TEST_REDIS_SERVER`) on a free loopback port in a temp dir and stops
//!   it afterwards;
//! - without either the test prints loudly that it skipped, and
//!   `DREAM_REQUIRE_REDIS=1` turns that into a failure.
//!
//! Tests that flush scripts, restart or wipe the server always start a private
//! server, never the shared one.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dream_redis::redis;
use dream_redis::{RedisOptions, RedisStore};

/// URL of a shared Redis for tests.
pub const URL_ENV: &str = "DREAM_TEST_REDIS_URL";
/// `1` makes a missing Redis a failure instead of a skip.
pub const REQUIRE_ENV: &str = "DREAM_REQUIRE_REDIS";
/// Path of the `redis-server` binary (default: `redis-server` on `PATH`).
pub const SERVER_ENV: &str = "DREAM_TEST_REDIS_SERVER";

/// Prints that `test` skipped, or panics when Redis is required.
pub fn skip(test: &str) {
    skip_because(
        test,
        &format!("set {URL_ENV} or install redis-server (or set {SERVER_ENV})"),
    );
}

/// Prints that `test` skipped and why, or panics when Redis is required.
pub fn skip_because(test: &str, why: &str) {
    let message = format!("no Redis for {test}: {why}");
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        panic!("{message}, and {REQUIRE_ENV}=1 requires Redis");
    }
    eprintln!(
        "\n{}\n*** SKIPPED: {message} ***\n{}\n",
        "*".repeat(78),
        "*".repeat(78)
    );
}

/// How a private server is configured.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// `appendonly yes` with `appendfsync always`.
    pub appendonly: bool,
    /// `requirepass`.
    pub password: Option<String>,
    /// TLS only (`--port 0 --tls-port <port>`), with this certificate and key.
    pub tls: Option<dream_conformance::tls::Issued>,
}

/// A `redis-server` this test started; killed (and its temp dir removed) on drop.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    options: ServerOptions,
}

fn binary() -> String {
    std::env::var(SERVER_ENV).unwrap_or_else(|_| "redis-server".to_owned())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("find a free loopback port")
}

impl RedisServer {
    /// Starts a private server, or `None` when no `redis-server` can be run.
    pub fn start(options: ServerOptions) -> Option<RedisServer> {
        let dir = tempfile::Builder::new()
            .prefix("dream-redis-test-")
            .tempdir()
            .expect("temp dir");
        let mut server = RedisServer {
            child: None,
            port: 0,
            dir,
            options,
        };
        for _ in 0..10 {
            server.port = free_port();
            match server.spawn() {
                Ok(true) => return Some(server),
                Ok(false) => continue, // lost the port race; try another
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
                Err(err) => panic!("starting {}: {err}", binary()),
            }
        }
        panic!("redis-server did not start on any of 10 free ports");
    }

    /// Spawns on `self.port`; `Ok(false)` if the server exited (port taken).
    fn spawn(&mut self) -> std::io::Result<bool> {
        let mut command = Command::new(binary());
        match &self.options.tls {
            Some(tls) => command
                .args(["--port", "0", "--tls-port"])
                .arg(self.port.to_string())
                .arg("--tls-cert-file")
                .arg(&tls.cert)
                .arg("--tls-key-file")
                .arg(&tls.key)
                // Only read with --tls-auth-clients yes; redis-server requires one.
                .arg("--tls-ca-cert-file")
                .arg(&tls.cert)
                .args(["--tls-auth-clients", "no"]),
            None => command.arg("--port").arg(self.port.to_string()),
        };
        command
            .args(["--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(self.dir.path())
            .arg("--unixsocket")
            .arg(self.socket())
            .args(["--unixsocketperm", "700"])
            .args(["--save", ""])
            .args(["--daemonize", "no"])
            .args(["--loglevel", "warning"])
            .args(["--logfile", ""]);
        if self.options.appendonly {
            command.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            command.args(["--appendonly", "no"]);
        }
        if let Some(password) = &self.options.password {
            command.args(["--requirepass", password]);
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = command.spawn()?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut()
                && child.try_wait()?.is_some()
            {
                self.child = None;
                return Ok(false);
            }
            if self.ping() {
                return Ok(true);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "redis-server on port {} did not answer PING in 20 s",
            self.port
        );
    }

    fn ping(&self) -> bool {
        // Through the unix socket, which is plain even when TCP is TLS only.
        let url = match &self.options.password {
            Some(password) => format!("unix://{}?pass={password}", self.socket().display()),
            None => format!("unix://{}", self.socket().display()),
        };
        let Ok(client) = redis::Client::open(url) else {
            return false;
        };
        let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_millis(500)) else {
            return false;
        };
        redis::cmd("PING").query::<String>(&mut conn).is_ok()
    }

    /// `redis://[:password@]127.0.0.1:<port>` (`rediss://` with TLS).
    pub fn url(&self) -> String {
        let scheme = if self.options.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        match &self.options.password {
            Some(password) => format!("{scheme}://:{password}@127.0.0.1:{}", self.port),
            None => format!("{scheme}://127.0.0.1:{}", self.port),
        }
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's unix socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("redis.sock")
    }

    /// The server's data directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A plain synchronous connection, for checks behind the store's back.
    pub fn raw(&self) -> redis::Connection {
        raw(&self.url())
    }

    /// Kills the server with SIGKILL (a crash).
    pub fn crash(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port with the same data directory.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "server still running");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.spawn() {
                Ok(true) => return,
                Ok(false) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Ok(false) => panic!("redis-server could not restart on port {}", self.port),
                Err(err) => panic!("restarting redis-server: {err}"),
            }
        }
    }

    /// Removes every file of the data directory (the server must be stopped).
    pub fn wipe_data(&mut self) {
        assert!(self.child.is_none(), "server still running");
        for entry in std::fs::read_dir(self.dir.path()).expect("read data dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                std::fs::remove_dir_all(&path).expect("remove");
            } else {
                std::fs::remove_file(&path).expect("remove");
            }
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.crash();
    }
}

/// A plain synchronous connection to `url`.
pub fn raw(url: &str) -> redis::Connection {
    redis::Client::open(url)
        .expect("raw client")
        .get_connection_with_timeout(Duration::from_secs(5))
        .expect("raw connection")
}

/// A Redis to run against: the shared one from [`URL_ENV`] or a private server.
pub struct TestRedis {
    /// Its URL.
    pub url: String,
    /// The private server, if one was started.
    pub server: Option<RedisServer>,
}

/// The shared Redis, else a private one, else `None` after printing the skip.
pub fn redis_or_skip(test: &str) -> Option<TestRedis> {
    if let Ok(url) = std::env::var(URL_ENV) {
        return Some(TestRedis { url, server: None });
    }
    match RedisServer::start(ServerOptions::default()) {
        Some(server) => Some(TestRedis {
            url: server.url(),
            server: Some(server),
        }),
        None => {
            skip(test);
            None
        }
    }
}

/// A private server (for tests that flush, restart or wipe it), else `None`
/// after printing the skip.
pub fn private_or_skip(test: &str, options: ServerOptions) -> Option<RedisServer> {
    let server = RedisServer::start(options);
    if server.is_none() {
        skip(test);
    }
    server
}

/// A fresh random prefix.
pub fn fresh_prefix() -> String {
    format!("test-{:016x}", rand::random::<u64>())
}

/// Deletes every key under a prefix when dropped (synchronously; SCAN, not KEYS).
pub struct PrefixGuard {
    url: String,
    prefix: String,
}

impl PrefixGuard {
    /// Guards `prefix` on the Redis at `url`.
    pub fn new(url: &str, prefix: &str) -> Self {
        PrefixGuard {
            url: url.to_owned(),
            prefix: prefix.to_owned(),
        }
    }
}

/// Every key under `prefix` (SCAN MATCH).
pub fn keys_under(conn: &mut redis::Connection, prefix: &str) -> Vec<String> {
    let pattern = format!("{{{prefix}}}:*");
    let mut cursor: u64 = 0;
    let mut out = Vec::new();
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query(conn)
            .expect("SCAN");
        out.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    out.sort();
    out.dedup();
    out
}

impl Drop for PrefixGuard {
    fn drop(&mut self) {
        let Ok(client) = redis::Client::open(self.url.as_str()) else {
            return;
        };
        let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_secs(2)) else {
            return; // the server is gone (a private one already stopped): nothing to clean
        };
        let keys = keys_under(&mut conn, &self.prefix);
        if !keys.is_empty() {
            let _: Result<u64, _> = redis::cmd("DEL").arg(&keys).query(&mut conn);
        }
    }
}

/// Opens a store on `url` under `prefix`.
pub async fn open(url: &str, prefix: &str) -> RedisStore {
    RedisStore::open(
        RedisOptions::from_url(url)
            .expect("test URL")
            .with_prefix(prefix)
            .expect("test prefix"),
    )
    .await
    .expect("open the Redis store")
}

/// Retries `op` while it fails with a retryable error, for up to 60 s.
pub async fn retrying<T, F, Fut>(what: &str, mut op: F) -> Result<T, dream_core::StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, dream_core::StoreError>>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match op().await {
            Err(err) if err.is_retryable() && Instant::now() < deadline => {
                eprintln!("{what}: retrying after {err}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}
