//! The copies Dream keeps of a memory: its prior versions (history) and the
//! trash, each read through the one verified read, and restoring from either.

use chrono::{DateTime, Duration, Utc};
use dream_core::{Memory, MemoryId, RecordId, parse_memory};
use serde::Serialize;

use crate::error::{DreamError, Result};
use crate::events::Event;
use crate::gate::scan_memory;
use crate::handles::{Reader, Upkeep};
use crate::journal::Op;
use crate::layout::{self, hash_bytes};
use crate::lease::HeldLease;
use crate::records::{Actor, AuditAction, HistoryRecord, TrashRecord, from_json};
use crate::state::{AuditEntry, State};

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

impl Reader<'_> {
    pub(crate) async fn history(&self, id: &MemoryId) -> Result<Vec<HistoryEntry>> {
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
}

impl State {
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
}

impl Reader<'_> {
    pub(crate) async fn trash(&self) -> Result<Vec<TrashEntry>> {
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
}

impl Upkeep<'_> {
    pub(crate) async fn restore(&self, id: &MemoryId) -> Result<Memory> {
        self.restore_from(id, None).await
    }

    pub(crate) async fn restore_entry(&self, id: &MemoryId, entry: &str) -> Result<Memory> {
        self.restore_from(id, Some(entry)).await
    }

    async fn restore_from(&self, id: &MemoryId, entry: Option<&str>) -> Result<Memory> {
        self.under_lease(async |lease| self.restore_locked(lease, id, entry).await)
            .await
    }

    /// The copy of memory `id` a restore brings back, through the one verified
    /// read (see [`State::kept_copy`]): the trash entry `entry` (or the newest
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
        let (text, hash) = crate::seal::rendered(self.seal.as_ref(), &memory);
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

    pub(crate) async fn expire_trash(&self) -> Result<usize> {
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
}
