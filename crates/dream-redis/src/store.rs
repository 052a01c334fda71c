//! The store.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use dream_core::store::{PageBuilder, PageEntry, check_batch};
use dream_core::{
    BatchOp, BatchOutcome, Bytes, Capabilities, Changes, Entry, Fence, Key, Lease, LockName,
    Namespace, Page, Precondition, Record, RecordId, RecordStore, StoreError, StoreInfo, Version,
    VersionEntry, VersionPage, Write, async_trait,
};
use futures_util::StreamExt as _;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSub};
use redis::{ErrorKind, RedisError, Script, ScriptInvocation, TlsCertificates, Value};
use tokio::sync::watch;

use crate::config::{RedisOptions, describe_addr};
use crate::error::{
    EPOCH_CHANGED, EPOCH_MISSING, certificate_refused, connect_error, is_transient, map_error,
    unexpected_reply,
};
use crate::keys::Keys;
use crate::scripts::{self, SCRIPTS};

/// The longest lease accepted; longer TTLs are shortened to it.
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

/// What every epoch value starts with: the layout's format version.
const EPOCH_FORMAT: &str = "dream-redis/1 ";

/// A batch whose values total at most this many bytes is one Lua script, all or
/// nothing (the store's `atomic_batch_bytes`). A larger batch is split into
/// scripts of at most this many value bytes (at least one operation each), run in
/// order: each script is atomic, the batch is not, and a failure after a script
/// was applied is `PartialBatch`.
pub const BATCH_SCRIPT_BYTES: usize = 64 * 1024 * 1024;

/// How often an idempotent call is tried across a reconnect.
const READ_ATTEMPTS: u32 = 5;

/// A [`RecordStore`] on one Redis database under one key prefix.
///
/// Layout (every key starts with the hash tag `{prefix}`):
///
/// | key | type | holds |
/// | --- | --- | --- |
/// | `{p}:epoch` | string | `dream-redis/1 <random>`, written at creation, checked by every script |
/// | `{p}:version` | integer | the store-wide version counter |
/// | `{p}:namespaces` | set | namespaces holding at least one record |
/// | `{p}:idx:<ns>` | sorted set | the namespace's ids, score 0 (read with `ZRANGEBYLEX`) |
/// | `{p}:rec:<ns>:<id>` | hash | `n` = version, `v` = value |
/// | `{p}:lease:<lock>` | string + TTL | the current lease's random holder |
/// | `{p}:fence:<lock>` | integer | the newest fence token issued for the lock |
///
/// `Debug` shows the server, database, prefix and epoch; never a password.
pub struct RedisStore {
    conn: ConnectionManager,
    /// For the dedicated pub/sub connection of [`RecordStore::watch_changes`].
    client: redis::Client,
    keys: Keys,
    prefix: String,
    epoch: String,
    endpoint: dream_tls::Endpoint<i64>,
    info: StoreInfo,
    max_value_size: usize,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.endpoint
            .debug_fields(&mut f.debug_struct("RedisStore"))
            .field("prefix", &self.prefix)
            .field("epoch", &self.epoch)
            .field("info", &self.info)
            .finish()
    }
}

/// The reply of a guarded script: its status and payload.
struct Reply {
    status: i64,
    items: Vec<Value>,
}

impl Reply {
    fn parse(op: &'static str, value: Value) -> Result<Reply, StoreError> {
        let Value::Array(mut items) = value else {
            return Err(unexpected_reply(op));
        };
        if items.is_empty() {
            return Err(unexpected_reply(op));
        }
        let status = int_of(&items.remove(0)).ok_or_else(|| unexpected_reply(op))?;
        match status {
            scripts::EPOCH_MISSING => Err(StoreError::Corrupt {
                key: None,
                reason: EPOCH_MISSING.to_owned(),
            }),
            scripts::EPOCH_CHANGED => Err(StoreError::Incompatible {
                reason: EPOCH_CHANGED.to_owned(),
            }),
            _ => Ok(Reply { status, items }),
        }
    }
}

fn bytes_of(value: Value) -> Option<Vec<u8>> {
    match value {
        Value::BulkString(bytes) => Some(bytes),
        Value::SimpleString(text) => Some(text.into_bytes()),
        _ => None,
    }
}

fn text_of(value: Value) -> Option<String> {
    bytes_of(value).and_then(|bytes| String::from_utf8(bytes).ok())
}

fn int_of(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        _ => None,
    }
}

fn version_of(value: &Value) -> Option<Version> {
    int_of(value)
        .and_then(|n| u64::try_from(n).ok())
        .filter(|n| *n > 0)
        .map(Version)
}

/// The id and version of one record a listing script returned; `Corrupt` when
/// the namespace index holds an invalid id or names a record without a valid
/// version.
fn listed_id_version(
    namespace: &Namespace,
    id: Value,
    version: &Value,
) -> Result<(RecordId, Version), StoreError> {
    let id = text_of(id)
        .and_then(|id| RecordId::new(id).ok())
        .ok_or_else(|| StoreError::Corrupt {
            key: None,
            reason: format!("the index of namespace {namespace} holds an invalid id"),
        })?;
    let Some(version) = version_of(version) else {
        return Err(StoreError::Corrupt {
            key: Some(Key::new(namespace.clone(), id)),
            reason: "the namespace index names a record that is missing or has no valid version"
                .to_owned(),
        });
    };
    Ok((id, version))
}

/// A pub/sub connection subscribed to `channel`.
async fn subscribe(client: &redis::Client, channel: &str) -> Result<PubSub, RedisError> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(channel).await?;
    Ok(pubsub)
}

/// Counts the messages on `channel` into `tx` until every receiver is gone;
/// after a lost connection, subscribes again (every second) and counts that too.
async fn listen(
    client: redis::Client,
    channel: String,
    mut pubsub: PubSub,
    tx: watch::Sender<u64>,
) {
    loop {
        {
            let mut messages = pubsub.on_message();
            loop {
                tokio::select! {
                    () = tx.closed() => return,
                    message = messages.next() => match message {
                        Some(_) => tx.send_modify(|n| *n += 1),
                        None => break,
                    },
                }
            }
        }
        tracing::debug!(%channel, "change channel lost; subscribing again");
        pubsub = loop {
            tokio::select! {
                () = tx.closed() => return,
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            if let Ok(pubsub) = subscribe(&client, &channel).await {
                break pubsub;
            }
        };
        tx.send_modify(|n| *n += 1);
    }
}

fn random_hex() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// A TTL in whole milliseconds, at least 1, at most [`MAX_LEASE_TTL`].
fn ttl_millis(ttl: Duration) -> u64 {
    ttl.min(MAX_LEASE_TTL).as_millis().max(1) as u64
}

fn precondition_args(pre: Precondition) -> (&'static str, String) {
    match pre {
        Precondition::Any => ("any", String::new()),
        Precondition::Absent => ("absent", String::new()),
        Precondition::Matches(version) => ("matches", version.0.to_string()),
    }
}

impl RedisStore {
    /// Connects and opens the store under the configured prefix, creating it
    /// (writing a fresh random epoch) if the prefix is empty and creation is allowed.
    ///
    /// Fails with `Corrupt` when store data exists without its epoch (a partial
    /// loss), and with `Incompatible` when the epoch key holds something else, the
    /// epoch differs from [`RedisOptions::expecting_epoch`], or no store exists and
    /// [`RedisOptions::without_create`] was set.
    pub async fn open(config: RedisOptions) -> Result<Self, StoreError> {
        let password = config.password().map(str::to_owned);
        let server = describe_addr(&config.connection.addr);
        let client = if config.is_tls() {
            // redis-rs builds its rustls config with the process-wide provider:
            // make it ring's unless the process chose one already.
            let _ = rustls::crypto::ring::default_provider().install_default();
            redis::Client::build_with_tls(
                config.connection.clone(),
                TlsCertificates {
                    client_tls: None,
                    root_cert: config.ca.clone(),
                },
            )
        } else {
            redis::Client::open(config.connection.clone())
        }
        .map_err(|e| connect_error(&server, e, password.as_deref()))?;
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(config.connection_timeout)
            .set_response_timeout(config.response_timeout)
            // Each (re)connection is tried 3 times, about 1-2 s apart (backon's
            // minimum delay is 1 s); callers see a retryable error after that.
            .set_factor(2)
            .set_number_of_retries(2)
            .set_max_delay(2_000);
        let conn = ConnectionManager::new_with_config(client.clone(), manager)
            .await
            .map_err(|e| match certificate_refused(&server, &e) {
                Some(refused) => StoreError::backend(false, refused),
                None => connect_error(&server, e, password.as_deref()),
            })?;
        let keys = Keys::new(&config.prefix);
        let mut store = RedisStore {
            conn,
            client,
            keys,
            prefix: config.prefix.clone(),
            epoch: String::new(),
            endpoint: dream_tls::Endpoint::new(server, config.connection.redis.db, password),
            info: StoreInfo {
                name: "redis".to_owned(),
                capabilities: Capabilities {
                    cross_process: true,
                    leases: true,
                    fenced_writes: true,
                    durable: false,
                    max_value_size: config.max_value_size,
                    atomic_batch_bytes: BATCH_SCRIPT_BYTES,
                    notifies: true,
                },
            },
            max_value_size: config.max_value_size,
        };
        store.epoch = store.open_epoch(&config).await?;
        let appendonly = store.config_get("appendonly").await?;
        let fsync = store.config_get("appendfsync").await?;
        let eviction = store.config_get("maxmemory-policy").await?;
        store.info.capabilities.durable =
            appendonly.as_deref() == Some("yes") && fsync.as_deref() == Some("always");
        let unsafe_eviction = eviction
            .as_deref()
            .is_some_and(|policy| policy != "noeviction");
        let settings = format!(
            "appendonly={};maxmemory-policy={}",
            appendonly.as_deref().unwrap_or("?"),
            eviction.as_deref().unwrap_or("?")
        );
        let unsafe_appendonly = appendonly.as_deref() != Some("yes");
        if (unsafe_appendonly || unsafe_eviction) && store.first_notice(&settings).await {
            if unsafe_appendonly {
                tracing::warn!(
                    server = %store.endpoint.server,
                    "Redis appendonly is not enabled: a restart can lose acknowledged writes (the epoch check then refuses the store)"
                );
            }
            if unsafe_eviction {
                tracing::warn!(
                    server = %store.endpoint.server,
                    "Redis maxmemory-policy is not noeviction: records can be evicted silently"
                );
            }
        }
        tracing::debug!(
            server = %store.endpoint.server,
            database = store.endpoint.database,
            prefix = %store.prefix,
            "opened Redis store"
        );
        Ok(store)
    }

    /// Whether the persistence `settings` are new to this store: the warning
    /// about them is then given, once per store (every process and machine sharing
    /// it), again only when they change. The note lives in the store itself, so a
    /// restart that loses data also loses the note and the warning comes back.
    /// A note that cannot be written (a read-only user) counts as new.
    async fn first_notice(&self, settings: &str) -> bool {
        let mut conn = self.conn.clone();
        let before: Result<Option<String>, RedisError> = redis::cmd("SET")
            .arg(self.keys.persistence_noted())
            .arg(settings)
            .arg("GET")
            .query_async(&mut conn)
            .await;
        before.map_or(true, |before| before.as_deref() != Some(settings))
    }

    async fn open_epoch(&self, config: &RedisOptions) -> Result<String, StoreError> {
        let candidate = format!("{EPOCH_FORMAT}{}", random_hex());
        let mut invocation = SCRIPTS.open.prepare_invoke();
        invocation
            .key(self.keys.epoch())
            .key(self.keys.version())
            .key(self.keys.namespaces())
            .arg(&candidate)
            .arg(if config.create { "1" } else { "0" });
        let value = self.invoke("open", None, &invocation, true).await?;
        let Value::Array(mut items) = value else {
            return Err(unexpected_reply("open"));
        };
        let status = items.first().and_then(int_of);
        let epoch = match status {
            Some(scripts::OK) if items.len() == 2 => {
                let epoch = items
                    .pop()
                    .and_then(bytes_of)
                    .ok_or_else(|| unexpected_reply("open"))?;
                match String::from_utf8(epoch) {
                    Ok(epoch) if epoch.starts_with(EPOCH_FORMAT) => epoch,
                    _ => {
                        return Err(StoreError::Incompatible {
                            reason: format!(
                                "the key {} holds data of another program or format",
                                self.keys.epoch()
                            ),
                        });
                    }
                }
            }
            Some(scripts::EPOCH_MISSING) => {
                return Err(StoreError::Corrupt {
                    key: None,
                    reason: "store data exists under this prefix but its epoch key is missing: \
                             Redis lost part of the store's data; refusing to open it"
                        .to_owned(),
                });
            }
            Some(scripts::NO_STORE) => {
                return Err(StoreError::Incompatible {
                    reason:
                        "no Dream store exists under this prefix and creating one was not allowed"
                            .to_owned(),
                });
            }
            _ => return Err(unexpected_reply("open")),
        };
        dream_tls::check_expected_epoch(config.expected_epoch.as_deref(), &epoch)?;
        Ok(epoch)
    }

    /// The store's epoch: random, written when the store was created. Remember it
    /// and pass it to [`RedisOptions::expecting_epoch`] to detect a wipe across
    /// restarts of this process too.
    pub fn epoch(&self) -> &str {
        &self.epoch
    }

    /// The key prefix (the hash tag of every key).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The underlying reconnecting connection. Commands sent on it bypass the
    /// epoch check and fencing: for benchmarks and diagnostics only.
    pub fn connection(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// Whether the server has `appendonly` on (`CONFIG GET appendonly`);
    /// `None` when the server refuses `CONFIG` (as managed services often do).
    pub async fn appendonly_enabled(&self) -> Result<Option<bool>, StoreError> {
        Ok(self
            .config_get("appendonly")
            .await?
            .map(|value| value.eq_ignore_ascii_case("yes")))
    }

    /// The server's `maxmemory-policy`; anything but `noeviction` can drop
    /// records silently. `None` when the server refuses `CONFIG`.
    pub async fn eviction_policy(&self) -> Result<Option<String>, StoreError> {
        self.config_get("maxmemory-policy").await
    }

    async fn config_get(&self, parameter: &'static str) -> Result<Option<String>, StoreError> {
        let mut conn = self.conn.clone();
        let result: Result<HashMap<String, String>, RedisError> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(parameter)
            .query_async(&mut conn)
            .await;
        match result {
            Ok(mut map) => Ok(map.remove(parameter)),
            Err(err)
                if matches!(
                    err.kind(),
                    ErrorKind::ResponseError | ErrorKind::ExtensionError
                ) && !is_transient(&err) =>
            {
                Ok(None)
            }
            Err(err) => Err(self.fail("config get", None, err)),
        }
    }

    /// Deletes every key of this store (found with `SCAN`, never `KEYS`). The
    /// epoch goes first, in a script that checks it is still this store's, so a
    /// store re-created by someone else is never destroyed by a stale handle, and
    /// processes still using this store are refused from then on.
    /// Returns how many keys were deleted.
    pub async fn destroy(self) -> Result<u64, StoreError> {
        let mut invocation = SCRIPTS.destroy.prepare_invoke();
        invocation.key(self.keys.epoch()).arg(&self.epoch);
        let reply = self.guarded("destroy", None, &invocation, false).await?;
        if reply.status != scripts::OK {
            return Err(unexpected_reply("destroy"));
        }
        let mut conn = self.conn.clone();
        let mut deleted: u64 = 1;
        let mut cursor: u64 = 0;
        loop {
            let (next, batch): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(self.keys.pattern())
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await
                .map_err(|e| self.fail("destroy", None, e))?;
            if !batch.is_empty() {
                let n: u64 = redis::cmd("UNLINK")
                    .arg(&batch)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.fail("destroy", None, e))?;
                deleted += n;
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        Ok(deleted)
    }

    fn fail(&self, op: &'static str, key: Option<&Key>, err: RedisError) -> StoreError {
        map_error(op, key, err, self.endpoint.password())
    }

    /// Runs a script. Idempotent calls (`retry`) are tried again across a
    /// reconnect; others fail at once with a retryable error.
    async fn invoke(
        &self,
        op: &'static str,
        key: Option<&Key>,
        invocation: &ScriptInvocation<'_>,
        retry: bool,
    ) -> Result<Value, StoreError> {
        let mut attempt = 1;
        loop {
            let mut conn = self.conn.clone();
            match invocation.invoke_async::<Value>(&mut conn).await {
                Ok(value) => return Ok(value),
                Err(err) if retry && attempt < READ_ATTEMPTS && is_transient(&err) => {
                    tracing::debug!(op, attempt, "Redis call failed; retrying after reconnect");
                    tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
                    attempt += 1;
                }
                Err(err) => return Err(self.fail(op, key, err)),
            }
        }
    }

    /// One page of the listing script `script` (`op`: `list` or
    /// `list_versions`): at most the page's read limit of records of `namespace`
    /// after `start_after`, `width` items each: the id, the version, then what
    /// `entry` takes from `rest` to make the entry (`list`: the value).
    #[allow(clippy::too_many_arguments)]
    async fn page_of<T: PageEntry>(
        &self,
        op: &'static str,
        script: &Script,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
        width: usize,
        entry: impl Fn(RecordId, Version, &mut std::vec::IntoIter<Value>) -> Result<T, StoreError>,
    ) -> Result<T::Page, StoreError> {
        let mut page = PageBuilder::new(limit);
        let start = match start_after {
            Some(id) => format!("({id}"),
            None => "-".to_owned(),
        };
        let mut invocation = script.prepare_invoke();
        invocation
            .key(self.keys.epoch())
            .key(self.keys.index(namespace))
            .arg(&self.epoch)
            .arg(start)
            .arg(page.read_limit())
            .arg(self.keys.record_prefix(namespace));
        let reply = self.guarded(op, None, &invocation, true).await?;
        if reply.status != scripts::OK || reply.items.len() % width != 0 {
            return Err(unexpected_reply(op));
        }
        let mut items = reply.items.into_iter();
        while let (Some(id), Some(version)) = (items.next(), items.next()) {
            let (id, version) = listed_id_version(namespace, id, &version)?;
            page.push(entry(id, version, &mut items)?);
        }
        Ok(page.finish())
    }

    async fn guarded(
        &self,
        op: &'static str,
        key: Option<&Key>,
        invocation: &ScriptInvocation<'_>,
        retry: bool,
    ) -> Result<Reply, StoreError> {
        Reply::parse(op, self.invoke(op, key, invocation, retry).await?)
    }

    /// Runs one chunk of a batch as one script.
    async fn batch_script(
        &self,
        ops: &[BatchOp],
        fence: Option<&Fence>,
    ) -> Result<Vec<BatchOutcome>, StoreError> {
        let mut invocation = SCRIPTS.batch.prepare_invoke();
        invocation
            .key(self.keys.epoch())
            .key(self.keys.version())
            .key(self.keys.namespaces());
        match fence {
            Some(fence) => invocation.key(self.keys.fence(&fence.lock)),
            None => invocation.key(self.keys.epoch()),
        };
        invocation
            .arg(&self.epoch)
            .arg(if fence.is_some() { "1" } else { "0" })
            .arg(fence.map_or(0, |f| f.token))
            .arg(ops.len());
        for op in ops {
            let key = op.key();
            invocation
                .key(self.keys.index(&key.namespace))
                .key(self.keys.record(key));
            let (pre, expected) = precondition_args(op.pre());
            let (kind, value): (&str, &[u8]) = match op {
                BatchOp::Put { value, .. } => ("put", value),
                BatchOp::Delete { .. } => ("del", b""),
            };
            invocation
                .arg(kind)
                .arg(pre)
                .arg(expected)
                .arg(value)
                .arg(key.namespace.as_str())
                .arg(key.id.as_str());
        }
        let reply = self
            .guarded("write_batch", None, &invocation, false)
            .await?;
        match reply.status {
            scripts::OK => {}
            scripts::CONFLICT => {
                let index = reply
                    .items
                    .first()
                    .and_then(int_of)
                    .and_then(|i| usize::try_from(i).ok())
                    .filter(|i| *i < ops.len())
                    .ok_or_else(|| unexpected_reply("write_batch"))?;
                return Err(StoreError::Conflict {
                    key: ops[index].key().clone(),
                    current: reply.items.get(1).and_then(version_of),
                });
            }
            scripts::LOCK_LOST => {
                return match fence {
                    Some(fence) => Err(StoreError::LockLost {
                        lock: fence.lock.clone(),
                    }),
                    None => Err(unexpected_reply("write_batch")),
                };
            }
            _ => return Err(unexpected_reply("write_batch")),
        }
        if reply.items.len() != ops.len() {
            return Err(unexpected_reply("write_batch"));
        }
        ops.iter()
            .zip(&reply.items)
            .map(|(op, item)| match op {
                BatchOp::Put { .. } => version_of(item).map(BatchOutcome::Put),
                BatchOp::Delete { .. } => match int_of(item) {
                    Some(1) => Some(BatchOutcome::Delete(true)),
                    Some(0) => Some(BatchOutcome::Delete(false)),
                    _ => None,
                },
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| unexpected_reply("write_batch"))
    }

    /// The invocation of the put script (`value` given) or the delete script for
    /// `key` under `write`, with the keys and arguments in the order the scripts
    /// read them: keys epoch, version counter (a put's), namespaces, index,
    /// record, fence (if any); arguments epoch, precondition, expected version,
    /// value (a put's), namespace, id, fence token (if any).
    fn record_write<'s>(
        &self,
        script: &'s Script,
        key: &Key,
        write: &Write,
        value: Option<&[u8]>,
    ) -> ScriptInvocation<'s> {
        let (pre, expected) = precondition_args(write.pre);
        let mut invocation = script.prepare_invoke();
        invocation.key(self.keys.epoch());
        if value.is_some() {
            invocation.key(self.keys.version());
        }
        invocation
            .key(self.keys.namespaces())
            .key(self.keys.index(&key.namespace))
            .key(self.keys.record(key));
        if let Some(fence) = &write.fence {
            invocation.key(self.keys.fence(&fence.lock));
        }
        invocation.arg(&self.epoch).arg(pre).arg(expected);
        if let Some(value) = value {
            invocation.arg(value);
        }
        invocation.arg(key.namespace.as_str()).arg(key.id.as_str());
        if let Some(fence) = &write.fence {
            invocation.arg(fence.token);
        }
        invocation
    }

    fn write_outcome(key: &Key, write: &Write, reply: &Reply) -> Result<(), StoreError> {
        match reply.status {
            scripts::OK => Ok(()),
            scripts::CONFLICT => Err(StoreError::Conflict {
                key: key.clone(),
                current: reply.items.first().and_then(version_of),
            }),
            scripts::LOCK_LOST => match &write.fence {
                Some(fence) => Err(StoreError::LockLost {
                    lock: fence.lock.clone(),
                }),
                None => Err(unexpected_reply("write")),
            },
            _ => Err(unexpected_reply("write")),
        }
    }
}

#[async_trait]
impl RecordStore for RedisStore {
    fn info(&self) -> StoreInfo {
        self.info.clone()
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        let mut invocation = SCRIPTS.get.prepare_invoke();
        invocation
            .key(self.keys.epoch())
            .key(self.keys.record(key))
            .arg(&self.epoch);
        let mut reply = self.guarded("get", Some(key), &invocation, true).await?;
        if reply.status != scripts::OK {
            return Err(unexpected_reply("get"));
        }
        match reply.items.len() {
            0 => Ok(None),
            2 => {
                let value = reply.items.pop().and_then(bytes_of);
                let version = reply.items.first().and_then(version_of);
                match (version, value) {
                    (Some(version), Some(value)) => Ok(Some(Record {
                        value: Bytes::from(value),
                        version,
                    })),
                    _ => Err(StoreError::Corrupt {
                        key: Some(key.clone()),
                        reason: "the record's version field is missing or not a number".to_owned(),
                    }),
                }
            }
            _ => Err(StoreError::Corrupt {
                key: Some(key.clone()),
                reason: "the record has a version but no value".to_owned(),
            }),
        }
    }

    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
        if value.len() > self.max_value_size {
            return Err(StoreError::TooLarge {
                size: value.len(),
                max: self.max_value_size,
            });
        }
        let invocation = self.record_write(&SCRIPTS.put, key, &write, Some(value.as_ref()));
        let reply = self.guarded("put", Some(key), &invocation, false).await?;
        Self::write_outcome(key, &write, &reply)?;
        reply
            .items
            .first()
            .and_then(version_of)
            .ok_or_else(|| unexpected_reply("put"))
    }

    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
        let invocation = self.record_write(&SCRIPTS.delete, key, &write, None);
        let reply = self
            .guarded("delete", Some(key), &invocation, false)
            .await?;
        Self::write_outcome(key, &write, &reply)?;
        match reply.items.first().and_then(int_of) {
            Some(1) => Ok(true),
            Some(0) => Ok(false),
            _ => Err(unexpected_reply("delete")),
        }
    }

    async fn list(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.page_of(
            "list",
            &SCRIPTS.list,
            namespace,
            start_after,
            limit,
            3,
            |id, version, rest| {
                let value = rest
                    .next()
                    .and_then(bytes_of)
                    .ok_or_else(|| unexpected_reply("list"))?;
                Ok(Entry {
                    id,
                    record: Record {
                        value: Bytes::from(value),
                        version,
                    },
                })
            },
        )
        .await
    }

    async fn write_batch(
        &self,
        ops: &[BatchOp],
        fence: Option<Fence>,
    ) -> Result<Vec<BatchOutcome>, StoreError> {
        check_batch(ops, self.max_value_size)?;
        let mut applied = Vec::with_capacity(ops.len());
        let mut rest = ops;
        while !rest.is_empty() {
            let mut bytes = 0usize;
            let mut len = 0;
            for op in rest {
                let size = op.value().map_or(0, Bytes::len);
                if len > 0 && bytes + size > BATCH_SCRIPT_BYTES {
                    break;
                }
                bytes += size;
                len += 1;
            }
            let (chunk, after) = rest.split_at(len);
            match self.batch_script(chunk, fence.as_ref()).await {
                Ok(outcomes) => applied.extend(outcomes),
                Err(source) if applied.is_empty() => return Err(source),
                Err(source) => {
                    return Err(StoreError::PartialBatch {
                        applied,
                        source: Box::new(source),
                    });
                }
            }
            rest = after;
        }
        Ok(applied)
    }

    async fn compact(&self) -> Result<(), StoreError> {
        // A deleted key leaves the server's memory at once; what the server's own
        // AOF and RDB files keep is the server's to compact, not this store's.
        Ok(())
    }

    /// Every write script publishes on the store's channel, and a dedicated
    /// pub/sub connection (reconnecting on its own, counting a reconnect as a
    /// change) listens until every receiver is dropped. Messages carry nothing.
    async fn watch_changes(&self) -> Result<Option<Changes>, StoreError> {
        let channel = self.keys.changes();
        let pubsub = subscribe(&self.client, &channel)
            .await
            .map_err(|e| self.fail("watch", None, e))?;
        let (tx, rx) = watch::channel(0);
        tokio::spawn(listen(self.client.clone(), channel, pubsub, tx));
        Ok(Some(rx))
    }

    async fn list_versions(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<VersionPage, StoreError> {
        self.page_of(
            "list_versions",
            &SCRIPTS.list_versions,
            namespace,
            start_after,
            limit,
            2,
            |id, version, _| Ok(VersionEntry { id, version }),
        )
        .await
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        let mut invocation = SCRIPTS.namespaces.prepare_invoke();
        invocation
            .key(self.keys.epoch())
            .key(self.keys.namespaces())
            .arg(&self.epoch);
        let reply = self.guarded("namespaces", None, &invocation, true).await?;
        if reply.status != scripts::OK {
            return Err(unexpected_reply("namespaces"));
        }
        let mut out = reply
            .items
            .into_iter()
            .map(|item| {
                text_of(item)
                    .and_then(|name| Namespace::new(name).ok())
                    .ok_or_else(|| StoreError::Corrupt {
                        key: None,
                        reason: "the namespace set holds an invalid namespace".to_owned(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        out.sort();
        out.dedup();
        Ok(out)
    }

    async fn try_lease(&self, lock: &LockName, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        let holder = random_hex();
        let mut invocation = SCRIPTS.acquire.prepare_invoke();
        invocation
            .key(self.keys.epoch())
            .key(self.keys.lease(lock))
            .key(self.keys.fence(lock))
            .arg(&self.epoch)
            .arg(&holder)
            .arg(ttl_millis(ttl));
        let reply = self.guarded("try_lease", None, &invocation, false).await?;
        if reply.status != scripts::OK {
            return Err(unexpected_reply("try_lease"));
        }
        match reply.items.first() {
            None => Ok(None),
            Some(token) => {
                let token = int_of(token)
                    .and_then(|t| u64::try_from(t).ok())
                    .ok_or_else(|| unexpected_reply("try_lease"))?;
                Ok(Some(Lease::new(lock.clone(), token, holder)))
            }
        }
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        let mut invocation = SCRIPTS.renew.prepare_invoke();
        invocation
            .key(self.keys.epoch())
            .key(self.keys.lease(lease.lock()))
            .key(self.keys.fence(lease.lock()))
            .arg(&self.epoch)
            .arg(lease.holder())
            .arg(ttl_millis(ttl))
            .arg(lease.token());
        // Compare-and-PEXPIRE is idempotent, so it may be retried across a reconnect.
        let reply = self.guarded("renew", None, &invocation, true).await?;
        match (reply.status, reply.items.first().and_then(int_of)) {
            (scripts::OK, Some(1)) => Ok(lease.clone()),
            (scripts::OK, Some(0)) => Err(StoreError::LockLost {
                lock: lease.lock().clone(),
            }),
            _ => Err(unexpected_reply("renew")),
        }
    }

    async fn release(&self, lease: Lease) -> Result<bool, StoreError> {
        let mut invocation = SCRIPTS.release.prepare_invoke();
        invocation
            .key(self.keys.epoch())
            .key(self.keys.lease(lease.lock()))
            .arg(&self.epoch)
            .arg(lease.holder());
        let reply = self.guarded("release", None, &invocation, false).await?;
        match (reply.status, reply.items.first().and_then(int_of)) {
            (scripts::OK, Some(1)) => Ok(true),
            (scripts::OK, Some(0)) => Ok(false),
            _ => Err(unexpected_reply("release")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_are_whole_milliseconds_within_bounds() {
        assert_eq!(ttl_millis(Duration::ZERO), 1);
        assert_eq!(ttl_millis(Duration::from_micros(300)), 1);
        assert_eq!(ttl_millis(Duration::from_millis(1500)), 1500);
        assert_eq!(ttl_millis(Duration::MAX), MAX_LEASE_TTL.as_millis() as u64);
    }

    #[test]
    fn versions_must_be_positive_integers() {
        assert_eq!(version_of(&Value::Int(7)), Some(Version(7)));
        assert_eq!(
            version_of(&Value::BulkString(b"42".to_vec())),
            Some(Version(42))
        );
        for bad in [
            Value::Int(0),
            Value::Int(-1),
            Value::BulkString(b"".to_vec()),
            Value::BulkString(b"4x".to_vec()),
            Value::Nil,
        ] {
            assert_eq!(version_of(&bad), None, "{bad:?}");
        }
    }
}
