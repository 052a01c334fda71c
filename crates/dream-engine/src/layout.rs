//! Where the engine keeps what, in any [`RecordStore`].
//!
//! | namespace    | id                                  | value |
//! |--------------|-------------------------------------|-------|
//! | `memories`   | the memory id                       | `render_memory` Markdown |
//! | `sessions`   | time-ordered session id             | JSON [`SessionRecord`](crate::records::SessionRecord) |
//! | `quarantine` | time-ordered                        | JSON, secrets redacted |
//! | `trash`      | time-ordered                        | JSON with the memory's Markdown |
//! | `history`    | `<memory key>-<time-ordered>`       | JSON with a prior version's Markdown |
//! | `audit`      | time-ordered                        | JSON, rule ids and hashes only |
//! | `plans`      | time-ordered                        | JSON dry-run plans |
//! | `state`      | `generation`, `success-<scope key>`, `vectors` | ASCII decimal; JSON; the nonce of the last vector backfill |
//! | `journal`    | `current`, `purge`                  | JSON journal of the apply in flight; the scope purge in flight |
//! | `feed`       | the entry number, 20 digits         | JSON [`FeedEntry`](crate::FeedEntry): ids, never text |
//! | `recall`     | `manifest`, `<lineage>-<generation>-<n>` | the persisted recall index: JSON manifest, binary chunks |
//! | `vectors`    | the memory id                       | the memory's vector: JSON header line, little-endian `f32`s (see `vectors`) |
//!
//! `state/generation` is an ASCII decimal `u64` bumped by every memory mutation.
//! Every mutation is made under the lease on lock `dream`, each write fenced.
//! `recall` is derived from `memories` (see `recall::persist`): written under the
//! same lease, ignored when stale, and removed with every `forget --purge`.
//! `vectors` is derived from `memories` too, but written outside the lease by a
//! backfill (an embedder call never holds the lease); every purge removes it.

use std::future::Future;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use dream_core::store::{MAX_LIST_LIMIT, VersionEntry};
use dream_core::{Entry, Key, LockName, Namespace, Record, RecordId, RecordStore, Scope};
use sha2::{Digest, Sha256};

use crate::error::{DreamError, Result};

/// Memories, as Markdown.
pub const MEMORIES: &str = "memories";
/// Logged sessions.
pub const SESSIONS: &str = "sessions";
/// What the write gate refused to store as a memory.
pub const QUARANTINE: &str = "quarantine";
/// Forgotten and pruned memories, restorable for a while.
pub const TRASH: &str = "trash";
/// Prior versions of memories.
pub const HISTORY: &str = "history";
/// The audit log.
pub const AUDIT: &str = "audit";
/// Dry-run plans.
pub const PLANS: &str = "plans";
/// Generation and success stamps.
pub const STATE: &str = "state";
/// The journal of the apply in flight.
pub const JOURNAL: &str = "journal";
/// The change feed (see [`crate::Subscription`]).
pub const FEED: &str = "feed";
/// The persisted recall index (derived from `memories`; rebuilt when absent).
pub(crate) const RECALL: &str = "recall";
/// Memory vectors (derived from `memories`; backfilled when absent or stale).
pub const VECTORS: &str = "vectors";
/// Id of the record in `state` a vector backfill changes (a nonce).
const VECTOR_STAMP: &str = "vectors";
/// Id of the generation record in `state`.
pub const GENERATION: &str = "generation";
/// Id of the journal record in `journal`.
const CURRENT_JOURNAL: &str = "current";
/// Id of the record of a scope purge in flight in `journal`.
const PURGE_JOURNAL: &str = "purge";
/// The lock every memory mutation holds.
const DREAM_LOCK: &str = "dream";

/// How a scope purge finds a namespace's records of one scope
/// (`crates/dream-engine/src/purge.rs` walks [`NAMESPACES`] by this).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeOf {
    /// Markdown memories: the scope in their frontmatter.
    Memory,
    /// JSON records with a top-level `scope` field.
    JsonField,
    /// JSON records holding a memory's Markdown in `markdown`: that memory's scope.
    JsonMarkdown,
    /// Records whose id ends with the scope's [`short_hash`] (`success-<hash>`).
    IdHash,
    /// State derived from the other records and rebuilt from them on use: a purge
    /// clears the whole namespace.
    Derived,
    /// Never removed: the audit log and the change feed, which hold ids, rule ids
    /// and hashes only.
    Kept,
    /// The journal: rolled forward under the lease before a purge starts, and
    /// home of the record of a scope purge in flight.
    Journal,
}

/// Every namespace the engine writes, with how a scope purge treats it. A
/// namespace added to the layout must be declared here ([`namespace`] refuses
/// an undeclared one in debug builds), so a scope purge covers it.
pub const NAMESPACES: &[(&str, ScopeOf)] = &[
    (MEMORIES, ScopeOf::Memory),
    (SESSIONS, ScopeOf::JsonField),
    (QUARANTINE, ScopeOf::JsonField),
    (TRASH, ScopeOf::JsonField),
    (HISTORY, ScopeOf::JsonMarkdown),
    (AUDIT, ScopeOf::Kept),
    (PLANS, ScopeOf::JsonField),
    (STATE, ScopeOf::IdHash),
    (JOURNAL, ScopeOf::Journal),
    (FEED, ScopeOf::Kept),
    (RECALL, ScopeOf::Derived),
    (VECTORS, ScopeOf::Derived),
];

/// How a scope purge treats `name`, if the layout declares it.
pub fn scope_of(name: &str) -> Option<ScopeOf> {
    NAMESPACES
        .iter()
        .find(|(ns, _)| *ns == name)
        .map(|(_, how)| *how)
}

/// A namespace from one of the constants above (declared in [`NAMESPACES`]).
pub fn namespace(name: &'static str) -> Namespace {
    debug_assert!(
        scope_of(name).is_some(),
        "namespace {name} is not declared in layout::NAMESPACES"
    );
    Namespace::new(name).expect("layout names are valid namespaces")
}

/// A key in one of the namespaces above.
pub fn key(ns: &'static str, id: impl Into<RecordId>) -> Key {
    Key::new(namespace(ns), id.into())
}

/// A key whose id is a constant of this module.
pub(crate) fn fixed_key(ns: &'static str, id: &'static str) -> Key {
    Key::new(
        namespace(ns),
        RecordId::new(id).expect("layout ids are valid"),
    )
}

/// The generation record.
pub fn generation_key() -> Key {
    fixed_key(STATE, GENERATION)
}

/// The record a vector backfill changes, so recall reloads its vectors.
pub(crate) fn vector_stamp_key() -> Key {
    fixed_key(STATE, VECTOR_STAMP)
}

/// Reads the generation: `(value, record)`, `(0, None)` when absent. A record
/// that is not an ASCII decimal is [`DreamError::Corrupt`] for every reader — the
/// engine and recall alike: nothing guesses a generation, so nothing can trust a
/// view (or a persisted index) keyed by a guessed one.
pub(crate) async fn read_generation(store: &dyn RecordStore) -> Result<(u64, Option<Record>)> {
    let key = generation_key();
    match store.get(&key).await? {
        None => Ok((0, None)),
        Some(record) => {
            let value = std::str::from_utf8(&record.value)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .ok_or_else(|| DreamError::corrupt(&key, "not an ASCII decimal number"))?;
            Ok((value, Some(record)))
        }
    }
}

/// Every item of a namespace, page by page (`page(after)` fetches one page and
/// its cursor), stopping once more than `max` items are read: a result longer
/// than `max` means the namespace holds more.
async fn all_pages<T, F, Fut>(mut page: F, max: usize) -> Result<Vec<T>>
where
    F: FnMut(Option<RecordId>) -> Fut,
    Fut: Future<Output = std::result::Result<(Vec<T>, Option<RecordId>), dream_core::StoreError>>,
{
    let mut out = Vec::new();
    let mut after: Option<RecordId> = None;
    loop {
        let (items, next) = page(after.take()).await?;
        out.extend(items);
        match next {
            Some(next) if out.len() <= max => after = Some(next),
            _ => return Ok(out),
        }
    }
}

/// Every entry (id, value, version) of `ns`, sorted by id; more than `max`
/// entries when the namespace holds more than `max`.
pub(crate) async fn list_all(
    store: &dyn RecordStore,
    ns: &'static str,
    max: usize,
) -> Result<Vec<Entry>> {
    let ns = namespace(ns);
    all_pages(
        |after| {
            let ns = &ns;
            async move {
                let page = store.list(ns, after.as_ref(), MAX_LIST_LIMIT).await?;
                Ok((page.entries, page.next))
            }
        },
        max,
    )
    .await
}

/// Every id and version of `ns` without the values, sorted by id; more than
/// `max` entries when the namespace holds more than `max`.
pub(crate) async fn list_versions_all(
    store: &dyn RecordStore,
    ns: &'static str,
    max: usize,
) -> Result<Vec<VersionEntry>> {
    let ns = namespace(ns);
    all_pages(
        |after| {
            let ns = &ns;
            async move {
                let page = store
                    .list_versions(ns, after.as_ref(), MAX_LIST_LIMIT)
                    .await?;
                Ok((page.entries, page.next))
            }
        },
        max,
    )
    .await
}

/// The journal record.
pub fn journal_key() -> Key {
    fixed_key(JOURNAL, CURRENT_JOURNAL)
}

/// The record of a scope purge in flight.
pub fn purge_key() -> Key {
    fixed_key(JOURNAL, PURGE_JOURNAL)
}

/// The store lock.
pub fn dream_lock() -> LockName {
    LockName::new(DREAM_LOCK).expect("valid lock name")
}

/// A short stable key for a scope (or any id): 16 hex digits of its SHA-256.
pub fn short_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    hex::encode(&digest[..8])
}

/// The claim lock of a scope: a pass holds it around its model call.
pub fn claim_lock(scope: &Scope) -> LockName {
    LockName::new(format!("dream-claim-{}", short_hash(scope.as_str()))).expect("valid lock name")
}

/// Who holds the claim of a scope (see `claim`), beside its success stamp.
pub(crate) fn claim_note_key(scope: &Scope) -> Key {
    Key::new(
        namespace(STATE),
        RecordId::new(format!("claim-{}", short_hash(scope.as_str()))).expect("valid id"),
    )
}

/// The logging lock of a scope: a logger holds it around the pending-bound check
/// (and, for a transcript part, the check that the part is new) and the write
/// that logs the session. (Its name predates plain sessions taking it.)
pub(crate) fn log_lock(scope: &Scope) -> LockName {
    LockName::new(format!("dream-import-{}", short_hash(scope.as_str()))).expect("valid lock name")
}

/// The success stamp of a scope.
pub(crate) fn success_key(scope: &Scope) -> Key {
    Key::new(
        namespace(STATE),
        RecordId::new(format!("success-{}", short_hash(scope.as_str()))).expect("valid id"),
    )
}

/// The prefix every history id of `memory` starts with.
pub(crate) fn history_prefix(memory: &str) -> String {
    format!("{}-", short_hash(memory))
}

/// SHA-256 of bytes, in hex: what audit records and events carry instead of text.
pub fn hash_bytes(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Monotonic time-ordered ids (ULIDs): ids made later by this generator sort after
/// earlier ones even when the clock stands still or steps back.
#[derive(Debug, Default)]
pub(crate) struct IdGen(Mutex<Option<ulid::Ulid>>);

impl IdGen {
    /// A fresh time-ordered id for `at`.
    pub fn next(&self, at: DateTime<Utc>) -> String {
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = ulid::Ulid::from_datetime(at.into());
        let id = match *last {
            Some(prev) if fresh <= prev => prev.increment().unwrap_or(fresh),
            _ => fresh,
        };
        *last = Some(id);
        id.to_string()
    }

    /// A fresh time-ordered record id.
    pub fn record(&self, at: DateTime<Utc>) -> RecordId {
        RecordId::new(self.next(at)).expect("ULIDs are valid ids")
    }
}

/// The smallest ULID text of instant `at`: every id made at or after `at` sorts after it.
pub(crate) fn ulid_floor(at: DateTime<Utc>) -> RecordId {
    let ms = at.timestamp_millis().max(0) as u64;
    RecordId::new(ulid::Ulid::from_parts(ms, 0).to_string()).expect("valid id")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_monotonic_even_when_time_stands_still_or_steps_back() {
        let gen_ = IdGen::default();
        let t = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let a = gen_.next(t);
        let b = gen_.next(t);
        let c = gen_.next(t - chrono::Duration::seconds(10));
        assert!(a < b && b < c, "{a} {b} {c}");
        assert!(RecordId::new(&c).is_ok());
        let later = gen_.next(t + chrono::Duration::seconds(1));
        assert!(later > c);
        assert!(ulid_floor(t).as_str() < a.as_str());
    }

    #[test]
    fn derived_names_are_valid() {
        let scope = Scope::new("x".repeat(128)).unwrap();
        claim_lock(&scope);
        log_lock(&scope);
        success_key(&scope);
        assert_eq!(history_prefix("m1").len(), 17);
    }
}
