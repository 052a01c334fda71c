//! The dream pass: gates, claim, orient, gather, consolidate, gate, apply.

use std::fmt;

use chrono::{DateTime, Duration, Utc};
use dream_core::{Key, MemoryId, Record, RecordId, SessionId, TokenUsage};
use serde::{Deserialize, Serialize};

use crate::claim::ClaimHolder;
use crate::consolidate::{Batch, BatchSession};
use crate::diff::render_diff;
use crate::error::{DreamError, Result};
use crate::events::Event;
use crate::gate::{Cited, GateContext, Gated, Prior, gate};
use crate::handles::Pass;
use crate::journal::Op;
use crate::layout::{self, hash_bytes};
use crate::lease::HeldLease;
use crate::options::limits;
use crate::plan::{Refusal, RefusalCause};
use crate::progress::PassStage;
use crate::records::{
    Actor, AuditAction, SessionRecord, SessionStatus, SuccessStamp, TrashRecord, from_json, to_json,
};
use crate::sessions::SessionLog;
use crate::state::AuditEntry;

/// Why a pass did not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum SkipReason {
    /// `Options::enabled` is false.
    Disabled,
    /// The last successful pass is too recent.
    TooSoon {
        /// When the hours gate opens.
        next_at: DateTime<Utc>,
    },
    /// Too few sessions are pending.
    NotEnoughSessions {
        /// Pending now.
        pending: usize,
        /// Needed.
        needed: usize,
    },
    /// Another process (or task) holds this scope's claim.
    AnotherPassRunning,
    /// No session is pending (a forced pass or a dry run with nothing to do).
    NothingPending,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Disabled => f.write_str("dreaming is disabled"),
            SkipReason::TooSoon { next_at } => {
                write!(
                    f,
                    "the last successful pass is too recent; next at {next_at}"
                )
            }
            SkipReason::NotEnoughSessions { pending, needed } => {
                write!(f, "{pending} sessions pending, {needed} needed")
            }
            SkipReason::AnotherPassRunning => f.write_str("another pass is running"),
            SkipReason::NothingPending => f.write_str("no session is pending"),
        }
    }
}

/// What a pass did (or, for a dry run, would do).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct DreamReport {
    /// The pass (or plan) id; `None` when skipped before a pass began.
    pub pass: Option<String>,
    /// Why the pass did not run, if it did not.
    pub skipped: Option<SkipReason>,
    /// The consolidator (`rule-based (offline mode)` when offline).
    pub consolidator: String,
    /// Memories created.
    pub created: Vec<MemoryId>,
    /// Memories updated.
    pub updated: Vec<MemoryId>,
    /// Memories marked superseded.
    pub superseded: Vec<MemoryId>,
    /// Memories moved to the trash as contradicted or superseded.
    pub deleted: Vec<MemoryId>,
    /// Memories pruned to the trash beyond `max_memories`.
    pub pruned: Vec<MemoryId>,
    /// Quarantine entries made.
    pub quarantined: Vec<String>,
    /// Proposed actions refused, with reasons.
    pub refused: Vec<Refusal>,
    /// Sessions consumed: everything the consolidator found in them is stored
    /// (or restates a memory), or they hold nothing durable.
    pub sessions_consumed: Vec<SessionId>,
    /// Sessions left pending because part of what they say was not stored, each
    /// with why; they are proposed again by the next pass.
    pub held_back: Vec<HeldSession>,
    /// What each consumed session yielded.
    pub yields: Vec<SessionYield>,
    /// Sessions of this scope still pending after the pass (a dry run: after
    /// applying its plan).
    pub pending: usize,
    /// Tokens the model used.
    pub usage: TokenUsage,
    /// Trash entries past their retention removed.
    pub trash_expired: usize,
    /// A leftover journal rolled forward first, if any.
    pub rolled_forward: Option<String>,
}

/// What applying a pass builds, part by part: the ops of its one journaled
/// commit and its report, as of `now`.
struct Applying {
    now: DateTime<Utc>,
    ops: Vec<Op>,
    report: DreamReport,
}

/// What one consumed session yielded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionYield {
    /// The session.
    pub session: SessionId,
    /// Memories created, updated or superseding others that cite it.
    pub memories: Vec<MemoryId>,
    /// Quarantine entries made from proposals that cite it.
    pub quarantined: Vec<String>,
    /// Why it yielded nothing durable; `None` when it yielded something.
    pub reason: Option<String>,
}

impl SessionYield {
    /// Whether the session yielded nothing durable (no memory, nothing quarantined).
    pub fn is_empty(&self) -> bool {
        self.memories.is_empty() && self.quarantined.is_empty()
    }
}

/// A session a pass left pending because part of what it says was not stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldSession {
    /// The session.
    pub session: SessionId,
    /// Why, in the engine's words.
    pub reason: String,
    /// Whether it counts as a failed attempt (a per-pass cap wait does not).
    pub attempt: bool,
    /// Failed attempts so far, this pass included (set when applied).
    #[serde(default)]
    pub attempts: u32,
    /// Whether it is now held for the person: listed by `stats` and `doctor`,
    /// retried only by a forced pass (set when applied).
    #[serde(default)]
    pub stuck: bool,
}

/// The sessions of a batch that stay pending after `gated`: each cited by a
/// create or update that was refused or withdrawn. A refused statement that
/// names no session of the batch (a malformed answer) holds back every session
/// that kept nothing, since the pass cannot tell whose it was.
fn held_sessions(gated: &Gated, batch: &[BatchSession]) -> Vec<HeldSession> {
    let mut held: Vec<HeldSession> = Vec::new();
    let mut hold = |session: &SessionId, r: &Refusal| {
        let attempt = r.cause != RefusalCause::PassCap;
        let reason = format!("{} refused: {}", r.action, r.reason);
        match held.iter_mut().find(|h| &h.session == session) {
            Some(h) => h.attempt |= attempt,
            None => held.push(HeldSession {
                session: session.clone(),
                reason,
                attempt,
                attempts: 0,
                stuck: false,
            }),
        }
    };
    let statements = gated.refused.iter().filter(|r| r.holds_back_a_statement());
    for r in statements.clone() {
        for s in &r.sessions {
            hold(s, r);
        }
    }
    if let Some(unattributed) = statements.clone().find(|r| r.sessions.is_empty()) {
        let kept = |id: &SessionId| {
            gated.creates.iter().any(|c| c.sessions.contains(id))
                || gated.updates.iter().any(|c| c.sessions.contains(id))
                || gated.quarantine.iter().any(|q| q.sessions.contains(id))
                || gated.restated.iter().any(|r| r.sessions.contains(id))
        };
        for s in batch.iter().filter(|s| !kept(&s.id)) {
            hold(&s.id, unattributed);
        }
    }
    held
}

/// What each session of a prepared pass yields.
fn yields(p: &Prepared) -> Vec<SessionYield> {
    let g = &p.gated;
    p.sessions
        .iter()
        .map(|(id, _)| {
            let mut y = SessionYield {
                session: id.clone(),
                memories: g
                    .creates
                    .iter()
                    .filter(|c| c.sessions.contains(id))
                    .map(|c| c.memory.id.clone())
                    .chain(
                        g.updates
                            .iter()
                            .filter(|c| c.sessions.contains(id))
                            .map(|c| c.after.id.clone()),
                    )
                    .chain(
                        g.restated
                            .iter()
                            .filter(|r| r.sessions.contains(id))
                            .map(|r| r.memory.clone()),
                    )
                    .collect(),
                quarantined: g
                    .quarantine
                    .iter()
                    .filter(|q| q.sessions.contains(id))
                    .map(|q| q.id.clone())
                    .collect(),
                reason: None,
            };
            if let Some(h) = p.held.iter().find(|h| &h.session == id) {
                y.reason = Some(format!("left pending: {}", h.reason));
            } else if y.is_empty() {
                y.reason = Some(if p.proposed_from.contains(id) {
                    "every proposal citing it was refused by the gate (see refused)".to_owned()
                } else {
                    "the consolidator found no new lasting statement in it".to_owned()
                });
            }
            y
        })
        .collect()
}

impl DreamReport {
    fn skipped(reason: SkipReason, consolidator: String) -> Self {
        DreamReport {
            skipped: Some(reason),
            consolidator,
            ..DreamReport::default()
        }
    }
}

/// The result of [`Dream::dry_run`].
///
/// [`Dream::dry_run`]: crate::Dream::dry_run
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DryRun {
    /// The stored plan's id, for [`Dream::apply`]; `None` when there was nothing to plan.
    ///
    /// [`Dream::apply`]: crate::Dream::apply
    pub plan: Option<String>,
    /// A readable diff (control characters escaped).
    pub diff: String,
    /// What applying the plan would do.
    pub report: DreamReport,
}

/// A stored dry-run plan, as listed by [`Dream::plans`].
///
/// [`Dream::plans`]: crate::Dream::plans
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanSummary {
    /// Its id.
    pub id: String,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// Its readable diff.
    pub diff: String,
}

/// Everything a pass decided before taking the store lease; a dry run stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Prepared {
    pub pass: String,
    pub created_at: DateTime<Utc>,
    pub scope: dream_core::Scope,
    pub consolidator: String,
    pub model: String,
    pub usage: TokenUsage,
    /// The generation orient read.
    pub generation: u64,
    /// The batch: each session with the version gather read.
    pub sessions: Vec<(SessionId, u64)>,
    /// The sessions of the batch that some proposal of the plan cited.
    #[serde(default)]
    pub proposed_from: Vec<SessionId>,
    /// The sessions of the batch that stay pending: part of what they say was
    /// not stored.
    #[serde(default)]
    pub held: Vec<HeldSession>,
    /// Consumed sessions to trim from the log, oldest first.
    pub trim: Vec<(RecordId, Prior)>,
    pub gated: Gated,
    pub diff: String,
}

impl Pass<'_> {
    pub(crate) async fn dream(&self, force: bool) -> Result<DreamReport> {
        self.run(force, None).await
    }

    pub(crate) async fn dream_excluding(&self, exclude: Option<&SessionId>) -> Result<DreamReport> {
        self.run(false, exclude).await
    }

    pub(crate) async fn check_gates(
        &self,
        exclude: Option<&SessionId>,
    ) -> Result<Option<SkipReason>> {
        let o = &self.options;
        if !o.enabled {
            return Ok(Some(SkipReason::Disabled));
        }
        if let Some(stamp) = self.last_success().await? {
            let next_at = stamp.at + Duration::hours(i64::from(o.min_hours));
            if self.now() < next_at {
                return Ok(Some(SkipReason::TooSoon { next_at }));
            }
        }
        let pending = self.pending_count(exclude).await?;
        if pending < o.min_sessions {
            return Ok(Some(SkipReason::NotEnoughSessions {
                pending,
                needed: o.min_sessions,
            }));
        }
        Ok(None)
    }

    pub(crate) async fn last_success(&self) -> Result<Option<SuccessStamp>> {
        let key = layout::success_key(&self.scope);
        match self.store.get(&key).await? {
            None => Ok(None),
            Some(record) => Ok(Some(from_json(&key, &record)?)),
        }
    }

    async fn run(&self, force: bool, exclude: Option<&SessionId>) -> Result<DreamReport> {
        let name = self.consolidator.describe();
        if !force && let Some(reason) = self.check_gates(exclude).await? {
            return self.skip(reason, name).await;
        }
        let Some(claim) = self.take_claim().await? else {
            return self.skip(SkipReason::AnotherPassRunning, name).await;
        };
        let pass = self.ids.next(self.now());
        let result = async {
            let prepared = match self.prepare(&claim, &pass, force, exclude).await? {
                Ok(prepared) => prepared,
                Err((reason, rolled)) => {
                    let mut report = self.skip(reason, name.clone()).await?;
                    report.rolled_forward = rolled;
                    return Ok(report);
                }
            };
            let rolled = prepared.1.clone();
            let mut report = self.apply_prepared(Some(&claim), &prepared.0, None).await?;
            report.rolled_forward = rolled;
            Ok(report)
        }
        .await;
        claim.release().await;
        if let Err(e) = &result {
            self.pass_failed(&pass, e).await;
        }
        result
    }

    pub(crate) async fn claim_holder(&self) -> Result<Option<ClaimHolder>> {
        let key = layout::claim_note_key(&self.scope);
        let Some(record) = self.store.get(&key).await? else {
            return Ok(None);
        };
        let holder: ClaimHolder = from_json(&key, &record)?;
        Ok((holder.expires_at > self.now()).then_some(holder))
    }

    /// Takes this scope's claim if free, with the note saying who holds it.
    async fn take_claim(&self) -> Result<Option<HeldLease>> {
        HeldLease::try_take_noted(
            &self.store,
            &layout::claim_lock(&self.scope),
            self.options.claim_ttl,
            layout::claim_note_key(&self.scope),
        )
        .await
    }

    async fn skip(&self, reason: SkipReason, consolidator: String) -> Result<DreamReport> {
        self.emit(Event::PassSkipped {
            reason: reason.to_string(),
        })
        .await?;
        let mut report = DreamReport::skipped(reason, consolidator);
        report.pending = self.pending_count(None).await?;
        Ok(report)
    }

    async fn pass_failed(&self, pass: &str, error: &DreamError) {
        tracing::warn!(pass, error = %error, "dream pass failed; its sessions stay pending");
        let mut ops = Vec::new();
        let entry = AuditEntry::new(
            AuditAction::PassFailed,
            Actor::Engine,
            format!("pass failed, sessions stay pending: {error}"),
        )
        .pass(pass);
        ops.push(self.audit_op(entry).batch_op());
        let event = Event::PassFailed {
            pass: pass.to_owned(),
            reason: error.to_string(),
        };
        if let Err(e) = self.write_with_events(&ops, &[event], None).await {
            tracing::warn!(error = %e, "could not audit a failed pass or record it in the feed");
        }
    }

    /// Rolls a leftover journal forward (taking the store lease only if one exists).
    async fn settle_journal(&self) -> Result<Option<String>> {
        if self.store.get(&layout::journal_key()).await?.is_none() {
            return Ok(None);
        }
        let (lease, rolled) = self.lock_rolled().await?;
        lease.release().await;
        Ok(rolled)
    }

    /// Orient, gather, consolidate and gate, holding `claim`.
    #[allow(clippy::type_complexity)]
    async fn prepare(
        &self,
        claim: &HeldLease,
        pass: &str,
        force: bool,
        exclude: Option<&SessionId>,
    ) -> Result<Result<(Prepared, Option<String>), (SkipReason, Option<String>)>> {
        let rolled = claim.guard(self.settle_journal()).await?;
        if !force {
            // Another process may have completed a pass between our gates and our claim.
            if let Some(reason) = self.check_gates(exclude).await? {
                return Ok(Err((reason, rolled)));
            }
        }
        self.emit(Event::PassStarted {
            pass: pass.to_owned(),
        })
        .await?;
        let orient = claim.guard(self.orient()).await?;
        let log = claim.guard(self.session_log()).await?;
        let sessions = self.gather(&log, force)?;
        if sessions.is_empty() {
            return Ok(Err((SkipReason::NothingPending, rolled)));
        }
        self.stage(PassStage::SessionsRead {
            sessions: sessions.len(),
        });
        let now = self.now();
        let batch = Batch {
            now,
            scope: self.scope.clone(),
            sessions: sessions
                .iter()
                .enumerate()
                .map(|(i, (s, _))| BatchSession {
                    reference: format!("S{}", i + 1),
                    id: s.id.clone(),
                    created_at: s.created_at,
                    messages: s.messages.clone(),
                    flags: s.flags.clone(),
                })
                .collect(),
            memories: orient.memories.values().map(|k| k.memory.clone()).collect(),
        };
        self.stage(PassStage::Consolidating);
        let consolidation = claim
            .guard(crate::consolidate::groups::consolidate(
                self.consolidator.as_ref(),
                &batch,
                self.options.sessions_per_request,
            ))
            .await?;
        let cited: Vec<Cited> = batch
            .sessions
            .iter()
            .map(|s| Cited {
                reference: s.reference.clone(),
                id: s.id.clone(),
                created_at: s.created_at,
                messages: s.messages.clone(),
            })
            .collect();
        let ctx = GateContext {
            now,
            scope: &self.scope,
            pass,
            options: &self.options,
            scanners: &self.scanners,
            ids: &self.ids,
            memories: &orient.memories,
            foreign: &orient.foreign,
            sessions: &cited,
            states_something: crate::consolidate::states_something,
        };
        let plan = &consolidation.plan;
        let references: Vec<&String> = plan
            .creates
            .iter()
            .flat_map(|c| c.evidence.iter().map(|e| &e.session).chain(&c.sources))
            .chain(
                plan.updates
                    .iter()
                    .flat_map(|u| u.evidence.iter().map(|e| &e.session).chain(&u.sources)),
            )
            .chain(plan.deletes.iter().flat_map(|d| &d.sources))
            .collect();
        let proposed_from: Vec<SessionId> = batch
            .sessions
            .iter()
            .filter(|s| references.contains(&&s.reference))
            .map(|s| s.id.clone())
            .collect();
        let gated = gate(consolidation.plan, &ctx);
        let held = held_sessions(&gated, &batch.sessions);
        let trim = self.trimmed(&log);
        let consolidator = self.consolidator.describe();
        let session_ids: Vec<(SessionId, u64)> =
            sessions.iter().map(|(s, v)| (s.id.clone(), *v)).collect();
        let diff = render_diff(pass, &self.scope, &consolidator, &batch.sessions, &gated);
        Ok(Ok((
            Prepared {
                pass: pass.to_owned(),
                created_at: now,
                scope: self.scope.clone(),
                consolidator,
                model: consolidation.model,
                usage: consolidation.usage,
                generation: orient.generation,
                sessions: session_ids,
                proposed_from,
                held,
                trim,
                gated,
                diff,
            },
            rolled,
        )))
    }

    /// Gather: the pending sessions a pass takes from `log`, oldest first, decoded,
    /// each with the version it was read at; at most `batch_sessions` of them
    /// and `batch_bytes` of message text (the first always). Those held for the
    /// person are taken only when `force`.
    fn gather(&self, log: &SessionLog, force: bool) -> Result<Vec<(SessionRecord, u64)>> {
        let mut sessions = Vec::new();
        let mut bytes = 0usize;
        for entry in log.to_dream(&self.scope, force) {
            if sessions.len() >= self.options.batch_sessions {
                break;
            }
            let key = Key::new(layout::namespace(layout::SESSIONS), entry.id.clone());
            let mut record: SessionRecord = from_json(&key, &entry.record)?;
            if self
                .seal
                .as_ref()
                .is_some_and(|k| !k.verify_session(&record))
            {
                // Not logged by this store's engine: whatever roles it claims, it
                // is data from outside, never the person's word.
                tracing::warn!(session = %record.id, "session without this store's seal: read as tool text");
                for message in &mut record.messages {
                    message.role = dream_core::Role::Tool;
                }
            }
            let size: usize = record.messages.iter().map(|m| m.content.len()).sum();
            if !sessions.is_empty() && bytes + size > self.options.batch_bytes {
                break;
            }
            bytes += size;
            sessions.push((record, entry.record.version.0));
        }
        Ok(sessions)
    }

    /// The consumed sessions past the log's length (`session_log`), oldest first,
    /// that the pass removes, each at the version and hash it was read with.
    fn trimmed(&self, log: &SessionLog) -> Vec<(RecordId, Prior)> {
        let excess = log.entries.len().saturating_sub(self.options.session_log);
        log.entries
            .iter()
            .filter(|e| e.header.status == SessionStatus::Consumed)
            .take(excess)
            .map(|e| {
                (
                    e.id.clone(),
                    Prior {
                        version: e.record.version.0,
                        hash: hash_bytes(&e.record.value),
                    },
                )
            })
            .collect()
    }

    /// Takes the store lease and applies a prepared pass or a stored plan.
    async fn apply_prepared(
        &self,
        claim: Option<&HeldLease>,
        prepared: &Prepared,
        plan: Option<(Key, u64, String)>,
    ) -> Result<DreamReport> {
        let mut report = self
            .under_lease(async |lease| self.apply_locked(lease, claim, prepared, plan).await)
            .await?;
        report.pending = self.pending_count(None).await?;
        Ok(report)
    }

    async fn apply_locked(
        &self,
        lease: &HeldLease,
        claim: Option<&HeldLease>,
        p: &Prepared,
        plan: Option<(Key, u64, String)>,
    ) -> Result<DreamReport> {
        if let Some(claim) = claim {
            claim.check()?;
        }
        let (generation, generation_record) = self.read_generation().await?;
        if generation != p.generation {
            return Err(DreamError::Stale {
                reason: format!(
                    "memories changed since the pass read them (generation {} is now {generation}); \
                     nothing applied, the sessions stay pending",
                    p.generation
                ),
            });
        }
        let mut out = Applying {
            now: self.now(),
            ops: Vec::new(),
            report: DreamReport {
                pass: Some(p.pass.clone()),
                consolidator: p.consolidator.clone(),
                usage: p.usage,
                yields: yields(p),
                ..DreamReport::default()
            },
        };
        self.session_ops(p, &mut out).await?;
        self.create_ops(p, &mut out);
        self.change_ops(p, &mut out).await?;
        self.removal_ops(p, &mut out);
        self.verdict_ops(p, &mut out)?;
        self.housekeeping_ops(p, plan, &mut out).await?;
        self.completion_ops(p, generation, generation_record, &mut out)
            .await?;
        let Applying { ops, report, .. } = out;
        let events = pass_events(p, &report);
        self.stage(PassStage::Writing { records: ops.len() });
        self.commit(lease, &p.pass, ops, events).await?;
        Ok(report)
    }

    /// The batch's sessions, still at the versions gather read: each consumed,
    /// or left pending with why (see [`HeldSession`]).
    async fn session_ops(&self, p: &Prepared, out: &mut Applying) -> Result<()> {
        let now = out.now;
        let Applying { ops, report, .. } = out;
        for (id, version) in &p.sessions {
            let key = layout::key(layout::SESSIONS, id.clone());
            let record = self.store.get(&key).await?;
            let Some(record) = record.filter(|r| r.version.0 == *version) else {
                return Err(DreamError::Stale {
                    reason: format!("session {id} changed since it was gathered; nothing applied"),
                });
            };
            let mut session: SessionRecord = from_json(&key, &record)?;
            if session.status != SessionStatus::Pending {
                return Err(DreamError::Stale {
                    reason: format!("session {id} is already consumed; nothing applied"),
                });
            }
            if let Some(held) = p.held.iter().find(|h| &h.session == id) {
                // Part of it was not stored: it stays pending, and says why.
                let mut held = held.clone();
                if held.attempt {
                    session.attempts = session.attempts.saturating_add(1);
                }
                session.held_back = Some(held.reason.clone());
                held.attempts = session.attempts;
                held.stuck = session.attempts >= limits::SESSION_ATTEMPTS;
                report.held_back.push(held);
            } else {
                self.mark_consumed(&mut session, now, &p.pass);
                report.sessions_consumed.push(id.clone());
            }
            let value = String::from_utf8(to_json(&session).to_vec()).expect("JSON is UTF-8");
            ops.push(Op::put(key, value, Some(&record)));
        }
        Ok(())
    }

    /// The memories the gate let through, each with its audit record.
    fn create_ops(&self, p: &Prepared, out: &mut Applying) {
        let Applying { ops, report, .. } = out;
        let g = &p.gated;
        for c in &g.creates {
            let (text, hash) = crate::seal::rendered(self.seal.as_ref(), &c.memory);
            ops.push(Op::create(
                layout::key(layout::MEMORIES, c.memory.id.clone()),
                text,
            ));
            ops.push(
                self.audit_op(
                    AuditEntry::new(
                        AuditAction::Created,
                        Actor::Engine,
                        "created from the batch's sessions",
                    )
                    .memory(&c.memory.id)
                    .sessions(&c.sessions)
                    .pass(&p.pass)
                    .rules(c.rules.clone())
                    .hash(hash),
                ),
            );
            report.created.push(c.memory.id.clone());
        }
    }

    /// The memories updated or superseded, each with its history copy and audit record.
    async fn change_ops(&self, p: &Prepared, out: &mut Applying) -> Result<()> {
        let now = out.now;
        let Applying { ops, report, .. } = out;
        let g = &p.gated;
        let changed = g
            .updates
            .iter()
            .map(|c| (c, AuditAction::Updated))
            .chain(g.supersedes.iter().map(|c| (c, AuditAction::Superseded)));
        for (c, action) in changed {
            let id = &c.before.id;
            ops.extend(
                // The gate changes only memories that verified.
                self.history_ops(id, &c.before, true, action, &p.pass, now)
                    .await?,
            );
            let (text, hash) = crate::seal::rendered(self.seal.as_ref(), &c.after);
            ops.push(Op::replace(
                layout::key(layout::MEMORIES, id.clone()),
                text,
                c.prior.version,
                &c.prior.hash,
            ));
            let reason = match &c.by {
                Some(by) => format!("superseded by {by}"),
                None => "updated from the batch's sessions".to_owned(),
            };
            ops.push(
                self.audit_op(
                    AuditEntry::new(action, Actor::Engine, reason)
                        .memory(id)
                        .sessions(&c.sessions)
                        .pass(&p.pass)
                        .rules(c.rules.clone())
                        .hash(hash),
                ),
            );
            match action {
                AuditAction::Superseded => report.superseded.push(id.clone()),
                _ => report.updated.push(id.clone()),
            }
        }
        Ok(())
    }

    /// The memories deleted or pruned, each moved to the trash with its audit record.
    fn removal_ops(&self, p: &Prepared, out: &mut Applying) {
        let now = out.now;
        let Applying { ops, report, .. } = out;
        let g = &p.gated;
        let removed = g
            .deletes
            .iter()
            .map(|r| (r, AuditAction::Deleted))
            .chain(g.prunes.iter().map(|r| (r, AuditAction::Pruned)));
        for (r, action) in removed {
            let id = &r.memory.id;
            let (text, hash) = crate::seal::rendered(self.seal.as_ref(), &r.memory);
            let trash = TrashRecord {
                memory_id: id.clone(),
                scope: r.memory.scope.clone(),
                at: now,
                reason: r.reason.clone(),
                actor: Actor::Engine,
                pass: Some(p.pass.clone()),
                markdown: text,
            };
            ops.push(Op::create(
                layout::key(layout::TRASH, self.ids.record(now)),
                String::from_utf8(to_json(&trash).to_vec()).expect("JSON is UTF-8"),
            ));
            ops.push(Op::remove(
                layout::key(layout::MEMORIES, id.clone()),
                r.prior.version,
                &r.prior.hash,
            ));
            let mut reason = r.reason.clone();
            if let Some(h) = &r.reason_hash {
                reason.push_str(&format!(" (proposer's reason, SHA-256 {h})"));
            }
            ops.push(
                self.audit_op(
                    AuditEntry::new(action, Actor::Engine, reason)
                        .memory(id)
                        .sessions(&r.sessions)
                        .pass(&p.pass)
                        .hash(hash),
                ),
            );
            match action {
                AuditAction::Pruned => report.pruned.push(id.clone()),
                _ => report.deleted.push(id.clone()),
            }
        }
    }

    /// What the gate held back: quarantined proposals and refusals, each audited.
    fn verdict_ops(&self, p: &Prepared, out: &mut Applying) -> Result<()> {
        let Applying { ops, report, .. } = out;
        let g = &p.gated;
        for q in &g.quarantine {
            ops.push(self.quarantine_op(q)?);
            let what = if q.has_secret() {
                "secret-shaped"
            } else {
                "instruction-shaped"
            };
            ops.push(
                self.audit_op(
                    AuditEntry::new(
                        AuditAction::Quarantined,
                        Actor::Engine,
                        format!(
                            "{:?} proposal is {what}: quarantined as entry {}",
                            q.kind, q.id
                        )
                        .to_lowercase(),
                    )
                    .memory(&q.memory.id)
                    .sessions(&q.sessions)
                    .pass(&p.pass)
                    .rules(rules_of(q))
                    .hash(q.hash.clone()),
                ),
            );
            report.quarantined.push(q.id.clone());
        }
        for r in &g.refused {
            let mut entry = AuditEntry::new(
                AuditAction::Refused,
                Actor::Engine,
                format!("{} refused: {}", r.action, r.reason),
            )
            .sessions(&r.sessions)
            .pass(&p.pass);
            if let Some(id) = r.target.as_deref().and_then(|t| MemoryId::new(t).ok()) {
                entry = entry.memory(&id);
            }
            ops.push(self.audit_op(entry));
            report.refused.push(r.clone());
        }
        Ok(())
    }

    /// Housekeeping: the session log trimmed, expired trash and old audit
    /// records removed, and the applied plan (if any) deleted.
    async fn housekeeping_ops(
        &self,
        p: &Prepared,
        plan: Option<(Key, u64, String)>,
        out: &mut Applying,
    ) -> Result<()> {
        let now = out.now;
        let Applying { ops, report, .. } = out;
        for (id, prior) in &p.trim {
            ops.push(Op::remove(
                layout::key(layout::SESSIONS, id.clone()),
                prior.version,
                &prior.hash,
            ));
        }
        report.trash_expired = self.expiry_ops(now, ops).await?;
        if let Some((key, version, hash)) = plan {
            ops.push(Op::remove(key, version, &hash));
        }
        Ok(())
    }

    /// The pass's success stamp and closing audit record, and the generation bumped
    /// from the one the pass was applied at.
    async fn completion_ops(
        &self,
        p: &Prepared,
        generation: u64,
        generation_record: Option<Record>,
        out: &mut Applying,
    ) -> Result<()> {
        let now = out.now;
        let Applying { ops, report, .. } = out;
        let stamp_key = layout::success_key(&self.scope);
        let stamp_record = self.store.get(&stamp_key).await?;
        let stamp = SuccessStamp {
            at: now,
            pass: p.pass.clone(),
        };
        ops.push(
            self.audit_op(
                AuditEntry::new(
                    AuditAction::PassCompleted,
                    Actor::Engine,
                    format!(
                        "pass by {} completed: {} sessions, {} created, {} updated, {} superseded, \
                     {} deleted, {} pruned, {} quarantined, {} refused",
                        p.consolidator,
                        report.sessions_consumed.len(),
                        report.created.len(),
                        report.updated.len(),
                        report.superseded.len(),
                        report.deleted.len(),
                        report.pruned.len(),
                        report.quarantined.len(),
                        report.refused.len()
                    ),
                )
                .sessions(&report.sessions_consumed)
                .pass(&p.pass),
            ),
        );
        ops.push(Op::put(
            stamp_key,
            String::from_utf8(to_json(&stamp).to_vec()).expect("JSON is UTF-8"),
            stamp_record.as_ref(),
        ));
        ops.push(self.bump_op(generation, generation_record.as_ref()));
        Ok(())
    }

    /// Tells the progress callback, if any, that `stage` starts.
    fn stage(&self, stage: PassStage) {
        if let Some(progress) = &self.progress {
            progress(stage);
        }
    }

    pub(crate) async fn dry_run(&self) -> Result<DryRun> {
        let name = self.consolidator.describe();
        let Some(claim) = self.take_claim().await? else {
            return Ok(DryRun {
                plan: None,
                diff: String::new(),
                report: self.skip(SkipReason::AnotherPassRunning, name).await?,
            });
        };
        let pass = self.ids.next(self.now());
        let prepared = self.prepare(&claim, &pass, true, None).await;
        claim.release().await;
        let prepared = match prepared? {
            Ok((prepared, _)) => prepared,
            Err((reason, _)) => {
                return Ok(DryRun {
                    plan: None,
                    diff: String::new(),
                    report: self.skip(reason, name).await?,
                });
            }
        };
        let key = layout::key(layout::PLANS, RecordId::new(&prepared.pass)?);
        let audit = self.audit_op(
            AuditEntry::new(
                AuditAction::PlanStored,
                Actor::Engine,
                "dry run stored a plan",
            )
            .sessions(
                &prepared
                    .sessions
                    .iter()
                    .map(|(s, _)| s.clone())
                    .collect::<Vec<_>>(),
            )
            .pass(&prepared.pass),
        );
        // Sealed, so `apply` can tell the plan the person reviewed from one edited
        // in the store since.
        let value = to_json(&prepared);
        let value = match &self.seal {
            Some(k) => bytes::Bytes::from(k.seal_plan(&prepared.pass, &value)),
            None => value,
        };
        let ops = [
            dream_core::BatchOp::put(key, value, dream_core::Precondition::Absent),
            audit.batch_op(),
        ];
        let event = Event::PlanStored {
            plan: prepared.pass.clone(),
        };
        self.write_with_events(&ops, &[event], None).await?;
        self.trim_plans().await?;
        let mut report = preview(&prepared);
        report.pending = self
            .pending_count(None)
            .await?
            .saturating_sub(prepared.sessions.len());
        Ok(DryRun {
            plan: Some(prepared.pass.clone()),
            diff: prepared.diff.clone(),
            report,
        })
    }

    async fn trim_plans(&self) -> Result<()> {
        let plans = self.list_all(layout::PLANS).await?;
        let excess = plans.len().saturating_sub(self.options.max_plans);
        for entry in plans.iter().take(excess) {
            let key = layout::key(layout::PLANS, entry.id.clone());
            match self
                .store
                .delete(&key, dream_core::Write::matches(entry.record.version))
                .await
            {
                Ok(_) | Err(dream_core::StoreError::Conflict { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    pub(crate) async fn plans(&self) -> Result<Vec<PlanSummary>> {
        let mut out = Vec::new();
        for entry in self.list_all(layout::PLANS).await? {
            let key = layout::key(layout::PLANS, entry.id.clone());
            let p: Prepared = from_json(&key, &entry.record)?;
            if p.scope == self.scope {
                out.push(PlanSummary {
                    id: p.pass,
                    created_at: p.created_at,
                    diff: p.diff,
                });
            }
        }
        Ok(out)
    }

    pub(crate) async fn apply(&self, plan_id: &str) -> Result<DreamReport> {
        let id = RecordId::new(plan_id)?;
        let key = layout::key(layout::PLANS, id);
        let Some(record) = self.store.get(&key).await? else {
            return Err(DreamError::not_found("plan", plan_id));
        };
        let prepared: Prepared = from_json(&key, &record)?;
        if prepared.scope != self.scope {
            return Err(DreamError::not_found("plan", plan_id));
        }
        if prepared.pass != plan_id
            || !crate::seal::verified_plan(self.seal.as_ref(), plan_id, &record.value)
        {
            return Err(DreamError::Refused {
                reason: format!(
                    "plan {plan_id} does not carry the seal its dry run made (it was changed in \
                     the store, or not made by this store); nothing applied: run `dream dream \
                     --dry-run` again and review the new plan"
                ),
            });
        }
        self.recheck_plan(&prepared).await?;
        let plan = (key, record.version.0, hash_bytes(&record.value));
        let result = self.apply_prepared(None, &prepared, Some(plan)).await;
        if let Err(e) = &result {
            self.pass_failed(&prepared.pass, e).await;
        }
        result
    }
}

impl Pass<'_> {
    /// The gate's scan, its field rules and the provenance check, run again on
    /// what a stored plan writes. `Refused` naming the first failure.
    async fn recheck_plan(&self, p: &Prepared) -> Result<()> {
        let refuse = |id: &MemoryId, why: String| DreamError::Refused {
            reason: format!("plan {}: memory {id} {why}; nothing applied", p.pass),
        };
        let batch: Vec<&SessionId> = p.sessions.iter().map(|(s, _)| s).collect();
        let mut sessions: std::collections::HashMap<SessionId, SessionRecord> =
            std::collections::HashMap::new();
        for id in &batch {
            let key = layout::key(layout::SESSIONS, (*id).clone());
            let Some(record) = self.store.get(&key).await? else {
                continue;
            };
            let mut session: SessionRecord = from_json(&key, &record)?;
            if !crate::seal::verified_transcript(self.seal.as_ref(), &session) {
                for m in &mut session.messages {
                    m.role = dream_core::Role::Tool;
                }
            }
            sessions.insert((*id).clone(), session);
        }
        let cited =
            |of: &[SessionId]| -> std::result::Result<Vec<crate::provenance::Cited<'_>>, String> {
                let mut out = Vec::new();
                for s in of {
                    if !batch.contains(&s) {
                        return Err(format!(
                            "cites session {s}, which is not of the plan's batch"
                        ));
                    }
                    if let Some(session) = sessions.get(s) {
                        out.extend(session.messages.iter().map(|m| crate::provenance::Cited {
                            role: m.role,
                            text: &m.content,
                            date: session.created_at,
                        }));
                    }
                }
                Ok(out)
            };
        let judge = |m: &dream_core::Memory| -> std::result::Result<(), String> {
            crate::gate::validate_fields(m)?;
            let scan = crate::gate::scan_memory(&self.scanners, m);
            if scan.blocks() {
                return Err(format!(
                    "is flagged by the scanner (rules: {})",
                    scan.rules().join(", ")
                ));
            }
            if m.scope != self.scope {
                return Err("is of another scope".into());
            }
            Ok(())
        };
        let g = &p.gated;
        for c in &g.creates {
            let m = &c.memory;
            judge(m).map_err(|why| refuse(&m.id, why))?;
            if m.pinned {
                return Err(refuse(&m.id, "is pinned (a pass never pins)".into()));
            }
            let cited = cited(&c.sessions).map_err(|why| refuse(&m.id, why))?;
            let support =
                crate::provenance::support(m, &cited).map_err(|why| refuse(&m.id, why))?;
            check_support(m, &support).map_err(|why| refuse(&m.id, why))?;
        }
        for c in g.updates.iter().chain(&g.supersedes) {
            let m = &c.after;
            judge(m).map_err(|why| refuse(&m.id, why))?;
            if m.id != c.before.id || m.pinned != c.before.pinned {
                return Err(refuse(&m.id, "changes its id or pin".into()));
            }
            if c.by.is_some() {
                continue;
            }
            let before = crate::provenance::identifying_tokens(&c.before);
            let added = crate::provenance::identifying_tokens(m)
                .difference(&before)
                .cloned()
                .collect();
            let cited = cited(&c.sessions).map_err(|why| refuse(&m.id, why))?;
            let mut support = crate::provenance::support_of(&added, &m.content, &cited)
                .map_err(|why| refuse(&m.id, why))?;
            if c.before.status != dream_core::MemoryStatus::Active {
                support.by_person =
                    crate::provenance::support(m, &cited).is_ok_and(|whole| whole.by_person);
            }
            check_support(m, &support).map_err(|why| refuse(&m.id, why))?;
        }
        Ok(())
    }
}

/// Whether a memory claims no more trust than `support` gives it.
fn check_support(
    m: &dream_core::Memory,
    support: &crate::provenance::Support,
) -> std::result::Result<(), String> {
    if m.status == dream_core::MemoryStatus::Active
        && (!support.by_person || crate::provenance::sends_data_out(m))
    {
        return Err("claims the person's word, which its sessions do not carry".into());
    }
    Ok(())
}

fn rules_of(q: &crate::records::QuarantineRecord) -> Vec<String> {
    let mut rules: Vec<String> = Vec::new();
    for f in &q.findings {
        if !rules.contains(&f.rule) {
            rules.push(f.rule.clone());
        }
    }
    rules
}

/// What applying a prepared pass would report.
fn preview(p: &Prepared) -> DreamReport {
    let g = &p.gated;
    DreamReport {
        pass: Some(p.pass.clone()),
        skipped: None,
        consolidator: p.consolidator.clone(),
        created: g.creates.iter().map(|c| c.memory.id.clone()).collect(),
        updated: g.updates.iter().map(|c| c.after.id.clone()).collect(),
        superseded: g.supersedes.iter().map(|c| c.after.id.clone()).collect(),
        deleted: g.deletes.iter().map(|r| r.memory.id.clone()).collect(),
        pruned: g.prunes.iter().map(|r| r.memory.id.clone()).collect(),
        quarantined: g.quarantine.iter().map(|q| q.id.clone()).collect(),
        refused: g.refused.clone(),
        sessions_consumed: p
            .sessions
            .iter()
            .map(|(s, _)| s.clone())
            .filter(|s| !p.held.iter().any(|h| &h.session == s))
            .collect(),
        held_back: p.held.clone(),
        yields: yields(p),
        pending: 0,
        usage: p.usage,
        trash_expired: 0,
        rolled_forward: None,
    }
}

/// The events of an applied pass, in the order they are recorded.
fn pass_events(p: &Prepared, report: &DreamReport) -> Vec<Event> {
    let g = &p.gated;
    let mut events = Vec::new();
    for c in &g.creates {
        events.push(Event::MemoryCreated {
            memory: c.memory.id.clone(),
        });
    }
    for c in &g.updates {
        events.push(Event::MemoryUpdated {
            memory: c.after.id.clone(),
        });
    }
    for c in &g.supersedes {
        if let Some(by) = &c.by {
            events.push(Event::MemorySuperseded {
                memory: c.after.id.clone(),
                by: by.clone(),
            });
        }
    }
    for r in &g.deletes {
        events.push(Event::MemoryTrashed {
            memory: r.memory.id.clone(),
            why: "deleted".into(),
        });
    }
    for r in &g.prunes {
        events.push(Event::MemoryTrashed {
            memory: r.memory.id.clone(),
            why: "pruned".into(),
        });
    }
    for q in &g.quarantine {
        events.push(Event::Quarantined {
            entry: q.id.clone(),
            rules: rules_of(q),
        });
    }
    for r in &g.refused {
        events.push(Event::Refused {
            action: match r.action.as_str() {
                "create" => "create",
                "update" => "update",
                "delete" => "delete",
                "supersede" => "supersede",
                "prune" => "prune",
                _ => "plan",
            }
            .into(),
            reason: r.reason.clone(),
        });
    }
    if report.trash_expired > 0 {
        events.push(Event::TrashExpired {
            count: report.trash_expired,
        });
    }
    events.push(Event::PassCompleted {
        pass: p.pass.clone(),
        sessions: report.sessions_consumed.len(),
    });
    events
}
