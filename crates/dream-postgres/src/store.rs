//! The store.

use std::fmt;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use dream_core::store::{PageBuilder, PageEntry, check_batch};
use dream_core::{
    BatchOp, BatchOutcome, Bytes, Capabilities, Changes, Entry, Fence, Key, Lease, LockName,
    Namespace, Page, Precondition, Record, RecordId, RecordStore, StoreError, StoreInfo, Version,
    VersionEntry, VersionPage, Write, async_trait,
};
use tokio::sync::{oneshot, watch};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{AsyncMessage, NoTls, Row};

use crate::config::PostgresOptions;
use crate::error::{Kind, epoch_error, kind, map_pg, map_pool, unexpected_reply, unknown_outcome};
use crate::schema::{self, FORMAT, SCHEMA_VERSION, Sql, quoted};
use crate::tls::MakeRustls;

/// The longest lease accepted; longer TTLs are shortened to it.
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

/// What every epoch value starts with.
const EPOCH_FORMAT: &str = "dream-postgres/1 ";

/// How often a call is tried when it is safe to try again.
const ATTEMPTS: u32 = 5;

/// A [`RecordStore`] on one PostgreSQL database, in one schema.
///
/// Layout (schema `S`, default `dream`):
///
/// | object | holds |
/// | --- | --- |
/// | `S.meta` | one row: format, schema version, the random epoch, creation time |
/// | `S.versions` | sequence: the store-wide version counter (never reused) |
/// | `S.fences` | sequence: fence tokens (so a token is never reissued, even for a re-created lease row) |
/// | `S.records` | `(namespace, id)` primary key, `COLLATE "C"` (byte order), version, value `bytea`, write id |
/// | `S.leases` | one row per lock: newest fence, random holder, expiry (server clock), released flag |
/// | `S.batches` | write id → outcomes of each committed batch, kept a day (resolves lost connections, makes a resend apply once) |
/// | `S.put`, `S.del`, `S.write_batch`, `S.acquire`, `S.renew`, `S.release` | PL/pgSQL functions: each write is one statement |
///
/// `Debug` shows the server, database, schema and epoch; never a password.
pub struct PostgresStore {
    pool: Pool,
    /// For the dedicated `LISTEN` connection of [`RecordStore::watch_changes`].
    pg: tokio_postgres::Config,
    /// Its TLS connector, the pool's (none without TLS).
    tls: Option<MakeRustls>,
    sql: Sql,
    schema: String,
    epoch: String,
    endpoint: dream_tls::Endpoint<Option<String>>,
    info: StoreInfo,
    max_value_size: usize,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.endpoint
            .debug_fields(&mut f.debug_struct("PostgresStore"))
            .field("schema", &self.schema)
            .field("epoch", &self.epoch)
            .field("info", &self.info)
            .finish()
    }
}

/// What one attempt of a statement came to.
enum Attempt {
    /// The rows.
    Rows(Vec<Row>),
    /// Refused or not sent; trying again is safe and may succeed.
    Retry(StoreError),
    /// No answer: a write's outcome is unknown.
    Lost(StoreError),
}

type Params<'a> = [&'a (dyn ToSql + Sync)];

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Listens on `schema`'s channel, counting notices into `tx`, until every
/// receiver is gone. The first session's outcome goes to `ready` (once `LISTEN`
/// is in force); after a lost connection it reconnects every second and counts
/// the reconnect as a change.
async fn listen(
    pg: tokio_postgres::Config,
    tls: Option<MakeRustls>,
    schema: String,
    tx: watch::Sender<u64>,
    mut ready: Option<oneshot::Sender<Result<(), tokio_postgres::Error>>>,
) {
    loop {
        let outcome = match &tls {
            Some(tls) => listen_session(&pg, tls.clone(), &schema, &tx, &mut ready).await,
            None => listen_session(&pg, NoTls, &schema, &tx, &mut ready).await,
        };
        if let Some(ready) = ready.take() {
            let _ = ready.send(outcome.map(|_| ()));
            return;
        }
        tracing::debug!(schema = %schema, "change listener lost its connection; reconnecting");
        tokio::select! {
            () = tx.closed() => return,
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        tx.send_modify(|n| *n += 1);
    }
}

/// One connection's life: `LISTEN`, then count notices until it ends (`Ok`
/// when every receiver is gone).
async fn listen_session<T>(
    pg: &tokio_postgres::Config,
    tls: T,
    schema: &str,
    tx: &watch::Sender<u64>,
    ready: &mut Option<oneshot::Sender<Result<(), tokio_postgres::Error>>>,
) -> Result<(), tokio_postgres::Error>
where
    T: tokio_postgres::tls::MakeTlsConnect<tokio_postgres::Socket>,
    T::Stream: Send + 'static,
{
    let (client, mut connection) = pg.connect(tls).await?;
    let drive = async {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(_))) => tx.send_modify(|n| *n += 1),
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            }
        }
    };
    let subscribe = async {
        let channel: String = client
            .query_one(schema::CHANNEL_SQL, &[&schema])
            .await?
            .get(0);
        client
            .batch_execute(&format!("LISTEN \"{channel}\""))
            .await?;
        if let Some(ready) = ready.take() {
            let _ = ready.send(Ok(()));
        }
        std::future::pending::<Result<(), tokio_postgres::Error>>().await
    };
    tokio::select! {
        outcome = drive => outcome,
        outcome = subscribe => outcome,
        () = tx.closed() => Ok(()),
    }
}

fn random_hex() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// A TTL in whole milliseconds, at least 1, at most [`MAX_LEASE_TTL`].
fn ttl_millis(ttl: Duration) -> i64 {
    ttl.min(MAX_LEASE_TTL).as_millis().max(1) as i64
}

/// A u64 as a bigint parameter; values no bigint can hold become -1, which no
/// version or fence ever is, so the check they take part in fails.
fn as_param(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(-1)
}

fn version_of(n: i64) -> Option<Version> {
    u64::try_from(n).ok().filter(|n| *n > 0).map(Version)
}

fn precondition_args(pre: Precondition) -> (&'static str, Option<i64>) {
    match pre {
        Precondition::Any => ("any", None),
        Precondition::Absent => ("absent", None),
        Precondition::Matches(version) => ("matches", Some(as_param(version.0))),
    }
}

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(50 << attempt.min(5))
}

impl PostgresStore {
    /// Connects and opens the store in the configured schema, creating or
    /// migrating it (under an advisory lock, in one transaction) when needed.
    ///
    /// Fails with `Incompatible` when the schema was made by a newer version of
    /// this crate, holds foreign objects, the epoch differs from
    /// [`PostgresOptions::expecting_epoch`], or no store exists and
    /// [`PostgresOptions::without_create`] was set; with `Corrupt` when the store's
    /// tables exist without their meta row.
    pub async fn open(config: PostgresOptions) -> Result<Self, StoreError> {
        let password = config.password();
        let mut pg = config.pg.clone();
        let timeout_ms = config.statement_timeout.as_millis().max(1);
        let options = match pg.get_options() {
            Some(existing) => format!("{existing} -c statement_timeout={timeout_ms}"),
            None => format!("-c statement_timeout={timeout_ms}"),
        };
        pg.options(&options);
        let connect_timeout = pg
            .get_connect_timeout()
            .copied()
            .unwrap_or(Duration::from_secs(5));
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let tls = match &config.tls {
            Some(settings) => {
                Some(MakeRustls::new(settings).map_err(|e| StoreError::backend(false, e))?)
            }
            None => None,
        };
        let manager = match &tls {
            Some(tls) => Manager::from_config(pg.clone(), tls.clone(), manager_config),
            None => Manager::from_config(pg.clone(), NoTls, manager_config),
        };
        let pool = Pool::builder(manager)
            .max_size(config.pool_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(30)))
            .create_timeout(Some(connect_timeout + Duration::from_secs(1)))
            .recycle_timeout(Some(Duration::from_secs(5)))
            .build()
            .map_err(|e| StoreError::backend(false, e))?;
        let mut store = PostgresStore {
            pool,
            pg,
            tls,
            sql: Sql::new(&config.schema),
            schema: config.schema.clone(),
            epoch: String::new(),
            endpoint: dream_tls::Endpoint::new(
                config.server(),
                config.database().map(str::to_owned),
                password,
            ),
            info: StoreInfo {
                name: "postgres".to_owned(),
                capabilities: Capabilities {
                    cross_process: true,
                    leases: true,
                    fenced_writes: true,
                    durable: true,
                    max_value_size: config.max_value_size,
                    atomic_batch_bytes: usize::MAX,
                    notifies: true,
                },
            },
            max_value_size: config.max_value_size,
        };
        store.epoch = store.open_schema(&config).await?;
        dream_tls::check_expected_epoch(config.expected_epoch.as_deref(), &store.epoch)?;
        tracing::debug!(
            server = %store.endpoint.server,
            schema = %store.schema,
            "opened PostgreSQL store"
        );
        Ok(store)
    }

    fn fail(&self, op: &'static str, key: Option<&Key>, err: &tokio_postgres::Error) -> StoreError {
        map_pg(op, key, err, self.endpoint.password())
    }

    /// Creates or migrates the schema; returns the epoch.
    async fn open_schema(&self, config: &PostgresOptions) -> Result<String, StoreError> {
        let op = "open";
        let mut client = self.pooled(op).await?;
        let tx = self.under_schema_lock(op, &mut client).await?;
        let q = quoted(&self.schema);
        let pg = |e: tokio_postgres::Error| self.fail(op, None, &e);
        let schema_exists: bool = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
                &[&self.schema],
            )
            .await
            .map_err(pg)?
            .get(0);
        let objects: i64 = tx
            .query_one(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1",
                &[&self.schema],
            )
            .await
            .map_err(pg)?
            .get(0);
        let has = |table: &str| {
            let name = format!("{q}.{table}");
            let tx = &tx;
            async move {
                tx.query_one("SELECT to_regclass($1) IS NOT NULL", &[&name])
                    .await
                    .map(|row| row.get::<_, bool>(0))
            }
        };
        let epoch = if has("meta").await.map_err(pg)? {
            let row = match tx
                .query_opt(
                    &format!("SELECT format, schema_version, epoch FROM {q}.meta"),
                    &[],
                )
                .await
            {
                Ok(row) => row,
                Err(e) if e.code() == Some(&SqlState::UNDEFINED_COLUMN) => {
                    return Err(foreign(&self.schema));
                }
                Err(e) => return Err(pg(e)),
            };
            let Some(row) = row else {
                return Err(StoreError::Corrupt {
                    key: None,
                    reason: format!(
                        "the store in schema {} has lost its meta row (its epoch): refusing to open it",
                        self.schema
                    ),
                });
            };
            let format: String = row.try_get(0).map_err(|_| foreign(&self.schema))?;
            let version: i32 = row.try_get(1).map_err(|_| foreign(&self.schema))?;
            let epoch: String = row.try_get(2).map_err(|_| foreign(&self.schema))?;
            if format != FORMAT || !epoch.starts_with(EPOCH_FORMAT) {
                return Err(foreign(&self.schema));
            }
            if version > SCHEMA_VERSION {
                return Err(StoreError::Incompatible {
                    reason: format!(
                        "the store in schema {} has schema version {version}, newer than this build's {SCHEMA_VERSION}: upgrade Dream",
                        self.schema
                    ),
                });
            }
            if version < SCHEMA_VERSION {
                for sql in schema::migrations_from(version, &self.schema) {
                    tx.batch_execute(&sql).await.map_err(pg)?;
                }
                tx.execute(
                    &format!("UPDATE {q}.meta SET schema_version = $1"),
                    &[&SCHEMA_VERSION],
                )
                .await
                .map_err(pg)?;
                tracing::info!(schema = %self.schema, from = version, to = SCHEMA_VERSION, "migrated the store's schema");
            }
            epoch
        } else {
            if has("records").await.map_err(pg)? {
                return Err(StoreError::Corrupt {
                    key: None,
                    reason: format!(
                        "schema {} holds the store's records but not its meta table (its epoch): refusing to open it",
                        self.schema
                    ),
                });
            }
            if objects > 0 {
                return Err(foreign(&self.schema));
            }
            if !config.create {
                return Err(StoreError::Incompatible {
                    reason: format!(
                        "no Dream store exists in schema {} and creating one was not allowed",
                        self.schema
                    ),
                });
            }
            if !schema_exists {
                tx.batch_execute(&format!("CREATE SCHEMA {q}"))
                    .await
                    .map_err(pg)?;
            }
            for sql in schema::migrations_from(0, &self.schema) {
                tx.batch_execute(&sql).await.map_err(pg)?;
            }
            let epoch = format!("{EPOCH_FORMAT}{}", random_hex());
            tx.execute(
                &format!(
                    "INSERT INTO {q}.meta (format, schema_version, epoch) VALUES ($1, $2, $3)"
                ),
                &[&FORMAT, &SCHEMA_VERSION, &epoch],
            )
            .await
            .map_err(pg)?;
            epoch
        };
        tx.commit().await.map_err(pg)?;
        Ok(epoch)
    }

    /// The store's epoch: random, written when the store was created. Remember it
    /// and pass it to [`PostgresOptions::expecting_epoch`] to detect a wipe across
    /// restarts of this process too.
    pub fn epoch(&self) -> &str {
        &self.epoch
    }

    /// The schema.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// A connection of the store's pool (it derefs to a
    /// [`tokio_postgres::Client`]), for raw statements: benchmarks, diagnostics.
    /// Writing the store's tables behind its back voids its guarantees.
    pub async fn connection(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pooled("connection").await
    }

    /// A connection of the pool, for `op`.
    async fn pooled(&self, op: &'static str) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| map_pool(op, &e, &self.endpoint.server, self.endpoint.password()))
    }

    /// A transaction on `client` holding the store's advisory lock, which
    /// creating, migrating and destroying the schema take.
    async fn under_schema_lock<'c>(
        &self,
        op: &'static str,
        client: &'c mut deadpool_postgres::Object,
    ) -> Result<deadpool_postgres::Transaction<'c>, StoreError> {
        let fail = |e: tokio_postgres::Error| self.fail(op, None, &e);
        let tx = client.transaction().await.map_err(fail)?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&format!("dream-postgres/{}", self.schema)],
        )
        .await
        .map_err(fail)?;
        Ok(tx)
    }

    /// Drops the store's schema with everything in it, after checking (under the
    /// store's advisory lock) that it still holds this store's epoch, so a store
    /// re-created by someone else is never destroyed by a stale handle.
    pub async fn destroy(self) -> Result<(), StoreError> {
        let op = "destroy";
        let mut client = self.pooled(op).await?;
        let tx = self.under_schema_lock(op, &mut client).await?;
        let q = quoted(&self.schema);
        let epoch: Option<String> = tx
            .query_opt(&format!("SELECT epoch FROM {q}.meta"), &[])
            .await
            .map_err(|e| self.fail(op, None, &e))?
            .map(|row| row.get(0));
        if epoch.as_deref() != Some(self.epoch.as_str()) {
            return Err(epoch_error(if epoch.is_none() {
                schema::EPOCH_MISSING
            } else {
                schema::EPOCH_CHANGED
            })
            .unwrap_or_else(|| unexpected_reply(op)));
        }
        tx.batch_execute(&format!("DROP SCHEMA {q} CASCADE"))
            .await
            .map_err(|e| self.fail(op, None, &e))?;
        tx.commit().await.map_err(|e| self.fail(op, None, &e))?;
        Ok(())
    }

    /// One attempt of `sql` on a pooled connection (prepared once per connection).
    async fn attempt(
        &self,
        op: &'static str,
        key: Option<&Key>,
        sql: &str,
        params: &Params<'_>,
    ) -> Attempt {
        let client = match self.pooled(op).await {
            Ok(client) => client,
            Err(mapped) => {
                return if mapped.is_retryable() {
                    Attempt::Retry(mapped)
                } else {
                    Attempt::Lost(mapped)
                };
            }
        };
        // Preparing (a round trip the first time on a connection) sends nothing
        // that writes: a connection lost there is safe to try again.
        let statement = match client.prepare_cached(sql).await {
            Ok(statement) => statement,
            Err(err) => {
                let mapped = self.fail(op, key, &err);
                return match kind(&err) {
                    Kind::Refused { retry: false } | Kind::SchemaMissing => {
                        Attempt::Lost(mapped).fatal()
                    }
                    _ if mapped.is_retryable() => Attempt::Retry(mapped),
                    _ => Attempt::Lost(mapped).fatal(),
                };
            }
        };
        match client.query(&statement, params).await {
            Ok(rows) => Attempt::Rows(rows),
            Err(err) => {
                let mapped = self.fail(op, key, &err);
                match kind(&err) {
                    Kind::Refused { retry: true } => Attempt::Retry(mapped),
                    Kind::Lost => Attempt::Lost(mapped),
                    Kind::Refused { retry: false } | Kind::SchemaMissing => {
                        Attempt::Lost(mapped).fatal()
                    }
                }
            }
        }
    }

    /// Runs a statement that is safe to repeat (a read, or a compare-and-set whose
    /// repetition has the same effect), trying again across a lost connection.
    async fn idempotent(
        &self,
        op: &'static str,
        key: Option<&Key>,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Vec<Row>, StoreError> {
        let mut attempt = 1;
        loop {
            match self.attempt(op, key, sql, params).await {
                Attempt::Rows(rows) => return Ok(rows),
                Attempt::Retry(err) | Attempt::Lost(err) if err.is_retryable() => {
                    if attempt >= ATTEMPTS {
                        return Err(err);
                    }
                    tracing::debug!(op, attempt, "PostgreSQL call failed; trying again");
                    tokio::time::sleep(backoff(attempt)).await;
                    attempt += 1;
                }
                Attempt::Retry(err) | Attempt::Lost(err) => return Err(err),
            }
        }
    }

    /// Runs a write. Refusals that roll back (serialization failure, deadlock)
    /// are tried again; a lost connection is resolved by `resolve`, which reads
    /// back and answers `Some(result)` when it can tell the outcome, `Ok(None)`
    /// when it proved the write did not happen (then it is tried again).
    async fn write<'r, T>(
        &self,
        op: &'static str,
        key: Option<&Key>,
        sql: &str,
        params: &Params<'_>,
        resolve: impl Fn() -> BoxFuture<'r, Result<Option<T>, StoreError>>,
        parse: impl Fn(Vec<Row>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut attempt = 1;
        loop {
            match self.attempt(op, key, sql, params).await {
                Attempt::Rows(rows) => return parse(rows),
                Attempt::Retry(err) => {
                    if attempt >= ATTEMPTS {
                        return Err(err);
                    }
                    tokio::time::sleep(backoff(attempt)).await;
                    attempt += 1;
                }
                Attempt::Lost(err) if !err.is_retryable() => return Err(err),
                Attempt::Lost(_) => {
                    tracing::warn!(
                        op,
                        "connection lost during a write; reading back to resolve its outcome"
                    );
                    match resolve().await {
                        Ok(Some(result)) => return Ok(result),
                        Ok(None) if attempt < ATTEMPTS => {
                            tokio::time::sleep(backoff(attempt)).await;
                            attempt += 1;
                        }
                        // The last attempt was lost too, or reading back failed
                        // (the server is still away): nothing tells whether the
                        // write committed, so it must not be retried blindly.
                        Ok(None) => return Err(unknown_outcome(op, key)),
                        Err(read) if read.is_retryable() => {
                            return Err(unknown_outcome(op, key));
                        }
                        Err(read) => return Err(read),
                    }
                }
            }
        }
    }

    /// One page of `list` or `list_versions` (`op`, statement `sql`): at most the
    /// page's read limit of records of `namespace` after `start_after`, the
    /// store's epoch checked (column 0), each row made an entry by `entry` from
    /// its id and version.
    async fn page_of<T: PageEntry>(
        &self,
        op: &'static str,
        sql: &str,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
        entry: impl Fn(&Row, RecordId, Version) -> T,
    ) -> Result<T::Page, StoreError> {
        let mut page = PageBuilder::new(limit);
        let after = start_after.map(RecordId::as_str).unwrap_or("");
        let fetch = page.read_limit() as i64;
        let rows = self
            .idempotent(op, None, sql, &[&namespace.as_str(), &after, &fetch])
            .await?;
        self.check_epoch(op, rows.first().map(|r| r.get::<_, &str>(0)))?;
        for row in rows {
            let Some((id, version)) = listed_id_version(&row, namespace)? else {
                continue; // the namespace is empty
            };
            page.push(entry(&row, id, version));
        }
        Ok(page.finish())
    }

    fn check_epoch(&self, op: &'static str, epoch: Option<&str>) -> Result<(), StoreError> {
        match epoch {
            None => Err(epoch_error(schema::EPOCH_MISSING).unwrap_or_else(|| unexpected_reply(op))),
            Some(epoch) if epoch != self.epoch => {
                Err(epoch_error(schema::EPOCH_CHANGED).unwrap_or_else(|| unexpected_reply(op)))
            }
            Some(_) => Ok(()),
        }
    }

    /// The status column of a function's reply, epoch failures turned into errors.
    fn status(op: &'static str, row: &Row) -> Result<i32, StoreError> {
        let status: i32 = row.try_get(0).map_err(|_| unexpected_reply(op))?;
        match epoch_error(status) {
            Some(err) => Err(err),
            None => Ok(status),
        }
    }

    fn single(op: &'static str, rows: Vec<Row>) -> Result<Row, StoreError> {
        let mut rows = rows.into_iter();
        match (rows.next(), rows.next()) {
            (Some(row), None) => Ok(row),
            _ => Err(unexpected_reply(op)),
        }
    }

    fn write_outcome(
        op: &'static str,
        key: &Key,
        write: &Write,
        row: &Row,
    ) -> Result<(), StoreError> {
        match Self::status(op, row)? {
            schema::OK => Ok(()),
            schema::CONFLICT => Err(StoreError::Conflict {
                key: key.clone(),
                current: row
                    .try_get::<_, Option<i64>>(1)
                    .ok()
                    .flatten()
                    .and_then(version_of),
            }),
            schema::LOCK_LOST => match &write.fence {
                Some(fence) => Err(StoreError::LockLost {
                    lock: fence.lock.clone(),
                }),
                None => Err(unexpected_reply(op)),
            },
            _ => Err(unexpected_reply(op)),
        }
    }

    /// Reads a record's version and write id, for resolving a lost write.
    async fn record_of(&self, key: &Key) -> Result<Option<(i64, String)>, StoreError> {
        let rows = self
            .idempotent(
                "read back",
                Some(key),
                &self.sql.record_of,
                &[&key.namespace.as_str(), &key.id.as_str()],
            )
            .await?;
        Ok(rows.first().map(|row| (row.get(0), row.get(1))))
    }

    /// Reads a lock's row: fence, holder, released, live.
    async fn lease_of(
        &self,
        lock: &LockName,
    ) -> Result<Option<(i64, String, bool, bool)>, StoreError> {
        let rows = self
            .idempotent("read back", None, &self.sql.lease_of, &[&lock.as_str()])
            .await?;
        Ok(rows
            .first()
            .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3))))
    }

    /// The reply of `S.write_batch`: outcomes, or why nothing was written.
    fn batch_reply(
        ops: &[BatchOp],
        fence: Option<&Fence>,
        rows: Vec<Row>,
    ) -> Result<Vec<BatchOutcome>, StoreError> {
        let op = "write_batch";
        let row = Self::single(op, rows)?;
        match Self::status(op, &row)? {
            schema::OK => {
                let outcomes = row
                    .try_get::<_, Option<Vec<i64>>>(3)
                    .ok()
                    .flatten()
                    .ok_or_else(|| unexpected_reply(op))?;
                Self::batch_outcomes(ops, &outcomes)
            }
            schema::CONFLICT => {
                let index = row
                    .try_get::<_, Option<i32>>(1)
                    .ok()
                    .flatten()
                    .and_then(|i| usize::try_from(i).ok())
                    .and_then(|i| i.checked_sub(1))
                    .and_then(|i| ops.get(i))
                    .ok_or_else(|| unexpected_reply(op))?;
                Err(StoreError::Conflict {
                    key: index.key().clone(),
                    current: row
                        .try_get::<_, Option<i64>>(2)
                        .ok()
                        .flatten()
                        .and_then(version_of),
                })
            }
            schema::LOCK_LOST => match fence {
                Some(fence) => Err(StoreError::LockLost {
                    lock: fence.lock.clone(),
                }),
                None => Err(unexpected_reply(op)),
            },
            _ => Err(unexpected_reply(op)),
        }
    }

    /// A committed batch's outcomes as stored: a put's version, a delete's 1 or 0.
    fn batch_outcomes(ops: &[BatchOp], stored: &[i64]) -> Result<Vec<BatchOutcome>, StoreError> {
        let op = "write_batch";
        if stored.len() != ops.len() {
            return Err(unexpected_reply(op));
        }
        ops.iter()
            .zip(stored)
            .map(|(batch_op, &n)| match (batch_op, n) {
                (BatchOp::Put { .. }, n) => version_of(n)
                    .map(BatchOutcome::Put)
                    .ok_or_else(|| unexpected_reply(op)),
                (BatchOp::Delete { .. }, 1) => Ok(BatchOutcome::Delete(true)),
                (BatchOp::Delete { .. }, 0) => Ok(BatchOutcome::Delete(false)),
                (BatchOp::Delete { .. }, _) => Err(unexpected_reply(op)),
            })
            .collect()
    }

    /// Reads back a committed batch's outcomes by its write id (`None`: it did
    /// not commit, or not yet).
    async fn batch_of(&self, write_id: &str) -> Result<Option<Vec<i64>>, StoreError> {
        let rows = self
            .idempotent("read back", None, &self.sql.batch_of, &[&write_id])
            .await?;
        match rows.first() {
            None => Ok(None),
            Some(row) => row
                .try_get::<_, Vec<i64>>(0)
                .map(Some)
                .map_err(|_| unexpected_reply("read back")),
        }
    }
}

impl Attempt {
    /// The same error, never retried nor resolved.
    fn fatal(self) -> Attempt {
        match self {
            Attempt::Lost(StoreError::Backend { source, .. }) => {
                Attempt::Lost(StoreError::Backend {
                    retryable: false,
                    source,
                })
            }
            other => other,
        }
    }
}

fn foreign(schema: &str) -> StoreError {
    StoreError::Incompatible {
        reason: format!(
            "schema {schema} holds objects of another program or format; choose another schema"
        ),
    }
}

#[async_trait]
impl RecordStore for PostgresStore {
    fn info(&self) -> StoreInfo {
        self.info.clone()
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        let rows = self
            .idempotent(
                "get",
                Some(key),
                &self.sql.get,
                &[&key.namespace.as_str(), &key.id.as_str()],
            )
            .await?;
        let row = rows.first();
        self.check_epoch("get", row.map(|r| r.get::<_, &str>(0)))?;
        let Some(row) = row else {
            return Err(unexpected_reply("get"));
        };
        let version: Option<i64> = row.get(1);
        let value: Option<Vec<u8>> = row.get(2);
        match (version, value) {
            (None, _) => Ok(None),
            (Some(version), Some(value)) => match version_of(version) {
                Some(version) => Ok(Some(Record {
                    value: Bytes::from(value),
                    version,
                })),
                None => Err(StoreError::Corrupt {
                    key: Some(key.clone()),
                    reason: "the record's version is not positive".to_owned(),
                }),
            },
            (Some(_), None) => Err(unexpected_reply("get")),
        }
    }

    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
        if value.len() > self.max_value_size {
            return Err(StoreError::TooLarge {
                size: value.len(),
                max: self.max_value_size,
            });
        }
        let (pre, expected) = precondition_args(write.pre);
        let write_id = random_hex();
        let lock = write.fence.as_ref().map(|f| f.lock.as_str());
        let token = write.fence.as_ref().map(|f| as_param(f.token));
        let bytes: &[u8] = value.as_ref();
        let params: [&(dyn ToSql + Sync); 9] = [
            &self.epoch,
            &key.namespace.as_str(),
            &key.id.as_str(),
            &pre,
            &expected,
            &bytes,
            &write_id,
            &lock,
            &token,
        ];
        let write_id_ref = &write_id;
        let resolve = || -> BoxFuture<'_, Result<Option<Version>, StoreError>> {
            Box::pin(async move {
                match self.record_of(key).await? {
                    Some((version, id)) if id == *write_id_ref => Ok(Some(
                        version_of(version).ok_or_else(|| unexpected_reply("put"))?,
                    )),
                    // Still at the version the write required: it did not happen
                    // (versions are never reused), so it may be sent again.
                    Some((version, _)) if Some(version) == expected => Ok(None),
                    _ => Err(unknown_outcome("put", Some(key))),
                }
            })
        };
        self.write("put", Some(key), &self.sql.put, &params, resolve, |rows| {
            let row = Self::single("put", rows)?;
            Self::write_outcome("put", key, &write, &row)?;
            row.try_get::<_, Option<i64>>(1)
                .ok()
                .flatten()
                .and_then(version_of)
                .ok_or_else(|| unexpected_reply("put"))
        })
        .await
    }

    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
        let (pre, expected) = precondition_args(write.pre);
        let lock = write.fence.as_ref().map(|f| f.lock.as_str());
        let token = write.fence.as_ref().map(|f| as_param(f.token));
        let params: [&(dyn ToSql + Sync); 7] = [
            &self.epoch,
            &key.namespace.as_str(),
            &key.id.as_str(),
            &pre,
            &expected,
            &lock,
            &token,
        ];
        let pre_kind = write.pre;
        let resolve = || -> BoxFuture<'_, Result<Option<bool>, StoreError>> {
            Box::pin(async move {
                match (pre_kind, self.record_of(key).await?) {
                    // A delete guarded by `Absent` changes nothing: send it again.
                    (Precondition::Absent, _) => Ok(None),
                    // Still at the required version: it did not happen.
                    (Precondition::Matches(_), Some((version, _))) if Some(version) == expected => {
                        Ok(None)
                    }
                    _ => Err(unknown_outcome("delete", Some(key))),
                }
            })
        };
        self.write(
            "delete",
            Some(key),
            &self.sql.delete,
            &params,
            resolve,
            |rows| {
                let row = Self::single("delete", rows)?;
                Self::write_outcome("delete", key, &write, &row)?;
                row.try_get::<_, bool>(2)
                    .map_err(|_| unexpected_reply("delete"))
            },
        )
        .await
    }

    async fn list(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.page_of(
            "list",
            &self.sql.list,
            namespace,
            start_after,
            limit,
            |row, id, version| {
                let value: Vec<u8> = row.get(3);
                Entry {
                    id,
                    record: Record {
                        value: Bytes::from(value),
                        version,
                    },
                }
            },
        )
        .await
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        let rows = self
            .idempotent("namespaces", None, &self.sql.namespaces, &[])
            .await?;
        self.check_epoch("namespaces", rows.first().map(|r| r.get::<_, &str>(0)))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            if let Some(name) = row.get::<_, Option<&str>>(1) {
                out.push(Namespace::new(name).map_err(|_| StoreError::Corrupt {
                    key: None,
                    reason: "the records table holds an invalid namespace".to_owned(),
                })?);
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    async fn try_lease(&self, lock: &LockName, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        let holder = random_hex();
        let ttl = ttl_millis(ttl);
        let params: [&(dyn ToSql + Sync); 4] = [&self.epoch, &lock.as_str(), &holder, &ttl];
        let holder_ref = &holder;
        let resolve = || -> BoxFuture<'_, Result<Option<Option<Lease>>, StoreError>> {
            Box::pin(async move {
                Ok(Some(match self.lease_of(lock).await? {
                    Some((fence, row_holder, false, true)) if row_holder == *holder_ref => {
                        u64::try_from(fence)
                            .ok()
                            .map(|token| Lease::new(lock.clone(), token, holder_ref.clone()))
                    }
                    // Not ours (or no longer live): we hold nothing.
                    _ => None,
                }))
            })
        };
        self.write(
            "try_lease",
            None,
            &self.sql.acquire,
            &params,
            resolve,
            |rows| {
                let row = Self::single("try_lease", rows)?;
                if Self::status("try_lease", &row)? != schema::OK {
                    return Err(unexpected_reply("try_lease"));
                }
                match row.try_get::<_, Option<i64>>(1) {
                    Ok(None) => Ok(None),
                    Ok(Some(token)) => u64::try_from(token)
                        .map(|token| Some(Lease::new(lock.clone(), token, holder.clone())))
                        .map_err(|_| unexpected_reply("try_lease")),
                    Err(_) => Err(unexpected_reply("try_lease")),
                }
            },
        )
        .await
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        let ttl = ttl_millis(ttl);
        let token = as_param(lease.token());
        // Compare-and-extend is idempotent, so it may be sent again.
        let rows = self
            .idempotent(
                "renew",
                None,
                &self.sql.renew,
                &[
                    &self.epoch,
                    &lease.lock().as_str(),
                    &lease.holder(),
                    &token,
                    &ttl,
                ],
            )
            .await?;
        let row = Self::single("renew", rows)?;
        match (Self::status("renew", &row)?, row.try_get::<_, bool>(1)) {
            (schema::OK, Ok(true)) => Ok(lease.clone()),
            (schema::OK, Ok(false)) => Err(StoreError::LockLost {
                lock: lease.lock().clone(),
            }),
            _ => Err(unexpected_reply("renew")),
        }
    }

    async fn release(&self, lease: Lease) -> Result<bool, StoreError> {
        let token = as_param(lease.token());
        let params: [&(dyn ToSql + Sync); 4] =
            [&self.epoch, &lease.lock().as_str(), &lease.holder(), &token];
        let lease_ref = &lease;
        let resolve = || -> BoxFuture<'_, Result<Option<bool>, StoreError>> {
            Box::pin(async move {
                match self.lease_of(lease_ref.lock()).await? {
                    Some((fence, holder, released, live))
                        if holder == lease_ref.holder() && fence == token =>
                    {
                        if released {
                            Ok(Some(true))
                        } else if live {
                            Ok(None) // not released yet: send it again
                        } else {
                            Ok(Some(false))
                        }
                    }
                    _ => Ok(Some(false)),
                }
            })
        };
        self.write(
            "release",
            None,
            &self.sql.release,
            &params,
            resolve,
            |rows| {
                let row = Self::single("release", rows)?;
                match (Self::status("release", &row)?, row.try_get::<_, bool>(1)) {
                    (schema::OK, Ok(ok)) => Ok(ok),
                    _ => Err(unexpected_reply("release")),
                }
            },
        )
        .await
    }

    async fn write_batch(
        &self,
        ops: &[BatchOp],
        fence: Option<Fence>,
    ) -> Result<Vec<BatchOutcome>, StoreError> {
        let op = "write_batch";
        check_batch(ops, self.max_value_size)?;
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let write_id = random_hex();
        let lock = fence.as_ref().map(|f| f.lock.as_str());
        let token = fence.as_ref().map(|f| as_param(f.token));
        let mut namespaces = Vec::with_capacity(ops.len());
        let mut ids = Vec::with_capacity(ops.len());
        let mut pres = Vec::with_capacity(ops.len());
        let mut expected = Vec::with_capacity(ops.len());
        let mut values: Vec<Option<&[u8]>> = Vec::with_capacity(ops.len());
        for batch_op in ops {
            let key = batch_op.key();
            let (pre, exp) = precondition_args(batch_op.pre());
            namespaces.push(key.namespace.as_str());
            ids.push(key.id.as_str());
            pres.push(pre);
            expected.push(exp);
            values.push(batch_op.value().map(|v| v.as_ref()));
        }
        let params: [&(dyn ToSql + Sync); 9] = [
            &self.epoch,
            &write_id,
            &lock,
            &token,
            &namespaces,
            &ids,
            &pres,
            &expected,
            &values,
        ];
        let write_id_ref = &write_id;
        // Not committed (or still running on the lost connection): sending it
        // again is safe, the write id applies it once.
        let resolve = || -> BoxFuture<'_, Result<Option<Vec<BatchOutcome>>, StoreError>> {
            Box::pin(async move {
                match self.batch_of(write_id_ref).await {
                    Ok(Some(stored)) => Self::batch_outcomes(ops, &stored).map(Some),
                    Ok(None) => Ok(None),
                    Err(_) => Err(unknown_outcome(op, None)),
                }
            })
        };
        self.write(op, None, &self.sql.write_batch, &params, resolve, |rows| {
            Self::batch_reply(ops, fence.as_ref(), rows)
        })
        .await
    }

    async fn compact(&self) -> Result<(), StoreError> {
        // VACUUM removes the dead row versions of deleted and overwritten values
        // from the table's pages (it cannot run inside a transaction block).
        let op = "compact";
        let client = self.pooled(op).await?;
        let q = quoted(&self.schema);
        client
            .batch_execute(&format!("VACUUM {q}.records"))
            .await
            .map_err(|e| self.fail(op, None, &e))
    }

    /// A trigger notifies the schema's channel at every commit that wrote
    /// records, and a dedicated connection `LISTEN`s (reconnecting on its own,
    /// counting a reconnect as a change) until every receiver is dropped.
    /// Notices carry nothing.
    async fn watch_changes(&self) -> Result<Option<Changes>, StoreError> {
        let (tx, rx) = watch::channel(0);
        let (ready_tx, ready) = oneshot::channel();
        tokio::spawn(listen(
            self.pg.clone(),
            self.tls.clone(),
            self.schema.clone(),
            tx,
            Some(ready_tx),
        ));
        match ready.await {
            Ok(Ok(())) => Ok(Some(rx)),
            Ok(Err(e)) => Err(self.fail("watch", None, &e)),
            Err(_) => Err(StoreError::backend(true, "the change listener stopped")),
        }
    }

    async fn list_versions(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<VersionPage, StoreError> {
        self.page_of(
            "list_versions",
            &self.sql.list_versions,
            namespace,
            start_after,
            limit,
            |_, id, version| VersionEntry { id, version },
        )
        .await
    }
}

/// The id (column 1) and version (column 2) of one row of `list` or
/// `list_versions`; `None` for the row an empty namespace answers with.
fn listed_id_version(
    row: &Row,
    namespace: &Namespace,
) -> Result<Option<(RecordId, Version)>, StoreError> {
    let Some(id) = row.get::<_, Option<&str>>(1) else {
        return Ok(None);
    };
    let id = RecordId::new(id).map_err(|_| StoreError::Corrupt {
        key: None,
        reason: format!("namespace {namespace} holds an invalid id"),
    })?;
    let version: i64 = row.get(2);
    let version = version_of(version).ok_or_else(|| StoreError::Corrupt {
        key: Some(Key::new(namespace.clone(), id.clone())),
        reason: "the record's version is not positive".to_owned(),
    })?;
    Ok(Some((id, version)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_are_whole_milliseconds_within_bounds() {
        assert_eq!(ttl_millis(Duration::ZERO), 1);
        assert_eq!(ttl_millis(Duration::from_micros(300)), 1);
        assert_eq!(ttl_millis(Duration::from_millis(1500)), 1500);
        assert_eq!(ttl_millis(Duration::MAX), MAX_LEASE_TTL.as_millis() as i64);
    }

    #[test]
    fn big_numbers_never_match() {
        assert_eq!(as_param(7), 7);
        assert_eq!(as_param(u64::MAX), -1);
        assert_eq!(version_of(0), None);
        assert_eq!(version_of(-1), None);
        assert_eq!(version_of(3), Some(Version(3)));
    }
}
