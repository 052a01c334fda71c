//! The write gate: the one place a proposed memory becomes a write.
//!
//! Every writer goes through it — both consolidators, `remember`, imports and
//! releases. The engine, not the proposer, assigns ids, scope, provenance and
//! timestamps. A pass's actions must cite a session of its batch; updates,
//! supersedes and deletes must target a known, active, unpinned memory of the
//! scope and count against the per-pass change cap; creates are capped. Every
//! string and key of a proposal, at every depth, is scanned: instruction- or
//! secret-shaped proposals go to the quarantine (secrets redacted), never to
//! `memories`.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use dream_core::model::is_line_break;
use dream_core::{Memory, MemoryId, MemoryStatus, Role, Scope, SessionId, render_memory};
use dream_scan::Verdict;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::layout::{IdGen, hash_bytes};
use crate::options::{Options, limits};
use crate::plan::{
    Citation, Plan, ProposedCreate, ProposedDelete, ProposedUpdate, Refusal, RefusalCause,
};
use crate::provenance::{self, Support};
use crate::records::{ProposalKind, QuarantineRecord, QuarantineSource};
use crate::scan::{Scan, Scanners};

/// Where a stored record stood when it was read: what a write must replace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Prior {
    /// Its version.
    pub version: u64,
    /// SHA-256 of its bytes.
    pub hash: String,
}

/// An in-scope memory as read by orient.
#[derive(Debug, Clone)]
pub(crate) struct Known {
    pub memory: Memory,
    /// Its seal verified (or the store needs none): the engine wrote it.
    pub verified: bool,
    /// The stored record (its bytes are hashed only if the memory is changed).
    pub record: dream_core::Record,
}

impl Known {
    /// What a write replacing this memory must expect.
    pub fn prior(&self) -> Prior {
        Prior {
            version: self.record.version.0,
            hash: hash_bytes(&self.record.value),
        }
    }
}

/// A memory the gate admitted as new.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Created {
    pub memory: Memory,
    pub sessions: Vec<SessionId>,
    /// Rules of suspicious (allowed) findings.
    pub rules: Vec<String>,
}

/// A memory the gate admitted a change to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Changed {
    pub before: Memory,
    pub prior: Prior,
    pub after: Memory,
    pub sessions: Vec<SessionId>,
    /// For a supersede: the memory that replaces it.
    pub by: Option<MemoryId>,
    pub rules: Vec<String>,
}

/// A memory the gate admitted a removal (to the trash) of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Removed {
    pub memory: Memory,
    pub prior: Prior,
    pub sessions: Vec<SessionId>,
    /// Why, in the engine's words.
    pub reason: String,
    /// SHA-256 of the proposer's own reason (its text is never kept).
    pub reason_hash: Option<String>,
}

/// A statement-carrying proposal the gate did not store, and the sessions that
/// therefore stay pending.
struct Held {
    reason: String,
    cause: RefusalCause,
    sessions: Vec<SessionId>,
}

/// A proposal that says again what a memory already says: nothing is written,
/// and the sessions it cites count as kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Restated {
    pub memory: MemoryId,
    pub sessions: Vec<SessionId>,
}

/// What survives the gate: concrete, engine-made writes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct Gated {
    pub creates: Vec<Created>,
    pub updates: Vec<Changed>,
    pub supersedes: Vec<Changed>,
    pub deletes: Vec<Removed>,
    pub prunes: Vec<Removed>,
    pub quarantine: Vec<QuarantineRecord>,
    pub refused: Vec<Refusal>,
    /// Proposals that restate a memory (stored, or created earlier in this plan).
    #[serde(default)]
    pub restated: Vec<Restated>,
}

impl Gated {
    /// Whether applying it writes any memory.
    pub fn changes_memories(&self) -> bool {
        !(self.creates.is_empty()
            && self.updates.is_empty()
            && self.supersedes.is_empty()
            && self.deletes.is_empty()
            && self.prunes.is_empty())
    }
}

/// A session of the batch as the gate sees it.
#[derive(Debug, Clone)]
pub(crate) struct Cited {
    pub reference: String,
    pub id: SessionId,
    pub created_at: DateTime<Utc>,
    pub messages: Vec<dream_core::Message>,
}

/// What the gate needs to judge a plan.
pub(crate) struct GateContext<'a> {
    pub now: DateTime<Utc>,
    pub scope: &'a Scope,
    pub pass: &'a str,
    pub options: &'a Options,
    pub scanners: &'a Scanners,
    pub ids: &'a IdGen,
    /// In-scope memories.
    pub memories: &'a BTreeMap<MemoryId, Known>,
    /// Ids of memories of other scopes.
    pub foreign: &'a HashSet<MemoryId>,
    pub sessions: &'a [Cited],
    /// Whether a message of the person's, logged at the given time, states
    /// anything lasting (the consolidators' one reading of what is memory:
    /// `consolidate::states_something`).
    pub states_something: fn(&str, DateTime<Utc>) -> bool,
}

// ---------------------------------------------------------------------------
// Field rules shared by every writer.

fn has_bad_control(s: &str, allow_newlines: bool) -> bool {
    s.chars().any(|c| {
        if allow_newlines && matches!(c, '\n' | '\r' | '\t') {
            return false;
        }
        c.is_control() || is_line_break(c) || is_bidi_control(c)
    })
}

/// Unicode bidirectional controls (the "Trojan source" characters; U+061C
/// included): the one definition, from the Unicode property.
pub(crate) fn is_bidi_control(c: char) -> bool {
    dream_core::display::is_bidi_control(c)
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Checks a memory's fields against the documented caps; the reason names the rule.
pub(crate) fn validate_fields(m: &Memory) -> Result<(), String> {
    if m.name.trim().is_empty() {
        return Err("name is empty".into());
    }
    if m.name.chars().count() > limits::NAME_CHARS {
        return Err(format!(
            "name is longer than {} characters",
            limits::NAME_CHARS
        ));
    }
    if has_bad_control(&m.name, false) {
        return Err("name contains a line break or a control character".into());
    }
    if m.description.chars().count() > limits::DESCRIPTION_CHARS {
        return Err(format!(
            "description is longer than {} characters",
            limits::DESCRIPTION_CHARS
        ));
    }
    if has_bad_control(&m.description, false) {
        return Err("description contains a line break or a control character".into());
    }
    if m.content.trim().is_empty() {
        return Err("content is empty".into());
    }
    if m.content.len() > limits::CONTENT_BYTES {
        return Err(format!(
            "content is larger than {} bytes",
            limits::CONTENT_BYTES
        ));
    }
    if has_bad_control(&m.content, true) {
        return Err("content contains a control character".into());
    }
    if m.tags.len() > limits::TAGS {
        return Err(format!("more than {} tags", limits::TAGS));
    }
    for tag in &m.tags {
        if tag.trim().is_empty() || tag.chars().count() > limits::TAG_CHARS {
            return Err(format!(
                "a tag is empty or longer than {} characters",
                limits::TAG_CHARS
            ));
        }
        if has_bad_control(tag, false) {
            return Err("a tag contains a line break or a control character".into());
        }
    }
    let meta = Value::Object(m.metadata.clone());
    if depth(&meta) > limits::METADATA_DEPTH {
        return Err(format!(
            "metadata is nested deeper than {}",
            limits::METADATA_DEPTH
        ));
    }
    if serde_json::to_vec(&meta).map_or(usize::MAX, |v| v.len()) > limits::METADATA_BYTES {
        return Err(format!(
            "metadata is larger than {} bytes",
            limits::METADATA_BYTES
        ));
    }
    if !(m.confidence.is_finite() && (0.0..=1.0).contains(&m.confidence)) {
        return Err("confidence is not between 0 and 1".into());
    }
    if m.sources.len() > limits::SOURCES {
        return Err(format!("more than {} sources", limits::SOURCES));
    }
    Ok(())
}

/// The parts of a memory a proposer controls, as JSON for the recursive scan:
/// what the write gate scans and what recall scans again, in one shape.
pub(crate) fn proposal_json(m: &Memory) -> Value {
    json!({
        "name": m.name,
        "description": m.description,
        "content": m.content,
        "tags": m.tags,
        "metadata": Value::Object(m.metadata.clone()),
    })
}

/// Scans every string and key of a memory's proposer-controlled fields.
pub(crate) fn scan_memory(scanners: &Scanners, m: &Memory) -> Scan {
    scanners.memory_json(&proposal_json(m))
}

/// The memory with every secret redacted, in every field and metadata key.
pub(crate) fn redacted(scanners: &Scanners, m: &Memory) -> Memory {
    let mut out = m.clone();
    out.name = scanners.redact_memory(&m.name).into_owned();
    out.description = scanners.redact_memory(&m.description).into_owned();
    out.content = scanners.redact_memory(&m.content).into_owned();
    out.tags = m
        .tags
        .iter()
        .map(|t| scanners.redact_memory(t).into_owned())
        .collect();
    out.metadata = match scanners.redact_json(&Value::Object(m.metadata.clone())) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    out
}

/// A quarantine record for a blocked proposal: redacted, no flagged text elsewhere.
#[allow(clippy::too_many_arguments)]
pub(crate) fn quarantine_record(
    scanners: &Scanners,
    ids: &IdGen,
    now: DateTime<Utc>,
    scope: &Scope,
    source: QuarantineSource,
    kind: ProposalKind,
    memory: &Memory,
    scan: &Scan,
    sessions: Vec<SessionId>,
) -> QuarantineRecord {
    let memory = redacted(scanners, memory);
    let hash = hash_bytes(render_memory(&memory).as_bytes());
    QuarantineRecord {
        id: ids.next(now),
        at: now,
        scope: scope.clone(),
        source,
        kind,
        memory,
        findings: scan.findings.clone(),
        sessions,
        hash,
        seal: None,
    }
}

/// The verdict of the gate on one proposed memory, outside a pass.
pub(crate) enum Admission {
    /// Store it; `rules` are suspicious findings that were allowed.
    Admit { rules: Vec<String> },
    /// Quarantine it.
    Quarantine(Scan),
}

/// Field rules, then the scan: what every non-pass writer calls.
pub(crate) fn admit(scanners: &Scanners, m: &Memory) -> Result<Admission, String> {
    validate_fields(m)?;
    let scan = scan_memory(scanners, m);
    if scan.blocks() {
        Ok(Admission::Quarantine(scan))
    } else {
        Ok(Admission::Admit {
            rules: if scan.verdict > Verdict::Clean {
                scan.rules()
            } else {
                Vec::new()
            },
        })
    }
}

/// Records where a memory's evidence came from, and holds it for the person's
/// confirmation unless it is the person's word and no standing order that sends
/// data out.
pub(crate) fn apply_support(memory: &mut Memory, support: &Support) {
    let mut roles = support.roles.clone();
    roles.sort();
    roles.dedup();
    memory.evidence = roles;
    memory.status = if support.by_person && !provenance::sends_data_out(memory) {
        MemoryStatus::Active
    } else {
        MemoryStatus::Unconfirmed
    };
}

fn merge_sources(into: &mut Vec<SessionId>, more: &[SessionId]) {
    for s in more {
        if !into.contains(s) {
            into.push(s.clone());
        }
    }
    if into.len() > limits::SOURCES {
        let excess = into.len() - limits::SOURCES;
        into.drain(..excess);
    }
}

/// What a memory's content asserts, for telling a restatement: case, spacing,
/// end punctuation and ISO dates aside. The one definition: the gate and the
/// rule-based consolidator both ask it.
pub(crate) fn assertion(content: &str) -> String {
    let mut out = String::with_capacity(content.len());
    let mut digits = String::new();
    for c in content.to_lowercase().chars() {
        if c.is_ascii_digit() || (c == '-' && !digits.is_empty()) {
            digits.push(c);
            continue;
        }
        if !digits.is_empty() {
            if !is_iso_date(&digits) {
                out.push_str(&digits);
            }
            digits.clear();
        }
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    if !digits.is_empty() && !is_iso_date(&digits) {
        out.push_str(&digits);
    }
    out.trim().to_owned()
}

/// Whether `s` is `YYYY-MM-DD`.
fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

// ---------------------------------------------------------------------------
// The pass gate.

struct Judge<'a, 'b> {
    ctx: &'b GateContext<'a>,
    refs: HashMap<&'b str, &'b SessionId>,
    /// Batch sessions by reference, for evidence.
    batch: HashMap<&'b str, &'b Cited>,
    /// This plan's creates written so far, by plan-local handle → index in `out.creates`.
    handles: HashMap<String, usize>,
    touched: HashSet<MemoryId>,
    changes: usize,
    creates: usize,
    out: Gated,
}

/// Judges a plan: what survives becomes concrete writes, the rest is refused
/// or quarantined, each with a reason.
pub(crate) fn gate(plan: Plan, ctx: &GateContext<'_>) -> Gated {
    let mut refs = HashMap::new();
    let mut batch = HashMap::new();
    for s in ctx.sessions {
        refs.insert(s.reference.as_str(), &s.id);
        refs.insert(s.id.as_str(), &s.id);
        batch.insert(s.reference.as_str(), s);
    }
    let mut judge = Judge {
        ctx,
        refs,
        batch,
        handles: HashMap::new(),
        touched: HashSet::new(),
        changes: 0,
        creates: 0,
        out: Gated {
            refused: plan.dropped,
            ..Gated::default()
        },
    };
    let mut dropped = std::mem::take(&mut judge.out.refused);
    for r in &mut dropped {
        r.sessions = judge.cite(&r.cites);
    }
    judge.out.refused = dropped;
    // The person's word first: when a cap applies, proposals resting on the
    // person's own messages take the slots before agent- or tool-sourced ones.
    let mut creates = plan.creates;
    creates.sort_by_key(|c| !judge.cites_person(&c.evidence));
    for c in creates {
        judge.create(c);
    }
    for u in plan.updates {
        judge.update(u);
    }
    for d in plan.deletes {
        judge.delete(d);
    }
    judge.prune();
    // Refusals name only what exists: a made-up target (valid id or not) is the
    // proposer's text and stays out of reports, audit records and events.
    for r in &mut judge.out.refused {
        if r.action == "create" {
            continue;
        }
        let known = r
            .target
            .as_deref()
            .and_then(|t| MemoryId::new(t).ok())
            .is_some_and(|id| ctx.memories.contains_key(&id) || ctx.foreign.contains(&id));
        if !known {
            r.target = None;
        }
    }
    judge.out
}

impl<'b> Judge<'_, 'b> {
    fn refuse(&mut self, action: &str, target: Option<&str>, reason: impl Into<String>) {
        self.out.refused.push(Refusal::new(action, target, reason));
    }

    /// Refuses a statement-carrying proposal, naming the sessions it cites so
    /// they stay pending.
    fn hold_back(&mut self, action: &str, target: Option<&str>, refusal: Held) {
        let mut r = Refusal::new(action, target, refusal.reason).because(refusal.cause);
        r.sessions = refusal.sessions;
        self.out.refused.push(r);
    }

    /// [`Self::hold_back`] for the sessions `named`.
    fn refuse_for(
        &mut self,
        named: &[SessionId],
        action: &str,
        target: Option<&str>,
        reason: impl Into<String>,
        cause: RefusalCause,
    ) {
        let refusal = Held {
            reason: reason.into(),
            cause,
            sessions: named.to_vec(),
        };
        self.hold_back(action, target, refusal);
    }

    /// The batch sessions that `citations` and `sources` name.
    fn sessions_named(&self, citations: &[Citation], sources: &[String]) -> Vec<SessionId> {
        let refs: Vec<String> = citations
            .iter()
            .map(|c| c.session.clone())
            .chain(sources.iter().cloned())
            .collect();
        self.cite(&refs)
    }

    /// Whether a proposal cites a message of the person's own.
    fn cites_person(&self, citations: &[Citation]) -> bool {
        citations.iter().any(|c| {
            self.batch
                .get(c.session.trim())
                .and_then(|s| s.messages.get(c.message))
                .is_some_and(|m| m.role == dream_core::Role::User)
        })
    }

    fn cite(&self, sources: &[String]) -> Vec<SessionId> {
        let mut out: Vec<SessionId> = Vec::new();
        for s in sources {
            if let Some(id) = self.refs.get(s.trim())
                && !out.contains(id)
            {
                out.push((*id).clone());
            }
        }
        out
    }

    /// The cited messages and their sessions; `Err` when a citation names a
    /// session outside the batch or a message that does not exist.
    fn evidence(
        &self,
        citations: &[Citation],
    ) -> Result<(Vec<provenance::Cited<'b>>, Vec<SessionId>), String> {
        if citations.is_empty() {
            return Err("cites no message as evidence".into());
        }
        let mut messages = Vec::new();
        let mut sessions: Vec<SessionId> = Vec::new();
        for c in citations {
            let Some(session) = self.batch.get(c.session.trim()) else {
                return Err("cites a session outside this batch".into());
            };
            let Some(message) = session.messages.get(c.message) else {
                return Err(format!(
                    "cites message {} of {}, which has {} messages",
                    c.message,
                    session.reference,
                    session.messages.len()
                ));
            };
            messages.push(provenance::Cited {
                role: message.role,
                text: &message.content,
                date: session.created_at,
            });
            if !sessions.contains(&session.id) {
                sessions.push(session.id.clone());
            }
        }
        Ok((messages, sessions))
    }

    /// Resolves an existing target the pass may change, or says why not.
    fn target(&self, raw: &str) -> Result<&Known, String> {
        let id = MemoryId::new(raw).map_err(|_| "target is not a valid memory id".to_owned())?;
        let Some(known) = self.ctx.memories.get(&id) else {
            return Err(if self.ctx.foreign.contains(&id) {
                "target belongs to another scope".to_owned()
            } else {
                "target is not a known memory".to_owned()
            });
        };
        if known.memory.pinned {
            return Err("target is pinned: only a person changes it".into());
        }
        if !known.verified {
            return Err(
                "target is unverified (not written by this store's engine): \
                        a person must confirm it first"
                    .into(),
            );
        }
        if !known.memory.status.is_current() {
            return Err("target is not active".into());
        }
        if self.touched.contains(&id) {
            return Err("target is already changed by this plan".into());
        }
        Ok(known)
    }

    fn budget(&self) -> usize {
        self.ctx
            .options
            .max_deletes_per_pass
            .saturating_sub(self.changes)
    }

    fn quarantine(
        &mut self,
        kind: ProposalKind,
        memory: &Memory,
        scan: &Scan,
        sessions: Vec<SessionId>,
    ) {
        let c = self.ctx;
        let record = quarantine_record(
            c.scanners,
            c.ids,
            c.now,
            c.scope,
            QuarantineSource::Dream {
                pass: c.pass.to_owned(),
            },
            kind,
            memory,
            scan,
            sessions,
        );
        self.out.quarantine.push(record);
    }

    /// Whether `memory` says again what a current memory of the scope, or an
    /// earlier create of this plan, already says (dates aside): then the
    /// sessions count as kept and nothing new is written. A held memory
    /// restated in the person's own words becomes the person's word.
    fn restates(
        &mut self,
        memory: &Memory,
        cited: &[provenance::Cited<'_>],
        sessions: &[SessionId],
        named: &[SessionId],
    ) -> bool {
        let said = assertion(&memory.content);
        if let Some(earlier) = self
            .out
            .creates
            .iter_mut()
            .find(|e| e.memory.status.is_current() && assertion(&e.memory.content) == said)
        {
            merge_sources(&mut earlier.memory.sources, sessions);
            for s in sessions {
                if !earlier.sessions.contains(s) {
                    earlier.sessions.push(s.clone());
                }
            }
            let id = earlier.memory.id.clone();
            self.out.restated.push(Restated {
                memory: id,
                sessions: sessions.to_vec(),
            });
            return true;
        }
        let Some(known) = self
            .ctx
            .memories
            .values()
            .find(|k| k.memory.status.is_current() && assertion(&k.memory.content) == said)
        else {
            return false;
        };
        let by_person = provenance::support(&known.memory, cited).is_ok_and(|s| s.by_person);
        let confirms = by_person
            && known.verified
            && !known.memory.pinned
            && known.memory.status == MemoryStatus::Unconfirmed
            && !self.touched.contains(&known.memory.id);
        if confirms {
            let known = known.clone();
            if self.cap_reached(named, known.memory.id.as_str()) {
                return true;
            }
            let after = self.next_version(&known, sessions);
            let roles: Vec<Role> = cited.iter().map(|c| c.role).collect();
            self.count_change(&known.memory.id);
            self.push_update(known, after, sessions.to_vec(), &roles, true, Vec::new());
            return true;
        }
        self.out.restated.push(Restated {
            memory: known.memory.id.clone(),
            sessions: sessions.to_vec(),
        });
        true
    }

    fn create(&mut self, p: ProposedCreate) {
        let handle = p.handle.clone();
        let h = Some(handle.as_str());
        let named = self.sessions_named(&p.evidence, &p.sources);
        let held = |reason: String, cause| Held {
            reason,
            cause,
            sessions: named.clone(),
        };
        let (cited, sessions) = match self.evidence(&p.evidence) {
            Ok(found) => found,
            Err(reason) => return self.hold_back("create", h, held(reason, RefusalCause::Refused)),
        };
        if let Some(at) = p.expires_at
            && at <= self.ctx.now
        {
            let reason = "expires_at is not in the future".to_owned();
            return self.hold_back("create", h, held(reason, RefusalCause::Refused));
        }
        let c = self.ctx;
        let mut memory = Memory::new(
            MemoryId::new(c.ids.next(c.now)).expect("ULIDs are valid ids"),
            p.kind,
            p.name,
            p.description,
            p.content,
            c.now,
        );
        memory.tags = p.tags;
        memory.scope = c.scope.clone();
        memory.sources = sessions.clone();
        memory.confidence = p.confidence.unwrap_or(0.7);
        memory.metadata = p.metadata;
        memory.expires_at = p.expires_at;
        if let Err(reason) = validate_fields(&memory) {
            return self.hold_back("create", h, held(reason, RefusalCause::Refused));
        }
        if self.restates(&memory, &cited, &sessions, &named) {
            return;
        }
        if self.creates >= c.options.max_creates_per_pass {
            let reason = "per-pass create cap reached: proposed again by the next pass".to_owned();
            return self.hold_back("create", h, held(reason, RefusalCause::PassCap));
        }
        self.creates += 1;
        let scan = scan_memory(c.scanners, &memory);
        if scan.blocks() {
            return self.quarantine(ProposalKind::Create, &memory, &scan, sessions);
        }
        let by_person = match provenance::support(&memory, &cited) {
            Ok(support) => {
                apply_support(&mut memory, &support);
                support.by_person
            }
            Err(reason) => {
                return self.hold_back(
                    "create",
                    h,
                    Held {
                        reason,
                        cause: RefusalCause::Refused,
                        sessions: named,
                    },
                );
            }
        };
        // What the person's own words carry must be something they state that
        // lasts: a model proposes memories from thanks and questions too. (What
        // they do not carry, such as a quote, is held for their confirm.)
        if by_person
            && cited.iter().all(|m| m.role == Role::User)
            && !cited.iter().any(|m| (c.states_something)(m.text, m.date))
        {
            let reason =
                "the person's cited message states nothing lasting (a question, greeting, \
                          thanks, status or request about the task at hand)"
                    .to_owned();
            return self.hold_back("create", h, held(reason, RefusalCause::NotLasting));
        }
        let mut supersedes = Vec::new();
        for raw in &p.supersedes {
            // An earlier create of this plan: written, but as superseded by this
            // one, so no statement of the batch silently replaces another.
            if let Some(&index) = self.handles.get(raw.as_str()) {
                let earlier = &mut self.out.creates[index].memory;
                if memory.status == MemoryStatus::Unconfirmed
                    && earlier.status == MemoryStatus::Active
                {
                    self.refuse(
                        "supersede",
                        Some(raw),
                        "an unconfirmed memory cannot retire one that is the person's word",
                    );
                    continue;
                }
                earlier.status = MemoryStatus::Superseded;
                supersedes.push(earlier.id.clone());
                continue;
            }
            let verdict = self.target(raw).cloned();
            match verdict {
                Err(reason) => self.refuse("supersede", Some(raw), reason),
                Ok(known)
                    if memory.status == MemoryStatus::Unconfirmed
                        && known.memory.status == MemoryStatus::Active =>
                {
                    self.refuse(
                        "supersede",
                        Some(raw),
                        "an unconfirmed memory cannot retire one that is the person's word",
                    )
                }
                Ok(_) if self.budget() == 0 => {
                    self.refuse("supersede", Some(raw), "per-pass change cap reached")
                }
                Ok(known) => {
                    self.changes += 1;
                    self.touched.insert(known.memory.id.clone());
                    let mut after = known.memory.clone();
                    after.status = MemoryStatus::Superseded;
                    after.updated_at = c.now;
                    supersedes.push(known.memory.id.clone());
                    self.out.supersedes.push(Changed {
                        prior: known.prior(),
                        before: known.memory,
                        after,
                        sessions: sessions.clone(),
                        by: Some(memory.id.clone()),
                        rules: Vec::new(),
                    });
                }
            }
        }
        memory.supersedes = supersedes;
        let rules = if scan.verdict > Verdict::Clean {
            scan.rules()
        } else {
            Vec::new()
        };
        self.handles.insert(handle, self.out.creates.len());
        self.out.creates.push(Created {
            memory,
            sessions,
            rules,
        });
    }

    fn update(&mut self, p: ProposedUpdate) {
        let t = Some(p.target.as_str());
        let named = self.sessions_named(&p.evidence, &p.sources);
        let known = match self.target(&p.target) {
            Ok(k) => k.clone(),
            Err(reason) => {
                return self.refuse_for(&named, "update", t, reason, RefusalCause::Refused);
            }
        };
        let (cited, sessions) = match self.evidence(&p.evidence) {
            Ok(found) => found,
            Err(reason) => {
                return self.refuse_for(&named, "update", t, reason, RefusalCause::Refused);
            }
        };
        if self.cap_reached(&named, p.target.as_str()) {
            return;
        }
        let mut after = self.next_version(&known, &sessions);
        if let Some(v) = p.name {
            after.name = v;
        }
        if let Some(v) = p.description {
            after.description = v;
        }
        if let Some(v) = p.kind {
            after.kind = v;
        }
        if let Some(v) = p.content {
            after.content = v;
        }
        if let Some(v) = p.tags {
            after.tags = v;
        }
        if let Some(v) = p.confidence {
            after.confidence = v;
        }
        if let Some(v) = p.metadata {
            after.metadata = v;
        }
        if let Err(reason) = validate_fields(&after) {
            return self.refuse_for(&named, "update", t, reason, RefusalCause::Refused);
        }
        if !provenance::keeps_subject(&known.memory, &after) {
            return self.refuse_for(
                &named,
                "update",
                t,
                "the new content no longer shares the memory's subject: propose a create \
                 that supersedes it",
                RefusalCause::Refused,
            );
        }
        self.count_change(&known.memory.id);
        let scan = scan_memory(self.ctx.scanners, &after);
        if scan.blocks() {
            return self.quarantine(ProposalKind::Update, &after, &scan, sessions);
        }
        // What the change adds must rest on its citations; it stays the person's
        // word only when the person's messages carry it (all of it, for a memory
        // that was not yet the person's word).
        let before_tokens = provenance::identifying_tokens(&known.memory);
        let after_tokens = provenance::identifying_tokens(&after);
        let added = after_tokens.difference(&before_tokens).cloned().collect();
        let mut support = match provenance::support_of(&added, &after.content, &cited) {
            Ok(support) => support,
            Err(reason) => {
                return self.refuse_for(&named, "update", t, reason, RefusalCause::Refused);
            }
        };
        if after.content == known.memory.content && !provenance::restates(&after, &cited) {
            return self.refuse_for(
                &named,
                "update",
                t,
                "the update keeps the memory's content but restates nothing of it: its \
                 cited messages name none of what the memory says (propose a create for \
                 what they say)",
                RefusalCause::Refused,
            );
        }
        if known.memory.status != MemoryStatus::Active {
            support.by_person = provenance::support_of(&after_tokens, &after.content, &cited)
                .is_ok_and(|whole| whole.by_person);
        }
        if known.memory.status == MemoryStatus::Active && !support.by_person {
            return self.refuse_for(
                &named,
                "update",
                t,
                "the change does not rest on the person's words: it cannot change a memory \
                 that is the person's word (propose a create instead)",
                RefusalCause::Refused,
            );
        }
        let rules = if scan.verdict > Verdict::Clean {
            scan.rules()
        } else {
            Vec::new()
        };
        self.push_update(
            known,
            after,
            sessions,
            &support.roles,
            support.by_person,
            rules,
        );
    }

    /// Whether the pass's change cap is reached; then the update of `target` is
    /// refused for `named` (the next pass proposes it again).
    fn cap_reached(&mut self, named: &[SessionId], target: &str) -> bool {
        if self.budget() > 0 {
            return false;
        }
        self.refuse_for(
            named,
            "update",
            Some(target),
            "per-pass change cap reached: proposed again by the next pass",
            RefusalCause::PassCap,
        );
        true
    }

    /// `known`'s next version: resting also on `sessions`, stamped now.
    fn next_version(&self, known: &Known, sessions: &[SessionId]) -> Memory {
        let mut after = known.memory.clone();
        merge_sources(&mut after.sources, sessions);
        after.updated_at = self.ctx.now;
        after
    }

    /// Counts a change of `id` against the pass's cap.
    fn count_change(&mut self, id: &MemoryId) {
        self.changes += 1;
        self.touched.insert(id.clone());
    }

    /// The update of `known` to `after`: its evidence `known`'s and `roles`, the
    /// person's word when `by_person` (see [`apply_support`]).
    fn push_update(
        &mut self,
        known: Known,
        mut after: Memory,
        sessions: Vec<SessionId>,
        roles: &[Role],
        by_person: bool,
        rules: Vec<String>,
    ) {
        let mut all = known.memory.evidence.clone();
        all.extend_from_slice(roles);
        apply_support(
            &mut after,
            &Support {
                roles: all,
                by_person,
            },
        );
        self.out.updates.push(Changed {
            prior: known.prior(),
            before: known.memory,
            after,
            sessions,
            by: None,
            rules,
        });
    }

    fn delete(&mut self, p: ProposedDelete) {
        let t = Some(p.target.as_str());
        let known = match self.target(&p.target) {
            Ok(k) => k.clone(),
            Err(reason) => return self.refuse("delete", t, reason),
        };
        let sessions = self.cite(&p.sources);
        if sessions.is_empty() {
            return self.refuse("delete", t, "cites no session of this batch");
        }
        if known.memory.status == MemoryStatus::Active && !self.person_speaks_of(&known, &sessions)
        {
            return self.refuse(
                "delete",
                t,
                "no cited session holds the person's own words about it: it cannot remove a \
                 memory that is the person's word",
            );
        }
        if self.budget() == 0 {
            return self.refuse("delete", t, "per-pass change cap reached");
        }
        self.changes += 1;
        self.touched.insert(known.memory.id.clone());
        let reason_hash = (!p.reason.is_empty()).then(|| hash_bytes(p.reason.as_bytes()));
        self.out.deletes.push(Removed {
            prior: known.prior(),
            memory: known.memory,
            sessions,
            reason: format!(
                "deleted by pass {} as contradicted or superseded",
                self.ctx.pass
            ),
            reason_hash,
        });
    }

    /// Whether the person's own messages in `sessions` speak of `known`: the
    /// support an update of the person's word needs, asked of a delete.
    fn person_speaks_of(&self, known: &Known, sessions: &[SessionId]) -> bool {
        let said: Vec<provenance::Cited<'_>> = self
            .ctx
            .sessions
            .iter()
            .filter(|s| sessions.contains(&s.id))
            .flat_map(|s| {
                s.messages
                    .iter()
                    .filter(|m| m.role == dream_core::Role::User)
                    .map(|m| provenance::Cited {
                        role: m.role,
                        text: &m.content,
                        date: s.created_at,
                    })
            })
            .collect();
        provenance::speaks_of(&known.memory, &said)
    }

    /// Prunes beyond `max_memories`, in this order, each step only while memories
    /// are still over: memories that are not the person's word (held,
    /// unconfirmed, superseded, expired; least recently updated first); then
    /// this pass's own unconfirmed creates are withdrawn and wait for room
    /// (their sessions stay pending); only then the person's older words, to
    /// make room for the person's newer ones. Never a pinned memory, never what
    /// this pass writes; counted against the change cap.
    fn prune(&mut self) {
        let c = self.ctx;
        let after = c.memories.len() + self.out.creates.len() - self.out.deletes.len();
        let mut excess = after.saturating_sub(c.options.max_memories);
        if excess == 0 {
            return;
        }
        let mut candidates: Vec<&Known> = c
            .memories
            .values()
            .filter(|k| !k.memory.pinned && !self.touched.contains(&k.memory.id))
            .collect();
        candidates.sort_by(|a, b| {
            let key = |k: &'_ Known| {
                let m = &k.memory;
                (m.status == MemoryStatus::Active, m.updated_at, m.created_at)
            };
            key(a)
                .cmp(&key(b))
                .then_with(|| a.memory.id.cmp(&b.memory.id))
        });
        let (untrusted, persons): (Vec<&Known>, Vec<&Known>) = candidates
            .into_iter()
            .partition(|k| k.memory.status != MemoryStatus::Active);
        self.prune_from(&untrusted, &mut excess);
        while excess > 0 && self.withdraw_unconfirmed_create() {
            excess -= 1;
        }
        self.prune_from(&persons, &mut excess);
        if excess > 0 && self.budget() > 0 {
            self.refuse(
                "prune",
                None,
                format!("{excess} memories over max_memories are pinned or written by this pass"),
            );
        }
    }

    /// Prunes from `candidates`, in order, while `excess` remains and the change
    /// cap allows.
    fn prune_from(&mut self, candidates: &[&Known], excess: &mut usize) {
        let max = self.ctx.options.max_memories;
        for known in candidates {
            if *excess == 0 {
                return;
            }
            if self.budget() == 0 {
                self.refuse(
                    "prune",
                    None,
                    format!("per-pass change cap reached with {excess} memories over max_memories"),
                );
                return;
            }
            self.changes += 1;
            *excess -= 1;
            // Its trash copy is sealed when applied: in its held form when the
            // record did not pass the verified read, so a restore cannot launder it.
            let mut memory = known.memory.clone();
            if !known.verified {
                crate::seal::held(&mut memory);
            }
            self.out.prunes.push(Removed {
                memory,
                prior: known.prior(),
                sessions: Vec::new(),
                reason: format!("pruned: over max_memories ({max})"),
                reason_hash: None,
            });
        }
    }

    /// Takes back this pass's latest unconfirmed create (and what it
    /// superseded), holding its sessions back for lack of room; `false` when
    /// there is none.
    fn withdraw_unconfirmed_create(&mut self) -> bool {
        let Some(index) = self
            .out
            .creates
            .iter()
            .rposition(|c| c.memory.status == MemoryStatus::Unconfirmed)
        else {
            return false;
        };
        let withdrawn = self.out.creates.remove(index);
        let id = withdrawn.memory.id.clone();
        for h in self.handles.values_mut() {
            if *h > index {
                *h -= 1;
            }
        }
        let (undone, kept): (Vec<Changed>, Vec<Changed>) = std::mem::take(&mut self.out.supersedes)
            .into_iter()
            .partition(|s| s.by.as_ref() == Some(&id));
        self.out.supersedes = kept;
        for s in undone {
            self.changes = self.changes.saturating_sub(1);
            self.touched.remove(&s.before.id);
        }
        for earlier in &mut self.out.creates {
            if withdrawn.memory.supersedes.contains(&earlier.memory.id) {
                earlier.memory.status = MemoryStatus::Unconfirmed;
            }
        }
        let mut sessions = withdrawn.sessions.clone();
        self.out.restated.retain(|r| {
            if r.memory != id {
                return true;
            }
            sessions.extend(r.sessions.iter().cloned());
            false
        });
        sessions.sort();
        sessions.dedup();
        let reason = format!(
            "max_memories ({}) reached and only the person's own memories are left to prune: \
             forget some or raise max_memories",
            self.ctx.options.max_memories
        );
        self.hold_back(
            "create",
            None,
            Held {
                reason,
                cause: RefusalCause::StoreFull,
                sessions,
            },
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dream_core::MemoryKind;

    /// A memory whose metadata is nested `levels` deep (the top-level object is 1).
    fn nested(levels: usize) -> Memory {
        let mut value = json!("the release review happens on monday");
        for _ in 1..levels {
            value = json!({ "n": value });
        }
        let mut m = Memory::new(
            MemoryId::new("m1").unwrap(),
            MemoryKind::Project,
            "Release review",
            "",
            "the release review happens on monday",
            Utc::now(),
        );
        m.metadata = json!({ "x": value }).as_object().unwrap().clone();
        m
    }

    #[test]
    fn metadata_at_the_gate_limit_passes_the_scanner_and_one_deeper_is_refused() {
        let scanners = Scanners::default();
        let at_limit = nested(limits::METADATA_DEPTH);
        assert_eq!(depth(&Value::Object(at_limit.metadata.clone())), 8);
        assert!(matches!(
            admit(&scanners, &at_limit),
            Ok(Admission::Admit { .. })
        ));
        let too_deep = nested(limits::METADATA_DEPTH + 1);
        match admit(&scanners, &too_deep) {
            Err(reason) => assert_eq!(reason, "metadata is nested deeper than 8"),
            Ok(_) => panic!("metadata nested 9 deep was admitted"),
        }
    }
}
