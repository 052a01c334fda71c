//! The store contract. Backends store bytes, not memories: the engine encodes
//! memories (Markdown) and everything else (JSON) into records, so a custom
//! adapter stays small and a layer such as encryption wraps any backend.
//!
//! Semantics every backend must meet (each is a rule of `dream-conformance`):
//! - `Matches` on a missing key → `Conflict`; `Absent` on a present key → `Conflict`;
//! - delete with `Any` of a missing key → `Ok(false)`;
//! - put, delete, put, then `Matches(first)` → `Conflict` (no ABA): versions come
//!   from a store-wide counter and are never reused, not after a delete or a crash;
//! - a write whose fence is not the lock's newest lease → `LockLost`, checked
//!   atomically with the write;
//! - renew after expiry → `LockLost`, even if nobody took the lock;
//! - a value over `max_value_size` → `TooLarge`, nothing written;
//! - ids differing only in case are distinct;
//! - absence is `Ok(None)` / `Ok(false)`, never an error;
//! - `Display` of an error never shows a value or a password.
//!
//! Batches ([`RecordStore::write_batch`]): puts and deletes under one fence, each
//! with its own precondition, checked against the state before the batch:
//! - more than [`MAX_BATCH_OPS`] operations, or two operations on one key →
//!   `InvalidBatch`; a value over `max_value_size` → `TooLarge`; nothing written;
//! - an empty batch is `Ok(vec![])` and touches nothing;
//! - a failed precondition → `Conflict`, a lost fence → `LockLost`, and when the
//!   batch's values total at most [`Capabilities::atomic_batch_bytes`] nothing is
//!   written: the batch is all or nothing, a crash included
//!   ([`Capabilities::is_atomic`]);
//! - a larger batch (or any batch, on a store whose limit is 0) still writes every
//!   operation whole (never a torn record), and a failure after some operations
//!   were applied is [`StoreError::PartialBatch`], naming the applied prefix; any
//!   other error means nothing was written;
//! - versions increase in the batch's order, above every earlier version.
//!
//! Listing versions ([`RecordStore::list_versions`]) pages like `list`, without the
//! values: the same ids, in the same order, with the versions `list` reports.
//! Every backend cuts its pages with one [`PageBuilder`]: it reads one candidate
//! past the page, and the page's cursor is its last id when that one exists.
//!
//! Change notices ([`RecordStore::watch_changes`]):
//! - a store that hears every process's writes ([`Capabilities::notifies`])
//!   returns `Some`: a counter that moves soon (within seconds) after any put,
//!   delete or batch, from any handle or process; one that cannot returns `None`,
//!   and its readers poll;
//! - a move says only "look again": it carries nothing, and may come without a
//!   write (a reconnect counts as one).

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use crate::id::{LockName, Namespace, RecordId};

/// Default cap on one value: 16 MiB.
pub const DEFAULT_MAX_VALUE_SIZE: usize = 16 * 1024 * 1024;

/// Largest page `list` returns; larger limits are clamped to it.
pub const MAX_LIST_LIMIT: usize = 1000;

/// Most operations one [`RecordStore::write_batch`] accepts; more is `InvalidBatch`.
pub const MAX_BATCH_OPS: usize = 1000;

/// Clamps a `list` limit into `1..=MAX_LIST_LIMIT`.
pub fn clamp_list_limit(limit: usize) -> usize {
    limit.clamp(1, MAX_LIST_LIMIT)
}

/// Where a record lives.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// Its namespace.
    pub namespace: Namespace,
    /// Its id inside the namespace.
    pub id: RecordId,
}

impl Key {
    /// A key from a namespace and an id.
    pub fn new(namespace: Namespace, id: RecordId) -> Self {
        Key { namespace, id }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.id)
    }
}

/// A record's version, from a store-wide counter; never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u64);

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// What must hold for a write to happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Write whatever is there.
    Any,
    /// Write only if the key is absent.
    Absent,
    /// Write only if the key is present at exactly this version.
    Matches(Version),
}

impl Precondition {
    /// Checks this precondition against the record's `current` version (`None`
    /// when absent): `Conflict` naming `key` and `current` when it does not hold.
    /// Every store calls this one check, custom adapters included.
    pub fn check(self, key: &Key, current: Option<Version>) -> Result<(), StoreError> {
        let ok = match self {
            Precondition::Any => true,
            Precondition::Absent => current.is_none(),
            Precondition::Matches(v) => current == Some(v),
        };
        if ok {
            Ok(())
        } else {
            Err(StoreError::Conflict {
                key: key.clone(),
                current,
            })
        }
    }
}

/// Proof of holding a lease: the lock's name and the token its lease was issued with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fence {
    /// The lock.
    pub lock: LockName,
    /// The lease's token; strictly increases per lock.
    pub token: u64,
}

/// How a write is guarded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The precondition on the record's current version.
    pub pre: Precondition,
    /// If set, the write happens only while this fence is the lock's newest.
    pub fence: Option<Fence>,
}

impl Write {
    /// Unconditional, unfenced.
    pub fn any() -> Self {
        Write {
            pre: Precondition::Any,
            fence: None,
        }
    }

    /// Only if absent.
    pub fn absent() -> Self {
        Write {
            pre: Precondition::Absent,
            fence: None,
        }
    }

    /// Only if present at `version`.
    pub fn matches(version: Version) -> Self {
        Write {
            pre: Precondition::Matches(version),
            fence: None,
        }
    }

    /// The same write, carrying `fence`.
    pub fn fenced(mut self, fence: Fence) -> Self {
        self.fence = Some(fence);
        self
    }
}

/// A stored value and its version.
#[derive(Clone, PartialEq, Eq)]
pub struct Record {
    /// The bytes.
    pub value: Bytes,
    /// The version the bytes were written at.
    pub version: Version,
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Record")
            .field("value", &format_args!("<{} bytes>", self.value.len()))
            .field("version", &self.version)
            .finish()
    }
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The record's id.
    pub id: RecordId,
    /// The record.
    pub record: Record,
}

/// One page of a listing, sorted by id bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page {
    /// The entries, sorted by id bytes.
    pub entries: Vec<Entry>,
    /// Pass as `start_after` to get the next page; `None` when this page reached the end.
    pub next: Option<RecordId>,
}

/// One entry of a versions listing: an id and its record's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionEntry {
    /// The record's id.
    pub id: RecordId,
    /// The record's current version.
    pub version: Version,
}

/// One page of a versions listing, sorted by id bytes, paged like [`Page`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VersionPage {
    /// The entries, sorted by id bytes.
    pub entries: Vec<VersionEntry>,
    /// Pass as `start_after` to get the next page; `None` when this page reached the end.
    pub next: Option<RecordId>,
}

/// An entry of a listing page: [`Entry`] of a [`Page`], [`VersionEntry`] of a
/// [`VersionPage`].
pub trait PageEntry: Sized {
    /// The page this entry is listed in.
    type Page;
    /// The record's id, the cursor when this entry ends a page.
    fn id(&self) -> &RecordId;
    /// The page of `entries` whose cursor is `next`.
    fn page(entries: Vec<Self>, next: Option<RecordId>) -> Self::Page;
}

impl PageEntry for Entry {
    type Page = Page;
    fn id(&self) -> &RecordId {
        &self.id
    }
    fn page(entries: Vec<Self>, next: Option<RecordId>) -> Page {
        Page { entries, next }
    }
}

impl PageEntry for VersionEntry {
    type Page = VersionPage;
    fn id(&self) -> &RecordId {
        &self.id
    }
    fn page(entries: Vec<Self>, next: Option<RecordId>) -> VersionPage {
        VersionPage { entries, next }
    }
}

/// One page of `list` or `list_versions` being filled, the one way every backend
/// pages. The backend reads candidates in id order after the cursor, at most
/// [`PageBuilder::read_limit`] of them: the page's limit and one more. That one
/// more is never listed; that it exists says another page follows, and the
/// page's cursor is then the id of its last entry.
///
/// A backend that turns every row it read into an entry pushes them all (a push
/// onto a full page keeps nothing and notes the next page). One that stops
/// reading once the page is full (a file per record, a byte budget) calls
/// [`PageBuilder::set_more`] when a candidate is left.
#[derive(Debug)]
pub struct PageBuilder<T> {
    limit: usize,
    entries: Vec<T>,
    more: bool,
}

impl<T: PageEntry> PageBuilder<T> {
    /// An empty page of at most `limit` entries, clamped to `1..=MAX_LIST_LIMIT`.
    pub fn new(limit: usize) -> Self {
        PageBuilder {
            limit: clamp_list_limit(limit),
            entries: Vec::new(),
            more: false,
        }
    }

    /// How many candidates to read: the page's limit and one more.
    pub fn read_limit(&self) -> usize {
        self.limit + 1
    }

    /// Whether the page holds its limit of entries.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.limit
    }

    /// Adds the next entry in id order; on a full page it only notes that another
    /// page follows.
    pub fn push(&mut self, entry: T) {
        if self.is_full() {
            self.more = true;
        } else {
            self.entries.push(entry);
        }
    }

    /// Notes that a candidate was left unread after the page: another page follows.
    pub fn set_more(&mut self) {
        self.more = true;
    }

    /// The page, its cursor the last entry's id when another page follows.
    pub fn finish(self) -> T::Page {
        let next = if self.more {
            self.entries.last().map(|entry| entry.id().clone())
        } else {
            None
        };
        T::page(self.entries, next)
    }
}

/// One operation of a batch.
#[derive(Clone, PartialEq, Eq)]
pub enum BatchOp {
    /// Writes `value` at `key` if `pre` holds.
    Put {
        /// The record.
        key: Key,
        /// The bytes.
        value: Bytes,
        /// What must hold before the batch.
        pre: Precondition,
    },
    /// Deletes `key` if `pre` holds.
    Delete {
        /// The record.
        key: Key,
        /// What must hold before the batch.
        pre: Precondition,
    },
}

impl BatchOp {
    /// A put.
    pub fn put(key: Key, value: impl Into<Bytes>, pre: Precondition) -> Self {
        BatchOp::Put {
            key,
            value: value.into(),
            pre,
        }
    }

    /// A delete.
    pub fn delete(key: Key, pre: Precondition) -> Self {
        BatchOp::Delete { key, pre }
    }

    /// The record the operation writes.
    pub fn key(&self) -> &Key {
        match self {
            BatchOp::Put { key, .. } | BatchOp::Delete { key, .. } => key,
        }
    }

    /// The operation's precondition.
    pub fn pre(&self) -> Precondition {
        match self {
            BatchOp::Put { pre, .. } | BatchOp::Delete { pre, .. } => *pre,
        }
    }

    /// The value of a put.
    pub fn value(&self) -> Option<&Bytes> {
        match self {
            BatchOp::Put { value, .. } => Some(value),
            BatchOp::Delete { .. } => None,
        }
    }
}

impl fmt::Debug for BatchOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchOp::Put { key, value, pre } => f
                .debug_struct("Put")
                .field("key", key)
                .field("value", &format_args!("<{} bytes>", value.len()))
                .field("pre", pre)
                .finish(),
            BatchOp::Delete { key, pre } => f
                .debug_struct("Delete")
                .field("key", key)
                .field("pre", pre)
                .finish(),
        }
    }
}

/// What one applied operation of a batch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOutcome {
    /// The put's new version.
    Put(Version),
    /// Whether the delete removed a record (`false`: it was absent).
    Delete(bool),
}

/// The checks every store makes before a batch touches anything: at most
/// [`MAX_BATCH_OPS`] operations (`InvalidBatch`), every value within `max_value_size`
/// (`TooLarge`), no key twice (`InvalidBatch`).
pub fn check_batch(ops: &[BatchOp], max_value_size: usize) -> Result<(), StoreError> {
    if ops.len() > MAX_BATCH_OPS {
        return Err(StoreError::InvalidBatch {
            reason: format!(
                "{} operations is over the limit of {MAX_BATCH_OPS}",
                ops.len()
            ),
        });
    }
    for op in ops {
        if let Some(value) = op.value()
            && value.len() > max_value_size
        {
            return Err(StoreError::TooLarge {
                size: value.len(),
                max: max_value_size,
            });
        }
    }
    let mut seen = std::collections::HashSet::with_capacity(ops.len());
    for op in ops {
        if !seen.insert(op.key()) {
            return Err(StoreError::InvalidBatch {
                reason: format!("key {} appears more than once", op.key()),
            });
        }
    }
    Ok(())
}

/// A held lease on a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    lock: LockName,
    token: u64,
    holder: String,
}

impl Lease {
    /// A lease on `lock` with fence `token`; `holder` is the store's random proof of
    /// ownership used by renew and release.
    pub fn new(lock: LockName, token: u64, holder: String) -> Self {
        Lease {
            lock,
            token,
            holder,
        }
    }

    /// The lock.
    pub fn lock(&self) -> &LockName {
        &self.lock
    }

    /// The fence token this lease was issued with.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The holder's random identity.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// The fence to attach to writes made under this lease.
    pub fn fence(&self) -> Fence {
        Fence {
            lock: self.lock.clone(),
            token: self.token,
        }
    }
}

/// What a store can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Several processes may share it safely.
    pub cross_process: bool,
    /// `try_lease`, `renew` and `release` work.
    pub leases: bool,
    /// Writes may carry fences.
    pub fenced_writes: bool,
    /// Acknowledged writes survive a crash.
    pub durable: bool,
    /// Largest value accepted, in bytes.
    pub max_value_size: usize,
    /// A `write_batch` whose values total at most this many bytes is all or
    /// nothing, a crash included: a failed one wrote nothing. 0: no batch is;
    /// `usize::MAX`: every batch is. Beyond it each operation is still whole, and
    /// a failure after some were applied is `PartialBatch`.
    pub atomic_batch_bytes: usize,
    /// [`RecordStore::watch_changes`] returns `Some`: the store hears every
    /// process's writes.
    pub notifies: bool,
}

impl Capabilities {
    /// Whether `write_batch(ops)` is all or nothing on this store: its values
    /// total at most [`Capabilities::atomic_batch_bytes`].
    pub fn is_atomic(&self, ops: &[BatchOp]) -> bool {
        self.atomic_batch_bytes > 0 && batch_value_bytes(ops) <= self.atomic_batch_bytes
    }
}

/// The bytes of a batch's values (a delete has none).
pub fn batch_value_bytes(ops: &[BatchOp]) -> usize {
    ops.iter().map(|op| op.value().map_or(0, Bytes::len)).sum()
}

/// A store's name and capabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreInfo {
    /// Short backend name (`fs`, `sqlite`, `redis`, `encrypted(fs)`).
    pub name: String,
    /// What it can do.
    pub capabilities: Capabilities,
}

/// Early notice of changes to a store (see [`RecordStore::watch_changes`]): a
/// counter that moves after writes; its value means nothing, only that it moved.
pub type Changes = tokio::sync::watch::Receiver<u64>;

/// A store failure. `Display` never shows a value or a password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The precondition did not hold.
    #[error("conflict on {key}: {}", match .current { Some(v) => format!("current version is {v}"), None => "the record is absent".to_owned() })]
    Conflict {
        /// The record.
        key: Key,
        /// Its current version, if present.
        current: Option<Version>,
    },
    /// The fence is not the lock's newest lease, or the lease expired.
    #[error("lease on lock {lock} was lost")]
    LockLost {
        /// The lock.
        lock: LockName,
    },
    /// The store lacks the capability.
    #[error("operation not supported by this store: {op}")]
    Unsupported {
        /// The operation.
        op: &'static str,
    },
    /// The key is not acceptable to this store.
    #[error("invalid key {key}: {reason}")]
    InvalidKey {
        /// The key.
        key: Key,
        /// Why.
        reason: String,
    },
    /// The value is over the store's cap; nothing was written.
    #[error("value of {size} bytes is over this store's limit of {max} bytes")]
    TooLarge {
        /// The value's size.
        size: usize,
        /// The cap.
        max: usize,
    },
    /// The batch is not acceptable (too many operations, a key twice); nothing was written.
    #[error("invalid batch: {reason}")]
    InvalidBatch {
        /// Why.
        reason: String,
    },
    /// A batch on a store without atomic batches failed after its first
    /// `applied.len()` operations were applied (whole and durable as the store
    /// promises); the operation after them failed with `source`, and no later one
    /// was applied.
    #[error("batch stopped after {} operations were applied: {source}", .applied.len())]
    PartialBatch {
        /// The outcomes of the operations applied, in the batch's order.
        applied: Vec<BatchOutcome>,
        /// Why the next operation failed.
        source: Box<StoreError>,
    },
    /// Stored data failed an integrity check.
    #[error("corrupt record{}: {reason}", match .key { Some(k) => format!(" {k}"), None => String::new() })]
    Corrupt {
        /// The record, when one is concerned.
        key: Option<Key>,
        /// What failed.
        reason: String,
    },
    /// The store was made by another (e.g. newer) format or holds foreign data.
    #[error("incompatible store: {reason}")]
    Incompatible {
        /// Why.
        reason: String,
    },
    /// The backend failed.
    #[error("backend error{}: {source}", if *.retryable { " (retryable)" } else { "" })]
    Backend {
        /// Whether retrying may succeed.
        retryable: bool,
        /// The cause; must not carry values or passwords.
        source: Box<dyn StdError + Send + Sync>,
    },
}

impl StoreError {
    /// A backend failure.
    pub fn backend(retryable: bool, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        StoreError::Backend {
            retryable,
            source: source.into(),
        }
    }

    /// Whether retrying the operation may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StoreError::Backend {
                retryable: true,
                ..
            }
        )
    }
}

/// A place to keep records. Dyn-compatible; no default methods, so a wrapper that
/// forgets to forward a method does not compile.
#[async_trait]
pub trait RecordStore: Send + Sync + fmt::Debug + 'static {
    /// Name and capabilities.
    fn info(&self) -> StoreInfo;
    /// Reads a record; `Ok(None)` when absent.
    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError>;
    /// Writes a record if `write` holds; returns the new version.
    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError>;
    /// Deletes a record if `write` holds; `Ok(false)` when it was absent.
    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError>;
    /// Lists a namespace by id bytes, after `start_after`, at most `limit` entries
    /// (clamped to `1..=MAX_LIST_LIMIT`).
    async fn list(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError>;
    /// Every namespace holding at least one record.
    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError>;
    /// Takes the lock for `ttl` if free or expired; `Ok(None)` while another holds it.
    async fn try_lease(&self, lock: &LockName, ttl: Duration) -> Result<Option<Lease>, StoreError>;
    /// Extends a held lease, keeping its fence; `LockLost` once it expired or was taken.
    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError>;
    /// Gives the lock up; `false` when the lease had already been lost.
    async fn release(&self, lease: Lease) -> Result<bool, StoreError>;
    /// Applies puts and deletes under one optional fence, each with its own
    /// precondition (checked against the state before the batch), made durable
    /// together. Returns one outcome per operation, in order. See the module
    /// documentation for the rules ([`check_batch`] makes the up-front checks).
    async fn write_batch(
        &self,
        ops: &[BatchOp],
        fence: Option<Fence>,
    ) -> Result<Vec<BatchOutcome>, StoreError>;
    /// Lists a namespace's ids and versions without the values, paged like
    /// `list` (by id bytes, after `start_after`, `limit` clamped to
    /// `1..=MAX_LIST_LIMIT`).
    async fn list_versions(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<VersionPage, StoreError>;
    /// Reclaims the space of deleted and overwritten values, so that, as far as
    /// the backend can promise, their bytes no longer sit in the store's own files
    /// (SQLite: WAL checkpoint and `VACUUM`; PostgreSQL: `VACUUM`). Every live
    /// record keeps its value and version. A backend with nothing to reclaim
    /// returns `Ok(())`.
    async fn compact(&self) -> Result<(), StoreError>;
    /// Early notice of writes by any process, on a store that hears them
    /// ([`Capabilities::notifies`]); `Ok(None)` on one that cannot, whose
    /// readers poll. The notice lasts until every receiver is dropped.
    async fn watch_changes(&self) -> Result<Option<Changes>, StoreError>;
}

macro_rules! forward_store {
    ($($ptr:ident)::+) => {
        #[async_trait]
        impl<T: RecordStore + ?Sized> RecordStore for $($ptr)::+<T> {
            fn info(&self) -> StoreInfo {
                (**self).info()
            }
            async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
                (**self).get(key).await
            }
            async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
                (**self).put(key, value, write).await
            }
            async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
                (**self).delete(key, write).await
            }
            async fn list(&self, namespace: &Namespace, start_after: Option<&RecordId>, limit: usize) -> Result<Page, StoreError> {
                (**self).list(namespace, start_after, limit).await
            }
            async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
                (**self).namespaces().await
            }
            async fn try_lease(&self, lock: &LockName, ttl: Duration) -> Result<Option<Lease>, StoreError> {
                (**self).try_lease(lock, ttl).await
            }
            async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
                (**self).renew(lease, ttl).await
            }
            async fn release(&self, lease: Lease) -> Result<bool, StoreError> {
                (**self).release(lease).await
            }
            async fn write_batch(&self, ops: &[BatchOp], fence: Option<Fence>) -> Result<Vec<BatchOutcome>, StoreError> {
                (**self).write_batch(ops, fence).await
            }
            async fn list_versions(&self, namespace: &Namespace, start_after: Option<&RecordId>, limit: usize) -> Result<VersionPage, StoreError> {
                (**self).list_versions(namespace, start_after, limit).await
            }
            async fn compact(&self) -> Result<(), StoreError> {
                (**self).compact().await
            }
            async fn watch_changes(&self) -> Result<Option<Changes>, StoreError> {
                (**self).watch_changes().await
            }
        }
    };
}

forward_store!(std::sync::Arc);
forward_store!(std::boxed::Box);
