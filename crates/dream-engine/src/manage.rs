//! What a person does directly: remember, list, get, forget, purge, history,
//! restore, the trash, the quarantine, the audit log, stats and imports. Every
//! memory mutation here goes through the same write gate and the same journaled,
//! fenced, generation-bumping commit as a dream pass.

use chrono::{DateTime, Duration, Utc};
use dream_core::store::MAX_BATCH_OPS;
use dream_core::{Memory, MemoryId, MemoryKind, MemoryStatus, RecordId, Role, Scope, parse_memory};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::dream::{AuditEntry, Dream};
use crate::error::{DreamError, Result};
use crate::events::Event;
use crate::gate::{
    Admission, admit, apply_support, quarantine_record, scan_memory, validate_fields,
};
use crate::journal::Op;
use crate::layout::{self, hash_bytes};
use crate::lease::HeldLease;
use crate::provenance::Support;
use crate::records::{
    Actor, AuditAction, AuditRecord, HistoryRecord, ProposalKind, QuarantineRecord,
    QuarantineSource, TrashRecord, from_json, to_json,
};

/// Most memories one import call takes.
pub const MAX_IMPORT: usize = 1000;

/// A memory a person asks Dream to remember. The engine assigns its id, scope
/// and timestamps; it is pinned (never pruned, never changed by a pass).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewMemory {
    /// Short name (single line).
    pub name: String,
    /// One-line description.
    pub description: String,
    /// What it is about.
    pub kind: MemoryKind,
    /// The body.
    pub content: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Nested metadata (depth ≤ 8).
    pub metadata: Map<String, Value>,
    /// When it stops being current, if ever.
    pub expires_at: Option<DateTime<Utc>>,
}

impl NewMemory {
    /// A memory with a name, a kind and a body; no description, tags or metadata.
    pub fn new(kind: MemoryKind, name: impl Into<String>, content: impl Into<String>) -> Self {
        NewMemory {
            name: name.into(),
            description: String::new(),
            kind,
            content: content.into(),
            tags: Vec::new(),
            metadata: Map::new(),
            expires_at: None,
        }
    }

    /// The same memory with a description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }
}

/// What `remember` did.
#[derive(Debug, Clone, PartialEq)]
pub enum Remembered {
    /// Stored, pinned.
    Stored(Box<Memory>),
    /// The scanner found it instruction- or secret-shaped: quarantined (redacted).
    Quarantined {
        /// The quarantine entry.
        entry: String,
        /// The rules that fired.
        rules: Vec<String>,
    },
}

/// Where imported memories come from: their provenance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportSource {
    /// The person's own notes: trusted like `remember` (evidence `user`).
    Person,
    /// Another system's export or any file the person has not vouched for:
    /// evidence `tool`, held at recall until a person confirms each memory.
    Untrusted,
    /// What an agent wrote: its own memory files (Claude Code's, Codex's) or
    /// Anthropic's memory tool. Evidence `assistant`: the agent's word, never
    /// the person's, held at recall until a person confirms each memory.
    Agent,
}

impl ImportSource {
    /// Who the audit log names for an import from this source.
    fn actor(self) -> Actor {
        match self {
            ImportSource::Agent => Actor::Agent,
            ImportSource::Person | ImportSource::Untrusted => Actor::Person,
        }
    }

    /// The audit reason for a memory this source wrote (`replaced`: over an
    /// existing one, whose prior version goes to history).
    fn written(self, replaced: bool) -> &'static str {
        match (self, replaced) {
            (ImportSource::Agent, true) => {
                "replaced by the agent's version, held until confirmed (the prior version is in history)"
            }
            (ImportSource::Agent, false) => "written by an agent, held until confirmed",
            (_, true) => "replaced by an import (the prior version is in history)",
            (_, false) => "imported",
        }
    }
}

/// What `confirm` found a memory to be before a person confirmed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confirmed {
    /// It was trusted already; nothing changed.
    AlreadyTrusted,
    /// It did not carry this store's seal; it is sealed now.
    WasUnverified,
    /// It rested on tool, assistant or system text (or sends data out); it is the
    /// person's word now.
    WasUnconfirmed,
    /// The person rewrote it ([`Dream::confirm_edited`]): their text is their word now.
    Edited,
}

/// A memory in the trash.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrashEntry {
    /// The trash entry's id.
    pub id: String,
    /// When it was trashed.
    pub at: DateTime<Utc>,
    /// When it will be purged.
    pub expires_at: DateTime<Utc>,
    /// Why it was trashed.
    pub reason: String,
    /// Who trashed it.
    pub actor: Actor,
    /// The memory as it was (held form when its copy did not verify).
    pub memory: Memory,
    /// Whether the copy carries this store's seal: `false` for an entry edited
    /// on disk or planted; restoring it gives a held memory.
    pub verified: bool,
    /// SHA-256 of the copy's bytes, to see that an entry changed.
    pub hash: String,
    /// The first line of its body (control characters are the printer's to escape).
    pub first_line: String,
}

/// A prior version of a memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryEntry {
    /// The history entry's id (`dream restore ID --entry ENTRY` brings it back).
    pub id: String,
    /// Whether the copy carries this store's seal: `false` for a copy edited on
    /// disk, planted, or kept before history was sealed; it is shown, and
    /// restored, held.
    pub verified: bool,
    /// When it was replaced.
    pub at: DateTime<Utc>,
    /// What replaced it (`updated`, `superseded`, `released`).
    pub action: AuditAction,
    /// The pass, if any.
    pub pass: Option<String>,
    /// The version (held form when its copy did not verify).
    pub memory: Memory,
}

/// A copy a restore brings back (the memory, whether it verified) and the trash
/// record it came from, if it came from the trash.
type RestoredCopy = (
    (Memory, bool),
    Option<(dream_core::Key, dream_core::Record)>,
);

/// What `forget_purge` removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Purged {
    /// Whether the memory itself was still there.
    pub memory: bool,
    /// History versions removed.
    pub history: usize,
    /// Trash copies removed.
    pub trash: usize,
}

/// What an import does with a memory whose id exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Existing {
    /// Refuse it (the others are imported).
    #[default]
    Refuse,
    /// Replace it: an unchanged one is left untouched, a changed one is updated
    /// with its prior version in history (a quarantined new version leaves it).
    Replace,
}

/// What an import did, per memory.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ImportReport {
    /// Imported ids (new memories).
    pub imported: Vec<MemoryId>,
    /// Existing memories updated to the imported version (prior one in history).
    pub replaced: Vec<MemoryId>,
    /// Existing memories the import left alone: they already said the same.
    pub unchanged: Vec<MemoryId>,
    /// Quarantine entries (instruction- or secret-shaped memories).
    pub quarantined: Vec<String>,
    /// Refused, by position in the input, with the reason.
    pub rejected: Vec<(usize, String)>,
    /// Foreign versions of the person's memories (`--untrusted --replace`):
    /// `(the person's memory, the held alternative kept beside it under a new id)`.
    pub held_beside: Vec<(MemoryId, MemoryId)>,
}

/// A memory as an export carries it: lowered to its held form when its record
/// did not pass the verified read, so a round trip can never raise its trust.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Exported {
    /// The memory (`unconfirmed`, evidence `tool`, unpinned when not verified).
    #[serde(flatten)]
    pub memory: Memory,
    /// Whether its record carries this store's seal.
    pub verified: bool,
}

/// Counts for a dashboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// The scope.
    pub scope: Scope,
    /// Memories in this scope.
    pub memories: usize,
    /// Of which active.
    pub active: usize,
    /// Of which pinned.
    pub pinned: usize,
    /// Pending sessions in this scope that a pass takes.
    pub pending_sessions: usize,
    /// Pending sessions held for the person: passes left part of each unstored
    /// too many times (see [`Dream::stuck_sessions`]); a forced pass retries them.
    pub stuck_sessions: usize,
    /// Sessions in the log (every scope).
    pub logged_sessions: usize,
    /// Quarantine entries in this scope.
    pub quarantined: usize,
    /// Trash entries in this scope.
    pub trash: usize,
    /// The store's generation.
    pub generation: u64,
    /// The last successful pass.
    pub last_success: Option<DateTime<Utc>>,
    /// The consolidator.
    pub consolidator: String,
    /// The store's name.
    pub store: String,
}

fn json_string<T: Serialize>(value: &T) -> String {
    String::from_utf8(to_json(value).to_vec()).expect("JSON is UTF-8")
}

impl Dream {
    /// Remembers what a person states: pinned, through the same write gate as a
    /// pass (field rules, then the recursive scan). Instruction- or secret-shaped
    /// memories are quarantined (redacted) instead.
    pub async fn remember(&self, new: NewMemory) -> Result<Remembered> {
        // The person's own act, pinned; a standing order that sends data out is
        // still held.
        self.remember_with(new, Role::User).await
    }

    /// Remembers what someone other than the person states — an agent over MCP
    /// (`Role::Assistant`), a tool (`Role::Tool`): through the same write gate as
    /// [`Dream::remember`] (field rules, then the recursive scan; instruction- or
    /// secret-shaped memories are quarantined), but never the person's word and
    /// never pinned. It is stored `status: unconfirmed` with evidence `role`, so
    /// recall holds it (`unconfirmed-source`) until a person runs `confirm`.
    /// `Role::User` is refused: only [`Dream::remember`] speaks for the person.
    pub async fn remember_as(&self, new: NewMemory, role: Role) -> Result<Remembered> {
        if role == Role::User {
            return Err(DreamError::invalid(
                "role",
                "remember_as never records the person's word; use remember",
            ));
        }
        self.remember_with(new, role).await
    }

    /// One memory from `role`: the person's (pinned, trusted) or another's (held).
    async fn remember_with(&self, new: NewMemory, role: Role) -> Result<Remembered> {
        let now = self.now();
        let mut memory = Memory::new(
            MemoryId::new(self.ids.next(now))?,
            new.kind,
            new.name,
            new.description,
            new.content,
            now,
        );
        let by_person = role == Role::User;
        memory.scope = self.scope.clone();
        memory.tags = new.tags;
        memory.metadata = new.metadata;
        memory.expires_at = new.expires_at;
        memory.pinned = by_person;
        memory.confidence = 1.0;
        apply_support(
            &mut memory,
            &Support {
                roles: vec![role],
                by_person,
            },
        );
        let admission =
            admit(&self.scanners, &memory).map_err(|r| DreamError::invalid("memory", r))?;
        self.under_lease(async |lease| self.remember_locked(lease, memory, admission, now).await)
            .await
    }

    async fn remember_locked(
        &self,
        lease: &HeldLease,
        memory: Memory,
        admission: Admission,
        now: DateTime<Utc>,
    ) -> Result<Remembered> {
        let op_id = self.ids.next(now);
        match admission {
            Admission::Quarantine(scan) => {
                let q = quarantine_record(
                    &self.scanners,
                    &self.ids,
                    now,
                    &self.scope,
                    QuarantineSource::Remember,
                    ProposalKind::Create,
                    &memory,
                    &scan,
                    Vec::new(),
                );
                let ops = vec![
                    self.quarantine_op(&q)?,
                    self.audit_op(
                        AuditEntry::new(
                            AuditAction::Quarantined,
                            remembered_by(&memory),
                            format!("remembered memory quarantined as entry {}", q.id),
                        )
                        .memory(&memory.id)
                        .rules(scan.rules())
                        .hash(q.hash.clone()),
                    ),
                ];
                let event = Event::Quarantined {
                    entry: q.id.clone(),
                    rules: scan.rules(),
                };
                self.commit(lease, &op_id, ops, vec![event]).await?;
                Ok(Remembered::Quarantined {
                    entry: q.id,
                    rules: scan.rules(),
                })
            }
            Admission::Admit { rules } => {
                let (generation, record) = self.read_generation().await?;
                let (text, hash) = self.rendered(&memory);
                let ops = vec![
                    Op::create(layout::key(layout::MEMORIES, memory.id.clone()), text),
                    self.audit_op(
                        AuditEntry::new(
                            AuditAction::Remembered,
                            remembered_by(&memory),
                            if memory.pinned {
                                "remembered (pinned)".to_owned()
                            } else {
                                format!(
                                    "remembered for review (evidence {}): held until confirmed",
                                    memory
                                        .evidence
                                        .iter()
                                        .map(|r| r.as_str())
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                )
                            },
                        )
                        .memory(&memory.id)
                        .rules(rules)
                        .hash(hash.clone()),
                    ),
                    self.bump_op(generation, record.as_ref()),
                ];
                let event = Event::MemoryCreated {
                    memory: memory.id.clone(),
                };
                self.commit(lease, &op_id, ops, vec![event]).await?;
                Ok(Remembered::Stored(Box::new(memory)))
            }
        }
    }

    /// The memories of this scope (every status), oldest first, each through the
    /// one verified read: one whose record does not carry this store's seal is
    /// shown in its held form (`unconfirmed`, evidence `tool`, unpinned), as
    /// [`Dream::export`] writes it.
    pub async fn list(&self) -> Result<Vec<Memory>> {
        Ok(self.export().await?.into_iter().map(|e| e.memory).collect())
    }

    /// One memory of this scope, through the one verified read (see [`Dream::list`]).
    pub async fn get(&self, id: &MemoryId) -> Result<Option<Memory>> {
        Ok(self.read_memory(id).await?.map(|(mut m, record)| {
            if !self.verified(&RecordId::from(id.clone()), &record) {
                crate::seal::held(&mut m);
            }
            m
        }))
    }

    /// Moves a memory to the trash (restorable for `trash_days`).
    pub async fn forget(&self, id: &MemoryId) -> Result<()> {
        self.forget_by(id, Actor::Person).await
    }

    /// [`Dream::forget`] done by `actor` (an agent deleting its own note), so
    /// the trash and the audit log name who did it.
    pub(crate) async fn forget_by(&self, id: &MemoryId, actor: Actor) -> Result<()> {
        self.under_lease(async |lease| self.forget_locked(lease, id, actor).await)
            .await
    }

    async fn forget_locked(&self, lease: &HeldLease, id: &MemoryId, actor: Actor) -> Result<()> {
        let Some((memory, record)) = self.read_memory(id).await? else {
            return Err(DreamError::not_found("memory", id));
        };
        let now = self.now();
        let (generation, gen_record) = self.read_generation().await?;
        // The trash copy is sealed only in the form the verified read allows: a
        // memory that did not verify goes to the trash held.
        let mut memory = memory;
        let verified = self.verified(&RecordId::from(id.clone()), &record);
        if !verified {
            crate::seal::held(&mut memory);
        }
        let (text, hash) = self.rendered(&memory);
        let trash = TrashRecord {
            memory_id: id.clone(),
            scope: self.scope.clone(),
            at: now,
            reason: match actor {
                Actor::Agent => "deleted by an agent".into(),
                _ => "forgotten by a person".into(),
            },
            actor,
            pass: None,
            markdown: text,
        };
        // The version forgotten is a prior version too: `history` shows it
        // after a restore.
        let op_id = self.ids.next(now);
        let mut ops = self
            .history_ops(id, &memory, verified, AuditAction::Forgotten, &op_id, now)
            .await?;
        ops.extend([
            Op::create(
                layout::key(layout::TRASH, self.ids.record(now)),
                json_string(&trash),
            ),
            Op::delete(layout::key(layout::MEMORIES, id.clone()), &record),
            self.audit_op(
                AuditEntry::new(AuditAction::Forgotten, actor, "forgotten (to the trash)")
                    .memory(id)
                    .hash(hash),
            ),
            self.bump_op(generation, gen_record.as_ref()),
        ]);
        let event = Event::MemoryTrashed {
            memory: id.clone(),
            why: "forgotten".into(),
        };
        self.commit(lease, &op_id, ops, vec![event]).await?;
        Ok(())
    }

    /// Prior versions of a memory, newest first (at most `history_per_memory`).
    pub async fn history(&self, id: &MemoryId) -> Result<Vec<HistoryEntry>> {
        let entries = self
            .list_prefix(layout::HISTORY, &layout::history_prefix(id.as_str()))
            .await?;
        let mut out = Vec::new();
        for entry in entries.iter().rev() {
            let key = layout::key(layout::HISTORY, entry.id.clone());
            let h: HistoryRecord = from_json(&key, &entry.record)?;
            if &h.memory_id != id {
                continue;
            }
            let (memory, verified) = self.kept_copy(&key, &h.memory_id, &h.markdown)?;
            if memory.scope != self.scope {
                continue;
            }
            out.push(HistoryEntry {
                id: entry.id.to_string(),
                verified,
                at: h.at,
                action: h.action,
                pass: h.pass,
                memory,
            });
            if out.len() >= self.options.history_per_memory {
                break;
            }
        }
        Ok(out)
    }

    /// Every trash record (all scopes) with its id and stored record.
    async fn trash_records(&self) -> Result<Vec<(RecordId, dream_core::Record, TrashRecord)>> {
        let mut out = Vec::new();
        for entry in self.list_all(layout::TRASH).await? {
            let key = layout::key(layout::TRASH, entry.id.clone());
            let t: TrashRecord = from_json(&key, &entry.record)?;
            out.push((entry.id, entry.record, t));
        }
        Ok(out)
    }

    /// A copy of memory `id` kept inside another record (a trash entry, a
    /// history version) through the one verified read: held form (see
    /// [`crate::seal::held`]) when it does not carry this store's seal, and
    /// whether it did.
    fn kept_copy(
        &self,
        key: &dream_core::Key,
        id: &MemoryId,
        markdown: &str,
    ) -> Result<(Memory, bool)> {
        let mut memory = parse_memory(markdown).map_err(|e| DreamError::corrupt(key, e))?;
        let verified = memory.id == *id && self.verified_text(id, markdown);
        if !verified {
            crate::seal::held(&mut memory);
        }
        Ok((memory, verified))
    }

    fn trash_expiry(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        at + Duration::days(i64::from(self.options.trash_days))
    }

    /// The trash of this scope, oldest first; expired entries are not shown.
    pub async fn trash(&self) -> Result<Vec<TrashEntry>> {
        let now = self.now();
        let mut out = Vec::new();
        for (rid, _, t) in self.trash_records().await? {
            let expires_at = self.trash_expiry(t.at);
            if t.scope != self.scope || expires_at <= now {
                continue;
            }
            let key = layout::key(layout::TRASH, rid.clone());
            let (memory, verified) = self.kept_copy(&key, &t.memory_id, &t.markdown)?;
            out.push(TrashEntry {
                id: rid.to_string(),
                at: t.at,
                expires_at,
                reason: t.reason,
                actor: t.actor,
                first_line: memory.content.lines().next().unwrap_or("").to_owned(),
                memory,
                verified,
                hash: hash_bytes(t.markdown.as_bytes()),
            });
        }
        Ok(out)
    }

    /// Brings a memory back from the trash (its newest unexpired copy). Refused
    /// when a memory with its id exists, or when the scanner now flags it.
    pub async fn restore(&self, id: &MemoryId) -> Result<Memory> {
        self.restore_from(id, None).await
    }

    /// Brings back one trash entry (an id from [`Dream::trash`]) or prior
    /// version (an id from [`Dream::history`]) of memory `id`. When the memory
    /// exists, the entry replaces it and the current version goes to history.
    /// A copy that does not carry this store's seal comes back held. Refused
    /// when the scanner now flags the entry.
    pub async fn restore_entry(&self, id: &MemoryId, entry: &str) -> Result<Memory> {
        self.restore_from(id, Some(entry)).await
    }

    async fn restore_from(&self, id: &MemoryId, entry: Option<&str>) -> Result<Memory> {
        self.under_lease(async |lease| self.restore_locked(lease, id, entry).await)
            .await
    }

    /// The copy of memory `id` a restore brings back, through the one verified
    /// read (see [`Dream::kept_copy`]): the trash entry `entry` (or the newest
    /// unexpired one), else the history version `entry`; with the trash record
    /// to delete when it came from the trash.
    async fn restorable(
        &self,
        id: &MemoryId,
        entry: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<RestoredCopy> {
        let trashed = self
            .trash_records()
            .await?
            .into_iter()
            .rfind(|(rid, _, t)| {
                &t.memory_id == id
                    && t.scope == self.scope
                    && self.trash_expiry(t.at) > now
                    && entry.is_none_or(|e| rid.as_str() == e)
            });
        let (key, copy, trashed) = match (trashed, entry) {
            (Some((rid, record, t)), _) => {
                let key = layout::key(layout::TRASH, rid);
                let copy = self.kept_copy(&key, &t.memory_id, &t.markdown)?;
                (key.clone(), copy, Some((key, record)))
            }
            (None, Some(e)) => {
                let missing = || DreamError::not_found("trash or history entry", e);
                let rid = RecordId::new(e).map_err(|_| missing())?;
                if !rid
                    .as_str()
                    .starts_with(&layout::history_prefix(id.as_str()))
                {
                    return Err(missing());
                }
                let key = layout::key(layout::HISTORY, rid);
                let Some(record) = self.store.get(&key).await? else {
                    return Err(missing());
                };
                let h: HistoryRecord = from_json(&key, &record)?;
                let copy = self.kept_copy(&key, &h.memory_id, &h.markdown)?;
                if &h.memory_id != id || copy.0.scope != self.scope {
                    return Err(missing());
                }
                (key, copy, None)
            }
            (None, None) => return Err(DreamError::not_found("trash entry for memory", id)),
        };
        if copy.0.id != *id {
            return Err(DreamError::Refused {
                reason: format!(
                    "entry {} holds another memory than {id}; it stays where it is",
                    key.id
                ),
            });
        }
        Ok((copy, trashed))
    }

    async fn restore_locked(
        &self,
        lease: &HeldLease,
        id: &MemoryId,
        entry: Option<&str>,
    ) -> Result<Memory> {
        let now = self.now();
        let key = layout::key(layout::MEMORIES, id.clone());
        let current = match self.store.get(&key).await? {
            Some(record) if entry.is_some() => match self.parse_entry(&key.id, &record) {
                Some(m) if m.scope == self.scope => Some((m, record)),
                _ => {
                    return Err(DreamError::AlreadyExists {
                        what: "memory",
                        id: id.to_string(),
                    });
                }
            },
            Some(_) => {
                return Err(DreamError::AlreadyExists {
                    what: "memory",
                    id: id.to_string(),
                });
            }
            None => None,
        };
        let (copy, trashed) = self.restorable(id, entry, now).await?;
        let (mut memory, verified) = copy;
        let place = if trashed.is_some() {
            "the trash"
        } else {
            "history"
        };
        memory.scope = self.scope.clone();
        let scan = scan_memory(&self.scanners, &memory);
        if scan.blocks() {
            return Err(DreamError::Refused {
                reason: format!(
                    "the scanner flags this memory now (rules: {}); it stays in {place}",
                    scan.rules().join(", ")
                ),
            });
        }
        let op_id = self.ids.next(now);
        let (generation, gen_record) = self.read_generation().await?;
        let (text, hash) = self.rendered(&memory);
        let mut ops = Vec::new();
        match &current {
            Some((before, record)) => {
                ops.extend(
                    self.history_ops(
                        id,
                        before,
                        self.verified(&key.id, record),
                        AuditAction::Restored,
                        &op_id,
                        now,
                    )
                    .await?,
                );
                ops.push(Op::put(key, text, Some(record)));
            }
            None => ops.push(Op::create(key, text)),
        }
        if let Some((tkey, record)) = trashed {
            ops.push(Op::delete(tkey, &record));
        }
        let reason = if verified {
            format!("restored from {place}")
        } else {
            format!(
                "restored from {place} held: its copy did not carry this store's seal (edited \
                 or planted); unconfirmed until a person confirms it"
            )
        };
        ops.extend([
            self.audit_op(
                AuditEntry::new(AuditAction::Restored, Actor::Person, reason)
                    .memory(id)
                    .hash(hash),
            ),
            self.bump_op(generation, gen_record.as_ref()),
        ]);
        let event = Event::MemoryRestored { memory: id.clone() };
        self.commit(lease, &op_id, ops, vec![event]).await?;
        Ok(memory)
    }

    /// Removes trash entries past `trash_days` now (a pass also does it); returns how many.
    pub async fn expire_trash(&self) -> Result<usize> {
        self.under_lease(async |lease| {
            let now = self.now();
            let mut ops = Vec::new();
            let expired = self.expiry_ops(now, &mut ops).await?;
            let mut events = Vec::new();
            if expired > 0 {
                let (generation, gen_record) = self.read_generation().await?;
                ops.push(self.bump_op(generation, gen_record.as_ref()));
                events.push(Event::TrashExpired { count: expired });
            }
            self.commit(lease, &self.ids.next(now), ops, events).await?;
            Ok(expired)
        })
        .await
    }

    /// The write of quarantine entry `q`, sealed by this store
    /// ([`crate::seal::seal_quarantine`]).
    pub(crate) fn quarantine_op(&self, q: &QuarantineRecord) -> Result<Op> {
        let mut q = q.clone();
        crate::seal::seal_quarantine(self.seal.as_ref(), &mut q);
        Ok(Op::create(
            layout::key(layout::QUARANTINE, RecordId::new(&q.id)?),
            json_string(&q),
        ))
    }

    /// The quarantine of this scope, oldest first (secrets redacted).
    pub async fn quarantine(&self) -> Result<Vec<QuarantineRecord>> {
        let mut out = Vec::new();
        for entry in self.list_all(layout::QUARANTINE).await? {
            let key = layout::key(layout::QUARANTINE, entry.id.clone());
            let q: QuarantineRecord = from_json(&key, &entry.record)?;
            if q.scope == self.scope {
                out.push(q);
            }
        }
        Ok(out)
    }

    async fn quarantine_entry(
        &self,
        entry: &str,
    ) -> Result<(dream_core::Key, dream_core::Record, QuarantineRecord)> {
        let key = layout::key(layout::QUARANTINE, RecordId::new(entry)?);
        let Some(record) = self.store.get(&key).await? else {
            return Err(DreamError::not_found("quarantine entry", entry));
        };
        let q: QuarantineRecord = from_json(&key, &record)?;
        if q.scope != self.scope {
            return Err(DreamError::not_found("quarantine entry", entry));
        }
        Ok((key, record, q))
    }

    /// Releases a quarantined proposal into `memories`: a person's decision,
    /// recorded in the audit log with `note`'s hash. A proposal with a secret
    /// finding can never be released. It admits the text with the trust the
    /// proposal had (an agent's stays held until `confirm`); an entry that does
    /// not carry this store's seal (edited on disk, planted) is released held.
    pub async fn release(&self, entry: &str, note: &str) -> Result<Memory> {
        self.under_lease(async |lease| self.release_locked(lease, entry, note).await)
            .await
    }

    async fn release_locked(&self, lease: &HeldLease, entry: &str, note: &str) -> Result<Memory> {
        let (qkey, qrecord, q) = self.quarantine_entry(entry).await?;
        if q.has_secret() {
            return Err(DreamError::Refused {
                reason: "a proposal with a secret finding can never be released; drop it".into(),
            });
        }
        let scan = scan_memory(&self.scanners, &q.memory);
        if !scan.secret_rules().is_empty() {
            return Err(DreamError::Refused {
                reason: "the scanner finds a secret in this proposal; it can never be released"
                    .into(),
            });
        }
        validate_fields(&q.memory).map_err(|reason| DreamError::Refused {
            reason: format!("the proposal breaks a field rule: {reason}"),
        })?;
        let now = self.now();
        let mut memory = q.memory.clone();
        // Releasing admits the text, never more trust than the entry verifies
        // for: an entry edited on disk or planted is released held.
        if !crate::seal::verified_quarantine(self.seal.as_ref(), &q) {
            crate::seal::held(&mut memory);
        }
        memory.scope = self.scope.clone();
        memory.updated_at = now;
        let key = layout::key(layout::MEMORIES, memory.id.clone());
        let mut ops = Vec::new();
        match q.kind {
            ProposalKind::Create => {
                if self.store.get(&key).await?.is_some() {
                    return Err(DreamError::AlreadyExists {
                        what: "memory",
                        id: memory.id.to_string(),
                    });
                }
                let (text, _) = self.rendered(&memory);
                ops.push(Op::create(key, text));
            }
            ProposalKind::Update => {
                let Some((before, record)) = self.read_memory(&memory.id).await? else {
                    return Err(DreamError::not_found("memory", &memory.id));
                };
                ops.extend(
                    self.history_ops(
                        &memory.id,
                        &before,
                        self.verified(&key.id, &record),
                        AuditAction::Released,
                        entry,
                        now,
                    )
                    .await?,
                );
                let (text, _) = self.rendered(&memory);
                ops.push(Op::put(key, text, Some(&record)));
            }
        }
        ops.push(Op::delete(qkey, &qrecord));
        let mut reason = format!("quarantine entry {entry} released by a person");
        if !note.is_empty() {
            reason.push_str(&format!(" (note SHA-256 {})", hash_bytes(note.as_bytes())));
        }
        let rules = q.findings.iter().map(|f| f.rule.clone()).collect();
        ops.push(
            self.audit_op(
                AuditEntry::new(AuditAction::Released, Actor::Person, reason)
                    .memory(&memory.id)
                    .sessions(&q.sessions)
                    .rules(rules)
                    .hash(self.rendered(&memory).1),
            ),
        );
        let (generation, gen_record) = self.read_generation().await?;
        ops.push(self.bump_op(generation, gen_record.as_ref()));
        let event = Event::Released {
            entry: entry.to_owned(),
            memory: memory.id.clone(),
        };
        self.commit(lease, &self.ids.next(now), ops, vec![event])
            .await?;
        Ok(memory)
    }

    /// A person confirms memory `id`: a record without this store's seal (a hand
    /// edit, a planted file, a store moved on purpose) is sealed, and a memory
    /// held as `unconfirmed` becomes the person's word. Audited, with the prior
    /// version in history. Recall still scans it like any other record.
    pub async fn confirm(&self, id: &MemoryId) -> Result<Confirmed> {
        self.under_lease(async |lease| self.confirm_locked(lease, id, None).await)
            .await
    }

    /// A person rewrites memory `id` and so confirms it: `content` becomes its
    /// body, the person's word (evidence `user`), through the same scan, history
    /// and audit as [`Dream::confirm`]. Text the scanner flags is refused and
    /// nothing changes; unchanged text is a plain [`Dream::confirm`].
    pub async fn confirm_edited(&self, id: &MemoryId, content: String) -> Result<Confirmed> {
        self.under_lease(async |lease| self.confirm_locked(lease, id, Some(content)).await)
            .await
    }

    /// [`Dream::confirm`] for every memory of this scope that is held; the ids
    /// confirmed, with what each was. For a store the person reviewed, or moved on purpose.
    pub async fn confirm_all(&self) -> Result<Vec<(MemoryId, Confirmed)>> {
        let orient = self.orient().await?;
        let mut out = Vec::new();
        for (id, known) in &orient.memories {
            if known.verified && known.memory.status != MemoryStatus::Unconfirmed {
                continue;
            }
            let what = self.confirm(id).await?;
            if what != Confirmed::AlreadyTrusted {
                out.push((id.clone(), what));
            }
        }
        Ok(out)
    }

    async fn confirm_locked(
        &self,
        lease: &HeldLease,
        id: &MemoryId,
        edit: Option<String>,
    ) -> Result<Confirmed> {
        let Some((before, record)) = self.read_memory(id).await? else {
            return Err(DreamError::not_found("memory", id));
        };
        let key = layout::key(layout::MEMORIES, id.clone());
        let verified = self.verified(&key.id, &record);
        let unconfirmed = before.status == MemoryStatus::Unconfirmed;
        let edit = edit.filter(|content| *content != before.content);
        if verified && !unconfirmed && edit.is_none() {
            return Ok(Confirmed::AlreadyTrusted);
        }
        let now = self.now();
        let mut after = before.clone();
        if unconfirmed {
            after.status = MemoryStatus::Active;
            after.updated_at = now;
        }
        if let Some(content) = edit.clone() {
            after.content = content;
            after.updated_at = now;
            apply_support(
                &mut after,
                &Support {
                    roles: vec![Role::User],
                    by_person: true,
                },
            );
            if let Admission::Quarantine(scan) =
                admit(&self.scanners, &after).map_err(|reason| DreamError::Refused {
                    reason: format!("the edited memory breaks a field rule: {reason}"),
                })?
            {
                return Err(DreamError::Refused {
                    reason: format!(
                        "the scanner flags the edited text (rules: {}); nothing changed",
                        scan.rules().join(", ")
                    ),
                });
            }
        }
        validate_fields(&after).map_err(|reason| DreamError::Refused {
            reason: format!("the memory breaks a field rule: {reason}"),
        })?;
        let what = match (&edit, unconfirmed) {
            (Some(_), _) => Confirmed::Edited,
            (None, true) => Confirmed::WasUnconfirmed,
            (None, false) => Confirmed::WasUnverified,
        };
        let reason = match what {
            Confirmed::Edited => "edited and confirmed by a person",
            Confirmed::WasUnconfirmed => "confirmed by a person (was unconfirmed-source)",
            _ => "confirmed by a person (was unverified: not sealed by this store)",
        };
        let mut ops = self
            .history_ops(
                id,
                &before,
                verified,
                AuditAction::Confirmed,
                "confirm",
                now,
            )
            .await?;
        let (text, hash) = self.rendered(&after);
        ops.push(Op::put(key, text, Some(&record)));
        ops.push(
            self.audit_op(
                AuditEntry::new(AuditAction::Confirmed, Actor::Person, reason)
                    .memory(id)
                    .hash(hash),
            ),
        );
        let (generation, gen_record) = self.read_generation().await?;
        ops.push(self.bump_op(generation, gen_record.as_ref()));
        let event = Event::MemoryUpdated { memory: id.clone() };
        self.commit(lease, &self.ids.next(now), ops, vec![event])
            .await?;
        Ok(what)
    }

    /// Drops a quarantined proposal for good.
    pub async fn drop_quarantined(&self, entry: &str) -> Result<()> {
        self.under_lease(async |lease| {
            let (qkey, qrecord, q) = self.quarantine_entry(entry).await?;
            let ops = vec![
                Op::delete(qkey, &qrecord),
                self.audit_op(
                    AuditEntry::new(
                        AuditAction::QuarantineDropped,
                        Actor::Person,
                        format!("quarantine entry {entry} dropped by a person"),
                    )
                    .memory(&q.memory.id)
                    .hash(q.hash.clone()),
                ),
            ];
            let event = Event::QuarantineDropped {
                entry: entry.to_owned(),
            };
            self.commit(lease, &self.ids.next(self.now()), ops, vec![event])
                .await
        })
        .await?;
        Ok(())
    }

    /// The audit log of this scope since `since`, oldest first.
    pub async fn audit(&self, since: DateTime<Utc>) -> Result<Vec<AuditRecord>> {
        let ns = layout::namespace(layout::AUDIT);
        // From the start of the log when `since` is the earliest time (nothing precedes it).
        let mut after = since
            .checked_sub_signed(Duration::milliseconds(1))
            .map(layout::ulid_floor);
        let mut out = Vec::new();
        loop {
            let page = self
                .store
                .list(&ns, after.as_ref(), dream_core::store::MAX_LIST_LIMIT)
                .await?;
            for entry in page.entries {
                let key = layout::key(layout::AUDIT, entry.id.clone());
                let a: AuditRecord = from_json(&key, &entry.record)?;
                if a.scope == self.scope && a.at >= since {
                    out.push(a);
                }
            }
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// Counts for a dashboard.
    pub async fn stats(&self) -> Result<Stats> {
        let orient = self.orient().await?;
        let log = self.session_log().await?;
        let pending = log.to_dream(&self.scope, false).count();
        let stuck = log.pending(&self.scope).count() - pending;
        let memories: Vec<&Memory> = orient.memories.values().map(|k| &k.memory).collect();
        Ok(Stats {
            scope: self.scope.clone(),
            memories: memories.len(),
            active: memories
                .iter()
                .filter(|m| m.status == MemoryStatus::Active)
                .count(),
            pinned: memories.iter().filter(|m| m.pinned).count(),
            pending_sessions: pending,
            stuck_sessions: stuck,
            logged_sessions: log.entries.len(),
            quarantined: self.quarantine().await?.len(),
            trash: self.trash().await?.len(),
            generation: orient.generation,
            last_success: self.last_success().await?.map(|s| s.at),
            consolidator: self.consolidator.describe(),
            store: self.store.info().name,
        })
    }

    /// Every memory of this scope for an export, oldest first, each through the
    /// one verified read: a record without this store's seal is exported in its
    /// held form (`unconfirmed`, evidence `tool`) with `verified: false`, never
    /// as the person's word.
    pub async fn export(&self) -> Result<Vec<Exported>> {
        let mut out: Vec<Exported> = self
            .orient()
            .await?
            .memories
            .into_values()
            .map(|k| {
                let mut memory = k.memory;
                if !k.verified {
                    crate::seal::held(&mut memory);
                }
                Exported {
                    memory,
                    verified: k.verified,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            (a.memory.created_at, &a.memory.id).cmp(&(b.memory.created_at, &b.memory.id))
        });
        Ok(out)
    }

    /// Which of `ids` a stored memory (of any scope) already has; reads ids only.
    pub async fn existing(&self, ids: &[MemoryId]) -> Result<Vec<MemoryId>> {
        let present = self.list_ids(layout::MEMORIES).await?;
        Ok(ids
            .iter()
            .filter(|id| present.contains(&RecordId::from((*id).clone())))
            .cloned()
            .collect())
    }

    /// Imports Markdown memories (as `render_memory` writes them) through the
    /// write gate. See [`Dream::import`].
    pub async fn import_markdown(
        &self,
        texts: &[String],
        pin: bool,
        from: ImportSource,
    ) -> Result<ImportReport> {
        let mut report = ImportReport::default();
        let mut parsed = Vec::new();
        let mut positions = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            match parse_memory(text) {
                Ok(m) => {
                    parsed.push(m);
                    positions.push(i);
                }
                Err(e) => report
                    .rejected
                    .push((i, format!("not a Dream memory: {e}"))),
            }
        }
        let inner = self.import(parsed, pin, from).await?;
        report.imported = inner.imported;
        report.replaced = inner.replaced;
        report.unchanged = inner.unchanged;
        report.quarantined = inner.quarantined;
        report
            .rejected
            .extend(inner.rejected.into_iter().map(|(i, r)| (positions[i], r)));
        report.rejected.sort();
        Ok(report)
    }

    /// Imports memories through the write gate: each keeps its id (refused if one
    /// exists), joins this scope, is pinned only if `pin`, and is scanned;
    /// instruction- or secret-shaped ones are quarantined (redacted). A record
    /// never grants itself trust: its `pinned`, `supersedes`, `status`, `sources`,
    /// `evidence` and `scope` are the engine's — provenance from `from`, so an
    /// export of another system is held at recall until a person confirms it. At
    /// most [`MAX_IMPORT`] per call, under one lease, committed in batches, each
    /// bumping the generation. `max_memories` is enforced by the next pass.
    pub async fn import(
        &self,
        memories: Vec<Memory>,
        pin: bool,
        from: ImportSource,
    ) -> Result<ImportReport> {
        self.import_with(memories, pin, from, Existing::Refuse)
            .await
    }

    /// [`Dream::import`], doing with memories whose id exists what `existing` says.
    pub async fn import_with(
        &self,
        memories: Vec<Memory>,
        pin: bool,
        from: ImportSource,
        existing: Existing,
    ) -> Result<ImportReport> {
        if memories.len() > MAX_IMPORT {
            return Err(DreamError::invalid(
                "import",
                format!("more than {MAX_IMPORT} memories in one call"),
            ));
        }
        let now = self.now();
        let mut report = ImportReport::default();
        let mut admitted: Vec<(usize, Memory, Admission)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, mut m) in memories.into_iter().enumerate() {
            m.scope = self.scope.clone();
            m.supersedes.clear();
            m.sources.clear();
            import_trust(&mut m, from, pin);
            if m.created_at > now {
                m.created_at = now;
            }
            if m.updated_at > now || m.updated_at < m.created_at {
                m.updated_at = now;
            }
            if !seen.insert(m.id.clone()) {
                report
                    .rejected
                    .push((i, "the same id twice in one import".into()));
                continue;
            }
            match admit(&self.scanners, &m) {
                Ok(a) => admitted.push((i, m, a)),
                Err(reason) => report.rejected.push((i, reason)),
            }
        }
        if !admitted.is_empty() {
            self.under_lease(async |lease| {
                self.import_locked(lease, admitted, from, existing, &mut report)
                    .await
            })
            .await?;
        }
        report.rejected.sort();
        Ok(report)
    }

    /// Imports `admitted` under `lease`, in batches of at most `MAX_BATCH_OPS`
    /// writes, reading only which of their ids are already there.
    async fn import_locked(
        &self,
        lease: &HeldLease,
        admitted: Vec<(usize, Memory, Admission)>,
        from: ImportSource,
        existing: Existing,
        report: &mut ImportReport,
    ) -> Result<()> {
        let wanted = admitted
            .iter()
            .map(|(_, m, _)| RecordId::from(m.id.clone()))
            .collect();
        let present = self.present_among(layout::MEMORIES, &wanted).await?;
        let mut batch = ImportBatch::default();
        for (i, mut m, admission) in admitted {
            let key = layout::key(layout::MEMORIES, m.id.clone());
            let old = if present.contains(&key.id) {
                if existing == Existing::Refuse {
                    report
                        .rejected
                        .push((i, "a memory with this id exists".into()));
                    continue;
                }
                match self.read_memory(&m.id).await? {
                    Some(old) => Some(old),
                    None => {
                        report
                            .rejected
                            .push((i, "a memory with this id exists in another scope".into()));
                        continue;
                    }
                }
            } else {
                None
            };
            if let Some((before, _)) = &old
                && same_assertion(before, &m)
            {
                report.unchanged.push(m.id.clone());
                continue;
            }
            let now = self.now();
            let mut old = old;
            if let Some((before, record)) = &old
                && from != ImportSource::Person
                && persons_word(before, self.verified(&key.id, record))
            {
                // A foreign line never displaces the person's memory: it is kept
                // beside it, held, under an id of its own.
                let theirs = m.id.clone();
                m.id = MemoryId::new(self.ids.next(now))?;
                m.created_at = now;
                m.updated_at = now;
                report.held_beside.push((theirs, m.id.clone()));
                old = None;
            }
            let key = layout::key(layout::MEMORIES, m.id.clone());
            let mut ops = Vec::new();
            let done = match admission {
                Admission::Admit { rules } => {
                    if let Some((before, _)) = &old {
                        m.created_at = before.created_at;
                        m.updated_at = now;
                    }
                    let (text, hash) = self.rendered(&m);
                    match &old {
                        Some((before, record)) => {
                            let pass = batch.id(self, now);
                            ops.extend(
                                self.history_ops(
                                    &m.id,
                                    before,
                                    self.verified(&key.id, record),
                                    AuditAction::Imported,
                                    &pass,
                                    now,
                                )
                                .await?,
                            );
                            ops.push(Op::put(key, text, Some(record)));
                        }
                        None => ops.push(Op::create(key, text)),
                    }
                    let reason = from.written(old.is_some());
                    ops.push(
                        self.audit_op(
                            AuditEntry::new(AuditAction::Imported, from.actor(), reason)
                                .memory(&m.id)
                                .rules(rules)
                                .hash(hash),
                        ),
                    );
                    Imported::Memory {
                        id: m.id.clone(),
                        replaced: old.is_some(),
                    }
                }
                Admission::Quarantine(scan) => {
                    let kind = match old {
                        Some(_) => ProposalKind::Update,
                        None => ProposalKind::Create,
                    };
                    let q = quarantine_record(
                        &self.scanners,
                        &self.ids,
                        now,
                        &self.scope,
                        QuarantineSource::Import,
                        kind,
                        &m,
                        &scan,
                        Vec::new(),
                    );
                    ops.push(self.quarantine_op(&q)?);
                    ops.push(
                        self.audit_op(
                            AuditEntry::new(
                                AuditAction::Quarantined,
                                from.actor(),
                                format!("imported memory quarantined as entry {}", q.id),
                            )
                            .memory(&m.id)
                            .rules(scan.rules())
                            .hash(q.hash.clone()),
                        ),
                    );
                    Imported::Quarantined {
                        entry: q.id,
                        rules: scan.rules(),
                    }
                }
            };
            // One write more for the generation, one for each memory's event.
            if batch.ops.len() + batch.done.len() + ops.len() + 2 > MAX_BATCH_OPS {
                self.commit_import(lease, &mut batch, report).await?;
            }
            batch.ops.extend(ops);
            batch.done.push(done);
        }
        self.commit_import(lease, &mut batch, report).await
    }

    /// Commits what `batch` gathered (with a generation bump when a memory
    /// changed), reports it, and empties it.
    async fn commit_import(
        &self,
        lease: &HeldLease,
        batch: &mut ImportBatch,
        report: &mut ImportReport,
    ) -> Result<()> {
        if batch.ops.is_empty() {
            return Ok(());
        }
        let now = self.now();
        let id = batch.id(self, now);
        let mut ops = std::mem::take(&mut batch.ops);
        if batch
            .done
            .iter()
            .any(|d| matches!(d, Imported::Memory { .. }))
        {
            let (generation, gen_record) = self.read_generation().await?;
            ops.push(self.bump_op(generation, gen_record.as_ref()));
        }
        let events = batch.done.iter().map(Imported::event).collect();
        let outcome = self.commit(lease, &id, ops, events).await?;
        batch.id = None;
        for done in std::mem::take(&mut batch.done) {
            match done {
                Imported::Memory { id, replaced } => {
                    let key = layout::key(layout::MEMORIES, id.clone());
                    if outcome.mismatches.contains(&key) {
                        // Only a journaled commit skips a write, after its events
                        // were recorded: the feed names a change that a record
                        // edited under the lease kept from happening.
                        tracing::warn!(memory = %id, "an imported memory changed under the import; left as it was");
                        continue;
                    }
                    if replaced {
                        report.replaced.push(id);
                    } else {
                        report.imported.push(id);
                    }
                }
                Imported::Quarantined { entry, .. } => report.quarantined.push(entry),
            }
        }
        Ok(())
    }
}

/// The writes of an import gathered for one commit, and what each memory became.
#[derive(Default)]
struct ImportBatch {
    /// The commit's id, named once it is first needed.
    id: Option<String>,
    ops: Vec<Op>,
    done: Vec<Imported>,
}

impl ImportBatch {
    /// The commit's id (also the `pass` of the history it writes).
    fn id(&mut self, dream: &Dream, now: DateTime<Utc>) -> String {
        self.id.get_or_insert_with(|| dream.ids.next(now)).clone()
    }
}

/// What one imported memory became.
enum Imported {
    /// Stored: a new memory, or an existing one replaced.
    Memory { id: MemoryId, replaced: bool },
    /// Held in the quarantine.
    Quarantined { entry: String, rules: Vec<String> },
}

impl Imported {
    /// The event that records it.
    fn event(&self) -> Event {
        match self {
            Imported::Memory { id, replaced: true } => Event::MemoryUpdated { memory: id.clone() },
            Imported::Memory { id, .. } => Event::MemoryCreated { memory: id.clone() },
            Imported::Quarantined { entry, rules } => Event::Quarantined {
                entry: entry.clone(),
                rules: rules.clone(),
            },
        }
    }
}

/// Whether `imported` says what `stored` says: the same kind, words, tags,
/// expiry and metadata (timestamps and engine fields aside).
fn same_assertion(stored: &Memory, imported: &Memory) -> bool {
    stored.kind == imported.kind
        && stored.name == imported.name
        && stored.description == imported.description
        && stored.content == imported.content
        && stored.tags == imported.tags
        && stored.expires_at == imported.expires_at
        && stored.metadata == imported.metadata
}

/// The trust an imported memory gets: what its source allows (`from`), lowered
/// further by what the memory says of itself — its `status` and `evidence` (an
/// exported line carries them) — and never raised by them. A foreign import is
/// evidence `tool` whatever it claims; the person's import is the person's word
/// only when the line is `active` and its evidence (if any) includes `user`.
/// Retired statuses (superseded, revoked, expired) are kept. Pinned only if
/// `pin` and the person's word.
fn import_trust(m: &mut Memory, from: ImportSource, pin: bool) {
    let claimed = m.status;
    let evidence = std::mem::take(&mut m.evidence);
    let roles = match from {
        ImportSource::Untrusted => vec![Role::Tool],
        ImportSource::Agent => vec![crate::caller::Caller::Agent.stored_role(Role::User)],
        ImportSource::Person if evidence.is_empty() => vec![Role::User],
        ImportSource::Person => evidence,
    };
    let by_person = from == ImportSource::Person
        && claimed == MemoryStatus::Active
        && roles.contains(&Role::User);
    apply_support(m, &Support { roles, by_person });
    if matches!(
        claimed,
        MemoryStatus::Superseded | MemoryStatus::Revoked | MemoryStatus::Expired
    ) {
        m.status = claimed;
    }
    m.pinned = pin && m.status == MemoryStatus::Active;
}

/// Who remembered `memory`: the person (their own, pinned memory) or an agent
/// (see [`Dream::remember_as`]).
fn remembered_by(memory: &Memory) -> Actor {
    if memory.pinned {
        Actor::Person
    } else {
        Actor::Agent
    }
}

/// Whether a stored memory is the person's word: its record verified, current,
/// and resting on what the person said.
pub(crate) fn persons_word(m: &Memory, verified: bool) -> bool {
    verified
        && m.status == MemoryStatus::Active
        && (m.evidence.is_empty() || m.evidence.contains(&Role::User))
}
