//! Recall: lexical ranking (BM25F), the optional two-model picker, and the
//! knowledge firewall that every recalled record passes, one verdict per record.
//!
//! Recalled memory is data, never an instruction. [`Recall::recall`] reads
//! `state/generation` and rebuilds its in-memory index when it changed (so a
//! `forget` made by any process is seen at the next recall), ranks candidates, and
//! judges each one in the order of [`firewall`](self#the-firewall):
//!
//! # The firewall
//!
//! 1. **Candidate set**: the top-K by BM25F (or the picker's choice) over the
//!    query's stems and, with [`RecallOptions::subwords`], their sub-word relatives
//!    in the index's vocabulary (words inside words, typos; weighted below the
//!    exact word, see `index`). When it is
//!    empty, or every candidate is undecodable, one bounded retry runs with a
//!    broader query (stop words kept, every stem also matched as a prefix and by its
//!    indexed prefixes); if that still yields nothing the result carries a
//!    diagnosis (`nothing admitted: …`), never a claim that no history exists.
//! 2. **Scan**: every string and key at every depth, metadata included, through
//!    `dream_scan` in memory mode. Instruction- or secret-shaped → `quarantined`
//!    (reason `instruction` or `secret`, citing rule ids and paths, never text).
//!    A *suspicious* verdict is admitted (the body is shown fenced, as data) and
//!    noted in the `used` reason, unless [`RecallOptions::quarantine_suspicious`].
//!    An undecodable record is scanned as raw text before it is rejected.
//! 3. **Validation**: a record that fails the Markdown codec → `rejected`
//!    (`malformed`, with the codec error; never repaired); not UTF-8 →
//!    `unreadable`; record id ≠ memory id → `invalid-id`; empty name or content,
//!    a memory superseding itself, a non-string `metadata.subject` →
//!    `invalid-field`; `updated_at` or `expires_at` before `created_at` →
//!    `invalid-date`.
//! 4. **Lifecycle** over the whole store's supersession index, built only from
//!    records that passed 2 and 3: status revoked/expired/superseded, `expires_at`
//!    reached, or a successor in the record's own scope → `ignored`.
//! 5. **Scope**: a record of another scope → `held` (`other-scope`); a local
//!    record whose successors all live in other scopes → `rejected`
//!    (`cross-scope-current-state`): an out-of-scope successor never makes it
//!    current again.
//! 6. **Conflict**: another current record of this scope with the same subject key
//!    (`metadata.subject` when it is a string, else the name; case-folded) whose
//!    content differs (case and white space aside) → `conflict` for both, even
//!    when the other record ranked outside the top-K. Never settled by rank.
//! 7. **Grounding**: no `sources` and not pinned (a pinned memory is a person's own
//!    `remember`) → `ignored` (`ungrounded`); confidence below
//!    [`RecallOptions::min_confidence`] → `ignored` (`low-confidence`).
//! 8. **Admitted** → `used` (`safe-fact`), at most `limit`; admitted records past
//!    the limit → `ignored` (`over-limit`).
//!
//! The result opens with one `POLICY: <verdict> — <reason>` line. Precedence,
//! highest first: **conflict** (any conflict escalates the whole answer) >
//! **used** > **quarantined** > **rejected** > **ignored** (held records count as
//! ignored, reason `held-at-scope`). The reason is that of the best-ranked record
//! with the chosen verdict; when nothing is used a diagnosis follows
//! (`; nothing admitted: …`). Then one line per record:
//! `<id>@<version>:<verdict>:<reason>`.

mod analyze;
mod brief;
pub mod context;
mod firewall;
mod index;
mod picker;
pub mod tokenize;
mod vocab;

pub use brief::estimated_tokens;

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use dream_core::store::MAX_LIST_LIMIT;
use dream_core::{
    Clock, Key, LanguageModel, Memory, Namespace, RecordId, RecordStore, Scope, StoreError, Version,
};
use dream_scan::{Mode, Scanner};
use sha2::Digest;

use analyze::{AnalyzeConfig, Doc, Outcome};
use firewall::Firewall;
pub use index::RankParams;
use index::{Hit, Index};
pub use picker::MAX_PICKS;
pub use tokenize::Language;
use tokenize::LanguageSet;
use vocab::Vocabulary;

/// Namespace holding memories (Markdown records, id = memory id).
pub const MEMORIES_NAMESPACE: &str = "memories";
/// Namespace of the generation counter.
pub const STATE_NAMESPACE: &str = "state";
/// Record id of the generation counter: ASCII decimal u64, absent = 0.
pub const GENERATION_ID: &str = "generation";
/// Largest `limit` accepted.
pub const MAX_LIMIT: usize = 100;
/// Longest query accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;

/// Reason codes, one per cause. Each verdict's reason starts with one.
pub mod codes {
    /// Admitted: scanned clean, valid, current, in scope, unopposed, grounded.
    pub const SAFE_FACT: &str = "safe-fact";
    /// Instruction-shaped text somewhere in the record.
    pub const INSTRUCTION: &str = "instruction";
    /// Secret-shaped text somewhere in the record.
    pub const SECRET: &str = "secret";
    /// Suspicious text, quarantined because `quarantine_suspicious` is set.
    pub const SUSPICIOUS: &str = "suspicious";
    /// The Markdown codec refused the record.
    pub const MALFORMED: &str = "malformed";
    /// The record is not UTF-8.
    pub const UNREADABLE: &str = "unreadable";
    /// The record's id does not match the memory's id.
    pub const INVALID_ID: &str = "invalid-id";
    /// A field is empty or out of its domain.
    pub const INVALID_FIELD: &str = "invalid-field";
    /// The dates contradict each other.
    pub const INVALID_DATE: &str = "invalid-date";
    /// Replaced by a successor of the same scope, or marked superseded.
    pub const SUPERSEDED: &str = "superseded";
    /// Withdrawn.
    pub const REVOKED: &str = "revoked";
    /// Past its expiry, or marked expired.
    pub const EXPIRED: &str = "expired";
    /// Belongs to another scope.
    pub const OTHER_SCOPE: &str = "other-scope";
    /// POLICY reason when the top record was held at scope.
    pub const HELD_AT_SCOPE: &str = "held-at-scope";
    /// A local record replaced only by successors of other scopes.
    pub const CROSS_SCOPE_CURRENT_STATE: &str = "cross-scope-current-state";
    /// Disagrees with another current record about the same subject.
    pub const CONFLICT: &str = "conflict";
    /// No provenance.
    pub const UNGROUNDED: &str = "ungrounded";
    /// Held: the record does not carry this store's seal (a hand edit, a planted
    /// file, a record from another store) until a person confirms it.
    pub const UNVERIFIED: &str = "unverified";
    /// Held: the memory rests only on tool, assistant or system text, or is a
    /// standing order that sends data out, until a person confirms it.
    pub const UNCONFIRMED_SOURCE: &str = "unconfirmed-source";
    /// Confidence below the threshold.
    pub const LOW_CONFIDENCE: &str = "low-confidence";
    /// Admitted, but `limit` records were already used.
    pub const OVER_LIMIT: &str = "over-limit";
    /// POLICY reason when no candidate was found.
    pub const NO_CANDIDATES: &str = "no-candidates";
}

/// Why a record got its verdict: a code from [`codes`] and an optional detail
/// (rule ids, paths, ids, codec errors — never flagged text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// The cause.
    pub code: &'static str,
    /// More about it, printable and bounded.
    pub detail: Option<String>,
}

impl Reason {
    /// A reason; the detail is made printable and bounded.
    pub fn new(code: &'static str, detail: Option<String>) -> Self {
        Reason {
            code,
            detail: detail.map(|d| printable(&d, 300)),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.detail {
            Some(detail) => write!(f, "{} ({detail})", self.code),
            None => f.write_str(self.code),
        }
    }
}

/// One record's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
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

impl Verdict {
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

impl fmt::Display for Verdict {
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
    /// The lowercase word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Used => "used",
            Self::Ignored => "ignored",
            Self::Quarantined => "quarantined",
            Self::Rejected => "rejected",
            Self::Conflict => "conflict",
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
    pub verdict: Verdict,
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
    /// A picker is configured but failed; BM25F was used.
    LexicalFallback {
        /// Why the picker failed.
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
    /// The generation the index was built at (`None`: unreadable).
    pub generation: Option<u64>,
}

impl RecallResult {
    /// The admitted memories, best first.
    pub fn used(&self) -> impl Iterator<Item = &Memory> {
        self.records
            .iter()
            .filter(|r| r.verdict == Verdict::Used)
            .filter_map(|r| r.memory.as_deref())
    }

    /// The verdict of record `id`, if it was judged.
    pub fn verdict_of(&self, id: &str) -> Option<&RecordVerdict> {
        self.records.iter().find(|r| r.id.as_str() == id)
    }

    /// The admitted memories rendered as context (see [`context`]).
    pub fn to_context(&self) -> String {
        context::render(self)
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

/// Approximate heap bytes of a built index (see [`Recall::index_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexBytes {
    /// Number of postings (distinct terms per document, summed).
    pub postings: usize,
    /// Postings, per-document factors and analysed terms.
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
    /// Most records indexed; a larger namespace is an error (default 1,000,000).
    pub max_memories: usize,
    /// The optional picker model.
    pub picker: Option<PickerOptions>,
    /// The store's seal key: a memory whose seal does not verify is `held`
    /// (`unverified`) until a person confirms it. `None` (the default): the
    /// store's records are trusted as they are. See [`crate::SealKey`].
    pub seal: Option<crate::SealKey>,
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
            max_memories: 1_000_000,
            picker: None,
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
    /// Building the index failed (its task panicked or was cancelled).
    #[error("building the recall index failed")]
    IndexBuild,
}

/// Recall over one store: owns the in-memory index and the firewall.
pub struct Recall {
    store: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
    options: RecallOptions,
    analyze: AnalyzeConfig,
    scanner: Arc<Scanner>,
    vocab: Arc<RwLock<Vocabulary>>,
    index: tokio::sync::Mutex<Option<Arc<Index>>>,
}

impl fmt::Debug for Recall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recall")
            .field("store", &self.store)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn memories_namespace() -> Namespace {
    Namespace::new(MEMORIES_NAMESPACE).unwrap_or_else(|_| unreachable!("valid namespace"))
}

fn generation_key() -> Key {
    Key::new(
        Namespace::new(STATE_NAMESPACE).unwrap_or_else(|_| unreachable!("valid namespace")),
        RecordId::new(GENERATION_ID).unwrap_or_else(|_| unreachable!("valid id")),
    )
}

/// Escapes control characters and bounds `text` to `max` characters.
pub(crate) fn printable(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 2));
    for (count, c) in text.chars().enumerate() {
        if count == max {
            out.push('…');
            break;
        }
        if c.is_control() || dream_core::model::is_line_break(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

impl Recall {
    /// Recall over `store`, reading time from `clock`.
    pub fn new(store: Arc<dyn RecordStore>, clock: Arc<dyn Clock>, options: RecallOptions) -> Self {
        let mut languages = LanguageSet::of(&options.languages);
        languages.insert(options.default_language);
        Recall {
            analyze: AnalyzeConfig {
                languages,
                default_language: options.default_language,
                quarantine_suspicious: options.quarantine_suspicious,
                seal: options.seal.clone(),
            },
            store,
            clock,
            options,
            scanner: Arc::new(Scanner::new(Mode::Memory)),
            vocab: Arc::new(RwLock::new(Vocabulary::default())),
            index: tokio::sync::Mutex::new(None),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &RecallOptions {
        &self.options
    }

    /// Ranks memories for `query` and judges each candidate (see the module docs).
    pub async fn recall(
        &self,
        query: &str,
        scope: &Scope,
        limit: usize,
    ) -> Result<RecallResult, RecallError> {
        if limit == 0 || limit > MAX_LIMIT {
            return Err(RecallError::InvalidLimit {
                limit,
                max: MAX_LIMIT,
            });
        }
        if query.len() > MAX_QUERY_BYTES {
            return Err(RecallError::QueryTooLong {
                len: query.len(),
                max: MAX_QUERY_BYTES,
            });
        }
        let mut index = self.index().await?;
        let pool = self.options.candidate_pool.max(limit);
        let other_pool = self.options.other_scope_pool;

        let mut ranker = Ranker::Lexical;
        let mut hits = None;
        if let Some(picker) = &self.options.picker {
            match self.pick(picker, &index, query, scope).await {
                Ok(picked) => {
                    ranker = Ranker::Model {
                        model: picker.model.describe(),
                    };
                    hits = Some(picked);
                }
                Err(reason) => {
                    tracing::info!(%reason, "recall picker failed; using lexical ranking");
                    ranker = Ranker::LexicalFallback { reason };
                }
            }
        }
        let hits = match hits {
            Some(hits) => hits,
            None => {
                let terms = self.query_terms(&index, query);
                index.rank(&terms, scope, pool, other_pool)
            }
        };
        let now = self.clock.now();
        let mut records = self.firewall(&index, scope, now).judge(&hits, limit);
        let mut retried = false;
        if unusable(&index, &hits) {
            // One bounded retry: re-check the generation, then a broader query.
            retried = true;
            index = self.index().await?;
            let terms = self.broad_terms(&index, query);
            let hits = index.rank(&terms, scope, pool, other_pool);
            records = self.firewall(&index, scope, now).judge(&hits, limit);
        }
        let policy = firewall::policy(&records, || {
            format!(
                "no memory matched the query{} ({} records indexed, {} valid in scope {scope})",
                if retried {
                    " nor the broader retry"
                } else {
                    ""
                },
                index.len(),
                index.count_in_scope(scope)
            )
        });
        tracing::debug!(
            generation = ?index.generation,
            judged = records.len(),
            used = records.iter().filter(|r| r.verdict == Verdict::Used).count(),
            retried,
            policy = policy.verdict.as_str(),
            "recall"
        );
        Ok(RecallResult {
            policy,
            records,
            ranker,
            retried,
            generation: index.generation,
        })
    }

    /// Approximate heap bytes of the current index's ranking structures: postings,
    /// per-document factors and terms, the vocabulary, and (with sub-words) its
    /// trigram index. Builds the index if needed. For measuring, not for limits.
    pub async fn index_bytes(&self) -> Result<IndexBytes, RecallError> {
        let index = self.index().await?;
        let vocab = index.vocab.read().unwrap_or_else(|e| e.into_inner());
        Ok(IndexBytes {
            postings: index.postings_len(),
            ranking: index.ranking_bytes(),
            vocabulary: vocab.bytes(),
            subwords: vocab.gram_bytes(),
        })
    }

    /// Recalls and renders only the admitted memories as context for the next
    /// session (see [`context`]).
    pub async fn recall_as_context(
        &self,
        query: &str,
        scope: &Scope,
        limit: usize,
    ) -> Result<String, RecallError> {
        Ok(self.recall(query, scope, limit).await?.to_context())
    }

    fn firewall<'a>(
        &self,
        index: &'a Index,
        scope: &'a Scope,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Firewall<'a> {
        Firewall {
            index,
            scope,
            now,
            min_confidence: self.options.min_confidence,
        }
    }

    /// The index for the store's current generation, rebuilt when it changed.
    /// Records whose version is unchanged keep their analysis.
    async fn index(&self) -> Result<Arc<Index>, RecallError> {
        let generation = self.read_generation().await?;
        let mut slot = self.index.lock().await;
        if let (Some(index), Some(_)) = (&*slot, generation)
            && index.generation == generation
        {
            return Ok(index.clone());
        }
        let entries = self.list_all().await?;
        let old = slot.clone();
        let scanner = self.scanner.clone();
        let config = self.analyze.clone();
        let params = self.options.rank;
        let subwords = self.options.subwords;
        let vocab = self.vocab.clone();
        let built = tokio::task::spawn_blocking(move || {
            let docs = analyse_all(entries, old.as_deref(), &scanner, &config, &vocab);
            if subwords {
                vocab
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .index_grams();
            }
            Index::build(generation, docs, vocab, &params)
        })
        .await
        .map_err(|_| RecallError::IndexBuild)?;
        let built = Arc::new(built);
        *slot = Some(built.clone());
        Ok(built)
    }

    async fn read_generation(&self) -> Result<Option<u64>, RecallError> {
        let key = generation_key();
        let record = match self.store.get(&key).await {
            Err(e) if e.is_retryable() => self.store.get(&key).await?,
            other => other?,
        };
        let Some(record) = record else {
            return Ok(Some(0));
        };
        let parsed = std::str::from_utf8(&record.value)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok());
        if parsed.is_none() {
            tracing::warn!("state/generation is not a decimal number; recall rebuilds every time");
        }
        Ok(parsed)
    }

    async fn list_all(&self) -> Result<Vec<(RecordId, dream_core::Record)>, RecallError> {
        let namespace = memories_namespace();
        let mut out = Vec::new();
        let mut after: Option<RecordId> = None;
        loop {
            let page = match self
                .store
                .list(&namespace, after.as_ref(), MAX_LIST_LIMIT)
                .await
            {
                Err(e) if e.is_retryable() => {
                    self.store
                        .list(&namespace, after.as_ref(), MAX_LIST_LIMIT)
                        .await?
                }
                other => other?,
            };
            for entry in page.entries {
                out.push((entry.id, entry.record));
            }
            if out.len() > self.options.max_memories {
                return Err(RecallError::TooManyMemories {
                    max: self.options.max_memories,
                });
            }
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// Query terms with their weights: stop words of the query's language dropped
    /// (unless that leaves nothing), each word stemmed in every language present in
    /// the index (weight 1, or [`RankParams::intent_weight`] for an intent word);
    /// with [`RecallOptions::subwords`], each word's sub-word relatives too.
    fn query_terms(&self, index: &Index, query: &str) -> Vec<(u32, f32)> {
        let mut words = Vec::new();
        tokenize::words(query, &mut words);
        let language = tokenize::detect(
            &words,
            self.analyze.languages,
            self.analyze.default_language,
        );
        let content: Vec<&String> = words
            .iter()
            .filter(|w| !tokenize::is_stop_word(w, language))
            .collect();
        let kept: Vec<&String> = if content.is_empty() {
            words.iter().collect()
        } else {
            content
        };
        let mut languages = index.languages;
        languages.insert(language);
        let params = &self.options.rank;
        let vocab = index.vocab.read().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<(u32, f32)> = Vec::new();
        let push = |out: &mut Vec<(u32, f32)>, term: u32, weight: f32| match out
            .iter_mut()
            .find(|(t, _)| *t == term)
        {
            Some(entry) => entry.1 = entry.1.max(weight),
            None => out.push((term, weight)),
        };
        let expand =
            self.options.subwords && params.subword_weight > 0.0 && params.max_variants > 0;
        let mut similar = Vec::new();
        let mut expanded = 0usize;
        for word in kept {
            let intent = tokenize::is_intent_word(word);
            let weight = if intent { params.intent_weight } else { 1.0 };
            let mut forms: Vec<String> = Vec::new();
            let mut exact: Vec<u32> = Vec::new();
            for l in languages.iter() {
                let stem = tokenize::stem(word, l);
                if let Some(id) = vocab.lookup(&stem)
                    && !exact.contains(&id)
                {
                    exact.push(id);
                }
                if !forms.contains(&stem) {
                    forms.push(stem);
                }
            }
            for term in &exact {
                push(&mut out, *term, weight);
            }
            if !expand || intent || expanded == MAX_EXPANDED_WORDS {
                continue;
            }
            expanded += 1;
            if !forms.contains(word) {
                forms.push(word.clone());
            }
            similar.clear();
            for form in &forms {
                vocab.similar(form, &mut similar);
            }
            similar.retain(|s| !exact.contains(&s.term) && index.df(s.term) > 0);
            similar.sort_unstable_by(|a, b| {
                a.term
                    .cmp(&b.term)
                    .then(b.similarity.total_cmp(&a.similarity))
            });
            similar.dedup_by_key(|s| s.term);
            similar.sort_unstable_by(|a, b| {
                b.similarity
                    .total_cmp(&a.similarity)
                    .then(index.df(a.term).cmp(&index.df(b.term)))
                    .then(a.term.cmp(&b.term))
            });
            similar.truncate(params.max_variants);
            // The word's own stems cap its relatives' idf: the exact word wins.
            let ceiling = exact.iter().map(|t| index.idf(*t)).fold(0f32, f32::max);
            for s in &similar {
                let mut w = weight * params.subword_weight * s.similarity;
                let idf = index.idf(s.term);
                if params.subword_idf_cap && ceiling > 0.0 && idf > ceiling {
                    w *= ceiling / idf;
                }
                push(&mut out, s.term, w);
            }
        }
        if expand {
            // Compounds written apart: `code owners` → `codeowners`, `stand-up` →
            // `standup`, `md book` → `mdbook` (stop words included: `just file`).
            for pair in words.windows(2) {
                let joined = format!("{}{}", pair[0], pair[1]);
                if joined.chars().count() < vocab::MIN_PART_CHARS + 1 {
                    continue;
                }
                for l in languages.iter() {
                    if let Some(term) = vocab.lookup(&tokenize::stem(&joined, l)) {
                        push(&mut out, term, 1.0);
                    }
                }
            }
        }
        out
    }

    /// The broader retry: every word (stop words too), its stems, the indexed
    /// terms they prefix, and the indexed terms that prefix them (≥ 3 characters).
    fn broad_terms(&self, index: &Index, query: &str) -> Vec<(u32, f32)> {
        let mut words = Vec::new();
        tokenize::words(query, &mut words);
        let mut languages = index.languages;
        languages.insert(self.analyze.default_language);
        let cap = self.options.retry_expansion.max(1);
        let vocab = index.vocab.read().unwrap_or_else(|e| e.into_inner());
        let mut out: HashSet<u32> = HashSet::new();
        for word in &words {
            let mut forms = vec![word.clone()];
            for l in languages.iter() {
                let stem = tokenize::stem(word, l);
                if !forms.contains(&stem) {
                    forms.push(stem);
                }
            }
            for form in &forms {
                out.extend(vocab.lookup(form));
                if form.chars().count() < 3 {
                    continue;
                }
                out.extend(vocab.with_prefix(form, cap));
                for (end, _) in form.char_indices().skip(3) {
                    out.extend(vocab.lookup(&form[..end]));
                }
            }
        }
        let mut out: Vec<u32> = out.into_iter().collect();
        out.sort_unstable();
        out.into_iter().map(|t| (t, 1.0)).collect()
    }

    /// The picker: a manifest of eligible memories (valid, in scope, current),
    /// lexical hits first, then the most recently updated.
    async fn pick(
        &self,
        options: &PickerOptions,
        index: &Index,
        query: &str,
        scope: &Scope,
    ) -> Result<Vec<Hit>, String> {
        let now = self.clock.now();
        let firewall = self.firewall(index, scope, now);
        let eligible = |doc: u32| -> Option<&Memory> {
            let valid = index.docs.get(doc as usize)?.valid()?;
            (index.in_scope(doc, scope) && firewall.is_current(valid)).then_some(&*valid.memory)
        };
        let size = options.manifest_size.max(1);
        let terms = self.query_terms(index, query);
        let mut chosen: Vec<u32> = Vec::new();
        for hit in index.rank(&terms, scope, size, 0) {
            if eligible(hit.doc).is_some() {
                chosen.push(hit.doc);
            }
        }
        if chosen.len() < size {
            let taken: HashSet<u32> = chosen.iter().copied().collect();
            let mut recent: Vec<(chrono::DateTime<chrono::Utc>, u32)> = (0..index.len())
                .filter_map(|i| u32::try_from(i).ok())
                .filter(|d| !taken.contains(d))
                .filter_map(|d| eligible(d).map(|m| (m.updated_at, d)))
                .collect();
            recent.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            chosen.extend(recent.into_iter().take(size - chosen.len()).map(|(_, d)| d));
        }
        let manifest: Vec<picker::Entry<'_>> = chosen
            .iter()
            .filter_map(|d| eligible(*d).map(|memory| picker::Entry { doc: *d, memory }))
            .collect();
        let picked = picker::pick(
            options.model.as_ref(),
            options.timeout,
            options.max_tokens,
            query,
            &manifest,
        )
        .await?;
        Ok(picked
            .into_iter()
            .map(|doc| Hit { doc, score: 0.0 })
            .collect())
    }
}

/// Most words of one query given sub-word relatives (a long query pasted as a
/// question costs at most this many vocabulary look-ups).
const MAX_EXPANDED_WORDS: usize = 32;

/// Records analysed on one thread before the work is split across cores.
const PARALLEL_THRESHOLD: usize = 512;

/// Analyses every listed record, reusing the analysis of each record whose
/// version is unchanged since `old`. Both listings are sorted by id, so they are
/// walked together. New records are analysed on every available core; the
/// vocabulary is locked only while one record is tokenised, so a recall still on
/// the previous index never waits for a whole build.
fn analyse_all(
    entries: Vec<(RecordId, dream_core::Record)>,
    old: Option<&Index>,
    scanner: &Scanner,
    config: &AnalyzeConfig,
    vocab: &RwLock<Vocabulary>,
) -> Vec<Arc<Doc>> {
    let previous = old.map(|o| o.docs.as_slice()).unwrap_or(&[]);
    let mut p = 0usize;
    let mut docs: Vec<Option<Arc<Doc>>> = Vec::with_capacity(entries.len());
    let mut todo: Vec<(usize, RecordId, dream_core::Record)> = Vec::new();
    for (i, (id, record)) in entries.into_iter().enumerate() {
        while p < previous.len() && previous[p].id < id {
            p += 1;
        }
        match previous.get(p) {
            Some(doc) if doc.id == id && doc.version == record.version => {
                docs.push(Some(doc.clone()));
            }
            _ => {
                docs.push(None);
                todo.push((i, id, record));
            }
        }
    }
    let analyse = |(i, id, record): (usize, RecordId, dream_core::Record)| {
        let doc = analyze::analyze(id, record.version, &record.value, scanner, config, vocab);
        (i, Arc::new(doc))
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let done: Vec<(usize, Arc<Doc>)> = if threads > 1 && todo.len() > PARALLEL_THRESHOLD {
        let chunk = todo.len().div_ceil(threads);
        let mut chunks: Vec<Vec<_>> = Vec::new();
        let mut rest = todo.into_iter();
        loop {
            let part: Vec<_> = rest.by_ref().take(chunk).collect();
            if part.is_empty() {
                break;
            }
            chunks.push(part);
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = chunks
                .into_iter()
                .map(|part| scope.spawn(move || part.into_iter().map(analyse).collect::<Vec<_>>()))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    } else {
        todo.into_iter().map(analyse).collect()
    };
    for (i, doc) in done {
        docs[i] = Some(doc);
    }
    docs.into_iter().flatten().collect()
}

/// Whether a candidate set is empty or holds only undecodable records.
fn unusable(index: &Index, hits: &[Hit]) -> bool {
    hits.iter().all(|h| {
        index
            .docs
            .get(h.doc as usize)
            .is_none_or(|d| matches!(d.outcome, Outcome::Rejected { corrupt: true, .. }))
    })
}
