//! Forgetting that really forgets: one memory with the transcripts it came from
//! ([`Dream::forget_purge_with_sources`]), a whole scope ([`Dream::purge_scope`]),
//! or a string wherever it is ([`Dream::purge_matching`]).
//!
//! Every purge walks the namespaces [`layout::NAMESPACES`] declares, so a
//! namespace added to the layout is covered. It removes records (or rewrites a
//! session with the text redacted, re-sealed when it carried a valid seal) under
//! the store lease through the journal, bumps the generation so every process's
//! view (recall's index, the MCP server) refreshes, audits ids and counts (never
//! the text, nor a hash of a short string that could be guessed back), and then
//! compacts the store ([`dream_core::RecordStore::compact`]) so the bytes leave
//! its files where the backend can promise it.
//!
//! A scope purge first stores `journal/purge` naming the scope, then removes the
//! scope's records in journaled chunks; a process killed half-way leaves that
//! record, and the next process to take the lease finishes the purge before
//! doing anything else.
//!
//! [`Dream::forget_purge_with_sources`]: crate::Dream::forget_purge_with_sources
//! [`Dream::purge_scope`]: crate::Dream::purge_scope
//! [`Dream::purge_matching`]: crate::Dream::purge_matching

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use dream_core::failpoint::failpoint;
use dream_core::{Key, Memory, MemoryId, Record, Scope, SessionId, Write, parse_memory};
use serde::{Deserialize, Serialize};

use crate::error::{DreamError, Result};
use crate::events::Event;
use crate::handles::Upkeep;
use crate::journal::Op;
use crate::layout::{self, ScopeOf};
use crate::lease::HeldLease;
use crate::manage::Purged;
use crate::provenance::{identifying_tokens, token_spans};
use crate::records::{
    Actor, AuditAction, HistoryRecord, SessionRecord, TrashRecord, from_json, to_json,
};
use crate::state::AuditEntry;

/// The failpoints of a scope purge, in the order they are reached (besides
/// those of every journaled apply, [`crate::ATOMIC_APPLY_FAILPOINTS`] or
/// [`crate::JOURNALED_APPLY_FAILPOINTS`]).
pub const PURGE_FAILPOINTS: &[&str] = &[
    "purge-after-record",
    "purge-after-chunk",
    "purge-before-compact",
];

/// What replaces purged text in a session that is kept.
pub const PURGED_MARK: &str = "[PURGED]";

/// The shortest text [`Dream::purge_matching`] accepts (a shorter one would
/// match nearly everything).
///
/// [`Dream::purge_matching`]: crate::Dream::purge_matching
pub const MIN_MATCHING_CHARS: usize = 3;

/// Writes per journal of a scope purge.
const CHUNK: usize = 256;

/// What a purge removed or redacted (or, in a dry run, would).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PurgeReport {
    /// Whether anything was changed (`false` for a dry run).
    pub applied: bool,
    /// The ids of the records removed, by namespace.
    pub removed: BTreeMap<String, Vec<String>>,
    /// The ids of the records kept with the text redacted, by namespace.
    pub redacted: BTreeMap<String, Vec<String>>,
    /// Session messages removed or redacted.
    pub messages: usize,
}

impl PurgeReport {
    /// Records removed or redacted in all.
    pub fn total(&self) -> usize {
        self.removed
            .values()
            .chain(self.redacted.values())
            .map(Vec::len)
            .sum()
    }

    /// Whether the purge found nothing.
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    fn counts(&self) -> String {
        let mut parts: Vec<String> = self
            .removed
            .iter()
            .map(|(ns, ids)| format!("{} {ns} removed", ids.len()))
            .collect();
        parts.extend(
            self.redacted
                .iter()
                .map(|(ns, ids)| format!("{} {ns} redacted", ids.len())),
        );
        parts.push(format!("{} messages", self.messages));
        parts.join(", ")
    }
}

/// One record a purge changes.
#[derive(Debug, Clone)]
struct Action {
    key: Key,
    record: Record,
    /// `None` removes the record; `Some` replaces it (text redacted).
    value: Option<String>,
    /// Session messages removed or redacted by this action.
    messages: usize,
}

impl Action {
    fn remove(key: Key, record: Record) -> Self {
        Action {
            key,
            record,
            value: None,
            messages: 0,
        }
    }

    fn op(&self) -> Op {
        match &self.value {
            None => Op::delete(self.key.clone(), &self.record),
            Some(value) => Op::put(self.key.clone(), value.clone(), Some(&self.record)),
        }
    }
}

/// The actions of one purge, at most one per record.
#[derive(Debug, Default)]
struct Plan(BTreeMap<(String, String), Action>);

impl Plan {
    fn add(&mut self, action: Action) {
        let at = (
            action.key.namespace.as_str().to_owned(),
            action.key.id.as_str().to_owned(),
        );
        // A removal wins over a redaction of the same record.
        match self.0.get(&at) {
            Some(held) if held.value.is_none() => {}
            _ => {
                self.0.insert(at, action);
            }
        }
    }

    fn has(&self, key: &Key) -> bool {
        self.0.contains_key(&(
            key.namespace.as_str().to_owned(),
            key.id.as_str().to_owned(),
        ))
    }

    /// The actions, `memories` first (so recall stops seeing them first), then
    /// the other namespaces in layout order.
    fn into_actions(self) -> Vec<Action> {
        let rank = |ns: &str| {
            layout::NAMESPACES
                .iter()
                .position(|(name, _)| *name == ns)
                .unwrap_or(usize::MAX)
        };
        let mut actions: Vec<Action> = self.0.into_values().collect();
        actions.sort_by_key(|a| rank(a.key.namespace.as_str()));
        actions
    }
}

fn report_of(actions: &[Action], applied: bool) -> PurgeReport {
    let mut report = PurgeReport {
        applied,
        ..PurgeReport::default()
    };
    for a in actions {
        let into = if a.value.is_none() {
            &mut report.removed
        } else {
            &mut report.redacted
        };
        into.entry(a.key.namespace.as_str().to_owned())
            .or_default()
            .push(a.key.id.as_str().to_owned());
        report.messages += a.messages;
    }
    report
}

/// The record of a scope purge in flight (`journal/purge`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PurgeRecord {
    /// The purge's id (time-ordered).
    id: String,
    /// When it started.
    at: DateTime<Utc>,
    /// The scope being purged.
    scope: Scope,
}

/// The `scope` field of a JSON record.
#[derive(Deserialize)]
struct ScopeField {
    scope: Scope,
}

/// The `markdown` field of a JSON record.
#[derive(Deserialize)]
struct MarkdownField {
    markdown: String,
}

impl Upkeep<'_> {
    pub(crate) async fn purge_scope_dry_run(&self, scope: &Scope) -> Result<PurgeReport> {
        Ok(report_of(&self.scope_actions(scope).await?, false))
    }

    pub(crate) async fn purge_scope(&self, scope: &Scope) -> Result<PurgeReport> {
        self.under_lease(async |lease| self.purge_scope_locked(lease, scope).await)
            .await
    }

    async fn purge_scope_locked(&self, lease: &HeldLease, scope: &Scope) -> Result<PurgeReport> {
        let record = PurgeRecord {
            id: self.ids.next(self.now()),
            at: self.now(),
            scope: scope.clone(),
        };
        lease.check()?;
        let value = to_json(&record);
        let version = self
            .store
            .put(
                &layout::purge_key(),
                value.clone(),
                Write::absent().fenced(lease.fence()),
            )
            .await?;
        failpoint("purge-after-record");
        let stored = Record { value, version };
        self.finish_scope_purge(lease, &record, &stored, false)
            .await
    }

    /// Completes a scope purge a killed process left, if any. Called right after
    /// the lease is taken and a leftover journal rolled forward.
    pub(crate) async fn resume_purge(&self, lease: &HeldLease) -> Result<()> {
        let key = layout::purge_key();
        let Some(stored) = self.store.get(&key).await? else {
            return Ok(());
        };
        let record: PurgeRecord = from_json(&key, &stored)?;
        tracing::info!(purge = %record.id, "completing an interrupted scope purge");
        self.finish_scope_purge(lease, &record, &stored, true)
            .await?;
        Ok(())
    }

    async fn finish_scope_purge(
        &self,
        lease: &HeldLease,
        record: &PurgeRecord,
        stored: &Record,
        resumed: bool,
    ) -> Result<PurgeReport> {
        let actions = self.scope_actions(&record.scope).await?;
        for chunk in actions.chunks(CHUNK) {
            self.commit_actions(lease, &record.id, chunk, Vec::new(), purged_events(chunk))
                .await?;
            failpoint("purge-after-chunk");
        }
        let report = report_of(&actions, true);
        failpoint("purge-before-compact");
        self.store.compact().await?;
        let reason = format!(
            "scope purged{}: {}",
            if resumed {
                " (completed after an interruption)"
            } else {
                ""
            },
            report.counts()
        );
        let mut entry = AuditEntry::new(AuditAction::ScopePurged, Actor::Person, reason)
            .pass(&record.id)
            .sessions(&session_ids(&actions));
        entry.scope = Some(record.scope.clone());
        let done = Op::delete(layout::purge_key(), stored);
        self.commit(
            lease,
            &record.id,
            vec![self.audit_op(entry), done],
            Vec::new(),
        )
        .await?;
        Ok(report)
    }

    /// The plan that purges memory `id` of this scope, and its versions, newest
    /// first (at least one: a memory with none is not found).
    async fn purge_of(&self, id: &MemoryId) -> Result<(Plan, Vec<Memory>)> {
        let mut plan = Plan::default();
        let versions = self
            .memory_actions(&mut plan, id, Some(&self.scope))
            .await?;
        if versions.is_empty() {
            return Err(DreamError::not_found("memory", id));
        }
        Ok((plan, versions))
    }

    pub(crate) async fn forget_purge(&self, id: &MemoryId) -> Result<Purged> {
        self.under_lease(async |lease| self.forget_purge_locked(lease, id).await)
            .await
    }

    async fn forget_purge_locked(&self, lease: &HeldLease, id: &MemoryId) -> Result<Purged> {
        let (mut plan, versions) = self.purge_of(id).await?;
        let newest = &versions[0];
        self.derived_actions(&mut plan).await?;
        let actions = plan.into_actions();
        let count = |ns: &str| {
            actions
                .iter()
                .filter(|a| a.key.namespace.as_str() == ns)
                .count()
        };
        let purged = Purged {
            memory: count(layout::MEMORIES) > 0,
            history: count(layout::HISTORY),
            trash: count(layout::TRASH),
        };
        let entry = AuditEntry::new(
            AuditAction::Purged,
            Actor::Person,
            format!(
                "purged for good: memory {}, {} history versions, {} trash copies",
                if purged.memory {
                    "removed"
                } else {
                    "already gone"
                },
                purged.history,
                purged.trash
            ),
        )
        .memory(id)
        .hash(crate::seal::rendered(self.seal.as_ref(), newest).1);
        // The event even when only trash copies were left: the memory is gone for good.
        let events = vec![Event::MemoryPurged { memory: id.clone() }];
        let pass = self.ids.next(self.now());
        self.commit_actions(lease, &pass, &actions, vec![self.audit_op(entry)], events)
            .await?;
        Ok(purged)
    }

    pub(crate) async fn forget_purge_with_sources(&self, id: &MemoryId) -> Result<PurgeReport> {
        let report = self
            .under_lease(async |lease| self.purge_with_sources_locked(lease, id).await)
            .await?;
        self.store.compact().await?;
        Ok(report)
    }

    async fn purge_with_sources_locked(
        &self,
        lease: &HeldLease,
        id: &MemoryId,
    ) -> Result<PurgeReport> {
        let (mut plan, versions) = self.purge_of(id).await?;
        let newest = &versions[0];
        let scope = newest.scope.clone();
        let mut tokens = BTreeSet::new();
        let mut sources = BTreeSet::new();
        for memory in &versions {
            tokens.extend(identifying_tokens(memory));
            sources.extend(memory.sources.iter().cloned());
        }
        let resting = self.sessions_resting_on_others(id).await?;
        for entry in self.list_all(layout::SESSIONS).await? {
            let sid = entry.id.as_str();
            if !sources.iter().any(|s| s.as_str() == sid) {
                continue;
            }
            let key = layout::key(layout::SESSIONS, entry.id.clone());
            let session: SessionRecord = from_json(&key, &entry.record)?;
            if session.scope != scope {
                continue;
            }
            let keep_messages = resting.contains(sid);
            if let Some(action) =
                self.purge_session(key, entry.record, session, &tokens, keep_messages, false)
            {
                plan.add(action);
            }
        }
        for ns in [layout::QUARANTINE, layout::PLANS] {
            for entry in self.list_all(ns).await? {
                let key = layout::key(ns, entry.id.clone());
                let Ok(field) = serde_json::from_slice::<ScopeField>(&entry.record.value) else {
                    continue;
                };
                let text = String::from_utf8_lossy(&entry.record.value);
                let carries = text.contains(id.as_str())
                    || tokens.iter().any(|t| !token_spans(&text, t).is_empty());
                if field.scope == scope && carries {
                    plan.add(Action::remove(key, entry.record));
                }
            }
        }
        self.derived_actions(&mut plan).await?;
        let actions = plan.into_actions();
        let report = report_of(&actions, true);
        let (_, hash) = crate::seal::rendered(self.seal.as_ref(), newest);
        let entry = AuditEntry::new(
            AuditAction::Purged,
            Actor::Person,
            format!("purged for good with its sources: {}", report.counts()),
        )
        .memory(id)
        .sessions(&session_ids(&actions))
        .hash(hash);
        let pass = self.ids.next(self.now());
        let events = purged_events(&actions);
        self.commit_actions(lease, &pass, &actions, vec![self.audit_op(entry)], events)
            .await?;
        Ok(report)
    }

    pub(crate) async fn purge_matching_dry_run(&self, text: &str) -> Result<PurgeReport> {
        Ok(report_of(&self.matching_actions(text).await?, false))
    }

    pub(crate) async fn purge_matching(&self, text: &str) -> Result<PurgeReport> {
        let report = self
            .under_lease(async |lease| self.purge_matching_locked(lease, text).await)
            .await?;
        if !report.is_empty() {
            self.store.compact().await?;
        }
        Ok(report)
    }

    async fn purge_matching_locked(&self, lease: &HeldLease, text: &str) -> Result<PurgeReport> {
        let actions = self.matching_actions(text).await?;
        let report = report_of(&actions, true);
        if report.is_empty() {
            return Ok(report);
        }
        let entry = AuditEntry::new(
            AuditAction::TextPurged,
            Actor::Person,
            format!("text purged wherever it was: {}", report.counts()),
        )
        .sessions(&session_ids(&actions));
        let pass = self.ids.next(self.now());
        let events = purged_events(&actions);
        self.commit_actions(lease, &pass, &actions, vec![self.audit_op(entry)], events)
            .await?;
        Ok(report)
    }

    async fn matching_actions(&self, text: &str) -> Result<Vec<Action>> {
        let needle = text.trim();
        if needle.chars().count() < MIN_MATCHING_CHARS {
            return Err(DreamError::invalid(
                "text",
                format!("give at least {MIN_MATCHING_CHARS} characters to purge"),
            ));
        }
        let folded = needle.to_lowercase();
        let mut plan = Plan::default();
        for (ns, how) in layout::NAMESPACES {
            match how {
                ScopeOf::Kept | ScopeOf::Journal => {}
                ScopeOf::Derived => self.derived_actions(&mut plan).await?,
                ScopeOf::Memory => {
                    for entry in self.list_all(ns).await? {
                        let Ok(body) = std::str::from_utf8(&entry.record.value) else {
                            continue;
                        };
                        if body.to_lowercase().contains(&folded) {
                            let id = MemoryId::new(entry.id.as_str())?;
                            self.memory_actions(&mut plan, &id, None).await?;
                        }
                    }
                }
                _ if *ns == layout::SESSIONS => {
                    for entry in self.list_all(ns).await? {
                        let key = layout::key(ns, entry.id.clone());
                        let session: SessionRecord = from_json(&key, &entry.record)?;
                        let needles = BTreeSet::from([folded.clone()]);
                        if let Some(action) =
                            self.purge_session(key, entry.record, session, &needles, true, true)
                        {
                            plan.add(action);
                        }
                    }
                }
                _ => {
                    for entry in self.list_all(ns).await? {
                        let key = layout::key(ns, entry.id.clone());
                        let holds = match serde_json::from_slice::<serde_json::Value>(
                            &entry.record.value,
                        ) {
                            Ok(value) => value_holds(&value, &folded),
                            Err(_) => String::from_utf8_lossy(&entry.record.value)
                                .to_lowercase()
                                .contains(&folded),
                        };
                        if holds && !plan.has(&key) {
                            plan.add(Action::remove(key, entry.record));
                        }
                    }
                }
            }
        }
        Ok(plan.into_actions())
    }

    /// Every record of `scope`, found the way [`layout::NAMESPACES`] says.
    async fn scope_actions(&self, scope: &Scope) -> Result<Vec<Action>> {
        let mut plan = Plan::default();
        let hash = layout::short_hash(scope.as_str());
        for (ns, how) in layout::NAMESPACES {
            if matches!(how, ScopeOf::Kept | ScopeOf::Journal) {
                continue;
            }
            for entry in self.list_all(ns).await? {
                let of_scope = match how {
                    ScopeOf::Memory => std::str::from_utf8(&entry.record.value)
                        .ok()
                        .and_then(|text| parse_memory(text).ok())
                        .is_some_and(|m| &m.scope == scope),
                    ScopeOf::JsonField => serde_json::from_slice::<ScopeField>(&entry.record.value)
                        .is_ok_and(|f| &f.scope == scope),
                    ScopeOf::JsonMarkdown => {
                        serde_json::from_slice::<MarkdownField>(&entry.record.value)
                            .ok()
                            .and_then(|f| parse_memory(&f.markdown).ok())
                            .is_some_and(|m| &m.scope == scope)
                    }
                    ScopeOf::IdHash => entry.id.as_str().ends_with(&hash),
                    ScopeOf::Derived => true,
                    ScopeOf::Kept | ScopeOf::Journal => false,
                };
                if of_scope {
                    plan.add(Action::remove(layout::key(ns, entry.id), entry.record));
                }
            }
        }
        Ok(plan.into_actions())
    }

    /// Adds the removal of every derived record (rebuilt from the rest on use).
    async fn derived_actions(&self, plan: &mut Plan) -> Result<()> {
        for (ns, how) in layout::NAMESPACES {
            if *how == ScopeOf::Derived {
                for entry in self.list_all(ns).await? {
                    plan.add(Action::remove(layout::key(ns, entry.id), entry.record));
                }
            }
        }
        Ok(())
    }

    /// Adds the removal of memory `id`, its history and its trash copies (of
    /// `scope` when given); returns every version removed, newest first.
    async fn memory_actions(
        &self,
        plan: &mut Plan,
        id: &MemoryId,
        scope: Option<&Scope>,
    ) -> Result<Vec<Memory>> {
        let in_scope = |m: &Memory| scope.is_none_or(|s| &m.scope == s);
        let mut versions = Vec::new();
        let key = layout::key(layout::MEMORIES, id.clone());
        if let Some(record) = self.store.get(&key).await?
            && let Some(memory) = self.parse_entry(&key.id, &record)
            && in_scope(&memory)
        {
            versions.push(memory);
            plan.add(Action::remove(key, record));
        }
        let trash = self.list_all(layout::TRASH).await?;
        for entry in trash.iter().rev() {
            let key = layout::key(layout::TRASH, entry.id.clone());
            let Ok(t) = from_json::<TrashRecord>(&key, &entry.record) else {
                continue;
            };
            if &t.memory_id != id || scope.is_some_and(|s| &t.scope != s) {
                continue;
            }
            if let Ok(memory) = parse_memory(&t.markdown) {
                versions.push(memory);
            }
            plan.add(Action::remove(key, entry.record.clone()));
        }
        if versions.is_empty() {
            return Ok(versions);
        }
        let history = self
            .list_prefix(layout::HISTORY, &layout::history_prefix(id.as_str()))
            .await?;
        for entry in history {
            let key = layout::key(layout::HISTORY, entry.id.clone());
            if let Ok(h) = from_json::<HistoryRecord>(&key, &entry.record)
                && &h.memory_id == id
            {
                if let Ok(memory) = parse_memory(&h.markdown) {
                    versions.push(memory);
                }
                plan.add(Action::remove(key, entry.record));
            }
        }
        Ok(versions)
    }

    /// The ids of the sessions some memory other than `id` rests on.
    async fn sessions_resting_on_others(&self, id: &MemoryId) -> Result<BTreeSet<String>> {
        let mut out = BTreeSet::new();
        for entry in self.list_all(layout::MEMORIES).await? {
            if let Some(memory) = self.parse_entry(&entry.id, &entry.record)
                && &memory.id != id
            {
                out.extend(memory.sources.iter().map(|s| s.as_str().to_owned()));
            }
        }
        Ok(out)
    }

    /// The action that purges `needles` (case-folded) from a session: messages
    /// carrying one are redacted when `keep_messages`, removed otherwise (and the
    /// session with them when none is left). `substring`: a needle matches
    /// anywhere, not only as a whole word. `None` when no message carries one.
    fn purge_session(
        &self,
        key: Key,
        record: Record,
        mut session: SessionRecord,
        needles: &BTreeSet<String>,
        keep_messages: bool,
        substring: bool,
    ) -> Option<Action> {
        let was_sealed = self
            .seal
            .as_ref()
            .is_some_and(|k| k.verify_session(&session));
        let mut touched = 0;
        let mut kept = Vec::with_capacity(session.messages.len());
        for mut message in std::mem::take(&mut session.messages) {
            let mut spans: Vec<std::ops::Range<usize>> = needles
                .iter()
                .flat_map(|n| {
                    if substring {
                        substring_spans(&message.content, n)
                    } else {
                        token_spans(&message.content, n)
                    }
                })
                .collect();
            if spans.is_empty() {
                kept.push(message);
                continue;
            }
            touched += 1;
            if keep_messages {
                spans.sort_by_key(|r| r.start);
                message.content = redact(&message.content, &spans);
                kept.push(message);
            }
        }
        if touched == 0 {
            return None;
        }
        if kept.is_empty() {
            return Some(Action {
                messages: touched,
                ..Action::remove(key, record)
            });
        }
        session.messages = kept;
        if !session.redactions.iter().any(|r| r == "purge") {
            session.redactions.push("purge".into());
        }
        if was_sealed {
            self.seal_session(&mut session);
        }
        let value = String::from_utf8(to_json(&session).to_vec()).expect("JSON is UTF-8");
        Some(Action {
            key,
            record,
            value: Some(value),
            messages: touched,
        })
    }

    /// Journals and applies `actions` with `extra` ops and a generation bump,
    /// recording `events` with them.
    async fn commit_actions(
        &self,
        lease: &HeldLease,
        id: &str,
        actions: &[Action],
        extra: Vec<Op>,
        events: Vec<Event>,
    ) -> Result<()> {
        let mut ops: Vec<Op> = actions.iter().map(Action::op).collect();
        ops.extend(extra);
        let (generation, record) = self.read_generation().await?;
        ops.push(self.bump_op(generation, record.as_ref()));
        self.commit(lease, id, ops, events).await?;
        Ok(())
    }
}

/// A `memory-purged` event for each memory `actions` remove.
fn purged_events(actions: &[Action]) -> Vec<Event> {
    actions
        .iter()
        .filter(|a| a.key.namespace.as_str() == layout::MEMORIES)
        .filter_map(|a| MemoryId::new(a.key.id.as_str()).ok())
        .map(|memory| Event::MemoryPurged { memory })
        .collect()
}

fn session_ids(actions: &[Action]) -> Vec<SessionId> {
    actions
        .iter()
        .filter(|a| a.key.namespace.as_str() == layout::SESSIONS)
        .filter_map(|a| SessionId::new(a.key.id.as_str()).ok())
        .collect()
}

/// Whether any string (or object key) at any depth holds `folded`.
fn value_holds(value: &serde_json::Value, folded: &str) -> bool {
    match value {
        serde_json::Value::String(s) => s.to_lowercase().contains(folded),
        serde_json::Value::Array(items) => items.iter().any(|v| value_holds(v, folded)),
        serde_json::Value::Object(map) => map
            .iter()
            .any(|(k, v)| k.to_lowercase().contains(folded) || value_holds(v, folded)),
        _ => false,
    }
}

/// The byte ranges of `text` where `folded` occurs, in any case.
fn substring_spans(text: &str, folded: &str) -> Vec<std::ops::Range<usize>> {
    regex::RegexBuilder::new(&regex::escape(folded))
        .case_insensitive(true)
        .build()
        .map(|re| re.find_iter(text).map(|m| m.range()).collect())
        .unwrap_or_default()
}

/// `text` with every range (sorted by start; overlaps merged) replaced by [`PURGED_MARK`].
fn redact(text: &str, spans: &[std::ops::Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in spans {
        if span.end <= at {
            continue;
        }
        out.push_str(&text[at..span.start.max(at)]);
        if span.start >= at {
            out.push_str(PURGED_MARK);
        }
        at = span.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_replaces_each_span_once_and_merges_overlaps() {
        let text = "call Ann at 555-0199, Ann said";
        let mut spans = token_spans(text, "ann");
        spans.extend(token_spans(text, "555-0199"));
        spans.sort_by_key(|r| r.start);
        assert_eq!(
            redact(text, &spans),
            "call [PURGED] at [PURGED], [PURGED] said"
        );
        assert_eq!(redact("abcdef", &[1..4, 2..5]), "a[PURGED]f");
        assert_eq!(substring_spans("Phone PHONE phone", "phone").len(), 3);
        // Whole words only, as provenance finds them.
        assert!(token_spans("Annabel", "ann").is_empty());
    }

    #[test]
    fn every_layout_namespace_says_how_a_scope_purge_treats_it() {
        // A namespace the engine writes must be declared, with its rule.
        for ns in [
            layout::MEMORIES,
            layout::SESSIONS,
            layout::QUARANTINE,
            layout::TRASH,
            layout::HISTORY,
            layout::AUDIT,
            layout::PLANS,
            layout::STATE,
            layout::JOURNAL,
        ] {
            assert!(layout::scope_of(ns).is_some(), "{ns} is not declared");
        }
        let mut names: Vec<&str> = layout::NAMESPACES.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), layout::NAMESPACES.len(), "declared twice");
    }
}
