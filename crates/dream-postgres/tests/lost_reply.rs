//! A connection lost after the server committed a write but before its reply
//! reached the client. A TCP proxy between the store and the server, when armed,
//! withholds the server's messages until `ReadyForQuery` (which PostgreSQL sends
//! only after the implicit transaction committed), then cuts both sides. Every
//! write must be resolved by reading back: the committed outcome is returned,
//! nothing is applied twice, and what cannot be told apart is an unknown outcome,
//! never a blind retry.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use dream_core::{BatchOp, BatchOutcome, Bytes, Key, LockName, Precondition, RecordStore, Write};
use dream_postgres::tokio_postgres::{self, config::Host};
use dream_postgres::{PostgresOptions, PostgresStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn key(id: &str) -> Key {
    Key::new(
        dream_core::Namespace::new("ns").unwrap(),
        dream_core::RecordId::new(id).unwrap(),
    )
}

/// The proxy: `armed` cuts the next reply of any connection at its
/// `ReadyForQuery`; `cuts` counts the cuts made.
struct Proxy {
    port: u16,
    armed: Arc<AtomicBool>,
    cuts: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let armed = Arc::new(AtomicBool::new(false));
        let cuts = Arc::new(AtomicUsize::new(0));
        let (armed2, cuts2) = (armed.clone(), cuts.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                tokio::spawn(pipe(client, server, armed2.clone(), cuts2.clone()));
            }
        });
        Proxy {
            port,
            armed,
            cuts,
            task,
        }
    }

    /// Cuts the next reply after the server has committed it.
    fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }
}

/// Copies client → server as is and server → client message by message
/// (type byte, 4-byte length): while armed, withholds every message and at a
/// `ReadyForQuery` ('Z') closes both sides.
async fn pipe(
    client: TcpStream,
    server: TcpStream,
    armed: Arc<AtomicBool>,
    cuts: Arc<AtomicUsize>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let upstream = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
    });
    let mut pending = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    'read: loop {
        let n = match server_read.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&chunk[..n]);
        let mut start = 0;
        while pending.len() - start >= 5 {
            let len =
                u32::from_be_bytes(pending[start + 1..start + 5].try_into().unwrap()) as usize;
            let end = start + 1 + len;
            if pending.len() < end {
                break;
            }
            if armed.load(Ordering::SeqCst) {
                if pending[start] == b'Z' {
                    armed.store(false, Ordering::SeqCst);
                    cuts.fetch_add(1, Ordering::SeqCst);
                    break 'read;
                }
            } else if client_write.write_all(&pending[start..end]).await.is_err() {
                break 'read;
            }
            start = end;
        }
        pending.drain(..start);
    }
    // Dropping both halves of both sockets closes them.
    upstream.abort();
    let _ = upstream.await;
}

/// The test server's URL with the proxy's port, and the server's `host:port`.
fn through_proxy_url(port_of_proxy: Option<u16>) -> (String, String) {
    let url = common::url();
    let config: tokio_postgres::Config = url.parse().expect("test URL");
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        _ => panic!("the test server must be reached over TCP for this test"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("postgres");
    let db = config.get_dbname().unwrap_or("postgres");
    let proxied = format!(
        "postgres://{user}@127.0.0.1:{}/{db}",
        port_of_proxy.unwrap_or(port)
    );
    (proxied, format!("{host}:{port}"))
}

/// The last value drawn from a sequence of the schema.
fn last_value(schema: &str, sequence: &str) -> i64 {
    let sql = format!("SELECT last_value FROM \"{schema}\".{sequence}");
    common::with_client(move |client| {
        Box::pin(async move { client.query_one(&sql, &[]).await.unwrap().get::<_, i64>(0) })
    })
    .expect("read the sequence")
}

#[test]
fn a_reply_lost_after_commit_is_resolved_by_reading_back() {
    let test = "a_reply_lost_after_commit_is_resolved_by_reading_back";
    if !common::available(test) {
        return;
    }
    let schema = common::fresh_schema();
    let _guard = common::SchemaGuard::new(&schema);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (_, upstream) = through_proxy_url(None);
        let proxy = Proxy::start(upstream).await;
        let (url, _) = through_proxy_url(Some(proxy.port));
        // One connection, so the armed proxy cuts the write under test.
        let config = PostgresOptions::from_url(&url)
            .expect("proxy URL")
            .with_schema(&schema)
            .expect("schema")
            .with_pool_size(1);
        let store = Arc::new(
            PostgresStore::open(config)
                .await
                .expect("open via the proxy"),
        );
        let mut cuts = 0;
        let mut cut = |proxy: &Proxy| {
            cuts += 1;
            assert_eq!(
                proxy.cuts.load(Ordering::SeqCst),
                cuts,
                "the reply was not cut"
            );
        };

        // put (unconditional): the record carries this put's write id, so the
        // committed version is returned, and no second put was sent.
        store
            .put(&key("k"), Bytes::from_static(b"warm"), Write::any())
            .await
            .unwrap();
        proxy.arm();
        let version = store
            .put(&key("k"), Bytes::from_static(b"v1"), Write::any())
            .await
            .expect("resolved by reading back");
        cut(&proxy);
        assert_eq!(
            version.0 as i64,
            last_value(&schema, "versions"),
            "a second put was sent"
        );
        let record = store.get(&key("k")).await.unwrap().unwrap();
        assert_eq!(
            (record.value.as_ref(), record.version),
            (&b"v1"[..], version)
        );

        // put guarded by Absent: the same.
        store
            .put(&key("w"), Bytes::from_static(b"warm"), Write::absent())
            .await
            .unwrap();
        proxy.arm();
        let version = store
            .put(&key("new"), Bytes::from_static(b"fresh"), Write::absent())
            .await
            .expect("resolved by reading back");
        cut(&proxy);
        assert_eq!(
            store.get(&key("new")).await.unwrap().unwrap().version,
            version
        );

        // try_lease: the row names this call's holder, so the lease is returned,
        // and it really fences a write.
        let lock = LockName::new("l").unwrap();
        let warm = store
            .try_lease(&lock, std::time::Duration::from_secs(30))
            .await
            .unwrap()
            .unwrap();
        // release is warmed and then cut too: the row says released.
        assert!(store.release(warm).await.unwrap());
        proxy.arm();
        let lease = store
            .try_lease(&lock, std::time::Duration::from_secs(30))
            .await
            .expect("resolved by reading back")
            .expect("the committed lease is ours");
        cut(&proxy);
        assert_eq!(
            lease.token() as i64,
            last_value(&schema, "fences"),
            "a second lease was taken"
        );
        store
            .put(
                &key("k"),
                Bytes::from_static(b"fenced"),
                Write::any().fenced(lease.fence()),
            )
            .await
            .expect("the resolved lease fences writes");
        proxy.arm();
        assert!(
            store
                .release(lease.clone())
                .await
                .expect("resolved by reading back")
        );
        cut(&proxy);
        assert!(
            store
                .try_lease(&lock, std::time::Duration::from_secs(30))
                .await
                .unwrap()
                .is_some()
        );

        // write_batch: its outcomes are read back by write id, applied once.
        let ops = [BatchOp::put(
            key("b1"),
            Bytes::from_static(b"x"),
            Precondition::Absent,
        )];
        store.write_batch(&ops, None).await.unwrap();
        let ops = [
            BatchOp::put(key("b2"), Bytes::from_static(b"y"), Precondition::Absent),
            BatchOp::delete(key("b1"), Precondition::Any),
        ];
        proxy.arm();
        let outcomes = store
            .write_batch(&ops, None)
            .await
            .expect("resolved by reading back");
        cut(&proxy);
        let b2 = store.get(&key("b2")).await.unwrap().unwrap().version;
        assert_eq!(
            outcomes,
            vec![BatchOutcome::Put(b2), BatchOutcome::Delete(true)]
        );
        assert!(store.get(&key("b1")).await.unwrap().is_none());

        // An unconditional delete leaves nothing to tell a committed delete from
        // one that never ran: an unknown outcome, not retried.
        store.delete(&key("absent"), Write::any()).await.unwrap();
        proxy.arm();
        let err = store
            .delete(&key("k"), Write::any())
            .await
            .expect_err("the outcome cannot be told");
        cut(&proxy);
        assert!(!err.is_retryable(), "{err:?}");
        assert!(err.to_string().contains("could not tell"), "{err}");
        assert!(
            store.get(&key("k")).await.unwrap().is_none(),
            "the delete had committed"
        );
    });
}
