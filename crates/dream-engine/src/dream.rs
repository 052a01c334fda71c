//! The [`Dream`] facade: one public type over the handles of
//! [`crate::handles`], each public method a line that hands the call to the
//! handle whose job it is.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use dream_core::{
    Changes, Clock, Embedder, LanguageModel, Memory, MemoryId, Message, RecordStore, Role, Scope,
    SessionId,
};

use crate::caller::Caller;
use crate::claim::ClaimHolder;
use crate::consolidate::{Consolidator, LlmConsolidator};
use crate::convert::Carried;
use crate::error::{DreamError, Result};
use crate::feed::Subscription;
use crate::manage::{
    Confirmed, Existing, Exported, HistoryEntry, ImportReport, ImportSource, NewMemory, Purged,
    Remembered, Stats, TrashEntry,
};
use crate::options::Options;
use crate::pass::{DreamReport, DryRun, PlanSummary, SkipReason};
use crate::progress::PassProgress;
use crate::purge::PurgeReport;
use crate::records::{AuditRecord, QuarantineRecord, SessionRecord, SuccessStamp};
use crate::seal::SealKey;
use crate::sessions::Logged;
use crate::state::State;
use crate::transcripts::Part;
use crate::vectors::VectorReport;

/// Long-term memory over one store, working in one scope.
///
/// Cheap to clone (clones share the store, the scanners and the change feed).
/// Every memory mutation — a dream pass, `remember`, `forget`, `restore`,
/// `release`, an import — is made under the store's lease (lock `dream`), each
/// write fenced, journaled so it happens completely or not at all, and bumps
/// `state/generation` so every process sees its view is stale.
#[derive(Clone)]
pub struct Dream {
    state: State,
}

impl fmt::Debug for Dream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dream")
            .field("store", &self.state.store.info().name)
            .field("scope", &self.state.scope)
            .field("consolidator", &self.state.consolidator.describe())
            .finish_non_exhaustive()
    }
}

impl Dream {
    /// Opens Dream over `store`. No I/O happens here: opening never touches a
    /// journal. The store must offer leases and fenced writes. The consolidator
    /// is the rule-based offline mode until [`Dream::with_model`] or
    /// [`Dream::with_consolidator`] says otherwise; the clock is the system's.
    pub fn open(store: Arc<dyn RecordStore>, options: Options) -> Result<Dream> {
        Ok(Dream {
            state: State::open(store, options)?,
        })
    }

    /// The same handle telling `progress` each stage of a pass as it starts
    /// (sessions read, the consolidator at work, the writes), for a progress display.
    pub fn with_progress(mut self, progress: PassProgress) -> Self {
        self.state.progress = Some(progress);
        self
    }

    /// The same handle sealing every memory it writes with `key`, and treating a
    /// memory whose seal does not verify — a hand edit, a planted file, a record
    /// from another store — as unverified: recall holds it, passes do not change
    /// it, and only [`Dream::confirm`] by a person seals it. Without a key the
    /// store's records are trusted as they are (an encrypted store's AEAD
    /// authenticates them already). See [`crate::SealKey`].
    pub fn with_seal(mut self, key: SealKey) -> Self {
        self.state.seal = Some(key);
        self
    }

    /// The same handle on another clock (gates, expiry and timestamps follow it).
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Dream {
            state: self.state.with_clock(clock),
        }
    }

    /// The same handle consolidating with `consolidator`.
    pub fn with_consolidator(mut self, consolidator: Arc<dyn Consolidator>) -> Self {
        self.state.consolidator = consolidator;
        self
    }

    /// The same handle consolidating with a language model ([`LlmConsolidator`]).
    pub fn with_model(self, model: Arc<dyn LanguageModel>) -> Self {
        let max_tokens = self.state.options.max_tokens;
        self.with_consolidator(Arc::new(LlmConsolidator::new(model, max_tokens)))
    }

    /// The scope this handle works in.
    pub fn scope(&self) -> &Scope {
        &self.state.scope
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.state.options
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn RecordStore> {
        &self.state.store
    }

    /// The consolidator's description (`rule-based (offline mode)` when no model is set).
    pub fn consolidator(&self) -> String {
        self.state.consolidator.describe()
    }

    /// Every event any process records in this store's change feed, in order,
    /// after `cursor` (a [`FeedEntry::seq`]; `None`: from the oldest retained).
    /// A cursor the feed no longer holds is [`DreamError::Resync`], never a skip.
    ///
    /// [`FeedEntry::seq`]: crate::FeedEntry::seq
    pub fn subscribe(&self, cursor: Option<u64>) -> Subscription {
        self.state.subscribe(cursor)
    }

    /// The store's wake-up for a subscription ([`RecordStore::watch_changes`],
    /// for [`Subscription::with_wakeups`]): `Some` when the store hears every
    /// process's writes, `None` when a subscription must poll.
    pub async fn watch_changes(&self) -> Result<Option<Changes>, DreamError> {
        Ok(self.state.store.watch_changes().await?)
    }

    /// The current generation: bumped by every memory mutation, in any process.
    pub async fn generation(&self) -> Result<u64> {
        Ok(self.state.read_generation().await?.0)
    }

    /// The same handle computing memory vectors with `embedder` (see
    /// [`Dream::backfill_vectors`]): after every event it records, a backfill
    /// runs in the background on the current Tokio runtime.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.state.embedder = Some(embedder);
        self
    }

    /// Whether the handle has an embedder.
    pub fn has_embedder(&self) -> bool {
        self.state.embedder.is_some()
    }

    /// The shared state, for the crate's own code that works below the facade
    /// (the memory tool forgets as the agent).
    pub(crate) fn state(&self) -> &State {
        &self.state
    }

    // Writer: sessions, memories and imports in; the person's acts that raise trust.

    /// Logs a session transcript and returns its id. Never waits for a pass.
    ///
    /// Caps: 1 to [`MAX_MESSAGES_PER_SESSION`] messages of at most
    /// [`MAX_MESSAGE_BYTES`] each and [`MAX_SESSION_BYTES`] in all; roles `user`,
    /// `assistant` and `tool` (`system` is refused: the agent's own prompt is not
    /// session content). Every secret the scanner finds is replaced with
    /// `[REDACTED:<rule>]` before anything is stored or sent anywhere. Past
    /// `max_pending` pending sessions in this scope: `PendingFull`, nothing stored.
    /// The bound is exact across processes: the count and the write happen under
    /// the scope's logging lease (`layout::log_lock`), the write fenced by it.
    /// Waits up to `lease_wait` for another logger (`Busy` past it).
    ///
    /// The messages are the person's ([`Caller::Person`]): a front end that
    /// logs for someone else calls [`Dream::log_session_as`].
    ///
    /// [`MAX_MESSAGES_PER_SESSION`]: crate::MAX_MESSAGES_PER_SESSION
    /// [`MAX_MESSAGE_BYTES`]: crate::MAX_MESSAGE_BYTES
    /// [`MAX_SESSION_BYTES`]: crate::MAX_SESSION_BYTES
    pub async fn log_session(&self, messages: Vec<Message>) -> Result<SessionId> {
        self.state.writer().log_session(messages).await
    }

    /// As [`Dream::log_session`], for `caller`: each message is stored with the
    /// role [`Caller::stored_role`] gives it, so an agent's `user` message is
    /// stored as the agent's report (never the person's word until `dream
    /// confirm`) and a foreign one as tool text.
    pub async fn log_session_as(
        &self,
        messages: Vec<Message>,
        caller: Caller,
    ) -> Result<SessionId> {
        self.state.writer().log_session_as(messages, caller).await
    }

    /// Logs one part of an agent's transcript ([`crate::transcripts::split`]),
    /// unless a session of this scope already holds a part with the same
    /// `source` hash: then nothing is stored and that session's id is returned
    /// as [`Logged::Already`]. Otherwise as [`Dream::log_session`].
    ///
    /// The check and the write happen under the scope's logging lease
    /// (`layout::log_lock`), the write fenced by it, so two processes
    /// importing the same transcript at once store it once. Waits up to
    /// `lease_wait` for another logger (`Busy` past it).
    pub async fn log_transcript(&self, part: Part) -> Result<Logged> {
        self.state.writer().log_transcript(part).await
    }

    /// Imports Markdown memories (as `render_memory` writes them) through the
    /// write gate. See [`Dream::import`].
    pub async fn import_markdown(
        &self,
        texts: &[String],
        pin: bool,
        from: ImportSource,
    ) -> Result<ImportReport> {
        self.state.writer().import_markdown(texts, pin, from).await
    }

    /// Imports memories through the write gate: each keeps its id (refused if one
    /// exists), joins this scope, is pinned only if `pin`, and is scanned;
    /// instruction- or secret-shaped ones are quarantined (redacted). A record
    /// never grants itself trust: its `pinned`, `supersedes`, `status`, `sources`,
    /// `evidence` and `scope` are the engine's — provenance from `from`, so an
    /// export of another system is held at recall until a person confirms it. At
    /// most [`MAX_IMPORT`] per call, under one lease, committed in batches, each
    /// bumping the generation. `max_memories` is enforced by the next pass.
    ///
    /// [`MAX_IMPORT`]: crate::MAX_IMPORT
    pub async fn import(
        &self,
        memories: Vec<Memory>,
        pin: bool,
        from: ImportSource,
    ) -> Result<ImportReport> {
        self.state.writer().import(memories, pin, from).await
    }

    /// [`Dream::import`], doing with memories whose id exists what `existing` says.
    pub async fn import_with(
        &self,
        memories: Vec<Memory>,
        pin: bool,
        from: ImportSource,
        existing: Existing,
    ) -> Result<ImportReport> {
        self.state
            .writer()
            .import_with(memories, pin, from, existing)
            .await
    }

    /// Releases a quarantined proposal into `memories`: a person's decision,
    /// recorded in the audit log with `note`'s hash. A proposal with a secret
    /// finding can never be released. It admits the text with the trust the
    /// proposal had (an agent's stays held until `confirm`); an entry that does
    /// not carry this store's seal (edited on disk, planted) is released held.
    pub async fn release(&self, entry: &str, note: &str) -> Result<Memory> {
        self.state.writer().release(entry, note).await
    }

    /// A person confirms memory `id`: a record without this store's seal (a hand
    /// edit, a planted file, a store moved on purpose) is sealed, and a memory
    /// held as `unconfirmed` becomes the person's word. Audited, with the prior
    /// version in history. Recall still scans it like any other record.
    pub async fn confirm(&self, id: &MemoryId) -> Result<Confirmed> {
        self.state.writer().confirm(id).await
    }

    /// A person rewrites memory `id` and so confirms it: `content` becomes its
    /// body, the person's word (evidence `user`), through the same scan, history
    /// and audit as [`Dream::confirm`]. Text the scanner flags is refused and
    /// nothing changes; unchanged text is a plain [`Dream::confirm`].
    pub async fn confirm_edited(&self, id: &MemoryId, content: String) -> Result<Confirmed> {
        self.state.writer().confirm_edited(id, content).await
    }

    /// [`Dream::confirm`] for every memory of this scope that is held; the ids
    /// confirmed, with what each was. For a store the person reviewed, or moved on purpose.
    pub async fn confirm_all(&self) -> Result<Vec<(MemoryId, Confirmed)>> {
        self.state.writer().confirm_all().await
    }

    /// Remembers what a person states: pinned, through the same write gate as a
    /// pass (field rules, then the recursive scan). Instruction- or secret-shaped
    /// memories are quarantined (redacted) instead.
    pub async fn remember(&self, new: NewMemory) -> Result<Remembered> {
        self.state.writer().remember(new).await
    }

    /// Remembers what someone other than the person states — an agent over MCP
    /// (`Role::Assistant`), a tool (`Role::Tool`): through the same write gate as
    /// [`Dream::remember`] (field rules, then the recursive scan; instruction- or
    /// secret-shaped memories are quarantined), but never the person's word and
    /// never pinned. It is stored `status: unconfirmed` with evidence `role`, so
    /// recall holds it (`unconfirmed-source`) until a person runs `confirm`.
    /// `Role::User` is refused: only [`Dream::remember`] speaks for the person.
    pub async fn remember_as(&self, new: NewMemory, role: Role) -> Result<Remembered> {
        self.state.writer().remember_as(new, role).await
    }

    // Pass: the dream pass, its gates and its plans.

    /// Runs a dream pass. Without `force`, the gates first, cheapest first: enabled,
    /// hours since the last *successful* pass, pending sessions; with `force`,
    /// straight to the claim. Then the scope's claim lease (so two processes never
    /// pay for the same model call), orient, gather, consolidate, gate, and apply
    /// under the store lease. An error leaves every session pending and no stamp,
    /// so a failed pass does not postpone the next one.
    pub async fn dream(&self, force: bool) -> Result<DreamReport> {
        self.state.pass().dream(force).await
    }

    /// Why `dream(false)` would not run now, if it would not (`exclude` does not count).
    pub async fn check_gates(&self, exclude: Option<&SessionId>) -> Result<Option<SkipReason>> {
        self.state.pass().check_gates(exclude).await
    }

    /// When this scope last had a successful pass.
    pub async fn last_success(&self) -> Result<Option<SuccessStamp>> {
        self.state.pass().last_success().await
    }

    /// Who holds this scope's claim, if a pass holds it (or a stopped process
    /// held it and it has not expired yet).
    pub async fn claim_holder(&self) -> Result<Option<ClaimHolder>> {
        self.state.pass().claim_holder().await
    }

    /// Consolidates the pending sessions now, ignoring the gates, and stores the
    /// plan instead of applying it. [`Dream::apply`] applies exactly that plan.
    pub async fn dry_run(&self) -> Result<DryRun> {
        self.state.pass().dry_run().await
    }

    /// The stored dry-run plans of this scope, oldest first.
    pub async fn plans(&self) -> Result<Vec<PlanSummary>> {
        self.state.pass().plans().await
    }

    /// Applies exactly the plan a dry run stored, if nothing it read has changed
    /// (else `Stale` with the reason, and nothing is applied). A plan applies once.
    ///
    /// The stored plan passes the one verified read first: a plan whose bytes do
    /// not match the seal the dry run made (edited in the store, planted) is
    /// refused. What it would write is judged again: the gate's scan and field
    /// rules on every memory it writes, and the provenance check against its
    /// sessions as stored now (a session that does not verify counts as tool
    /// text), so a plan can never write the person's word that its sessions do
    /// not carry.
    pub async fn apply(&self, plan_id: &str) -> Result<DreamReport> {
        self.state.pass().apply(plan_id).await
    }

    // Reader: the reads that change nothing.

    /// Pending sessions of this scope held for the person: passes left part of
    /// each unstored too many times. Each with why, oldest first.
    pub async fn stuck_sessions(&self) -> Result<Vec<(SessionId, String)>> {
        self.state.reader().stuck_sessions().await
    }

    /// A logged session of this scope.
    pub async fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>> {
        self.state.reader().session(id).await
    }

    /// Every memory of this scope for an export, oldest first, each through the
    /// one verified read: a record without this store's seal is exported in its
    /// held form (`unconfirmed`, evidence `tool`) with `verified: false`, never
    /// as the person's word.
    pub async fn export(&self) -> Result<Vec<Exported>> {
        self.state.reader().export().await
    }

    /// Which of `ids` a stored memory (of any scope) already has; reads ids only.
    pub async fn existing(&self, ids: &[MemoryId]) -> Result<Vec<MemoryId>> {
        self.state.reader().existing(ids).await
    }

    /// The audit log of this scope since `since`, oldest first.
    pub async fn audit(&self, since: DateTime<Utc>) -> Result<Vec<AuditRecord>> {
        self.state.reader().audit(since).await
    }

    /// Counts for a dashboard.
    pub async fn stats(&self) -> Result<Stats> {
        self.state.reader().stats().await
    }

    /// The quarantine of this scope, oldest first (secrets redacted).
    pub async fn quarantine(&self) -> Result<Vec<QuarantineRecord>> {
        self.state.reader().quarantine().await
    }

    /// The memories of this scope (every status), oldest first, each through the
    /// one verified read: one whose record does not carry this store's seal is
    /// shown in its held form (`unconfirmed`, evidence `tool`, unpinned), as
    /// [`Dream::export`] writes it.
    pub async fn list(&self) -> Result<Vec<Memory>> {
        self.state.reader().list().await
    }

    /// One memory of this scope, through the one verified read (see [`Dream::list`]).
    pub async fn get(&self, id: &MemoryId) -> Result<Option<Memory>> {
        self.state.reader().get(id).await
    }

    /// Prior versions of a memory, newest first (at most `history_per_memory`).
    pub async fn history(&self, id: &MemoryId) -> Result<Vec<HistoryEntry>> {
        self.state.reader().history(id).await
    }

    /// The trash of this scope, oldest first; expired entries are not shown.
    pub async fn trash(&self) -> Result<Vec<TrashEntry>> {
        self.state.reader().trash().await
    }

    // Upkeep: forget, restore, purge, trash expiry, rekey, vectors.

    /// Waits until no background backfill of this handle runs or is pending.
    pub async fn backfill_idle(&self) {
        self.state.upkeep().backfill_idle().await
    }

    /// Computes and stores the vector of every memory whose vector is missing or
    /// stale (another model, dimension or text), and removes the vectors of
    /// memories that are gone. Runs outside the lease: a memory written meanwhile
    /// is picked up by the next backfill, and a vector written for a memory
    /// removed meanwhile is removed again here or by the next backfill (recall
    /// never uses a vector without its memory). Without an embedder, does nothing.
    pub async fn backfill_vectors(&self) -> Result<VectorReport> {
        self.state.upkeep().backfill_vectors().await
    }

    /// [`Dream::backfill_vectors`], calling `progress(done, total)` before the
    /// first batch and after each batch the embedder computed (`total`: the
    /// vectors missing or stale).
    pub async fn backfill_vectors_with_progress(
        &self,
        progress: impl Fn(usize, usize) + Send + Sync,
    ) -> Result<VectorReport> {
        self.state
            .upkeep()
            .backfill_vectors_with_progress(progress)
            .await
    }

    /// Writes the trust of every record out explicitly, for a conversion to a
    /// store whose records are checked with `to` (`None`: a store that
    /// authenticates its own records, where no seal is checked). Run under the
    /// store lease, journaled, before the conversion starts. See the module doc.
    pub async fn carry_trust(&self, to: Option<&SealKey>) -> Result<Carried> {
        self.state.upkeep().carry_trust(to).await
    }

    /// Lists what [`Dream::purge_scope`] would remove from `scope` (any scope,
    /// not only this handle's): every memory, session, history version, trash
    /// and quarantine entry, plan, success stamp and derived record of it.
    pub async fn purge_scope_dry_run(&self, scope: &Scope) -> Result<PurgeReport> {
        self.state.upkeep().purge_scope_dry_run(scope).await
    }

    /// Removes everything of `scope` (any scope, not only this handle's) under
    /// the store lease: memories, sessions, history, trash, quarantine, plans,
    /// success stamps and derived state. The audit log keeps the ids and counts.
    /// Journaled: a process killed half-way leaves `journal/purge`, and the next
    /// process to take the lease completes the purge. Other scopes' records are
    /// not touched. Compacts the store afterwards.
    pub async fn purge_scope(&self, scope: &Scope) -> Result<PurgeReport> {
        self.state.upkeep().purge_scope(scope).await
    }

    /// Removes a memory for good: the memory, its history and its trash copies
    /// (of this scope), and the persisted recall index derived from them.
    pub async fn forget_purge(&self, id: &MemoryId) -> Result<Purged> {
        self.state.upkeep().forget_purge(id).await
    }

    /// Removes a memory for good like [`Dream::forget_purge`], and also the
    /// messages of its source sessions that carry its identifying content
    /// (names, numbers, addresses: what provenance checks). A session another
    /// memory still rests on keeps its messages with that content replaced by
    /// [`PURGED_MARK`]; every kept session is re-sealed if it carried a valid
    /// seal. Quarantined proposals and stored plans carrying it go too.
    ///
    /// [`PURGED_MARK`]: crate::PURGED_MARK
    pub async fn forget_purge_with_sources(&self, id: &MemoryId) -> Result<PurgeReport> {
        self.state.upkeep().forget_purge_with_sources(id).await
    }

    /// Lists where `text` occurs, in any scope and case: memories (with their
    /// history and trash copies), sessions, quarantine entries, plans, trash.
    pub async fn purge_matching_dry_run(&self, text: &str) -> Result<PurgeReport> {
        self.state.upkeep().purge_matching_dry_run(text).await
    }

    /// Removes `text` wherever it is, in any scope and case: a memory holding it
    /// is purged with its history and trash copies; a session keeps its other
    /// words with each occurrence replaced by [`PURGED_MARK`] (re-sealed if it
    /// carried a valid seal); any other record holding it is removed. The audit
    /// log records the ids and counts, never the text nor its hash.
    ///
    /// [`PURGED_MARK`]: crate::PURGED_MARK
    pub async fn purge_matching(&self, text: &str) -> Result<PurgeReport> {
        self.state.upkeep().purge_matching(text).await
    }

    /// Drops a quarantined proposal for good.
    pub async fn drop_quarantined(&self, entry: &str) -> Result<()> {
        self.state.upkeep().drop_quarantined(entry).await
    }

    /// Moves a memory to the trash (restorable for `trash_days`).
    pub async fn forget(&self, id: &MemoryId) -> Result<()> {
        self.state.upkeep().forget(id).await
    }

    /// Brings a memory back from the trash (its newest unexpired copy). Refused
    /// when a memory with its id exists, or when the scanner now flags it.
    pub async fn restore(&self, id: &MemoryId) -> Result<Memory> {
        self.state.upkeep().restore(id).await
    }

    /// Brings back one trash entry (an id from [`Dream::trash`]) or prior
    /// version (an id from [`Dream::history`]) of memory `id`. When the memory
    /// exists, the entry replaces it and the current version goes to history.
    /// A copy that does not carry this store's seal comes back held. Refused
    /// when the scanner now flags the entry.
    pub async fn restore_entry(&self, id: &MemoryId, entry: &str) -> Result<Memory> {
        self.state.upkeep().restore_entry(id, entry).await
    }

    /// Removes trash entries past `trash_days` now (a pass also does it); returns how many.
    pub async fn expire_trash(&self) -> Result<usize> {
        self.state.upkeep().expire_trash().await
    }
}
