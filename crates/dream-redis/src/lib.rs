//! Dream's [`RecordStore`](dream_core::RecordStore) on Redis, shared by many
//! processes and hosts, with leases and fencing.
//!
//! ```ignore
//! let config = RedisOptions::from_env()?.with_prefix("team-memory")?;
//! let store = RedisStore::open(config).await?;
//! ```
//!
//! # What is guaranteed, plainly
//!
//! - **One Redis node plus fencing.** Every operation is one Lua script, so a put
//!   or delete checks its precondition, its fence and the store's epoch, takes a
//!   version from the store-wide counter and updates the namespace index in one
//!   atomic step on that node. A lease is `SET NX PX` with a random holder and an
//!   `INCR` of the lock's fence counter; a holder that was paused or partitioned
//!   past its TTL cannot write any more, because its fence is no longer the
//!   lock's newest.
//! - **Not a consensus system.** Redis replicates asynchronously: a failover can
//!   lose writes the old primary acknowledged, and with them the newest fence, so a
//!   fence can be issued twice. Use one primary with `appendonly yes` (and
//!   `appendfsync always` if acknowledged writes must survive a crash of the node);
//!   [`RedisStore::appendonly_enabled`] reports it so `dream doctor` can warn.
//!   `maxmemory-policy` must be `noeviction` ([`RedisStore::eviction_policy`]):
//!   an evicting Redis silently drops records.
//! - **The epoch detects a wiped store, not a partial loss.** A random epoch key
//!   is written when the store is created and every script checks it. A Redis that
//!   comes back empty (restart without persistence, failover to an empty replica,
//!   `FLUSHALL`) is refused with [`StoreError::Corrupt`](dream_core::StoreError)
//!   ("epoch missing"), and a store re-created under the same prefix by another
//!   process is refused with `Incompatible` ("epoch changed"), so versions and
//!   fences are never silently reissued to a running process. A Redis that lost
//!   only its most recent writes (an RDB snapshot, a lagging replica) still has
//!   its epoch: that loss is *not* detected.
//!
//! # Keys
//!
//! Every key is `{<prefix>}:...`; the braces are a Redis Cluster hash tag, so a
//! store lives in one slot and every script touches one slot. `list` reads a
//! per-namespace sorted set with `ZRANGEBYLEX`; nothing uses `KEYS`.
//! See [`RedisStore`] for the layout.
//!
//! # Connection and secrets
//!
//! URLs: `redis://[user][:password@]host[:port][/db]`,
//! `rediss://[user][:password@]host[:port][/db]` (TLS) and
//! `unix:///path/to/redis.sock[?db=N&pass=...]`. The database number comes from
//! the URL.
//!
//! **TLS** is rustls on the ring provider (the one the workspace's HTTPS client
//! uses). The server's certificate is always verified, chain and host name: against
//! the public web roots (`webpki-roots`, as managed Redis services need), or only
//! against the CA certificates of [`RedisOptions::with_ca_file`] — the `dream` CLI
//! reads that file's path from [`CA_FILE_ENV`] (`DREAM_REDIS_CA_FILE`), beside the
//! URL in `DREAM_REDIS_URL`. A certificate that fails verification is refused with
//! a non-retryable `Backend` error whose source is [`CertificateRefused`]; the
//! unverified `#insecure` mode is refused. Client certificates are not supported.
//!
//! The password is read only from the URL in the environment variable
//! [`URL_ENV`] (`DREAM_REDIS_URL`) or in a file ([`RedisOptions::from_file`], which
//! must be owned by the user and not readable by others); it is never taken from
//! a command line, and it never appears in `Debug`, logs or errors.
//!
//! The connection is a redis-rs `ConnectionManager`: a dropped connection or a
//! restarted server is reconnected in the background. Reads (`get`, `list`,
//! `namespaces`) and `renew` are retried a few times across a reconnect; writes,
//! `try_lease` and `release` are not (their outcome is unknown when the
//! connection drops mid-call) and fail with a retryable
//! [`StoreError::Backend`](dream_core::StoreError).

mod config;
mod error;
mod keys;
mod scripts;
mod store;

pub use config::{CA_FILE_ENV, ConfigError, DEFAULT_PREFIX, RedisOptions, URL_ENV};
pub use error::CertificateRefused;
pub use store::{BATCH_SCRIPT_BYTES, MAX_LEASE_TTL, RedisStore};

/// The redis crate this store is built on, for callers that need raw commands on
/// [`RedisStore::connection`] (benchmarks, diagnostics).
pub use redis;

/// The TLS library behind `rediss://`, for matching [`CertificateRefused::reason`].
pub use rustls;
