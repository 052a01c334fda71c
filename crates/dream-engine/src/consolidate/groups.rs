//! One request per group of sessions: a small model follows one session per
//! request far better than twenty ([`crate::Options::sessions_per_request`]).
//!
//! Each group is its own [`Batch`] whose sessions are renumbered `S1..Sk`, so a
//! model sees the same references a one-session prompt shows; its plan is then
//! mapped back onto the pass's batch: every citation to the batch reference of
//! the session it named (a reference outside the group to one that matches no
//! session, so the gate refuses it instead of crediting another session), every
//! create to a plan-local handle unique across the merged plan. Nothing is
//! repaired: what a group's model proposed is what the gate judges.
//!
//! A group sees the existing memories that share a content word with its
//! sessions, at most [`MEMORIES_PER_GROUP`], not the whole store: a small
//! model's context holds a handful of memories, and a memory the session
//! restates or changes shares its subject's words. What no group sees stays as
//! it is (the gate judges updates and supersedes against the whole store).
//!
//! The offline reading is a floor under a group's answer ([`floor`]): a small
//! model often answers an empty list for a plain statement ("Customer emails go
//! out through Postmark."), and its silence must not drop what the person said.
//! What the rule-based consolidator reads in messages the answer cites nowhere,
//! or says only in part, is proposed as that consolidator proposes it, unless
//! the model, asked about that sentence alone
//! ([`Consolidator::judges_lasting`]), judges it not lasting ([`confirmed`]);
//! the gate judges it like any other proposal. So the
//! rules find and the model vetoes: one reading of what is memory for both
//! consolidators. Sessions whose statement the answer held back (a malformed
//! create) get no floor: they stay pending for the model.

use std::collections::{HashMap, HashSet};

use dream_core::{Memory, TokenUsage};

use super::{Batch, BatchSession, Consolidation, Consolidator};
use crate::error::{DreamError, Result};
use crate::plan::{Plan, Refusal, RefusalCause};

/// Existing memories shown beside one group of sessions, at most.
const MEMORIES_PER_GROUP: usize = 8;

/// Consolidates `batch` with one request per `per` sessions (the whole batch at
/// once, beside every memory, when `per` is `None`), each group beside its
/// [`related`] memories.
///
/// A group whose answer is unusable (not one JSON object, not a plan, cut off)
/// keeps its sessions pending with that reason, and the other groups go on. A
/// model that cannot be reached or times out stops the asking: the groups not
/// asked wait for the next pass (not a failed attempt). When no group got a
/// usable answer, the pass fails with the first error, as a single request does.
pub(crate) async fn consolidate(
    consolidator: &dyn Consolidator,
    batch: &Batch,
    per: Option<usize>,
) -> Result<Consolidation> {
    let per = match per {
        Some(n) if n >= 1 => n,
        _ => return consolidator.consolidate(batch).await,
    };
    let mut merged = Consolidation {
        plan: Plan::default(),
        usage: TokenUsage::default(),
        model: String::new(),
    };
    // Each memory's words are read once a pass, not once a group.
    let memory_terms: Vec<HashSet<String>> = batch.memories.iter().map(terms_of).collect();
    let mut answered = 0usize;
    let mut first_error: Option<DreamError> = None;
    let mut stopped = false;
    for group in batch.sessions.chunks(per) {
        let batch_refs: Vec<String> = group.iter().map(|s| s.reference.clone()).collect();
        if stopped {
            merged.plan.dropped.push(held(
                &batch_refs,
                "not asked: the model failed earlier in this pass; the sessions wait for the next pass",
                RefusalCause::PassCap,
            ));
            continue;
        }
        let sub = Batch {
            now: batch.now,
            scope: batch.scope.clone(),
            sessions: group
                .iter()
                .enumerate()
                .map(|(i, s)| BatchSession {
                    reference: format!("S{}", i + 1),
                    ..s.clone()
                })
                .collect(),
            memories: related(&batch.memories, &memory_terms, group, MEMORIES_PER_GROUP),
        };
        match consolidator.consolidate(&sub).await {
            Ok(c) => {
                answered += 1;
                merged.usage.input += c.usage.input;
                merged.usage.output += c.usage.output;
                if merged.model.is_empty() {
                    merged.model = c.model;
                }
                let floor = confirmed(consolidator, floor(&sub, &c.plan), &mut merged.usage).await;
                if !floor.creates.is_empty() || !floor.updates.is_empty() {
                    tracing::info!(
                        creates = floor.creates.len(),
                        updates = floor.updates.len(),
                        "the model left statements of the person uncited; the offline reading proposes them"
                    );
                }
                merge(&mut merged.plan, c.plan, &sub, &batch_refs);
                merge(&mut merged.plan, floor, &sub, &batch_refs);
            }
            Err(e) => {
                let reason = e.to_string();
                let (why, cause) = if unusable(&e) {
                    ("the model's answer was unusable", RefusalCause::Refused)
                } else {
                    stopped = true;
                    ("the model failed", RefusalCause::PassCap)
                };
                tracing::warn!(error = %reason, sessions = group.len(), "{why} for a group of sessions; they stay pending");
                merged
                    .plan
                    .dropped
                    .push(held(&batch_refs, &format!("{why}: {reason}"), cause));
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) if answered == 0 => Err(e),
        _ => Ok(merged),
    }
}

/// What the offline consolidator proposes for `sub` from messages `answer`
/// leaves unsaid, leaving out the sessions whose statement `answer` held back
/// ([`confirmed`] trims `supersedes` to what it keeps). A message is unsaid
/// for a statement when no create or update of the answer cites it (an update
/// counts only when it targets a memory the group was shown), or when what
/// they say of it does not [`cover`] the statement: a small model's create
/// often keeps one clause of a message ("if I ask for meal plans keep carbs in
/// mind", without "I'm type 1 diabetic").
fn floor(sub: &Batch, answer: &Plan) -> Plan {
    // An update of a memory the group was not shown ("S1", a made-up id) can
    // only be refused: what it cites is still unsaid. An update that keeps the
    // content says of its messages what the memory says.
    let shown: HashMap<&str, &Memory> = sub.memories.iter().map(|m| (m.id.as_str(), m)).collect();
    let mut said: HashMap<(&str, usize), String> = HashMap::new();
    let creates = answer
        .creates
        .iter()
        .map(|c| (c.content.as_str(), &c.evidence));
    let updates = answer.updates.iter().filter_map(|u| {
        let memory = shown.get(u.target.trim())?;
        Some((u.content.as_deref().unwrap_or(&memory.content), &u.evidence))
    });
    for (content, evidence) in creates.chain(updates) {
        for e in evidence {
            let text = said.entry((e.session.trim(), e.message)).or_default();
            text.push_str(content);
            text.push('\n');
        }
    }
    let held: HashSet<&str> = answer
        .dropped
        .iter()
        .filter(|r| r.holds_back_a_statement())
        .flat_map(|r| {
            if r.cites.is_empty() {
                sub.sessions.iter().map(|s| s.reference.as_str()).collect()
            } else {
                r.cites.iter().map(|c| c.trim()).collect::<Vec<_>>()
            }
        })
        .collect();
    let unsaid = |evidence: &[crate::plan::Citation], content: Option<&str>| {
        !evidence.is_empty()
            && evidence.iter().all(|e| {
                !held.contains(e.session.as_str())
                    && said
                        .get(&(e.session.as_str(), e.message))
                        .is_none_or(|text| content.is_some_and(|c| !cover(text, c)))
            })
    };
    let offline = super::RuleBasedConsolidator::new().plan(sub);
    Plan {
        creates: offline
            .creates
            .into_iter()
            .filter(|c| unsaid(&c.evidence, Some(&c.content)))
            .collect(),
        updates: offline
            .updates
            .into_iter()
            .filter(|u| unsaid(&u.evidence, None))
            .collect(),
        ..Plan::default()
    }
}

/// Whether `said` (what a model's answer says of a message) covers `statement`
/// (what the offline reading reads there): it names every identifying token of
/// the statement (numbers, names, identifiers) and two thirds of its content
/// words.
fn cover(said: &str, statement: &str) -> bool {
    use crate::provenance::{contains_token, identifying_in_sentence};
    let said_folded = said.to_lowercase();
    let names_all = identifying_in_sentence(statement)
        .iter()
        .all(|t| contains_token(&said_folded, t));
    let terms = content_terms(statement);
    let said_terms = content_terms(said);
    let shared = terms.iter().filter(|t| said_terms.contains(*t)).count();
    names_all && shared * 3 >= terms.len() * 2
}

/// `floor` without what `consolidator` judges not lasting: each such statement
/// becomes a [`RefusalCause::NotLasting`] refusal (its session is consumed, and
/// the refusal reported). A statement it cannot judge stays: on doubt, the
/// person's words are kept. A kept create's `supersedes` names only other kept
/// creates (an earlier create the answer covered is the answer's to replace).
async fn confirmed(consolidator: &dyn Consolidator, floor: Plan, usage: &mut TokenUsage) -> Plan {
    const WHY: &str = "the offline reading took it as a statement of the person's; the model judged it not lasting";
    let mut out = Plan::default();
    for c in floor.creates {
        if not_lasting(consolidator, &c.content, usage).await {
            out.dropped.push(Refusal {
                cites: c.sources.clone(),
                ..Refusal::new("create", None, WHY).because(RefusalCause::NotLasting)
            });
        } else {
            out.creates.push(c);
        }
    }
    for u in floor.updates {
        let judged_out = match &u.content {
            Some(content) => not_lasting(consolidator, content, usage).await,
            None => false,
        };
        if judged_out {
            out.dropped.push(Refusal {
                cites: u.sources.clone(),
                ..Refusal::new("update", Some(&u.target), WHY).because(RefusalCause::NotLasting)
            });
        } else {
            out.updates.push(u);
        }
    }
    let kept: HashSet<String> = out.creates.iter().map(|c| c.handle.clone()).collect();
    for c in &mut out.creates {
        c.supersedes.retain(|t| kept.contains(t));
    }
    out
}

/// Whether the model judges `content` not lasting; no answer, or an unusable
/// one, keeps the person's words.
async fn not_lasting(
    consolidator: &dyn Consolidator,
    content: &str,
    usage: &mut TokenUsage,
) -> bool {
    let (verdict, used) = consolidator.judges_lasting(content).await;
    *usage += used;
    verdict == Some(false)
}

/// The memories that share a content word (stop words left out, stems
/// compared) with the messages of `sessions`, those sharing most first (then
/// the most recently updated), at most `limit`; `terms` holds each memory's
/// [`terms_of`], in order.
fn related(
    memories: &[Memory],
    terms: &[HashSet<String>],
    sessions: &[BatchSession],
    limit: usize,
) -> Vec<Memory> {
    let said: HashSet<String> = sessions
        .iter()
        .flat_map(|s| &s.messages)
        .flat_map(|m| content_terms(&m.content))
        .collect();
    let mut shared: Vec<(usize, &Memory)> = memories
        .iter()
        .zip(terms)
        .map(|(m, t)| (t.intersection(&said).count(), m))
        .filter(|(n, _)| *n > 0)
        .collect();
    shared.sort_by(|(a, x), (b, y)| b.cmp(a).then(y.updated_at.cmp(&x.updated_at)));
    shared
        .into_iter()
        .take(limit)
        .map(|(_, m)| m.clone())
        .collect()
}

/// The content terms of a memory's name, description, tags and content.
fn terms_of(m: &Memory) -> HashSet<String> {
    content_terms(&format!(
        "{} {} {} {}",
        m.name,
        m.description,
        m.tags.join(" "),
        m.content
    ))
}

/// The stems of the words of `text` that are no language's stop word.
fn content_terms(text: &str) -> HashSet<String> {
    use crate::recall::tokenize::{Language, for_each_word, stem, stop_mask};
    let mut terms = HashSet::new();
    for_each_word(text, |w| {
        if w.chars().count() >= 3 && stop_mask(w) == 0 {
            terms.insert(stem(w, Language::English));
        }
    });
    terms
}

/// Whether the model answered, but with nothing the pass can read as a plan.
fn unusable(e: &DreamError) -> bool {
    use dream_core::ModelError as M;
    matches!(
        e,
        DreamError::Consolidation(_)
            | DreamError::Model(
                M::Truncated
                    | M::InvalidResponse(_)
                    | M::TooLarge { .. }
                    | M::NoJsonObject
                    | M::AmbiguousJson { .. }
            )
    )
}

/// A refusal of a whole group's answer, holding its sessions pending.
fn held(batch_refs: &[String], reason: &str, cause: RefusalCause) -> Refusal {
    Refusal {
        cites: batch_refs.to_vec(),
        ..Refusal::new("plan", None, reason).because(cause)
    }
}

/// Adds a group's plan to the merged one, mapping its references and handles.
fn merge(into: &mut Plan, plan: Plan, sub: &Batch, batch_refs: &[String]) {
    let map_ref = |r: &String| -> String {
        let trimmed = r.trim();
        if let Some(i) = sub.sessions.iter().position(|s| s.reference == trimmed) {
            return batch_refs[i].clone();
        }
        if sub.sessions.iter().any(|s| s.id.as_str() == trimmed) {
            // A session id names its session wherever it is cited.
            return trimmed.to_owned();
        }
        // Not a session of this group: it must not resolve to another group's
        // session of the same local name.
        format!(
            "outside-group:{}",
            trimmed.chars().take(32).collect::<String>()
        )
    };
    // Each create's plan-local handle (`new-n` from the parser, `rule-n` from
    // the offline reading) becomes `new-k`, unique across the merged plan.
    let offset = into.creates.len();
    let handles: std::collections::HashMap<String, String> = plan
        .creates
        .iter()
        .enumerate()
        .map(|(i, c)| (c.handle.clone(), format!("new-{}", offset + i + 1)))
        .collect();
    let map_target = |t: &String| -> String {
        match handles.get(t) {
            Some(h) => h.clone(),
            None if t.starts_with("new-") || t.starts_with("rule-") => {
                format!("outside-group-{t}")
            }
            None => t.clone(),
        }
    };
    for mut c in plan.creates {
        c.handle = handles[&c.handle].clone();
        c.sources = c.sources.iter().map(map_ref).collect();
        for e in &mut c.evidence {
            e.session = map_ref(&e.session);
        }
        c.supersedes = c.supersedes.iter().map(map_target).collect();
        into.creates.push(c);
    }
    for mut u in plan.updates {
        u.sources = u.sources.iter().map(map_ref).collect();
        for e in &mut u.evidence {
            e.session = map_ref(&e.session);
        }
        into.updates.push(u);
    }
    for mut d in plan.deletes {
        d.sources = d.sources.iter().map(map_ref).collect();
        into.deletes.push(d);
    }
    for mut r in plan.dropped {
        r.cites = r
            .cites
            .iter()
            .map(map_ref)
            .filter(|c| batch_refs.contains(c))
            .collect();
        if r.cites.is_empty() && r.holds_back_a_statement() {
            // A malformed statement that names no session of its group came
            // from one of the group's sessions: they keep it pending.
            r.cites = batch_refs.to_vec();
        }
        into.dropped.push(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Citation;
    use serde_json::json;

    fn sub(n: usize) -> Batch {
        Batch {
            now: chrono::Utc::now(),
            scope: Default::default(),
            sessions: (0..n)
                .map(|i| super::super::BatchSession {
                    reference: format!("S{}", i + 1),
                    id: dream_core::SessionId::new(format!("01SESSION{i}")).unwrap(),
                    created_at: chrono::Utc::now(),
                    messages: Vec::new(),
                    flags: Vec::new(),
                })
                .collect(),
            memories: Vec::new(),
        }
    }

    #[test]
    fn references_and_handles_map_onto_the_batch() {
        let mut merged = Plan::default();
        let first = Plan::from_json(&json!({"create": [
            {"name": "a", "kind": "project", "content": "a", "evidence": [{"session": "S1", "message": 0}]}
        ]}))
        .unwrap();
        merge(&mut merged, first, &sub(1), &["S1".into()]);
        let second = Plan::from_json(&json!({"create": [
            {"name": "b", "kind": "project", "content": "b", "evidence": [{"session": "S1", "message": 0}]},
            {"name": "c", "kind": "project", "content": "c", "supersedes": ["new-1", "new-7", "m1"],
             "evidence": [{"session": "S2", "message": 1}], "sources": ["S1"]},
            {"name": 5}
        ], "delete": [{"id": "m2", "sources": ["S1"]}]}))
        .unwrap();
        merge(&mut merged, second, &sub(1), &["S2".into()]);
        let handles: Vec<&str> = merged.creates.iter().map(|c| c.handle.as_str()).collect();
        assert_eq!(handles, ["new-1", "new-2", "new-3"]);
        assert_eq!(
            merged.creates[1].evidence,
            [Citation {
                session: "S2".into(),
                message: 0
            }]
        );
        // S2 is not in the second group (of one session): it cites nothing of the batch.
        assert_eq!(merged.creates[2].evidence[0].session, "outside-group:S2");
        assert_eq!(merged.creates[2].sources, ["S2"]);
        assert_eq!(
            merged.creates[2].supersedes,
            ["new-2", "outside-group-new-7", "m1"]
        );
        assert_eq!(merged.deletes[0].sources, ["S2"]);
        // The malformed create of the second group holds that group's session.
        assert_eq!(merged.dropped.len(), 1);
        assert_eq!(merged.dropped[0].cites, ["S2"]);
    }

    #[test]
    fn an_update_of_a_memory_never_shown_leaves_its_message_to_the_floor() {
        let mut group = sub(1);
        group.sessions[0].messages = vec![dream_core::Message::new(
            dream_core::Role::User,
            "Customer emails go out through Postmark.",
        )];
        let answer = Plan::from_json(&json!({"update": [
            {"id": "S1", "content": "Customer emails go out through Postmark.",
             "evidence": [{"session": "S1", "message": 0}], "sources": ["S1"]}
        ]}))
        .unwrap();
        let offered = floor(&group, &answer);
        assert_eq!(offered.creates.len(), 1, "{offered:?}");
        assert!(offered.creates[0].content.contains("Postmark"));
        // An update of a memory the group was shown keeps its message.
        group.memories = vec![dream_core::Memory::new(
            dream_core::MemoryId::new("m1").unwrap(),
            dream_core::MemoryKind::Project,
            "Email",
            "",
            "Customer emails go out through Mailgun.",
            chrono::Utc::now(),
        )];
        let answer = Plan::from_json(&json!({"update": [
            {"id": "m1", "content": "Customer emails go out through Postmark.",
             "evidence": [{"session": "S1", "message": 0}], "sources": ["S1"]}
        ]}))
        .unwrap();
        assert!(floor(&group, &answer).creates.is_empty());
    }

    #[test]
    fn a_group_sees_the_memories_of_its_subject_only() {
        let now = chrono::Utc::now();
        let memory = |id: &str, name: &str, content: &str| {
            dream_core::Memory::new(
                dream_core::MemoryId::new(id).unwrap(),
                dream_core::MemoryKind::Project,
                name,
                "",
                content,
                now,
            )
        };
        let memories = vec![
            memory(
                "m1",
                "Billing deploys",
                "We deploy the billing service with Nomad.",
            ),
            memory("m2", "Formatter", "We format Python with black."),
            memory(
                "m3",
                "Billing owner",
                "Dana owns the billing service and its deploys.",
            ),
        ];
        let mut batch = sub(1);
        batch.sessions[0].messages = vec![dream_core::Message::new(
            dream_core::Role::User,
            "From now on the billing service deploys with Kubernetes.",
        )];
        let ids = |ms: Vec<dream_core::Memory>| -> Vec<String> {
            ms.into_iter().map(|m| m.id.to_string()).collect()
        };
        // Both billing memories share the session's subject words; the
        // formatter shares none and is not shown.
        let terms: Vec<_> = memories.iter().map(terms_of).collect();
        let shown = ids(related(&memories, &terms, &batch.sessions, 8));
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert!(!shown.contains(&"m2".to_owned()));
        assert_eq!(ids(related(&memories, &terms, &batch.sessions, 1)).len(), 1);
        assert!(related(&memories, &terms, &sub(1).sessions, 8).is_empty());
    }
}
