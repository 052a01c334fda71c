//! What a consolidator proposes ([`Plan`]) and its strict parse from JSON.
//!
//! A plan is untrusted: it names no ids of its own (the engine assigns them), it
//! cites sessions by their batch reference (`S1`, `S2`, …), and every target is a
//! raw string the write gate validates. The parser checks types: a top-level
//! array of the wrong type becomes empty, an element of the wrong shape is
//! dropped, each with a reason.

use chrono::{DateTime, Utc};
use dream_core::MemoryKind;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Most actions of one kind a plan may carry; the rest are dropped with a reason.
pub const MAX_ACTIONS: usize = 200;

/// Most evidence citations one action may carry.
pub const MAX_EVIDENCE: usize = 64;

/// One message a proposal rests on: the session's batch reference (`S1`) and the
/// 0-based index of the message in that session as logged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// The session's batch reference (unvalidated).
    pub session: String,
    /// The message's 0-based index in the session.
    pub message: usize,
}

/// A proposed new memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposedCreate {
    /// A plan-local label the engine assigns (`new-1`, `new-2`, …; never an id,
    /// never the proposer's text).
    pub handle: String,
    /// Short name.
    pub name: String,
    /// One-line description.
    pub description: String,
    /// What it is about.
    pub kind: MemoryKind,
    /// The body.
    pub content: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Batch references of the sessions it comes from.
    pub sources: Vec<String>,
    /// The messages it rests on.
    pub evidence: Vec<Citation>,
    /// Existing memory ids it replaces, or handles of earlier creates of the same
    /// plan (both written as superseded).
    pub supersedes: Vec<String>,
    /// How sure the consolidator is, 0..=1.
    pub confidence: Option<f64>,
    /// Nested metadata.
    pub metadata: Map<String, Value>,
    /// When it stops being current.
    pub expires_at: Option<DateTime<Utc>>,
}

/// A proposed change to an existing memory; `None` fields stay as they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposedUpdate {
    /// The memory id to change (unvalidated).
    pub target: String,
    /// New name.
    pub name: Option<String>,
    /// New description.
    pub description: Option<String>,
    /// New kind.
    pub kind: Option<MemoryKind>,
    /// New content.
    pub content: Option<String>,
    /// New tags.
    pub tags: Option<Vec<String>>,
    /// Batch references of the sessions that justify it.
    pub sources: Vec<String>,
    /// The messages the change rests on.
    pub evidence: Vec<Citation>,
    /// New confidence.
    pub confidence: Option<f64>,
    /// New metadata.
    pub metadata: Option<Map<String, Value>>,
}

/// A proposed removal of an existing memory (to the trash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposedDelete {
    /// The memory id to remove (unvalidated).
    pub target: String,
    /// The consolidator's reason (untrusted; only its hash is kept).
    pub reason: String,
    /// Batch references of the sessions that justify it.
    pub sources: Vec<String>,
}

/// Why a proposal was refused, as far as the sessions it cites are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalCause {
    /// A per-pass cap was reached: the proposal waits for the next pass, which
    /// does not count as a failed attempt.
    PassCap,
    /// `max_memories` is reached and nothing untrusted is left to prune: the
    /// proposal waits until the person makes room (counts as an attempt).
    StoreFull,
    /// The proposal itself was refused: malformed, unsupported by its
    /// citations, or aimed at a memory it may not change.
    #[default]
    Refused,
    /// A model's proposal rests only on messages of the person's that state
    /// nothing lasting (a question, greeting, thanks, status or request): the
    /// session is consumed, as one holding nothing durable, and the refusal
    /// is reported.
    NotLasting,
}

/// Something the parser or the write gate refused, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// `create`, `update`, `delete` or `plan`.
    pub action: String,
    /// The create's engine label, or the target when it is the id of a memory
    /// that exists (never raw text from the proposer).
    pub target: Option<String>,
    /// Why, in the engine's words.
    pub reason: String,
    /// Whether it waits for capacity or was refused outright.
    #[serde(default)]
    pub cause: RefusalCause,
    /// The batch's sessions the proposal cites (filled in by the gate).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<dream_core::SessionId>,
    /// The batch references the proposal cited, as the parser read them
    /// (unvalidated; the gate resolves them into `sessions`).
    #[serde(skip)]
    pub(crate) cites: Vec<String>,
}

impl Refusal {
    pub(crate) fn new(action: &str, target: Option<&str>, reason: impl Into<String>) -> Self {
        Refusal {
            action: action.to_owned(),
            target: target
                .filter(|t| dream_core::id::validate_id(t, "target").is_ok())
                .map(str::to_owned),
            reason: reason.into(),
            cause: RefusalCause::Refused,
            sessions: Vec::new(),
            cites: Vec::new(),
        }
    }

    /// The same refusal, waiting for capacity of kind `cause`.
    pub(crate) fn because(mut self, cause: RefusalCause) -> Self {
        self.cause = cause;
        self
    }

    /// Whether it refused a statement (a create or an update), or a model's
    /// whole answer for some sessions, so the sessions it cites keep something
    /// that was not stored.
    pub fn holds_back_a_statement(&self) -> bool {
        self.cause != RefusalCause::NotLasting
            && (matches!(self.action.as_str(), "create" | "update")
                || (self.action == "plan" && !(self.cites.is_empty() && self.sessions.is_empty())))
    }
}

/// The batch references a malformed action cites (`sources` and each
/// `evidence[].session`), read leniently: only to keep those sessions pending.
fn cited_references(item: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |v: Option<&Value>| {
        if let Some(Value::String(s)) = v
            && s.len() <= 32
            && !out.contains(s)
        {
            out.push(s.clone());
        }
    };
    if let Some(Value::Array(sources)) = item.get("sources") {
        sources.iter().take(MAX_EVIDENCE).for_each(|s| add(Some(s)));
    }
    if let Some(Value::Array(evidence)) = item.get("evidence") {
        evidence
            .iter()
            .take(MAX_EVIDENCE)
            .for_each(|e| add(e.get("session")));
    }
    out
}

/// Why a consolidator's answer is no plan at all (a malformed action in it is
/// only dropped, with a [`Refusal`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The answer is a JSON value other than an object.
    #[error("the answer is not a JSON object")]
    NotAnObject,
}

/// What a consolidator proposes for one batch.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Plan {
    /// New memories.
    pub creates: Vec<ProposedCreate>,
    /// Changes to existing memories.
    pub updates: Vec<ProposedUpdate>,
    /// Removals of existing memories.
    pub deletes: Vec<ProposedDelete>,
    /// What the parser dropped, and why.
    pub dropped: Vec<Refusal>,
}

impl Plan {
    /// Whether the plan proposes nothing.
    pub fn is_empty(&self) -> bool {
        self.creates.is_empty() && self.updates.is_empty() && self.deletes.is_empty()
    }

    /// Parses the JSON object a model answered with. Strict on types: a wrong-typed
    /// top-level array becomes empty, a malformed element is dropped, each with a
    /// reason in `dropped`. Unknown keys are ignored.
    pub fn from_json(value: &Value) -> Result<Plan, PlanError> {
        let Value::Object(top) = value else {
            return Err(PlanError::NotAnObject);
        };
        let mut plan = Plan::default();
        let creates = array(top, "create", &mut plan.dropped);
        let updates = array(top, "update", &mut plan.dropped);
        let deletes = array(top, "delete", &mut plan.dropped);
        for (i, item) in creates.iter().enumerate() {
            match parse_create(item, i) {
                Ok(c) => plan.creates.push(c),
                Err(reason) => plan.dropped.push(Refusal {
                    cites: cited_references(item),
                    ..Refusal::new("create", None, reason)
                }),
            }
        }
        for item in updates {
            match parse_update(item) {
                Ok(u) => plan.updates.push(u),
                Err((target, reason)) => plan.dropped.push(Refusal {
                    cites: cited_references(item),
                    ..Refusal::new("update", target.as_deref(), reason)
                }),
            }
        }
        for item in deletes {
            match parse_delete(item) {
                Ok(d) => plan.deletes.push(d),
                Err((target, reason)) => {
                    plan.dropped
                        .push(Refusal::new("delete", target.as_deref(), reason))
                }
            }
        }
        Ok(plan)
    }
}

fn array<'a>(
    top: &'a Map<String, Value>,
    key: &'static str,
    dropped: &mut Vec<Refusal>,
) -> &'a [Value] {
    match top.get(key) {
        None | Some(Value::Null) => &[],
        Some(Value::Array(items)) => {
            if items.len() > MAX_ACTIONS {
                dropped.push(Refusal::new(
                    key,
                    None,
                    format!(
                        "{} actions beyond the first {MAX_ACTIONS} dropped",
                        items.len() - MAX_ACTIONS
                    ),
                ));
                &items[..MAX_ACTIONS]
            } else {
                items
            }
        }
        Some(_) => {
            dropped.push(Refusal::new(
                key,
                None,
                format!("`{key}` is not an array; treated as empty"),
            ));
            &[]
        }
    }
}

type Fields<'a> = &'a Map<String, Value>;

fn string(obj: Fields<'_>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` is not a string")),
    }
}

fn required(obj: Fields<'_>, key: &str) -> Result<String, String> {
    string(obj, key)?.ok_or_else(|| format!("`{key}` is missing"))
}

fn strings(obj: Fields<'_>, key: &str) -> Result<Option<Vec<String>>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                _ => Err(format!("`{key}` holds a non-string")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("`{key}` is not an array of strings")),
    }
}

fn kind(obj: Fields<'_>) -> Result<Option<MemoryKind>, String> {
    match string(obj, "kind")? {
        None => Ok(None),
        Some(k) => MemoryKind::parse(&k)
            .map(Some)
            .ok_or_else(|| "`kind` is not user, feedback, project or reference".to_owned()),
    }
}

fn confidence(obj: Fields<'_>) -> Result<Option<f64>, String> {
    match obj.get("confidence") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(c) if (0.0..=1.0).contains(&c) => Ok(Some(c)),
            _ => Err("`confidence` is not between 0 and 1".to_owned()),
        },
        Some(_) => Err("`confidence` is not a number".to_owned()),
    }
}

fn metadata(obj: Fields<'_>) -> Result<Option<Map<String, Value>>, String> {
    match obj.get("metadata") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m.clone())),
        Some(_) => Err("`metadata` is not an object".to_owned()),
    }
}

fn expires(obj: Fields<'_>) -> Result<Option<DateTime<Utc>>, String> {
    match string(obj, "expires_at")? {
        None => Ok(None),
        Some(t) => DateTime::parse_from_rfc3339(&t)
            .map(|t| Some(t.with_timezone(&Utc)))
            .map_err(|_| "`expires_at` is not an RFC 3339 time".to_owned()),
    }
}

fn evidence(obj: Fields<'_>) -> Result<Vec<Citation>, String> {
    let items = match obj.get("evidence") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("`evidence` is not an array".to_owned()),
    };
    if items.len() > MAX_EVIDENCE {
        return Err(format!(
            "`evidence` cites more than {MAX_EVIDENCE} messages"
        ));
    }
    items
        .iter()
        .map(|item| {
            let shape =
                || "`evidence` entries are {\"session\": \"S1\", \"message\": 0}".to_owned();
            let Value::Object(c) = item else {
                return Err(shape());
            };
            let session = match c.get("session") {
                Some(Value::String(s)) => s.clone(),
                _ => return Err(shape()),
            };
            let message = c
                .get("message")
                .and_then(Value::as_u64)
                .and_then(|m| usize::try_from(m).ok())
                .ok_or_else(shape)?;
            Ok(Citation { session, message })
        })
        .collect()
}

fn parse_create(item: &Value, index: usize) -> Result<ProposedCreate, String> {
    let Value::Object(obj) = item else {
        return Err("a `create` entry is not an object".to_owned());
    };
    Ok(ProposedCreate {
        // The engine labels creates by position; a model's own labels are never kept.
        handle: format!("new-{}", index + 1),
        name: required(obj, "name")?,
        description: string(obj, "description")?.unwrap_or_default(),
        kind: kind(obj)?.ok_or("`kind` is missing")?,
        content: required(obj, "content")?,
        tags: strings(obj, "tags")?.unwrap_or_default(),
        sources: strings(obj, "sources")?.unwrap_or_default(),
        evidence: evidence(obj)?,
        supersedes: strings(obj, "supersedes")?.unwrap_or_default(),
        confidence: confidence(obj)?,
        metadata: metadata(obj)?.unwrap_or_default(),
        expires_at: expires(obj)?,
    })
}

fn target_of(obj: Fields<'_>) -> Option<String> {
    match obj.get("id") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    }
}

fn parse_update(item: &Value) -> Result<ProposedUpdate, (Option<String>, String)> {
    let Value::Object(obj) = item else {
        return Err((None, "an `update` entry is not an object".to_owned()));
    };
    let target = target_of(obj);
    let fail = |reason: String| (target.clone(), reason);
    Ok(ProposedUpdate {
        target: required(obj, "id").map_err(fail)?,
        name: string(obj, "name").map_err(fail)?,
        description: string(obj, "description").map_err(fail)?,
        kind: kind(obj).map_err(fail)?,
        content: string(obj, "content").map_err(fail)?,
        tags: strings(obj, "tags").map_err(fail)?,
        sources: strings(obj, "sources").map_err(fail)?.unwrap_or_default(),
        evidence: evidence(obj).map_err(fail)?,
        confidence: confidence(obj).map_err(fail)?,
        metadata: metadata(obj).map_err(fail)?,
    })
}

fn parse_delete(item: &Value) -> Result<ProposedDelete, (Option<String>, String)> {
    let Value::Object(obj) = item else {
        return Err((None, "a `delete` entry is not an object".to_owned()));
    };
    let target = target_of(obj);
    let fail = |reason: String| (target.clone(), reason);
    Ok(ProposedDelete {
        target: required(obj, "id").map_err(fail)?,
        reason: string(obj, "reason").map_err(fail)?.unwrap_or_default(),
        sources: strings(obj, "sources").map_err(fail)?.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_a_well_formed_plan() {
        let plan = Plan::from_json(&json!({
            "create": [{"name": "Test runner", "description": "which runner", "kind": "project",
                        "content": "We use Vitest.", "tags": ["testing"], "sources": ["S1"], "confidence": 0.9}],
            "update": [{"id": "m1", "content": "new", "sources": ["S2"]}],
            "delete": [{"id": "m2", "reason": "contradicted", "sources": ["S1"]}],
            "extra": "ignored"
        }))
        .unwrap();
        assert_eq!(plan.creates.len(), 1);
        assert_eq!(plan.creates[0].kind, MemoryKind::Project);
        assert_eq!(plan.creates[0].handle, "new-1");
        assert_eq!(plan.updates[0].target, "m1");
        assert_eq!(plan.updates[0].name, None);
        assert_eq!(plan.deletes[0].target, "m2");
        assert!(plan.dropped.is_empty());
    }

    #[test]
    fn wrong_typed_arrays_become_empty_with_a_reason() {
        let plan =
            Plan::from_json(&json!({"create": "x", "update": {"id": "m"}, "delete": 3})).unwrap();
        assert!(plan.is_empty());
        assert_eq!(plan.dropped.len(), 3);
        assert!(
            plan.dropped
                .iter()
                .all(|d| d.reason.contains("not an array"))
        );
    }

    #[test]
    fn malformed_elements_are_dropped_one_by_one() {
        let plan = Plan::from_json(&json!({
            "create": [
                "just a string",
                {"name": 1, "kind": "project", "content": "c"},
                {"name": "n", "kind": "secret-kind", "content": "c"},
                {"name": "n", "kind": "user", "content": "c", "tags": "t"},
                {"name": "n", "kind": "user", "content": "c", "confidence": 7},
                {"name": "ok", "kind": "user", "content": "fine", "sources": ["S1"]}
            ],
            "update": [{"content": "no id"}, {"id": "m1", "tags": [1]}],
            "delete": [{"id": 5}, {"id": "*"}]
        }))
        .unwrap();
        assert_eq!(plan.creates.len(), 1);
        assert_eq!(plan.creates[0].name, "ok");
        assert_eq!(plan.updates.len(), 0);
        // "*" is a string: it parses and is refused later by the write gate.
        assert_eq!(plan.deletes.len(), 1);
        assert_eq!(plan.dropped.len(), 5 + 2 + 1);
        let tagged = plan
            .dropped
            .iter()
            .find(|d| d.action == "update" && d.target.is_some())
            .unwrap();
        assert_eq!(tagged.target.as_deref(), Some("m1"));
    }

    #[test]
    fn refusals_never_echo_invalid_targets() {
        let r = Refusal::new("delete", Some("../../etc/passwd"), "invalid id");
        assert_eq!(r.target, None);
        let r = Refusal::new("delete", Some("m1"), "unknown");
        assert_eq!(r.target.as_deref(), Some("m1"));
    }

    #[test]
    fn non_objects_are_errors() {
        assert!(Plan::from_json(&json!([1, 2])).is_err());
        assert!(Plan::from_json(&json!("text")).is_err());
    }

    #[test]
    fn too_many_actions_are_cut_with_a_reason() {
        let many: Vec<Value> = (0..MAX_ACTIONS + 5)
            .map(|i| json!({"id": format!("m{i}"), "sources": ["S1"]}))
            .collect();
        let plan = Plan::from_json(&json!({ "delete": many })).unwrap();
        assert_eq!(plan.deletes.len(), MAX_ACTIONS);
        assert_eq!(plan.dropped.len(), 1);
    }
}
