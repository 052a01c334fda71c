//! Dream's [`RecordStore`](dream_core::RecordStore) on PostgreSQL, shared by many
//! processes and hosts, with leases and fencing checked in the same statement as
//! the write.
//!
//! ```ignore
//! let config = PostgresOptions::from_env()?.with_schema("team_memory")?;
//! let store = PostgresStore::open(config).await?;
//! ```
//!
//! # Driver
//!
//! [`tokio-postgres`](tokio_postgres) with a [`deadpool-postgres`](deadpool_postgres)
//! pool: a pure-Rust, async-native driver and a small pool, with no query macros,
//! no compile-time database, no ORM and no second async runtime abstraction
//! (sqlx or diesel would bring all of those). Statements are prepared once per
//! connection and values travel as binary `bytea`.
//!
//! # What is guaranteed, plainly
//!
//! - **Every write is one statement.** `put`, `delete`, `write_batch`,
//!   `try_lease`, `renew` and `release` each call one PL/pgSQL function of the store's schema, so the epoch
//!   check, the fence check, the precondition and the write run in one
//!   transaction. Preconditions are single statements (`INSERT … ON CONFLICT DO
//!   NOTHING`, `UPDATE … WHERE version = $n`, `INSERT … ON CONFLICT DO UPDATE`),
//!   so they hold under concurrency at `READ COMMITTED`.
//! - **Batches are one statement too, and atomic** (`Capabilities::atomic_batch_bytes` is `usize::MAX`).
//!   `write_batch` makes the shared checks first (`check_batch`: too many
//!   operations, a key twice, a value too large → nothing sent), then calls
//!   `S.write_batch` once with the operations as arrays. In that one
//!   transaction the function checks the epoch, claims the batch's random write
//!   id in `S.batches`, checks the fence once (the lease row `FOR SHARE`, by the
//!   server's clock, as above), locks the batch's existing rows in key order (so
//!   racing batches do not deadlock on them), then applies the operations in
//!   order exactly as `put` and `delete` do, versions drawn from `S.versions` in
//!   the batch's order. The keys are distinct, so each precondition is checked
//!   against the state before the batch. A lost fence or a failed precondition
//!   rolls everything back (claim included) and is `LockLost` or `Conflict`
//!   naming the first failing operation's key. A batch's values travel in one
//!   `bytea[]`, which PostgreSQL caps at 1 GiB: a larger batch is refused by the
//!   server (non-retryable `Backend`), nothing written.
//! - **Versions** come from a sequence (`S.versions`): never reused, not after a
//!   delete, a rollback or a crash.
//! - **Leases and fences.** One row per lock holds the newest fence (from the
//!   sequence `S.fences`, so tokens strictly increase), a random holder and an
//!   expiry computed with the *server's* `clock_timestamp()`; the clients' clocks
//!   play no part. A fenced write locks the lock's row `FOR SHARE`, then checks,
//!   after the lock is held, that its token is the row's fence, the lease was not
//!   released and `expires_at > clock_timestamp()`. A takeover is an `UPDATE` of
//!   that row, so it waits until the fenced write has committed: a holder frozen
//!   past its TTL cannot write once another lease was granted, nor after its own
//!   expiry. (An advisory lock alone would not be a fence: it is tied to a
//!   session, not to the writes.)
//! - **Epoch.** A random epoch is written to `S.meta` when the store is created,
//!   and every statement checks it. A dropped schema, or a database re-created
//!   empty, is refused with `Corrupt` (never silently re-created under a running
//!   process; a dropped database fails to connect), a store
//!   re-created by someone else with `Incompatible`. A database restored from a
//!   backup taken *after* the store was created keeps its epoch: a restore to an
//!   older point in time is not detected (just as with Redis).
//! - **Durable** as far as the server is (`fsync`, `synchronous_commit`):
//!   `Capabilities::durable` is `true`.
//! - **Schema versions.** `S.meta.schema_version` records the migration
//!   reached; opening migrates an older schema (in one transaction, under an
//!   advisory lock) and refuses a newer one with `Incompatible`. Version 2
//!   added batches (`S.batches`, `S.write_batch`); a version 1 store migrates on
//!   open, and processes of the older build that already have it open keep
//!   working (their functions are unchanged), but an older build can no longer
//!   open it. Version 3 added change notices: a statement trigger on `S.records`
//!   sends an empty `NOTIFY` on the schema's own channel (`dream_` and the md5
//!   of the schema name; channels are database-wide), which
//!   the store's `RecordStore::watch_changes` hears on a dedicated `LISTEN`
//!   connection.
//! - **`list_versions`** is `list`'s query without the value column: the same
//!   `COLLATE "C"` order, cursor and clamped limit.
//!
//! # Retries and unknown outcomes
//!
//! Errors the server answers with roll the statement back: serialization
//! failures (`40001`), deadlocks (`40P01`) and shutdowns are tried again a few
//! times. Reads and `renew` (a compare-and-extend) are also tried again across a
//! lost connection. A connection lost before the server answered a *write* is
//! an unknown outcome (the implicit commit may or may not have happened); it is
//! never retried blindly but resolved by reading back:
//!
//! - `put` stores a random write id with the record: if the record carries it,
//!   the put committed and its version is returned. If the record is still at the
//!   version a `Matches` precondition required, the put did not happen (versions
//!   are never reused) and it is sent again. Anything else is a non-retryable
//!   `Backend` error saying the outcome is unknown.
//! - `delete`: with `Matches` and the record still at that version it is sent
//!   again; with `Absent` (which writes nothing) too; otherwise unknown.
//! - `write_batch` applies exactly once, so it can be sent again safely: the
//!   function's first step claims the batch's random write id (primary key of
//!   `S.batches`, which keeps each committed batch's outcomes for a day), so a
//!   second attempt of the same batch waits for the first and, if that one
//!   committed, returns its outcomes without applying anything. After a lost
//!   connection the outcomes are read back by write id: found, they are
//!   returned; absent, the batch did not commit (or is still running on the
//!   dead connection) and it is sent again under the same write id. Only if
//!   reading back fails, or every attempt loses its connection, is the result a
//!   non-retryable `Backend` error saying the outcome is unknown.
//! - `try_lease`: the lock's row is read; if its holder is this call's random
//!   holder, the lease is returned, otherwise `Ok(None)` (this caller holds nothing).
//! - `release`: if the row still names this lease, its released flag tells the
//!   outcome (still live and not released: sent again). If another holder took
//!   the lock meanwhile, `false` is reported even if the release had committed.
//!
//! For every write kind, when reading back itself fails (the server is still
//! restarting) or every attempt loses its connection, the result is that
//! non-retryable unknown outcome, never the lost connection's retryable error:
//! a retryable error always means the write was not applied.
//!
//! # Connection and secrets
//!
//! PostgreSQL 11 or newer. The user needs `CREATE` on the database the first
//! time (to create the schema), then only rights on the schema.
//!
//! URLs: `postgres://[user[:password]@]host[:port]/database[?param=value]`
//! (`postgresql://` too). The password is read from the URL in [`URL_ENV`]
//! (`DREAM_POSTGRES_URL`) and never appears in `Debug`, logs or errors.
//!
//! **TLS** is rustls on the ring provider (the one the workspace's HTTPS client
//! uses), through a small connector of this crate (no channel binding: SCRAM
//! runs without `-PLUS`). `sslmode=verify-full` checks the certificate's chain
//! and host name, `verify-ca` the chain only; the trusted roots are the PEM file
//! `sslrootcert=FILE`, or the public web roots without it (or with
//! `sslrootcert=system`). A certificate that fails is refused with a
//! non-retryable `Backend` error whose source is [`CertificateRefused`].
//! `sslmode=require` is refused with [`ConfigError::Tls`] rather than
//! encrypting to a server nobody checked; `disable`, `allow` and `prefer`
//! connect in plain text. Client certificates are not supported.

mod config;
mod error;
mod schema;
mod store;
mod tls;

pub use config::{ConfigError, DEFAULT_SCHEMA, PostgresOptions, URL_ENV};
pub use error::CertificateRefused;
pub use store::{MAX_LEASE_TTL, PostgresStore};

/// The driver this store is built on, for callers that need raw statements.
pub use tokio_postgres;

/// The TLS library behind `sslmode=verify-*`, for matching [`CertificateRefused::reason`].
pub use rustls;
