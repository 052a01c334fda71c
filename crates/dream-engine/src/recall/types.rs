//! Recall's public result and option types: verdicts, reasons, the `POLICY:`
//! line, options and errors.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use dream_core::{LanguageModel, Memory, RecordId, StoreError, Version};
use sha2::Digest;

use super::index::RankParams;
use super::reason::Reason;
use super::tokenize::Language;

/// Largest `limit` accepted.
pub const MAX_LIMIT: usize = 100;
/// Longest query accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;

/// What the recall firewall decided for one record (the scanner's judgement of a
/// text is `dream_scan::Verdict`; a whole result's is [`PolicyVerdict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FirewallVerdict {
    /// Admitted and handed on.
    Used,
    /// Not current, not grounded, or over the limit.
    Ignored,
    /// Instruction- or secret-shaped.
    Quarantined,
    /// Malformed, invalid, or cross-scope current state.
    Rejected,
    /// Belongs to another scope.
    Held,
    /// Disagrees with another current record about the same subject: escalate.
    Conflict,
}

impl FirewallVerdict {
    /// The lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Used => "used",
            Self::Ignored => "ignored",
            Self::Quarantined => "quarantined",
            Self::Rejected => "rejected",
            Self::Held => "held",
            Self::Conflict => "conflict",
        }
    }
}

impl fmt::Display for FirewallVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict of a whole result, as its `POLICY:` line states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyVerdict {
    /// At least one record is used and none conflicts.
    Used,
    /// Nothing used; everything was ignored or held (or nothing was found).
    Ignored,
    /// Nothing used; something was quarantined.
    Quarantined,
    /// Nothing used or quarantined; something was rejected.
    Rejected,
    /// Two current records disagree: escalate.
    Conflict,
}

impl PolicyVerdict {
    /// The lowercase word: the same word as the record [`FirewallVerdict`] it names.
    pub fn as_str(self) -> &'static str {
        FirewallVerdict::from(self).as_str()
    }
}

impl From<PolicyVerdict> for FirewallVerdict {
    /// The record verdict a whole result's verdict is named after.
    fn from(policy: PolicyVerdict) -> Self {
        match policy {
            PolicyVerdict::Used => Self::Used,
            PolicyVerdict::Ignored => Self::Ignored,
            PolicyVerdict::Quarantined => Self::Quarantined,
            PolicyVerdict::Rejected => Self::Rejected,
            PolicyVerdict::Conflict => Self::Conflict,
        }
    }
}

/// The `POLICY:` line of a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The overall verdict (see the module docs for the precedence).
    pub verdict: PolicyVerdict,
    /// The reason of the best-ranked record with that verdict.
    pub reason: Reason,
    /// When nothing was used: `nothing admitted: …`.
    pub diagnosis: Option<String>,
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "POLICY: {} — {}", self.verdict.as_str(), self.reason)?;
        if let Some(diagnosis) = &self.diagnosis {
            write!(f, "; {diagnosis}")?;
        }
        Ok(())
    }
}

/// One record's verdict and reason.
#[derive(Debug, Clone)]
pub struct RecordVerdict {
    /// The record.
    pub id: RecordId,
    /// Its version.
    pub version: Version,
    /// What the firewall decided.
    pub verdict: FirewallVerdict,
    /// Why.
    pub reason: Reason,
    /// Its BM25F score (0 for records added by the conflict rule or the picker).
    pub score: f32,
    /// The memory, only for `used` and `conflict` records.
    pub memory: Option<Arc<Memory>>,
    /// The scanner flagged the id itself; [`RecordVerdict::shown_id`] hides it.
    pub id_flagged: bool,
}

impl RecordVerdict {
    /// The id as shown to people and models: the id, or `record-<sha256 prefix>`
    /// when the id itself is instruction- or secret-shaped.
    pub fn shown_id(&self) -> String {
        shown_id(&self.id, self.id_flagged)
    }
}

/// `id`, or `record-<sha256 prefix>` when the scanner flagged it.
pub(crate) fn shown_id(id: &RecordId, flagged: bool) -> String {
    if flagged {
        let digest = sha2::Sha256::digest(id.as_str().as_bytes());
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!("record-{hex}")
    } else {
        id.to_string()
    }
}

impl fmt::Display for RecordVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}@{}:{}:{}",
            self.shown_id(),
            self.version.0,
            self.verdict,
            self.reason
        )
    }
}

/// How the candidate set was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ranker {
    /// BM25F.
    Lexical,
    /// The picker model chose the candidates.
    Model {
        /// The model's key-free description.
        model: String,
    },
    /// BM25F and vectors, fused by reciprocal rank.
    Hybrid {
        /// The embedder's key-free description.
        embedder: String,
    },
    /// A picker or an embedder is configured but failed (the query's embedding
    /// timed out, for instance); BM25F was used.
    LexicalFallback {
        /// Why the picker or the embedder failed.
        reason: String,
    },
}

/// What a recall returns.
#[derive(Debug, Clone)]
pub struct RecallResult {
    /// The `POLICY:` line.
    pub policy: Policy,
    /// One verdict per candidate, in rank order, then conflicting records found
    /// outside the candidates.
    pub records: Vec<RecordVerdict>,
    /// How candidates were chosen.
    pub ranker: Ranker,
    /// Whether the bounded retry with a broader query ran.
    pub retried: bool,
    /// The generation the index was built at.
    pub generation: u64,
}

impl RecallResult {
    /// The admitted memories, best first.
    pub fn used(&self) -> impl Iterator<Item = &Memory> {
        self.records
            .iter()
            .filter(|r| r.verdict == FirewallVerdict::Used)
            .filter_map(|r| r.memory.as_deref())
    }

    /// The verdict of record `id`, if it was judged.
    pub fn verdict_of(&self, id: &str) -> Option<&RecordVerdict> {
        self.records.iter().find(|r| r.id.as_str() == id)
    }

    /// The result as JSON: the one serialiser every front end (`dream recall
    /// --format json`, MCP's `recall`) renders it with. Ids as shown
    /// ([`RecordVerdict::shown_id`]); names without invisible characters; no
    /// store version (a conversion renumbers it; the text form shows it).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        json!({
            "policy": {
                "verdict": self.policy.verdict.as_str(),
                "reason": self.policy.reason.to_string(),
                "diagnosis": self.policy.diagnosis,
                "line": self.policy.to_string(),
            },
            "retried": self.retried,
            "ranker": match &self.ranker {
                Ranker::Lexical => json!({ "kind": "lexical" }),
                Ranker::Model { model } => json!({ "kind": "model", "model": model }),
                Ranker::Hybrid { embedder } => json!({ "kind": "hybrid", "embedder": embedder }),
                Ranker::LexicalFallback { reason } => {
                    json!({ "kind": "lexical-fallback", "reason": reason })
                }
            },
            "records": self.records.iter().map(|r| json!({
                "id": r.shown_id(),
                "score": r.score,
                "verdict": r.verdict.as_str(),
                "reason": r.reason.to_string(),
                "name": r.memory.as_ref()
                    .map(|m| dream_core::display::visible_text(&m.name).into_owned()),
                "kind": r.memory.as_ref().map(|m| m.kind.as_str()),
            })).collect::<Vec<_>>(),
        })
    }
}

impl fmt::Display for RecallResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.policy)?;
        for record in &self.records {
            writeln!(f, "{record}")?;
        }
        Ok(())
    }
}

/// The optional picker model (the two-model pattern).
#[derive(Debug, Clone)]
pub struct PickerOptions {
    /// A cheap model.
    pub model: Arc<dyn LanguageModel>,
    /// Longest wait for its answer; past it, lexical ranking is used.
    pub timeout: Duration,
    /// Most manifest lines shown (lexical hits first, then the most recently
    /// updated eligible memories).
    pub manifest_size: usize,
    /// Output token limit of the pick.
    pub max_tokens: u32,
}

impl PickerOptions {
    /// Defaults around `model`: 10 s timeout, 100 manifest lines, 256 tokens.
    pub fn new(model: Arc<dyn LanguageModel>) -> Self {
        PickerOptions {
            model,
            timeout: Duration::from_secs(10),
            manifest_size: 100,
            max_tokens: 256,
        }
    }
}

/// Approximate heap bytes of a built index (see
/// [`Recall::index_bytes`](super::Recall::index_bytes)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexBytes {
    /// Number of postings (distinct terms per document, summed).
    pub postings: usize,
    /// The records, postings and tables read in place, and the per-record
    /// factors (analyses decoded so far aside).
    pub ranking: usize,
    /// The vocabulary's terms and word cache.
    pub vocabulary: usize,
    /// The vocabulary's trigram index (0 with sub-words off).
    pub subwords: usize,
}

impl IndexBytes {
    /// Everything counted.
    pub fn total(&self) -> usize {
        self.ranking + self.vocabulary + self.subwords
    }
}

/// How recall ranks and judges.
#[derive(Debug, Clone)]
pub struct RecallOptions {
    /// BM25F parameters.
    pub rank: RankParams,
    /// Languages detected, stemmed and stop-worded (default: all supported).
    pub languages: Vec<Language>,
    /// Language of texts without any stop-word hit (default English).
    pub default_language: Language,
    /// Candidates judged from this scope (and from undecodable records) per recall;
    /// at least `limit` (default 20).
    pub candidate_pool: usize,
    /// Candidates judged from other scopes per recall, so a foreign record that
    /// ranks high is reported as held (default 5).
    pub other_scope_pool: usize,
    /// Records below this confidence are ignored as `low-confidence` (default 0.5).
    pub min_confidence: f64,
    /// Quarantine records the scanner finds merely suspicious (default false:
    /// they are admitted, fenced as data, with a note in the reason).
    pub quarantine_suspicious: bool,
    /// Most index terms one query word may expand to in the broader retry
    /// (default 64).
    pub retry_expansion: usize,
    /// Sub-word matching (default on): each query word also matches, at a lower
    /// weight ([`RankParams::subword_weight`]), the indexed terms that hold it or
    /// that it holds (`tests` ↔ `Vitest`, `PostgreSQL` ↔ `Postgres`) and those a
    /// typo away. Off: only the words' own stems match.
    pub subwords: bool,
    /// Lexical (BM25F) ranking (default on). Off with [`RecallOptions::vectors`]
    /// set, candidates come from vectors alone, unless the query's embedding
    /// fails: then BM25F ranks all the same.
    pub lexical: bool,
    /// Vector ranking fused with the lexical ranks (default none).
    pub vectors: Option<super::VectorOptions>,
    /// The relevance floor: a candidate below it is `ignored` (`not-relevant`).
    pub relevance: super::RelevanceFloor,
    /// Most records indexed; a larger namespace is an error (default 1,000,000).
    pub max_memories: usize,
    /// The optional picker model.
    pub picker: Option<PickerOptions>,
    /// Keep the index in the store (namespace `recall`), so a new process
    /// loads it instead of analysing every record (default false). Turn it on
    /// with a [`RecallOptions::seal`] key (the index is then authenticated with
    /// it) or over a store that authenticates its records (an encrypted store):
    /// otherwise whoever can write the store could write an index that admits a
    /// record the firewall would quarantine. Ignored on a store without leases.
    pub persist: bool,
    /// The store's seal key: a memory whose seal does not verify is `held`
    /// (`unverified`) until a person confirms it. `None` (the default): the
    /// store's records are trusted as they are. See [`crate::SealKey`].
    pub seal: Option<crate::seal::SealKey>,
}

impl Default for RecallOptions {
    fn default() -> Self {
        RecallOptions {
            rank: RankParams::default(),
            languages: Language::ALL.to_vec(),
            default_language: Language::English,
            candidate_pool: 20,
            other_scope_pool: 5,
            min_confidence: 0.5,
            quarantine_suspicious: false,
            retry_expansion: 64,
            subwords: true,
            lexical: true,
            vectors: None,
            relevance: super::RelevanceFloor::default(),
            max_memories: 1_000_000,
            picker: None,
            persist: false,
            seal: None,
        }
    }
}

/// Why a recall could not run. Never shows a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecallError {
    /// The store failed (after one retry when retryable).
    #[error("could not read the memory store: {0}")]
    Store(#[from] StoreError),
    /// `limit` is 0 or over [`MAX_LIMIT`].
    #[error("recall limit {limit} is outside 1..={max}")]
    InvalidLimit {
        /// The limit asked for.
        limit: usize,
        /// The largest accepted.
        max: usize,
    },
    /// The query is longer than [`MAX_QUERY_BYTES`].
    #[error("query of {len} bytes is over the limit of {max} bytes")]
    QueryTooLong {
        /// Its length.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// The namespace holds more records than [`RecallOptions::max_memories`].
    #[error("the store holds more than {max} memories")]
    TooManyMemories {
        /// The cap.
        max: usize,
    },
    /// A record recall depends on is not what the engine wrote (a
    /// `state/generation` that is not a decimal number): recall refuses, as the
    /// engine does, rather than guess which view is current.
    #[error("corrupt record {key}: {reason}")]
    Corrupt {
        /// The record.
        key: dream_core::Key,
        /// What is wrong.
        reason: String,
    },
    /// Building the index failed (its task panicked or was cancelled).
    #[error("building the recall index failed")]
    IndexBuild,
    /// A memory to be shown changed again while recall read every record anew:
    /// nothing is shown from bytes no verdict was made on.
    #[error("memories changed while recall read them; try again")]
    Changing,
}
