//! Dream's [`RecordStore`] on one SQLite database file.
//!
//! - **Bundled SQLite** (rusqlite `bundled`): a fresh machine needs no system library.
//! - **WAL journal**, a `busy_timeout` (default 5 s) so processes sharing the file
//!   wait for each other's write transactions instead of failing at once.
//! - **Durability** ([`Durability`]): `synchronous = FULL` by default, so every
//!   acknowledged write survives a process crash *and* a power loss (the WAL is
//!   synced at each commit). [`Durability::Normal`] syncs only at checkpoints: an
//!   acknowledged write still survives a process crash, but the last transactions
//!   may roll back after a power loss or OS crash; the store then reports
//!   `durable: false`.
//! - **Schema** created and migrated through `PRAGMA user_version`, marked with
//!   `PRAGMA application_id`. A database of a newer schema version, another
//!   application's database, or a file that is not SQLite at all → `Incompatible`;
//!   a damaged one → `Corrupt`. Such a file is never written to: before its first
//!   write (or at open, when opening writes) the store runs `PRAGMA quick_check`,
//!   once per open store (see [`SqliteOptions::verify`]), so a command that only
//!   reads does not read the whole file; SQLite reports a damaged page it reads
//!   as corrupt, and such a read fails with `Corrupt`.
//! - **Writes** are compare-and-swap in `BEGIN IMMEDIATE` transactions: the fence
//!   check, the precondition, the version bump and the write are one transaction.
//!   Versions come from a store-wide counter row, so they are never reused, not
//!   after a delete and not after a crash (a rolled-back version was never seen).
//! - **Leases** live in a table holding, per lock, the newest fence token (kept after
//!   release, so tokens strictly increase), the holder's random identity and the
//!   expiry in wall-clock milliseconds (from the store's [`Clock`]). Processes on
//!   one file exclude each other.
//! - **Threads**: rusqlite's `Connection` is not `Sync`, and SQLite blocks. Every
//!   operation runs on tokio's blocking pool (`spawn_blocking`): writes on the one
//!   writer connection, reads on a small pool of reader connections. No tokio worker
//!   ever waits on SQLite. A cancelled call may still complete in the background.
//! - **Files**: the database is created with mode 0600 (SQLite gives its `-wal` and
//!   `-shm` files the same mode); a symbolic link, FIFO or other non-regular path
//!   is refused; SQLite runs in defensive mode with untrusted schema, and deleted
//!   content is overwritten (`secure_delete`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dream_core::store::{
    Capabilities, DEFAULT_MAX_VALUE_SIZE, PageBuilder, StoreInfo, check_batch,
};
use dream_core::{
    BatchOp, BatchOutcome, Bytes, Changes, Clock, Entry, Fence, Key, Lease, LockName, Namespace,
    Page, Precondition, Record, RecordId, RecordStore, StoreError, SystemClock, Version,
    VersionEntry, VersionPage, Write, async_trait,
};
use rusqlite::config::DbConfig;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};

mod error;
mod pool;
mod schema;

use error::{corrupt, join_err, map_err};
use pool::Pool;

pub use schema::{APPLICATION_ID, SCHEMA_VERSION};

/// The rusqlite this crate is built on, for baselines and tools that need the
/// same SQLite build.
pub use rusqlite;

/// Failpoint inside a put's write transaction, after the row is written and
/// before `COMMIT` (feature `failpoints`).
pub const FAILPOINT_PUT: &str = "sqlite.put.in_transaction";
/// Failpoint inside a batch's write transaction, after every row is written and
/// before `COMMIT`.
pub const FAILPOINT_BATCH: &str = "sqlite.batch.in_transaction";
/// Failpoint inside a delete's write transaction, before `COMMIT`.
pub const FAILPOINT_DELETE: &str = "sqlite.delete.in_transaction";

/// The largest `max_value_size` a store accepts: SQLite's default length limit
/// (`SQLITE_MAX_LENGTH`) for one blob, less room for the row around it.
pub const MAX_VALUE_SIZE_LIMIT: usize = 999_000_000;

/// A listing page stops early (with a cursor) once it holds this many value bytes.
pub const PAGE_BYTE_BUDGET: usize = 64 * 1024 * 1024;

/// The SQL statements of the store, public so a baseline can run exactly them.
pub mod sql {
    /// Reads one record.
    pub const GET: &str = "SELECT version, value FROM records WHERE namespace = ?1 AND id = ?2";
    /// The current version of one record (inside a write transaction).
    pub const CURRENT: &str = "SELECT version FROM records WHERE namespace = ?1 AND id = ?2";
    /// The newest fence token of a lock.
    pub const FENCE: &str = "SELECT token FROM leases WHERE name = ?1";
    /// Takes the next `?1` versions from the store-wide counter, returning the last.
    pub const TAKE_VERSIONS: &str =
        "UPDATE counter SET last_version = last_version + ?1 WHERE id = 1 RETURNING last_version";
    /// Inserts or replaces a record.
    pub const UPSERT: &str = "INSERT INTO records (namespace, id, version, value) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (namespace, id) DO UPDATE SET version = excluded.version, value = excluded.value";
    /// Inserts a record unless one is there (a put whose precondition is `Absent`).
    pub const INSERT_ABSENT: &str = "INSERT INTO records (namespace, id, version, value) \
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT (namespace, id) DO NOTHING";
    /// Deletes a record.
    pub const DELETE: &str = "DELETE FROM records WHERE namespace = ?1 AND id = ?2";
    /// One page of a namespace, by id bytes (BINARY collation), over the primary key.
    pub const LIST: &str = "SELECT id, version, value FROM records \
         WHERE namespace = ?1 AND id > ?2 ORDER BY id LIMIT ?3";
    /// One page of a namespace's ids and versions, without the values.
    pub const LIST_VERSIONS: &str = "SELECT id, version FROM records \
         WHERE namespace = ?1 AND id > ?2 ORDER BY id LIMIT ?3";
    /// Every namespace holding a record.
    pub const NAMESPACES: &str = "SELECT DISTINCT namespace FROM records ORDER BY namespace";
    /// A lock's lease row.
    pub const LEASE: &str = "SELECT token, holder, expires_ms FROM leases WHERE name = ?1";
    /// Grants a lease with a new token.
    pub const GRANT: &str = "INSERT INTO leases (name, token, holder, expires_ms) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (name) DO UPDATE SET token = excluded.token, holder = excluded.holder, \
         expires_ms = excluded.expires_ms";
    /// Extends a lease.
    pub const RENEW: &str = "UPDATE leases SET expires_ms = ?2 WHERE name = ?1";
    /// Frees a lock, keeping its newest token.
    pub const RELEASE: &str = "UPDATE leases SET holder = NULL, expires_ms = 0 WHERE name = ?1";
}

/// How hard a commit tries to reach stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `PRAGMA synchronous = FULL`: the WAL is synced at every commit; an
    /// acknowledged write survives a power loss.
    #[default]
    Full,
    /// `PRAGMA synchronous = NORMAL`: synced at checkpoints only; an acknowledged
    /// write survives a process crash but may be lost on power loss.
    Normal,
}

impl Durability {
    /// The value of `PRAGMA synchronous`.
    pub fn pragma(self) -> &'static str {
        match self {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        }
    }
}

/// How to open a [`SqliteStore`].
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    durability: Durability,
    busy_timeout: Duration,
    readers: usize,
    max_value_size: usize,
    verify: bool,
    clock: Arc<dyn Clock>,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            durability: Durability::Full,
            busy_timeout: Duration::from_secs(5),
            readers: 4,
            max_value_size: DEFAULT_MAX_VALUE_SIZE,
            verify: true,
            clock: Arc::new(SystemClock),
        }
    }
}

impl SqliteOptions {
    /// The name and capabilities of a store opened with these options, known
    /// before it is opened (or made).
    pub fn store_info(&self) -> StoreInfo {
        StoreInfo {
            name: "sqlite".to_owned(),
            capabilities: Capabilities {
                cross_process: true,
                leases: true,
                fenced_writes: true,
                durable: self.durability == Durability::Full,
                max_value_size: self.max_value_size,
                atomic_batch_bytes: usize::MAX,
                notifies: false,
            },
        }
    }

    /// The defaults: `Full` durability, 5 s busy timeout, 4 readers, 16 MiB values,
    /// integrity check before the first write, system clock.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the durability (`synchronous` pragma).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// How long a write waits for another connection's write transaction.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// How many reader connections the pool may open (at least 1).
    pub fn readers(mut self, readers: usize) -> Self {
        self.readers = readers.max(1);
        self
    }

    /// The largest value accepted (at most [`MAX_VALUE_SIZE_LIMIT`], SQLite's own
    /// cap on one blob).
    pub fn max_value_size(mut self, max: usize) -> Self {
        self.max_value_size = max.min(MAX_VALUE_SIZE_LIMIT);
        self
    }

    /// Whether the store runs `PRAGMA quick_check` before its first write (or at
    /// open, when opening writes), refusing a damaged file with `Corrupt` (default
    /// on; it reads the whole file once per open store).
    pub fn verify(mut self, verify: bool) -> Self {
        self.verify = verify;
        self
    }

    /// The clock leases expire by (all processes sharing a file must agree on it).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}

/// A [`RecordStore`] on one SQLite database file, safe to share between processes.
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    options: SqliteOptions,
    writer: Mutex<Option<Writer>>,
    readers: Pool,
}

/// The writer connection, and whether the file's integrity is established for
/// it (checked, or not asked for).
struct Writer {
    conn: Connection,
    checked: bool,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .field("durability", &self.inner.options.durability)
            .finish_non_exhaustive()
    }
}

/// Opens one connection with the store's flags and pragmas. It never creates the
/// file (the store creates it with mode 0600 first) and refuses a symbolic link.
fn open_connection(path: &Path, options: &SqliteOptions) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(options.busy_timeout)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
    conn.pragma_update(None, "synchronous", options.durability.pragma())?;
    conn.pragma_update(None, "secure_delete", "ON")?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (creating it with mode 0600 if missing) the store at `path` with the
    /// default options.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// Opens (creating it with mode 0600 if missing) the store at `path`.
    pub async fn open_with(
        path: impl AsRef<Path>,
        options: SqliteOptions,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        tokio::task::spawn_blocking(move || Self::open_blocking(path, options))
            .await
            .map_err(join_err)?
    }

    fn open_blocking(path: PathBuf, options: SqliteOptions) -> Result<Self, StoreError> {
        schema::prepare_file(&path)?;
        let mut conn = open_connection(&path, &options).map_err(|e| map_err(e, None))?;
        let checked = schema::open_schema(&mut conn, options.verify, options.busy_timeout)?;
        let writer = Writer {
            conn,
            checked: checked || !options.verify,
        };
        let reader_path = path.clone();
        let reader_options = options.clone();
        let readers = Pool::new(
            options.readers,
            Box::new(move || open_connection(&reader_path, &reader_options)),
        );
        tracing::debug!(
            durability = options.durability.pragma(),
            "opened SQLite store"
        );
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path,
                options,
                writer: Mutex::new(Some(writer)),
                readers,
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `PRAGMA integrity_check` (reads the whole file); `Corrupt` unless it
    /// reports ok.
    pub async fn check_integrity(&self) -> Result<(), StoreError> {
        self.read(|conn| {
            let first: String = conn
                .query_row("PRAGMA integrity_check(1)", [], |row| row.get(0))
                .map_err(|e| map_err(e, None))?;
            if first == "ok" {
                Ok(())
            } else {
                Err(corrupt(None, "the SQLite integrity check failed"))
            }
        })
        .await
    }

    /// Closes the connections now, off the runtime, reporting a failure to close.
    /// (Dropping the store also closes them, on a background thread.)
    pub async fn close(self) -> Result<(), StoreError> {
        let inner = Arc::clone(&self.inner);
        drop(self);
        tokio::task::spawn_blocking(move || {
            let mut conns = inner.readers.drain();
            if let Some(writer) = lock(&inner.writer).take() {
                conns.push(writer.conn);
            }
            for conn in conns {
                conn.close().map_err(|(_, e)| map_err(e, None))?;
            }
            Ok(())
        })
        .await
        .map_err(join_err)?
    }

    /// Runs `f` on a reader connection on the blocking pool.
    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let conn = inner.readers.get().map_err(|e| map_err(e, None))?;
            f(&conn)
        })
        .await
        .map_err(join_err)?
    }

    /// Runs `f` on the writer connection on the blocking pool, after the file's
    /// integrity check when none was run yet.
    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut writer = lock(&inner.writer);
            let writer = writer
                .as_mut()
                .ok_or_else(|| StoreError::backend(false, "the SQLite store is closed"))?;
            if !writer.checked {
                schema::quick_check(&writer.conn)?;
                writer.checked = true;
            }
            f(&mut writer.conn)
        })
        .await
        .map_err(join_err)?
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for Inner {
    fn drop(&mut self) {
        let mut conns = self.readers.drain();
        if let Some(writer) = lock(&self.writer).take() {
            conns.push(writer.conn);
        }
        if conns.is_empty() {
            return;
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            // Closing the last connection checkpoints the WAL: blocking I/O, kept off
            // the runtime's threads. If the thread cannot start, they close here.
            let _ = std::thread::Builder::new()
                .name("dream-sqlite-close".to_owned())
                .spawn(move || drop(conns));
        } else {
            drop(conns);
        }
    }
}

fn begin(conn: &mut Connection) -> Result<Transaction<'_>, StoreError> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| map_err(e, None))
}

fn to_i64(n: u64) -> Option<i64> {
    i64::try_from(n).ok()
}

/// Checks a fence inside a write transaction.
fn check_fence(tx: &Transaction<'_>, fence: &Fence) -> Result<(), StoreError> {
    let err = |e| map_err(e, None);
    let newest: Option<i64> = tx
        .prepare_cached(sql::FENCE)
        .map_err(err)?
        .query_row([fence.lock.as_str()], |row| row.get(0))
        .optional()
        .map_err(err)?;
    if newest.is_none() || newest != to_i64(fence.token) {
        return Err(StoreError::LockLost {
            lock: fence.lock.clone(),
        });
    }
    Ok(())
}

/// Checks a precondition inside a write transaction; returns the record's
/// current version.
fn check_pre(
    tx: &Transaction<'_>,
    key: &Key,
    pre: Precondition,
) -> Result<Option<i64>, StoreError> {
    let err = |e| map_err(e, Some(key));
    let current: Option<i64> = tx
        .prepare_cached(sql::CURRENT)
        .map_err(err)?
        .query_row([key.namespace.as_str(), key.id.as_str()], |row| row.get(0))
        .optional()
        .map_err(err)?;
    let current_version = current.map(|v| version_of(key, v)).transpose()?;
    pre.check(key, current_version)?;
    Ok(current)
}

/// Checks a write's fence and precondition inside its transaction; returns the
/// record's current version.
fn check_write(tx: &Transaction<'_>, key: &Key, write: &Write) -> Result<Option<i64>, StoreError> {
    if let Some(fence) = &write.fence {
        check_fence(tx, fence)?;
    }
    check_pre(tx, key, write.pre)
}

fn version_of(key: &Key, raw: i64) -> Result<Version, StoreError> {
    u64::try_from(raw)
        .ok()
        .filter(|v| *v > 0)
        .map(Version)
        .ok_or_else(|| corrupt(Some(key), "stored version is not positive"))
}

fn value_of(key: &Key, raw: ValueRef<'_>) -> Result<Bytes, StoreError> {
    match raw {
        ValueRef::Blob(bytes) => Ok(Bytes::copy_from_slice(bytes)),
        _ => Err(corrupt(Some(key), "stored value is not a blob")),
    }
}

/// Takes `count` versions from the store-wide counter, in one statement: the
/// versions of one write transaction's puts, in order (none: the counter is
/// left alone).
fn take_versions(tx: &Transaction<'_>, count: i64) -> Result<std::ops::Range<i64>, StoreError> {
    if count == 0 {
        return Ok(0..0);
    }
    let err = |e| map_err(e, None);
    let last: Option<i64> = tx
        .prepare_cached(sql::TAKE_VERSIONS)
        .map_err(err)?
        .query_row([count], |row| row.get(0))
        .optional()
        .map_err(err)?;
    let last = last.ok_or_else(|| corrupt(None, "the version counter is missing"))?;
    Ok(last - count + 1..last + 1)
}

/// Writes one record with `statement` ([`sql::UPSERT`] or
/// [`sql::INSERT_ABSENT`]) at `version`; the rows it wrote.
fn write_record(
    tx: &Transaction<'_>,
    statement: &str,
    key: &Key,
    version: i64,
    value: &[u8],
) -> Result<usize, StoreError> {
    let err = |e| map_err(e, Some(key));
    tx.prepare_cached(statement)
        .map_err(err)?
        .execute(rusqlite::params![
            key.namespace.as_str(),
            key.id.as_str(),
            version,
            value
        ])
        .map_err(err)
}

/// Inserts a record whose precondition is `Absent`, the check and the write in
/// one statement; where the record exists, the precondition's `Conflict`.
fn insert_absent(
    tx: &Transaction<'_>,
    key: &Key,
    version: i64,
    value: &[u8],
) -> Result<(), StoreError> {
    if write_record(tx, sql::INSERT_ABSENT, key, version, value)? == 1 {
        return Ok(());
    }
    check_pre(tx, key, Precondition::Absent)?;
    Err(corrupt(Some(key), "a record neither present nor inserted"))
}

fn put_blocking(
    conn: &mut Connection,
    key: &Key,
    value: &[u8],
    write: &Write,
) -> Result<Version, StoreError> {
    let tx = begin(conn)?;
    check_write(&tx, key, write)?;
    let version = take_versions(&tx, 1)?.start;
    write_record(&tx, sql::UPSERT, key, version, value)?;
    dream_core::failpoint::failpoint(FAILPOINT_PUT);
    tx.commit().map_err(|e| map_err(e, Some(key)))?;
    version_of(key, version)
}

fn delete_blocking(conn: &mut Connection, key: &Key, write: &Write) -> Result<bool, StoreError> {
    let err = |e| map_err(e, Some(key));
    let tx = begin(conn)?;
    if check_write(&tx, key, write)?.is_none() {
        return Ok(false);
    }
    tx.prepare_cached(sql::DELETE)
        .map_err(err)?
        .execute([key.namespace.as_str(), key.id.as_str()])
        .map_err(err)?;
    dream_core::failpoint::failpoint(FAILPOINT_DELETE);
    tx.commit().map_err(err)?;
    Ok(true)
}

/// A batch in one `BEGIN IMMEDIATE` transaction: the fence, the versions of its
/// puts (taken at once), then each operation's precondition and write (one
/// statement for a put that must find no record); any error rolls everything
/// back.
fn batch_blocking(
    conn: &mut Connection,
    ops: &[BatchOp],
    fence: Option<&Fence>,
) -> Result<Vec<BatchOutcome>, StoreError> {
    let tx = begin(conn)?;
    if let Some(fence) = fence {
        check_fence(&tx, fence)?;
    }
    // At most MAX_BATCH_OPS (`check_batch`): the count fits an i64.
    let puts = ops.iter().filter(|op| op.value().is_some()).count() as i64;
    let mut versions = take_versions(&tx, puts)?;
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        let key = op.key();
        match op {
            BatchOp::Put { value, .. } => {
                let version = versions.next().expect("one version taken per put");
                if op.pre() == Precondition::Absent {
                    insert_absent(&tx, key, version, value)?;
                } else {
                    check_pre(&tx, key, op.pre())?;
                    write_record(&tx, sql::UPSERT, key, version, value)?;
                }
                out.push(BatchOutcome::Put(version_of(key, version)?));
            }
            BatchOp::Delete { .. } => {
                let current = check_pre(&tx, key, op.pre())?;
                if current.is_some() {
                    tx.prepare_cached(sql::DELETE)
                        .map_err(|e| map_err(e, Some(key)))?
                        .execute([key.namespace.as_str(), key.id.as_str()])
                        .map_err(|e| map_err(e, Some(key)))?;
                }
                out.push(BatchOutcome::Delete(current.is_some()));
            }
        }
    }
    dream_core::failpoint::failpoint(FAILPOINT_BATCH);
    tx.commit().map_err(|e| map_err(e, None))?;
    Ok(out)
}

fn list_versions_blocking(
    conn: &Connection,
    namespace: &Namespace,
    after: &str,
    limit: usize,
) -> Result<VersionPage, StoreError> {
    let err = |e| map_err(e, None);
    let mut page = PageBuilder::new(limit);
    let mut stmt = conn.prepare_cached(sql::LIST_VERSIONS).map_err(err)?;
    let fetch = i64::try_from(page.read_limit()).unwrap_or(i64::MAX);
    let mut rows = stmt
        .query(rusqlite::params![namespace.as_str(), after, fetch])
        .map_err(err)?;
    while let Some(row) = rows.next().map_err(err)? {
        if page.is_full() {
            page.set_more();
            break;
        }
        let key = listed_key(namespace, row)?;
        let version = version_of(&key, row.get(1).map_err(err)?)?;
        page.push(VersionEntry {
            id: key.id,
            version,
        });
    }
    Ok(page.finish())
}

fn list_blocking(
    conn: &Connection,
    namespace: &Namespace,
    after: &str,
    limit: usize,
) -> Result<Page, StoreError> {
    let err = |e| map_err(e, None);
    let mut page = PageBuilder::new(limit);
    let mut stmt = conn.prepare_cached(sql::LIST).map_err(err)?;
    let fetch = i64::try_from(page.read_limit()).unwrap_or(i64::MAX);
    let mut rows = stmt
        .query(rusqlite::params![namespace.as_str(), after, fetch])
        .map_err(err)?;
    let mut bytes = 0usize;
    while let Some(row) = rows.next().map_err(err)? {
        if page.is_full() || bytes >= PAGE_BYTE_BUDGET {
            page.set_more();
            break;
        }
        let key = listed_key(namespace, row)?;
        let version = version_of(&key, row.get(1).map_err(err)?)?;
        let value = value_of(&key, row.get_ref(2).map_err(err)?)?;
        bytes += value.len();
        page.push(Entry {
            id: key.id,
            record: Record { value, version },
        });
    }
    Ok(page.finish())
}

/// The key of a row of `list` or `list_versions`, its id in column 0.
fn listed_key(namespace: &Namespace, row: &rusqlite::Row<'_>) -> Result<Key, StoreError> {
    let id = match row.get_ref(0).map_err(|e| map_err(e, None))? {
        ValueRef::Text(text) => std::str::from_utf8(text)
            .ok()
            .and_then(|s| RecordId::new(s).ok()),
        _ => None,
    }
    .ok_or_else(|| corrupt(None, "a stored record id is invalid"))?;
    Ok(Key::new(namespace.clone(), id))
}

/// A lease row: token, holder (None once released), expiry in ms.
type LeaseRow = (i64, Option<String>, i64);

fn lease_row(tx: &Transaction<'_>, lock: &LockName) -> Result<Option<LeaseRow>, StoreError> {
    let err = |e| map_err(e, None);
    tx.prepare_cached(sql::LEASE)
        .map_err(err)?
        .query_row([lock.as_str()], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()
        .map_err(err)
}

/// Whether `row` shows `lease` still held at `now`.
fn holds(row: &Option<LeaseRow>, lease: &Lease, now: i64) -> bool {
    matches!(row, Some((token, Some(holder), expires))
        if Some(*token) == to_i64(lease.token()) && holder == lease.holder() && *expires > now)
}

/// Wall-clock milliseconds, read inside the lease transaction (after any wait).
fn now_ms(clock: &dyn Clock) -> i64 {
    clock.now().timestamp_millis()
}

fn expiry(now: i64, ttl: Duration) -> i64 {
    now.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
}

fn try_lease_blocking(
    conn: &mut Connection,
    lock: &LockName,
    ttl: Duration,
    clock: &dyn Clock,
) -> Result<Option<Lease>, StoreError> {
    let err = |e| map_err(e, None);
    let tx = begin(conn)?;
    let now = now_ms(clock);
    let row = lease_row(&tx, lock)?;
    if let Some((_, Some(_), expires)) = &row
        && *expires > now
    {
        return Ok(None);
    }
    let token = match row {
        Some((token, _, _)) => token
            .checked_add(1)
            .ok_or_else(|| corrupt(None, "fence token overflow"))?,
        None => 1,
    };
    let holder = hex::encode(rand::random::<[u8; 16]>());
    tx.prepare_cached(sql::GRANT)
        .map_err(err)?
        .execute(rusqlite::params![
            lock.as_str(),
            token,
            holder,
            expiry(now, ttl)
        ])
        .map_err(err)?;
    tx.commit().map_err(err)?;
    let token = u64::try_from(token).map_err(|_| corrupt(None, "negative fence token"))?;
    Ok(Some(Lease::new(lock.clone(), token, holder)))
}

fn renew_blocking(
    conn: &mut Connection,
    lease: &Lease,
    ttl: Duration,
    clock: &dyn Clock,
) -> Result<Lease, StoreError> {
    let err = |e| map_err(e, None);
    let tx = begin(conn)?;
    let now = now_ms(clock);
    if !holds(&lease_row(&tx, lease.lock())?, lease, now) {
        return Err(StoreError::LockLost {
            lock: lease.lock().clone(),
        });
    }
    tx.prepare_cached(sql::RENEW)
        .map_err(err)?
        .execute(rusqlite::params![lease.lock().as_str(), expiry(now, ttl)])
        .map_err(err)?;
    tx.commit().map_err(err)?;
    Ok(lease.clone())
}

fn release_blocking(
    conn: &mut Connection,
    lease: &Lease,
    clock: &dyn Clock,
) -> Result<bool, StoreError> {
    let err = |e| map_err(e, None);
    let tx = begin(conn)?;
    let now = now_ms(clock);
    if !holds(&lease_row(&tx, lease.lock())?, lease, now) {
        return Ok(false);
    }
    tx.prepare_cached(sql::RELEASE)
        .map_err(err)?
        .execute([lease.lock().as_str()])
        .map_err(err)?;
    tx.commit().map_err(err)?;
    Ok(true)
}

#[async_trait]
impl RecordStore for SqliteStore {
    fn info(&self) -> StoreInfo {
        self.inner.options.store_info()
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        let key = key.clone();
        self.read(move |conn| {
            let err = |e| map_err(e, Some(&key));
            let mut stmt = conn.prepare_cached(sql::GET).map_err(err)?;
            let mut rows = stmt
                .query([key.namespace.as_str(), key.id.as_str()])
                .map_err(err)?;
            let Some(row) = rows.next().map_err(err)? else {
                return Ok(None);
            };
            let version = version_of(&key, row.get(0).map_err(err)?)?;
            let value = value_of(&key, row.get_ref(1).map_err(err)?)?;
            Ok(Some(Record { value, version }))
        })
        .await
    }

    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
        let max = self.inner.options.max_value_size;
        if value.len() > max {
            return Err(StoreError::TooLarge {
                size: value.len(),
                max,
            });
        }
        let key = key.clone();
        self.write(move |conn| put_blocking(conn, &key, &value, &write))
            .await
    }

    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
        let key = key.clone();
        self.write(move |conn| delete_blocking(conn, &key, &write))
            .await
    }

    async fn list(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let namespace = namespace.clone();
        // Every valid id is non-empty, so `id > ''` lists from the start.
        let after = start_after
            .map(|id| id.as_str().to_owned())
            .unwrap_or_default();
        self.read(move |conn| list_blocking(conn, &namespace, &after, limit))
            .await
    }

    async fn write_batch(
        &self,
        ops: &[BatchOp],
        fence: Option<Fence>,
    ) -> Result<Vec<BatchOutcome>, StoreError> {
        check_batch(ops, self.inner.options.max_value_size)?;
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let ops = ops.to_vec();
        self.write(move |conn| batch_blocking(conn, &ops, fence.as_ref()))
            .await
    }

    async fn compact(&self) -> Result<(), StoreError> {
        // Checkpoint the WAL into the database, rewrite the database without its
        // free pages, then checkpoint and truncate the WAL the rewrite went through.
        self.write(|conn| {
            conn.execute_batch(
                "PRAGMA wal_checkpoint(TRUNCATE); VACUUM; PRAGMA wal_checkpoint(TRUNCATE);",
            )
            .map_err(|e| map_err(e, None))
        })
        .await
    }

    async fn watch_changes(&self) -> Result<Option<Changes>, StoreError> {
        Ok(None)
    }

    async fn list_versions(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<VersionPage, StoreError> {
        let namespace = namespace.clone();
        let after = start_after
            .map(|id| id.as_str().to_owned())
            .unwrap_or_default();
        self.read(move |conn| list_versions_blocking(conn, &namespace, &after, limit))
            .await
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        self.read(|conn| {
            let err = |e| map_err(e, None);
            let mut stmt = conn.prepare_cached(sql::NAMESPACES).map_err(err)?;
            let rows = stmt
                .query_map([], |row| row.get::<_, String>(0))
                .map_err(err)?;
            let mut out = Vec::new();
            for name in rows {
                let name = name.map_err(err)?;
                out.push(
                    Namespace::new(&name)
                        .map_err(|_| corrupt(None, "a stored namespace is invalid"))?,
                );
            }
            Ok(out)
        })
        .await
    }

    async fn try_lease(&self, lock: &LockName, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        let lock = lock.clone();
        let clock = Arc::clone(&self.inner.options.clock);
        self.write(move |conn| try_lease_blocking(conn, &lock, ttl, &*clock))
            .await
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        let lease = lease.clone();
        let clock = Arc::clone(&self.inner.options.clock);
        self.write(move |conn| renew_blocking(conn, &lease, ttl, &*clock))
            .await
    }

    async fn release(&self, lease: Lease) -> Result<bool, StoreError> {
        let clock = Arc::clone(&self.inner.options.clock);
        self.write(move |conn| release_blocking(conn, &lease, &*clock))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    }

    fn synchronous(conn: &Connection) -> i64 {
        conn.pragma_query_value(None, "synchronous", |row| row.get(0))
            .expect("synchronous")
    }

    #[test]
    fn durability_sets_synchronous_on_every_connection() {
        let dir = tempfile::tempdir().expect("dir");
        let rt = runtime();
        for (durability, want) in [(Durability::Full, 2), (Durability::Normal, 1)] {
            let path = dir.path().join(format!("{durability:?}.sqlite"));
            let store = rt
                .block_on(SqliteStore::open_with(
                    &path,
                    SqliteOptions::new().durability(durability),
                ))
                .expect("open");
            let writer = lock(&store.inner.writer);
            let writer = &writer.as_ref().expect("writer").conn;
            assert_eq!(synchronous(writer), want, "writer, {durability:?}");
            let mode: String = writer
                .pragma_query_value(None, "journal_mode", |row| row.get(0))
                .expect("journal_mode");
            assert_eq!(mode, "wal");
            let reader = store.inner.readers.get().expect("reader");
            assert_eq!(synchronous(&reader), want, "reader, {durability:?}");
        }
    }

    /// Reopening a store in WAL mode with no WAL left behind does not check the
    /// file; its first write does, once.
    #[test]
    fn the_integrity_check_waits_for_the_first_write() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("db.sqlite");
        let rt = runtime();
        let checked =
            |store: &SqliteStore| lock(&store.inner.writer).as_ref().expect("writer").checked;
        let store = rt.block_on(SqliteStore::open(&path)).expect("create");
        assert!(checked(&store), "a new file is checked as it is made");
        rt.block_on(store.close()).expect("close");
        let store = rt.block_on(SqliteStore::open(&path)).expect("reopen");
        assert!(
            !checked(&store),
            "opening to read does not read the whole file"
        );
        let key = Key::new(
            Namespace::new("ns").expect("ns"),
            RecordId::new("k").expect("id"),
        );
        rt.block_on(store.get(&key)).expect("read");
        assert!(!checked(&store), "a read does not check the file");
        rt.block_on(store.put(&key, Bytes::from_static(b"v"), Write::any()))
            .expect("write");
        assert!(checked(&store), "the first write checks it");
    }

    #[test]
    fn list_walks_the_primary_key_index_without_sorting() {
        let dir = tempfile::tempdir().expect("dir");
        let store = runtime()
            .block_on(SqliteStore::open(dir.path().join("db.sqlite")))
            .expect("open");
        let reader = store.inner.readers.get().expect("reader");
        let mut stmt = reader
            .prepare(&format!("EXPLAIN QUERY PLAN {}", sql::LIST))
            .expect("explain");
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params!["ns", "", 10], |row| row.get(3))
            .expect("plan")
            .collect::<Result<_, _>>()
            .expect("rows");
        let plan = plan.join("; ");
        assert!(
            plan.contains("USING INDEX sqlite_autoindex_records_1"),
            "list uses the primary key index: {plan}"
        );
        assert!(!plan.contains("TEMP B-TREE"), "list does not sort: {plan}");
    }

    #[test]
    fn pool_opens_at_most_max_connections_and_reuses_them() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("db.sqlite");
        let opened = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = Arc::clone(&opened);
        let pool = Arc::new(Pool::new(
            2,
            Box::new(move || {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Connection::open(&path)
            }),
        ));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let pool = Arc::clone(&pool);
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let conn = pool.get().expect("connection");
                        let one: i64 = conn.query_row("SELECT 1", [], |r| r.get(0)).expect("query");
                        assert_eq!(one, 1);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("thread");
        }
        assert!(opened.load(std::sync::atomic::Ordering::SeqCst) <= 2);
        assert!(pool.drain().len() <= 2);
    }
}
