//! Export and import: every memory out through the one verified read, and
//! memories in through the write gate with the trust their source allows.

use chrono::{DateTime, Utc};
use dream_core::store::MAX_BATCH_OPS;
use dream_core::{Memory, MemoryId, MemoryStatus, RecordId, Role, parse_memory};
use serde::Serialize;

use crate::error::{DreamError, Result};
use crate::events::Event;
use crate::gate::{Admission, admit, apply_support, quarantine_record};
use crate::handles::{Reader, Writer};
use crate::journal::Op;
use crate::layout;
use crate::lease::HeldLease;
use crate::provenance::Support;
use crate::records::{Actor, AuditAction, ProposalKind, QuarantineSource};
use crate::scan::Scanners;
use crate::state::{AuditEntry, State};

use super::persons_word;

/// Most memories one import call takes.
pub const MAX_IMPORT: usize = 1000;

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

impl Reader<'_> {
    pub(crate) async fn export(&self) -> Result<Vec<Exported>> {
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

    pub(crate) async fn existing(&self, ids: &[MemoryId]) -> Result<Vec<MemoryId>> {
        let present = self.list_ids(layout::MEMORIES).await?;
        Ok(ids
            .iter()
            .filter(|id| present.contains(&RecordId::from((*id).clone())))
            .cloned()
            .collect())
    }
}

impl Writer<'_> {
    pub(crate) async fn import_markdown(
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

    pub(crate) async fn import(
        &self,
        memories: Vec<Memory>,
        pin: bool,
        from: ImportSource,
    ) -> Result<ImportReport> {
        self.import_with(memories, pin, from, Existing::Refuse)
            .await
    }

    pub(crate) async fn import_with(
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
        let mut candidates: Vec<(usize, Memory)> = Vec::with_capacity(memories.len());
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
            candidates.push((i, m));
        }
        let admissions = admit_all(&self.scanners, &candidates);
        let mut admitted: Vec<(usize, Memory, Admission)> = Vec::with_capacity(candidates.len());
        for ((i, m), admission) in candidates.into_iter().zip(admissions) {
            match admission {
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
                    let (text, hash) = crate::seal::rendered(self.seal.as_ref(), &m);
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
    fn id(&mut self, dream: &State, now: DateTime<Utc>) -> String {
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

/// Memories admitted on one thread before the gate's work is split across cores.
const PARALLEL_ADMIT_MIN: usize = 256;

/// The write gate's answer for each memory, in order: on every available core
/// when there are many (the scan is most of an import's time).
fn admit_all(scanners: &Scanners, memories: &[(usize, Memory)]) -> Vec<Result<Admission, String>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads < 2 || memories.len() < PARALLEL_ADMIT_MIN {
        return memories.iter().map(|(_, m)| admit(scanners, m)).collect();
    }
    let part = memories.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = memories
            .chunks(part)
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|(_, m)| admit(scanners, m))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}
