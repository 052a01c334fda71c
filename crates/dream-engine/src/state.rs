//! The state every handle shares ([`State`]) and the helpers every job uses:
//! reading the generation and the memories, taking the store lease (rolling a
//! leftover journal forward first), committing a journaled mutation, audit and
//! events. The handles over it are in [`crate::handles`].

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use dream_core::{
    Clock, Embedder, Entry, Memory, MemoryId, Namespace, Record, RecordId, RecordStore, Scope,
    SessionId, SystemClock, parse_memory,
};

use crate::consolidate::{Consolidator, RuleBasedConsolidator};
use crate::error::{DreamError, Result};
use crate::events::Event;
use crate::feed::{Feed, FeedEntry, Subscription};
use crate::gate::Known;
use crate::journal::{self, Journal, Op, Outcome};
use crate::layout::{self, IdGen, hash_bytes};
use crate::lease::HeldLease;
use crate::options::Options;
use crate::progress::PassProgress;
use crate::records::{
    Actor, AuditAction, AuditRecord, HistoryRecord, TrashRecord, from_json, to_json,
};
use crate::scan::Scanners;
use crate::seal::SealKey;
use crate::single_flight::SingleFlight;

/// Trash and audit records one pass examines for expiry.
const EXPIRY_SCAN: usize = 500;

/// What every handle shares: the store and the scope, the settings, the
/// scanners, the id source, the change feed, the seal and the vector backfill.
/// Cheap to clone (clones share the store, the scanners and the change feed).
#[derive(Clone)]
pub(crate) struct State {
    pub(crate) store: Arc<dyn RecordStore>,
    /// Read through [`State::now`] alone.
    clock: Arc<dyn Clock>,
    pub(crate) scope: Scope,
    pub(crate) options: Arc<Options>,
    pub(crate) consolidator: Arc<dyn Consolidator>,
    pub(crate) scanners: Arc<Scanners>,
    pub(crate) ids: Arc<IdGen>,
    /// The store's change feed, where every event is recorded: written through
    /// [`State::emit`], [`State::write_with_events`] and [`State::commit`] alone.
    feed: Arc<Feed>,
    /// Seals every memory written and checks the seal of every memory read;
    /// `None`: the store is trusted as it is (see [`crate::Dream::with_seal`]).
    pub(crate) seal: Option<SealKey>,
    /// Told each stage of a pass as it starts (see [`crate::Dream::with_progress`]).
    pub(crate) progress: Option<PassProgress>,
    /// Computes memory vectors (see [`crate::Dream::with_embedder`]).
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    /// Background vector backfills of this handle and its clones.
    pub(crate) backfills: Arc<SingleFlight>,
}

/// What orient read: the generation and every memory, split by scope.
#[derive(Debug)]
pub(crate) struct Orient {
    pub generation: u64,
    pub memories: BTreeMap<MemoryId, Known>,
    pub foreign: HashSet<MemoryId>,
}

/// One audit entry in the making.
#[derive(Debug, Clone)]
pub(crate) struct AuditEntry {
    pub action: AuditAction,
    pub actor: Actor,
    pub reason: String,
    pub memory: Option<MemoryId>,
    pub sessions: Vec<SessionId>,
    pub pass: Option<String>,
    pub rules: Vec<String>,
    pub hash: Option<String>,
    /// Another scope than the handle's (housekeeping across scopes).
    pub scope: Option<Scope>,
}

impl AuditEntry {
    pub fn new(action: AuditAction, actor: Actor, reason: impl Into<String>) -> Self {
        AuditEntry {
            action,
            actor,
            reason: reason.into(),
            memory: None,
            sessions: Vec::new(),
            pass: None,
            rules: Vec::new(),
            hash: None,
            scope: None,
        }
    }
    pub fn memory(mut self, id: &MemoryId) -> Self {
        self.memory = Some(id.clone());
        self
    }
    pub fn sessions(mut self, sessions: &[SessionId]) -> Self {
        self.sessions = sessions.to_vec();
        self
    }
    pub fn pass(mut self, pass: &str) -> Self {
        self.pass = Some(pass.to_owned());
        self
    }
    pub fn rules(mut self, rules: Vec<String>) -> Self {
        self.rules = rules;
        self
    }
    pub fn hash(mut self, hash: String) -> Self {
        self.hash = Some(hash);
        self
    }
}

impl State {
    /// The state of [`crate::Dream::open`]: the options checked, the store's
    /// capabilities checked, nothing read.
    pub(crate) fn open(store: Arc<dyn RecordStore>, options: Options) -> Result<State> {
        options.validate()?;
        let info = store.info();
        if !info.capabilities.leases {
            return Err(DreamError::UnsupportedStore {
                store: info.name,
                missing: "leases",
            });
        }
        if !info.capabilities.fenced_writes {
            return Err(DreamError::UnsupportedStore {
                store: info.name,
                missing: "fenced writes",
            });
        }
        let feed = Arc::new(Feed::new(store.clone(), options.feed_retain));
        Ok(State {
            store,
            clock: Arc::new(SystemClock),
            scope: options.scope.clone(),
            options: Arc::new(options),
            consolidator: Arc::new(RuleBasedConsolidator::new()),
            scanners: Arc::default(),
            ids: Arc::new(IdGen::default()),
            feed,
            seal: None,
            progress: None,
            embedder: None,
            backfills: Arc::default(),
        })
    }

    /// The same state on another clock (see [`crate::Dream::with_clock`]).
    pub(crate) fn with_clock(self, clock: Arc<dyn Clock>) -> State {
        State { clock, ..self }
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// A subscription to the change feed (see [`crate::Dream::subscribe`]).
    pub(crate) fn subscribe(&self, cursor: Option<u64>) -> Subscription {
        Subscription::new(self.feed.clone(), cursor)
    }

    /// Records `event` in the change feed: for an event that is the only record
    /// of what happened (a pass started or skipped). An event describing writes
    /// goes with them, through [`State::commit`] or [`State::write_with_events`].
    /// Every way into the feed also starts a vector backfill when there is an
    /// embedder ([`State::schedule_backfill`]).
    pub(crate) async fn emit(&self, event: Event) -> Result<FeedEntry> {
        let entry = self.feed.append(self.now(), event).await;
        self.schedule_backfill();
        entry
    }

    /// Writes `ops` (outside the store lease, under `fence` when given) with the
    /// feed entries of `events`, together where the store has atomic batches
    /// (see [`Feed::write_with`]).
    pub(crate) async fn write_with_events(
        &self,
        ops: &[dream_core::BatchOp],
        events: &[Event],
        fence: Option<dream_core::Fence>,
    ) -> Result<Vec<FeedEntry>> {
        let entries = self.feed.write_with(self.now(), events, ops, fence).await;
        self.schedule_backfill();
        entries
    }

    pub(crate) async fn read_generation(&self) -> Result<(u64, Option<Record>)> {
        layout::read_generation(&*self.store).await
    }

    /// Every entry of a namespace, page by page.
    pub(crate) async fn list_all(&self, ns: &'static str) -> Result<Vec<Entry>> {
        layout::list_all(&*self.store, ns, usize::MAX).await
    }

    /// Every id of a namespace, page by page, without reading values.
    pub(crate) async fn list_ids(
        &self,
        ns: &'static str,
    ) -> Result<std::collections::HashSet<RecordId>> {
        let entries = layout::list_versions_all(&*self.store, ns, usize::MAX).await?;
        Ok(entries.into_iter().map(|e| e.id).collect())
    }

    /// Which of `ids` name a record of `ns`, without reading values: the
    /// namespace is listed (ids and versions) only from just before the smallest
    /// of them to the largest, since listings are sorted by id bytes.
    pub(crate) async fn present_among(
        &self,
        ns: &'static str,
        ids: &HashSet<RecordId>,
    ) -> Result<HashSet<RecordId>> {
        let mut present = HashSet::new();
        let (Some(first), Some(last)) = (ids.iter().min(), ids.iter().max()) else {
            return Ok(present);
        };
        let ns: Namespace = layout::namespace(ns);
        // A proper prefix sorts before the id itself: the listing starts after it.
        let cut = first.as_str().char_indices().last().map_or(0, |(i, _)| i);
        let mut after = RecordId::new(&first.as_str()[..cut]).ok();
        loop {
            let page = self
                .store
                .list_versions(&ns, after.as_ref(), dream_core::store::MAX_LIST_LIMIT)
                .await?;
            for entry in page.entries {
                if entry.id > *last {
                    return Ok(present);
                }
                if ids.contains(&entry.id) {
                    present.insert(entry.id);
                }
            }
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(present),
            }
        }
    }

    /// The entries of `ns` whose ids start with `prefix` (a valid id itself).
    pub(crate) async fn list_prefix(&self, ns: &'static str, prefix: &str) -> Result<Vec<Entry>> {
        let ns: Namespace = layout::namespace(ns);
        let mut after = RecordId::new(prefix)?;
        let mut out = Vec::new();
        loop {
            let page = self.store.list(&ns, Some(&after), 64).await?;
            let full = page.next.is_some();
            for entry in page.entries {
                if !entry.id.as_str().starts_with(prefix) {
                    return Ok(out);
                }
                after = entry.id.clone();
                out.push(entry);
            }
            if !full {
                return Ok(out);
            }
        }
    }

    /// The first (oldest) entries of a time-ordered namespace.
    pub(crate) async fn list_oldest(&self, ns: &'static str, limit: usize) -> Result<Vec<Entry>> {
        Ok(self
            .store
            .list(&layout::namespace(ns), None, limit)
            .await?
            .entries)
    }

    /// Whether a stored memory record carries this store's seal (always, without a key).
    /// The one verified read ([`crate::seal::verified`]) for a memory record.
    pub(crate) fn verified(&self, id: &RecordId, record: &Record) -> bool {
        crate::seal::verified(self.seal.as_ref(), id.as_str(), &record.value)
    }

    /// The one verified read for a memory's Markdown kept inside another record
    /// (a trash or history copy), for memory `id`.
    pub(crate) fn verified_text(&self, id: &MemoryId, text: &str) -> bool {
        crate::seal::verified(self.seal.as_ref(), id.as_str(), text.as_bytes())
    }

    /// Parses a stored memory, checking it is stored under its own id.
    pub(crate) fn parse_entry(&self, id: &RecordId, record: &Record) -> Option<Memory> {
        let text = std::str::from_utf8(&record.value).ok()?;
        match parse_memory(text) {
            Ok(m) if m.id.as_str() == id.as_str() => Some(m),
            Ok(_) => {
                tracing::warn!(memory = %id, "memory record holds another id; ignored");
                None
            }
            Err(e) => {
                tracing::warn!(memory = %id, error = %e, "unreadable memory record; ignored");
                None
            }
        }
    }

    /// Reads the generation and every memory.
    pub(crate) async fn orient(&self) -> Result<Orient> {
        let (generation, _) = self.read_generation().await?;
        let mut memories = BTreeMap::new();
        let mut foreign = HashSet::new();
        for entry in self.list_all(layout::MEMORIES).await? {
            let Some(memory) = self.parse_entry(&entry.id, &entry.record) else {
                continue;
            };
            if memory.scope != self.scope {
                foreign.insert(memory.id);
                continue;
            }
            let record = entry.record;
            let verified = self.verified(&entry.id, &record);
            memories.insert(
                memory.id.clone(),
                Known {
                    memory,
                    verified,
                    record,
                },
            );
        }
        Ok(Orient {
            generation,
            memories,
            foreign,
        })
    }

    /// Reads one memory of this scope with its stored record.
    pub(crate) async fn read_memory(&self, id: &MemoryId) -> Result<Option<(Memory, Record)>> {
        let key = layout::key(layout::MEMORIES, id.clone());
        let Some(record) = self.store.get(&key).await? else {
            return Ok(None);
        };
        Ok(self
            .parse_entry(&key.id, &record)
            .filter(|m| m.scope == self.scope)
            .map(|m| (m, record)))
    }

    /// Takes the store lease and, before anything else, rolls a leftover journal
    /// forward and completes an interrupted scope purge.
    pub(crate) async fn lock(&self) -> Result<HeldLease> {
        Ok(self.lock_rolled().await?.0)
    }

    /// Runs `work` under the store lease ([`State::lock`]) and releases the lease
    /// afterwards, whatever `work` returned: the one way a mutation takes the
    /// lock. Events go into the change feed with the mutation itself
    /// (`State::commit`), so nothing is left to emit once the lease is released.
    pub(crate) async fn under_lease<T>(
        &self,
        work: impl AsyncFnOnce(&HeldLease) -> Result<T>,
    ) -> Result<T> {
        let lease = self.lock().await?;
        let result = work(&lease).await;
        lease.release().await;
        result
    }

    /// [`State::lock`], also saying which leftover journal it rolled forward.
    pub(crate) async fn lock_rolled(&self) -> Result<(HeldLease, Option<String>)> {
        let lease = HeldLease::take(
            &self.store,
            &layout::dream_lock(),
            self.options.lease_ttl,
            self.options.lease_wait,
        )
        .await?;
        let rolled = match journal::roll_forward(&self.store, &self.feed, &lease).await {
            Ok(None) => None,
            Ok(Some((id, outcome))) => {
                if let Err(e) = self.after_roll_forward(&lease, id.clone(), outcome).await {
                    lease.release().await;
                    return Err(e);
                }
                Some(id)
            }
            Err(e) => {
                lease.release().await;
                return Err(e);
            }
        };
        if let Err(e) = self.upkeep().resume_purge(&lease).await {
            lease.release().await;
            return Err(e);
        }
        Ok((lease, rolled))
    }

    async fn after_roll_forward(
        &self,
        lease: &HeldLease,
        id: String,
        outcome: Outcome,
    ) -> Result<()> {
        let reason = if outcome.mismatches.is_empty() {
            format!("journal of {id} rolled forward after an interrupted apply")
        } else {
            format!(
                "journal of {id} rolled forward after an interrupted apply; {} writes skipped \
                 (records held neither their pre- nor their post-image)",
                outcome.mismatches.len()
            )
        };
        let entry =
            AuditEntry::new(AuditAction::JournalRolledForward, Actor::Engine, reason).pass(&id);
        let op = self.audit_op(entry);
        self.feed
            .write_with(
                self.now(),
                &[Event::JournalRolledForward { pass: id }],
                &[op.batch_op()],
                Some(lease.fence()),
            )
            .await?;
        Ok(())
    }

    /// Journals and applies `ops` under `lease`, recording `events` in the change
    /// feed with them: a crash leaves both or neither (see [`crate::journal`]).
    pub(crate) async fn commit(
        &self,
        lease: &HeldLease,
        id: &str,
        ops: Vec<Op>,
        events: Vec<Event>,
    ) -> Result<Outcome> {
        if ops.is_empty() && events.is_empty() {
            return Ok(Outcome::default());
        }
        let journal = Journal {
            id: id.to_owned(),
            at: self.now(),
            ops,
            events,
            feed_after: 0,
        };
        let outcome = journal::run(&self.store, &self.feed, lease, &journal).await;
        self.schedule_backfill();
        Ok(outcome?.0)
    }

    /// The op that bumps the generation read as `(generation, record)`.
    pub(crate) fn bump_op(&self, generation: u64, record: Option<&Record>) -> Op {
        Op::put(
            layout::generation_key(),
            (generation + 1).to_string(),
            record,
        )
    }

    /// An audit record as an op (for journaled mutations).
    pub(crate) fn audit_op(&self, entry: AuditEntry) -> Op {
        let now = self.now();
        let record = self.audit_record(entry, now);
        let key = layout::key(layout::AUDIT, RecordId::new(&record.id).expect("valid id"));
        Op::create(
            key,
            String::from_utf8(to_json(&record).to_vec()).expect("JSON is UTF-8"),
        )
    }

    fn audit_record(&self, entry: AuditEntry, now: DateTime<Utc>) -> AuditRecord {
        AuditRecord {
            id: self.ids.next(now),
            at: now,
            action: entry.action,
            actor: entry.actor,
            scope: entry.scope.unwrap_or_else(|| self.scope.clone()),
            memory: entry.memory,
            sessions: entry.sessions,
            pass: entry.pass,
            reason: entry.reason,
            rules: entry.rules,
            hash: entry.hash,
        }
    }

    /// The history record of `before` and the deletes keeping history bounded.
    /// The copy is sealed like a live memory, in the form the verified read
    /// allows: a `before` that did not verify (`verified` false) is kept held
    /// ([`crate::seal::held`]), so no copy in history is more trusted than the
    /// version it keeps.
    pub(crate) async fn history_ops(
        &self,
        id: &MemoryId,
        before: &dream_core::Memory,
        verified: bool,
        action: AuditAction,
        pass: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<Op>> {
        let prefix = layout::history_prefix(id.as_str());
        let existing = self.list_prefix(layout::HISTORY, &prefix).await?;
        let mut ops = Vec::new();
        let keep = self.options.history_per_memory;
        let excess = (existing.len() + 1).saturating_sub(keep);
        for entry in existing.iter().take(excess) {
            ops.push(Op::delete(
                layout::key(layout::HISTORY, entry.id.clone()),
                &entry.record,
            ));
        }
        let mut kept = before.clone();
        if !verified {
            crate::seal::held(&mut kept);
        }
        let record = HistoryRecord {
            memory_id: id.clone(),
            at: now,
            action,
            pass: Some(pass.to_owned()),
            markdown: crate::seal::rendered(self.seal.as_ref(), &kept).0,
        };
        let hid = RecordId::new(format!("{prefix}{}", self.ids.next(now)))?;
        ops.push(Op::create(
            layout::key(layout::HISTORY, hid),
            String::from_utf8(to_json(&record).to_vec()).expect("JSON is UTF-8"),
        ));
        Ok(ops)
    }

    /// Deletes for trash past `trash_days` (with an audit record each) and audit
    /// records past `audit_days`; returns how many trash entries expired.
    pub(crate) async fn expiry_ops(&self, now: DateTime<Utc>, ops: &mut Vec<Op>) -> Result<usize> {
        let trash_cutoff = now - Duration::days(i64::from(self.options.trash_days));
        let mut expired = 0;
        for entry in self.list_oldest(layout::TRASH, EXPIRY_SCAN).await? {
            let key = layout::key(layout::TRASH, entry.id.clone());
            let Ok(trash) = from_json::<TrashRecord>(&key, &entry.record) else {
                continue;
            };
            if trash.at >= trash_cutoff {
                continue;
            }
            ops.push(Op::delete(key, &entry.record));
            let mut audit = AuditEntry::new(
                AuditAction::TrashExpired,
                Actor::Engine,
                format!(
                    "trash entry {} older than {} days removed",
                    entry.id, self.options.trash_days
                ),
            )
            .memory(&trash.memory_id)
            .hash(hash_bytes(trash.markdown.as_bytes()));
            audit.scope = Some(trash.scope);
            ops.push(self.audit_op(audit));
            expired += 1;
        }
        let audit_cutoff = now - Duration::days(i64::from(self.options.audit_days));
        for entry in self.list_oldest(layout::AUDIT, EXPIRY_SCAN).await? {
            let key = layout::key(layout::AUDIT, entry.id.clone());
            match from_json::<AuditRecord>(&key, &entry.record) {
                Ok(a) if a.at < audit_cutoff => ops.push(Op::delete(key, &entry.record)),
                _ => {}
            }
        }
        Ok(expired)
    }
}
