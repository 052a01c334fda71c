//! The knowledge firewall: one verdict per candidate record, fail-closed, in order:
//!
//! 1. candidate set (the caller ranks, retries once and diagnoses);
//! 2. recursive scan of every string and key → `quarantined` (done at analysis);
//! 3. field validation → `rejected` (done at analysis);
//! 4. lifecycle over the whole store's supersession index, built only from records
//!    that passed 2 and 3 → `ignored` (superseded, revoked, expired);
//! 5. scope → `held`; a local record whose only successors live in other scopes →
//!    `rejected` (cross-scope current state);
//! 6. trust: a record without this store's seal → `held` (`unverified`); a memory
//!    resting only on tool, assistant or system text, or a standing order that
//!    sends data out → `held` (`unconfirmed-source`), until a person confirms it;
//!    Then relevance: below the query's own floor (see `relevance`) →
//!    `ignored` (`not-relevant`): relevant or silent;
//! 7. conflict: another trusted, current in-scope record with the same subject
//!    key whose content disagrees → `conflict` (both records, even one outside
//!    the top-K);
//! 8. grounding: no provenance or low confidence → `ignored`;
//! 9. admitted → `used` (at most `limit`; further admitted records → `ignored`,
//!    over-limit).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use dream_core::Scope;

use super::analyze::{Outcome, Valid};
use super::index::{Hit, Index};
use super::relevance::Relevance;
use super::{FirewallVerdict, Policy, PolicyVerdict, Reason, RecordVerdict, codes, shown_id};

/// Where a valid record is in its lifecycle.
enum Life {
    Current,
    /// Superseded, revoked or expired.
    Retired(Reason),
    /// Replaced, but only by records of other scopes.
    CrossScope(Reason),
}

/// Judges candidates against one index, scope and time.
pub(crate) struct Firewall<'a> {
    pub index: &'a Index,
    pub scope: &'a Scope,
    pub now: DateTime<Utc>,
    pub min_confidence: f64,
    pub relevance: &'a Relevance,
}

impl Firewall<'_> {
    fn valid(&self, doc: u32) -> Option<&Valid> {
        self.index.doc(doc)?.valid()
    }

    /// A document's id as it may be shown.
    fn shown(&self, doc: u32) -> String {
        match self.index.doc(doc) {
            Some(d) => shown_id(&d.id, d.id_flagged),
            None => String::new(),
        }
    }

    /// Whether document `doc` is a valid record and current (step 4 alone).
    pub fn is_current(&self, doc: u32) -> bool {
        self.valid(doc)
            .is_some_and(|valid| matches!(self.life(doc, valid), Life::Current))
    }

    /// Step 4, over the whole store, for document `doc`.
    fn life(&self, doc: u32, valid: &Valid) -> Life {
        match valid.status {
            dream_core::MemoryStatus::Active | dream_core::MemoryStatus::Unconfirmed => {}
            dream_core::MemoryStatus::Revoked => {
                return Life::Retired(Reason::new(codes::REVOKED, None));
            }
            dream_core::MemoryStatus::Expired => {
                return Life::Retired(Reason::new(codes::EXPIRED, Some("status".into())));
            }
            dream_core::MemoryStatus::Superseded => {
                return Life::Retired(Reason::new(codes::SUPERSEDED, Some("status".into())));
            }
        }
        if let Some(expires) = valid.expires_at
            && expires <= self.now
        {
            return Life::Retired(Reason::new(
                codes::EXPIRED,
                Some(format!(
                    "at {}",
                    expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                )),
            ));
        }
        let Some(id) = self.index.doc(doc).map(|d| &d.id) else {
            return Life::Current;
        };
        let successors: Vec<(u32, &Valid)> = self
            .index
            .records
            .successors(id)
            .iter()
            .filter(|s| **s != doc)
            .filter_map(|s| Some((*s, self.valid(*s)?)))
            .collect();
        if let Some((local, _)) = successors.iter().find(|(_, s)| s.scope == valid.scope) {
            return Life::Retired(Reason::new(
                codes::SUPERSEDED,
                Some(format!("by {}", self.shown(*local))),
            ));
        }
        if let Some((doc, foreign)) = successors.first() {
            return Life::CrossScope(Reason::new(
                codes::CROSS_SCOPE_CURRENT_STATE,
                Some(format!(
                    "successor {} lives in scope {}",
                    self.shown(*doc),
                    foreign.scope
                )),
            ));
        }
        Life::Current
    }

    /// Current, valid, in-scope records about the same subject that disagree.
    fn disagreeing(&self, doc: u32, valid: &Valid) -> Vec<u32> {
        self.index
            .records
            .subject_group(valid.subject_hash())
            .filter(|other| *other != doc)
            .filter(|other| {
                self.valid(*other).is_some_and(|o| {
                    o.trusted()
                        && o.subject == valid.subject
                        && o.agreement != valid.agreement
                        && o.scope == *self.scope
                        && matches!(self.life(*other, o), Life::Current)
                })
            })
            .collect()
    }

    fn conflict_reason(&self, with: &[u32]) -> Reason {
        let ids: Vec<String> = with.iter().take(3).map(|d| self.shown(*d)).collect();
        let more = if with.len() > ids.len() {
            format!(" and {} more", with.len() - ids.len())
        } else {
            String::new()
        };
        Reason::new(
            codes::CONFLICT,
            Some(format!(
                "disagrees with {}{more} on the same subject",
                ids.join(", ")
            )),
        )
    }

    /// One verdict per candidate, in rank order, then any conflicting record found
    /// outside the candidates.
    pub fn judge(&self, candidates: &[Hit], limit: usize) -> Vec<RecordVerdict> {
        let mut out: Vec<RecordVerdict> = Vec::with_capacity(candidates.len());
        let mut seen: HashSet<u32> = candidates.iter().map(|h| h.doc).collect();
        let mut extra_conflicts: Vec<(u32, Vec<u32>)> = Vec::new();
        let mut used = 0usize;
        for hit in candidates {
            let Some(doc) = self.index.doc(hit.doc) else {
                continue;
            };
            let verdict = |verdict: FirewallVerdict, reason: Reason| RecordVerdict {
                id: doc.id.clone(),
                version: doc.version,
                verdict,
                reason,
                score: hit.score,
                memory: None,
                id_flagged: doc.id_flagged,
            };
            let valid = match &doc.outcome {
                Outcome::Quarantined(reason) => {
                    out.push(verdict(FirewallVerdict::Quarantined, reason.clone()));
                    continue;
                }
                Outcome::Rejected { reason, .. } => {
                    out.push(verdict(FirewallVerdict::Rejected, reason.clone()));
                    continue;
                }
                Outcome::Valid(valid) => valid,
            };
            let life = self.life(hit.doc, valid);
            if let Life::Retired(reason) = life {
                out.push(verdict(FirewallVerdict::Ignored, reason));
                continue;
            }
            if valid.scope != *self.scope {
                out.push(verdict(
                    FirewallVerdict::Held,
                    Reason::new(codes::OTHER_SCOPE, Some(format!("scope {}", valid.scope))),
                ));
                continue;
            }
            if let Life::CrossScope(reason) = life {
                out.push(verdict(FirewallVerdict::Rejected, reason));
                continue;
            }
            if let Some(reason) = untrusted(valid) {
                out.push(verdict(FirewallVerdict::Held, reason));
                continue;
            }
            if let Some(reached) = self.relevance.below(hit.doc) {
                out.push(verdict(
                    FirewallVerdict::Ignored,
                    Reason::new(codes::NOT_RELEVANT, Some(reached.to_owned())),
                ));
                continue;
            }
            let against = self.disagreeing(hit.doc, valid);
            if !against.is_empty() {
                for other in &against {
                    if seen.insert(*other) {
                        extra_conflicts.push((*other, vec![hit.doc]));
                    } else if let Some(entry) = extra_conflicts.iter_mut().find(|(d, _)| d == other)
                    {
                        entry.1.push(hit.doc);
                    }
                }
                out.push(verdict(
                    FirewallVerdict::Conflict,
                    self.conflict_reason(&against),
                ));
                continue;
            }
            // A pinned memory is a person's own `remember`, an import the person's
            // own act: that act is its provenance.
            if !valid.grounded && !valid.pinned {
                out.push(verdict(
                    FirewallVerdict::Ignored,
                    Reason::new(codes::UNGROUNDED, Some("no provenance".into())),
                ));
                continue;
            }
            if valid.confidence < self.min_confidence {
                out.push(verdict(
                    FirewallVerdict::Ignored,
                    Reason::new(
                        codes::LOW_CONFIDENCE,
                        Some(format!(
                            "{:.2} < {:.2}",
                            valid.confidence, self.min_confidence
                        )),
                    ),
                ));
                continue;
            }
            if used >= limit {
                out.push(verdict(
                    FirewallVerdict::Ignored,
                    Reason::new(codes::OVER_LIMIT, Some(format!("limit {limit}"))),
                ));
                continue;
            }
            used += 1;
            let detail = valid
                .suspicious
                .as_ref()
                .map(|s| format!("suspicious: {s}; shown as fenced data"));
            out.push(verdict(
                FirewallVerdict::Used,
                Reason::new(codes::SAFE_FACT, detail),
            ));
        }
        for (doc, with) in extra_conflicts {
            let Some(d) = self.index.doc(doc) else {
                continue;
            };
            out.push(RecordVerdict {
                id: d.id.clone(),
                version: d.version,
                verdict: FirewallVerdict::Conflict,
                reason: self.conflict_reason(&with),
                score: 0.0,
                memory: None,
                id_flagged: d.id_flagged,
            });
        }
        out
    }
}

/// Why a valid record is held for a person's confirmation, if it is.
fn untrusted(valid: &Valid) -> Option<Reason> {
    if !valid.verified {
        return Some(Reason::new(
            codes::UNVERIFIED,
            Some(
                "not sealed by this store: a hand edit, a planted file or a record from \
                 another store; `dream confirm` after review"
                    .into(),
            ),
        ));
    }
    if let Some(why) = &valid.unconfirmed {
        return Some(Reason::new(
            codes::UNCONFIRMED_SOURCE,
            Some(why.to_string()),
        ));
    }
    None
}

/// Why a memory stored `unconfirmed` waits for the person's confirmation, in
/// words that are true of it: the one wording recall's reason and MCP's `trust`
/// give. A standing order that sends data out is held whoever stated it, the
/// person included; anything else is held because the person's messages do not
/// carry it.
pub fn why_unconfirmed(memory: &dream_core::Memory) -> String {
    let roles: Vec<&str> = memory.evidence.iter().map(|r| r.as_str()).collect();
    let roles = roles.join(", ");
    if crate::provenance::sends_data_out(memory) {
        format!(
            "a standing order to send data out (evidence from {roles}): held until the person \
             confirms it, even when it is in their own words"
        )
    } else if memory.evidence.contains(&dream_core::Role::User) {
        format!("evidence from {roles}; the person's messages do not carry all of it")
    } else {
        format!("evidence only from {roles}; not the person's words")
    }
}

/// The `POLICY:` verdict of a result. Precedence, highest first:
/// conflict > used > quarantined > rejected > ignored (held counts as ignored).
/// Its reason is that of the best-ranked record with the chosen verdict. When
/// nothing was used, `diagnosis` says so ("nothing admitted: …").
pub(crate) fn policy(
    records: &[RecordVerdict],
    empty_diagnosis: impl FnOnce() -> String,
) -> Policy {
    let rank = |v: FirewallVerdict| match v {
        FirewallVerdict::Conflict => 0,
        FirewallVerdict::Used => 1,
        FirewallVerdict::Quarantined => 2,
        FirewallVerdict::Rejected => 3,
        FirewallVerdict::Ignored | FirewallVerdict::Held => 4,
    };
    let Some(top) = records.iter().min_by_key(|r| rank(r.verdict)) else {
        return Policy {
            verdict: PolicyVerdict::Ignored,
            reason: Reason::new(codes::NO_CANDIDATES, None),
            diagnosis: Some(format!("nothing admitted: {}", empty_diagnosis())),
        };
    };
    let verdict = match top.verdict {
        FirewallVerdict::Conflict => PolicyVerdict::Conflict,
        FirewallVerdict::Used => PolicyVerdict::Used,
        FirewallVerdict::Quarantined => PolicyVerdict::Quarantined,
        FirewallVerdict::Rejected => PolicyVerdict::Rejected,
        FirewallVerdict::Ignored | FirewallVerdict::Held => PolicyVerdict::Ignored,
    };
    let reason = if top.verdict == FirewallVerdict::Held && top.reason.code == codes::OTHER_SCOPE {
        Reason::new(codes::HELD_AT_SCOPE, Some(top.reason.to_string()))
    } else {
        top.reason.clone()
    };
    let diagnosis = if records.iter().any(|r| r.verdict == FirewallVerdict::Used) {
        None
    } else {
        let mut counts: Vec<(FirewallVerdict, usize)> = Vec::new();
        for r in records {
            match counts.iter_mut().find(|(v, _)| *v == r.verdict) {
                Some((_, n)) => *n += 1,
                None => counts.push((r.verdict, 1)),
            }
        }
        counts.sort_by_key(|(v, _)| rank(*v));
        let parts: Vec<String> = counts.iter().map(|(v, n)| format!("{n} {v}")).collect();
        Some(format!(
            "nothing admitted: {} candidate{} — {}",
            records.len(),
            if records.len() == 1 { "" } else { "s" },
            parts.join(", ")
        ))
    };
    Policy {
        verdict,
        reason,
        diagnosis,
    }
}
