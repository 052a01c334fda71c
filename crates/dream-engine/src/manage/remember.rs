//! What a person (or an agent, held) asks Dream to remember, what is read back
//! through the one verified read, and forgetting: the memory goes to the trash.

use chrono::{DateTime, Utc};
use dream_core::{Memory, MemoryId, MemoryKind, MemoryStatus, RecordId, Role};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{DreamError, Result};
use crate::events::Event;
use crate::gate::{Admission, admit, apply_support, quarantine_record};
use crate::handles::{Reader, Upkeep, Writer};
use crate::journal::Op;
use crate::layout;
use crate::lease::HeldLease;
use crate::provenance::Support;
use crate::records::{Actor, AuditAction, ProposalKind, QuarantineSource, TrashRecord};
use crate::state::AuditEntry;

use super::json_string;

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

impl Writer<'_> {
    pub(crate) async fn remember(&self, new: NewMemory) -> Result<Remembered> {
        // The person's own act, pinned; a standing order that sends data out is
        // still held.
        self.remember_with(new, Role::User).await
    }

    pub(crate) async fn remember_as(&self, new: NewMemory, role: Role) -> Result<Remembered> {
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
                let (text, hash) = crate::seal::rendered(self.seal.as_ref(), &memory);
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
}

impl Reader<'_> {
    pub(crate) async fn list(&self) -> Result<Vec<Memory>> {
        Ok(self.export().await?.into_iter().map(|e| e.memory).collect())
    }

    pub(crate) async fn get(&self, id: &MemoryId) -> Result<Option<Memory>> {
        Ok(self.read_memory(id).await?.map(|(mut m, record)| {
            if !self.verified(&RecordId::from(id.clone()), &record) {
                crate::seal::held(&mut m);
            }
            m
        }))
    }
}

impl Upkeep<'_> {
    pub(crate) async fn forget(&self, id: &MemoryId) -> Result<()> {
        self.forget_by(id, Actor::Person).await
    }

    /// [`Dream::forget`] done by `actor` (an agent deleting its own note), so
    /// the trash and the audit log name who did it.
    ///
    /// [`Dream::forget`]: crate::Dream::forget
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
        let (text, hash) = crate::seal::rendered(self.seal.as_ref(), &memory);
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
}

/// Who remembered `memory`: the person (their own, pinned memory) or an agent
/// (see [`Dream::remember_as`]).
///
/// [`Dream::remember_as`]: crate::Dream::remember_as
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
