//! What the write gate held back and what waits for the person: the quarantine
//! (release, drop) and confirming what an agent or a pass wrote.

use dream_core::{Memory, MemoryId, MemoryStatus, RecordId, Role};
use serde::Serialize;

use crate::error::{DreamError, Result};
use crate::events::Event;
use crate::gate::{Admission, admit, apply_support, scan_memory, validate_fields};
use crate::handles::{Reader, Upkeep, Writer};
use crate::journal::Op;
use crate::layout::{self, hash_bytes};
use crate::lease::HeldLease;
use crate::provenance::Support;
use crate::records::{Actor, AuditAction, ProposalKind, QuarantineRecord, from_json};
use crate::state::{AuditEntry, State};

use super::json_string;

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
    ///
    /// [`Dream::confirm_edited`]: crate::Dream::confirm_edited
    Edited,
}

impl State {
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

    /// Quarantine entry `entry` of this scope, with its key and record.
    pub(crate) async fn quarantine_entry(
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
}

impl Reader<'_> {
    pub(crate) async fn quarantine(&self) -> Result<Vec<QuarantineRecord>> {
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
}

impl Writer<'_> {
    pub(crate) async fn release(&self, entry: &str, note: &str) -> Result<Memory> {
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
                let (text, _) = crate::seal::rendered(self.seal.as_ref(), &memory);
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
                let (text, _) = crate::seal::rendered(self.seal.as_ref(), &memory);
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
                    .hash(crate::seal::rendered(self.seal.as_ref(), &memory).1),
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

    pub(crate) async fn confirm(&self, id: &MemoryId) -> Result<Confirmed> {
        self.under_lease(async |lease| self.confirm_locked(lease, id, None).await)
            .await
    }

    pub(crate) async fn confirm_edited(&self, id: &MemoryId, content: String) -> Result<Confirmed> {
        self.under_lease(async |lease| self.confirm_locked(lease, id, Some(content)).await)
            .await
    }

    pub(crate) async fn confirm_all(&self) -> Result<Vec<(MemoryId, Confirmed)>> {
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
        let (text, hash) = crate::seal::rendered(self.seal.as_ref(), &after);
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
}

impl Upkeep<'_> {
    pub(crate) async fn drop_quarantined(&self, entry: &str) -> Result<()> {
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
}
