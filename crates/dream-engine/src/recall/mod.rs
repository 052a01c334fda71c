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
//!    exact word, see `index`), re-ranked once with terms of its best records
//!    (pseudo-relevance feedback, [`RankParams::feedback_terms`]). When it is
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
pub(crate) mod dates;
pub mod eval;
mod firewall;
mod fusion;
mod index;
mod mapped;
mod persist;
mod picker;
mod reason;
mod refresh;
mod relevance;
mod semantic;
mod terms;
pub mod tokenize;
mod types;
mod vocab;
mod wire;

pub use brief::estimated_tokens;

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, OnceLock};

use dream_core::{Clock, Memory, RecordId, RecordStore, Scope};
use dream_scan::Scanner;

use analyze::{AnalyzeConfig, Outcome};
use firewall::Firewall;
pub use firewall::why_unconfirmed;
pub use fusion::FusionParams;
pub use index::RankParams;
use index::{Hit, Index};
pub use picker::MAX_PICKS;
pub use reason::{Reason, codes};
pub use relevance::RelevanceFloor;
use relevance::{QueryWord, Relevance};
pub use semantic::{UNRELATED, VectorOptions};
pub use tokenize::Language;
use tokenize::LanguageSet;
pub(crate) use types::shown_id;
pub use types::{
    FirewallVerdict, IndexBytes, MAX_LIMIT, MAX_QUERY_BYTES, PickerOptions, Policy, PolicyVerdict,
    Ranker, RecallError, RecallOptions, RecallResult, RecordVerdict,
};

/// A memory recall would quarantine, as a front end may name it: never its
/// content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    /// Its id, or `record-<sha256 prefix>` when the id itself is flagged.
    pub shown_id: String,
    /// Why (`instruction` or `secret`, with the rules that fired).
    pub reason: Reason,
}

impl Withheld {
    /// The JSON a front end returns in the memory's place.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.shown_id,
            "withheld": "quarantined",
            "reason": self.reason.to_string(),
            "note": "recall would quarantine this record: its content is never returned",
        })
    }
}

/// Recall over one store: owns the in-memory index and the firewall.
pub struct Recall {
    store: Arc<dyn RecordStore>,
    clock: Arc<dyn Clock>,
    options: RecallOptions,
    analyze: AnalyzeConfig,
    /// Built on first use: a recall served from a persisted index needs none.
    scanner: Arc<OnceLock<Scanner>>,
    /// [`RecallOptions::persist`], on a store with leases and fenced writes.
    persist: bool,
    /// What a persisted index must have been made with (see `persist`).
    fingerprint: String,
    index: tokio::sync::Mutex<Option<Arc<Index>>>,
    /// The vectors loaded for the current index (with [`RecallOptions::vectors`]).
    vectors: tokio::sync::Mutex<Option<Arc<semantic::Loaded>>>,
    /// [`UNRELATED`] embedded by the vectors' model.
    unrelated: tokio::sync::Mutex<Option<Arc<semantic::Unrelated>>>,
}

impl fmt::Debug for Recall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recall")
            .field("store", &self.store)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// An index of at least this many records is freed on a thread of its own.
const DROP_APART_MIN: usize = 4096;

impl Drop for Recall {
    /// Frees a large index (with every analysis decoded, as a brief decodes
    /// them: ≈ 0.2 s for 100,000 records, a dozen allocations each) on a thread
    /// of its own, so that dropping the handle does not wait for it: a command
    /// that answers and exits is not slowed by its teardown.
    fn drop(&mut self) {
        let Some(index) = self.index.get_mut().take() else {
            return;
        };
        if Arc::strong_count(&index) == 1 && index.len() >= DROP_APART_MIN {
            // Dropped here after all when no thread can be started.
            let _ = std::thread::Builder::new()
                .name("recall-drop".into())
                .spawn(move || drop(index));
        }
    }
}

impl Recall {
    /// Recall over `store`, reading time from `clock`.
    pub fn new(store: Arc<dyn RecordStore>, clock: Arc<dyn Clock>, options: RecallOptions) -> Self {
        let mut languages = LanguageSet::of(&options.languages);
        languages.insert(options.default_language);
        let analyze = AnalyzeConfig {
            languages,
            default_language: options.default_language,
            quarantine_suspicious: options.quarantine_suspicious,
            seal: options.seal.clone(),
        };
        let capabilities = store.info().capabilities;
        Recall {
            fingerprint: persist::fingerprint(&analyze),
            persist: options.persist && capabilities.leases && capabilities.fenced_writes,
            analyze,
            store,
            clock,
            options,
            scanner: Arc::default(),
            index: tokio::sync::Mutex::new(None),
            vectors: tokio::sync::Mutex::new(None),
            unrelated: tokio::sync::Mutex::new(None),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &RecallOptions {
        &self.options
    }

    /// The firewall's scan (step 2) of one memory, exactly as recall judges it
    /// (the write gate's fields at every depth, the ids it names, the same
    /// scanner and depth): `Some` with what to show instead when recall would
    /// quarantine it. A front end that returns memory content outside recall
    /// (MCP's `show`, `list`, `history`, resources) withholds what this names.
    pub fn withheld(&self, memory: &Memory) -> Option<Withheld> {
        let scanner = self.scanner.get_or_init(crate::scan::memory_scanner);
        let record = RecordId::from(memory.id.clone());
        analyze::screen(scanner, &record, memory, self.analyze.quarantine_suspicious).map(
            |(reason, id_flagged)| Withheld {
                shown_id: shown_id(&record, id_flagged),
                reason,
            },
        )
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
        let (mut result, index) = self.judge_query(query, scope, limit).await?;
        if self.show(&index, &mut result.records).await? {
            return Ok(result);
        }
        // A memory about to be shown no longer holds the bytes it was judged on
        // (a hand edit, a swapped file): judge again over every record read anew.
        self.reindex().await?;
        let (mut result, index) = self.judge_query(query, scope, limit).await?;
        if self.show(&index, &mut result.records).await? {
            Ok(result)
        } else {
            Err(RecallError::Changing)
        }
    }

    /// [`Recall::recall`] over the current index, and that index.
    async fn judge_query(
        &self,
        query: &str,
        scope: &Scope,
        limit: usize,
    ) -> Result<(RecallResult, Arc<Index>), RecallError> {
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
                    // The model chose them as relevant.
                    hits = Some((picked, Relevance::all()));
                }
                Err(reason) => {
                    tracing::info!(%reason, "recall picker failed; using lexical ranking");
                    ranker = Ranker::LexicalFallback { reason };
                }
            }
        }
        let (hits, relevance) = match hits {
            Some(hits) => hits,
            None => {
                let (mut hits, relevance) = self
                    .ranked(&index, query, scope, (pool, other_pool), &mut ranker)
                    .await;
                self.weigh_dates(&index, query, &mut hits);
                (hits, relevance)
            }
        };
        let now = self.clock.now();
        let mut records = self
            .firewall(&index, scope, now, &relevance)
            .judge(&hits, limit);
        let mut retried = false;
        if unusable(&index, &hits) {
            // One bounded retry: re-check the generation, then a broader query.
            retried = true;
            index = self.index().await?;
            let (terms, words) = self.broad_terms(&index, query);
            let hits = index.rank(&terms, scope, pool, other_pool);
            let relevance = Relevance::judge(&index, &hits, &words, None, &self.options.relevance);
            records = self
                .firewall(&index, scope, now, &relevance)
                .judge(&hits, limit);
        }
        let policy = firewall::policy(&records, || {
            let fallback = match &ranker {
                Ranker::LexicalFallback { reason } => format!("; lexical ranking only: {reason}"),
                _ => String::new(),
            };
            format!(
                "no memory matched the query{} ({} records indexed, {} valid in scope {scope}){fallback}",
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
            generation = index.generation,
            judged = records.len(),
            used = records
                .iter()
                .filter(|r| r.verdict == FirewallVerdict::Used)
                .count(),
            retried,
            policy = policy.verdict.as_str(),
            "recall"
        );
        let generation = index.generation;
        Ok((
            RecallResult {
                policy,
                records,
                ranker,
                retried,
                generation,
            },
            index,
        ))
    }

    /// Puts the candidates of the time the query names first (see
    /// [`RankParams::date_weight`]): their scores times `1 +` the weight, then
    /// sorted again.
    fn weigh_dates(&self, index: &Index, query: &str, hits: &mut [Hit]) {
        let weight = self.options.rank.date_weight;
        if weight <= 0.0 {
            return;
        }
        let Some(span) = dates::find(query, self.clock.now().date_naive()) else {
            return;
        };
        for hit in hits.iter_mut() {
            let dated = index.doc(hit.doc).and_then(|d| d.valid());
            if dated.is_some_and(|v| dates::dated_in(v, &span)) {
                hit.score *= 1.0 + weight;
            }
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    }

    /// The candidates without a picker: BM25F (unless [`RecallOptions::lexical`]
    /// is off) fused with the vectors when [`RecallOptions::vectors`] is set
    /// (see `fusion`); and which of them reach the query's relevance floor (see
    /// `relevance`). When the query cannot be embedded, BM25F alone, and `ranker`
    /// says why. The time the query names is weighed after ([`Recall::weigh_dates`]).
    async fn ranked(
        &self,
        index: &Index,
        query: &str,
        scope: &Scope,
        (pool, other_pool): (usize, usize),
        ranker: &mut Ranker,
    ) -> (Vec<Hit>, Relevance) {
        let floor = &self.options.relevance;
        let (terms, words) = self.query_terms(index, query);
        let lexical = |on: bool| {
            if on {
                index.rank(&terms, scope, pool, other_pool)
            } else {
                Vec::new()
            }
        };
        let Some(options) = &self.options.vectors else {
            let hits = lexical(true);
            let relevance = Relevance::judge(index, &hits, &words, None, floor);
            return (hits, relevance);
        };
        match self.similarities(options, index, query, scope).await {
            Ok(similar) => {
                *ranker = Ranker::Hybrid {
                    embedder: options.embedder.describe(),
                };
                let covered: Vec<Hit> = lexical(self.options.lexical)
                    .into_iter()
                    .map(|h| Hit {
                        doc: h.doc,
                        score: relevance::coverage(index, h.doc, &words),
                    })
                    .collect();
                let hits = fusion::fuse(&covered, &similar, &options.fusion, pool + other_pool);
                let relevance = Relevance::judge(index, &hits, &words, Some(&similar), floor);
                (hits, relevance)
            }
            Err(reason) => {
                tracing::info!(%reason, "recall vectors unavailable; using lexical ranking");
                *ranker = Ranker::LexicalFallback { reason };
                let hits = lexical(true);
                let relevance = Relevance::judge(index, &hits, &words, None, floor);
                (hits, relevance)
            }
        }
    }

    /// Approximate heap bytes of the current index: its records, postings and
    /// tables (read in place), the vocabulary, and (with sub-words) its trigram
    /// index. Builds the index if needed. For measuring, not for limits.
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
        relevance: &'a Relevance,
    ) -> Firewall<'a> {
        Firewall {
            index,
            scope,
            now,
            min_confidence: self.options.min_confidence,
            relevance,
        }
    }

    /// Query terms with their weights: stop words of the query's language dropped
    /// (unless that leaves nothing), each word stemmed in every language present in
    /// the index (see `Index::word_terms`; times [`RankParams::intent_weight`] for
    /// an intent word); with [`RecallOptions::subwords`], each word's sub-word
    /// relatives and adjacent words joined as compounds too. With them, each
    /// kept word's information and the terms that stand for it (see
    /// `relevance`).
    fn query_terms(&self, index: &Index, query: &str) -> (Vec<(u32, f32)>, Vec<QueryWord>) {
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
        let unseen = relevance::unseen_mass(index);
        let mut evidence: Vec<QueryWord> = Vec::new();
        for word in kept {
            let intent = tokenize::is_intent_word(word);
            let weight = if intent { params.intent_weight } else { 1.0 };
            let stems = index.word_terms(&vocab, word, language, params);
            let mut held = QueryWord {
                mass: relevance::word_mass(intent, stems.idf, unseen),
                terms: Vec::new(),
            };
            for (term, w) in &stems.terms {
                push(&mut out, *term, weight * w);
                held.add(*term, *w);
            }
            let exact: Vec<u32> = stems.terms.iter().map(|(t, _)| *t).collect();
            let mut forms = stems.forms;
            if !expand || intent || expanded == MAX_EXPANDED_WORDS {
                evidence.push(held);
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
            let ceiling = stems.idf;
            for s in &similar {
                let share = params.subword_weight * s.similarity;
                let mut w = weight * share;
                let idf = index.idf(s.term);
                if params.subword_idf_cap && ceiling > 0.0 && idf > ceiling {
                    w *= ceiling / idf;
                }
                push(&mut out, s.term, w);
                held.add(s.term, share);
            }
            evidence.push(held);
        }
        if expand {
            // Compounds written apart: `code owners` → `codeowners`, `stand-up` →
            // `standup`, `md book` → `mdbook` (stop words included: `just file`).
            for pair in words.windows(2) {
                let joined = format!("{}{}", pair[0], pair[1]);
                if joined.chars().count() < vocab::MIN_PART_CHARS + 1 {
                    continue;
                }
                for (term, w) in index.word_terms(&vocab, &joined, language, params).terms {
                    push(&mut out, term, w);
                }
            }
        }
        (out, evidence)
    }

    /// The broader retry: every word (stop words too), its stems, the indexed
    /// terms they prefix, and the indexed terms that prefix them (≥ 3
    /// characters). With them, each word's information (a stop word has none
    /// unless the query is only stop words) and the terms that stand for it: a
    /// prefix holds the share of the longer form it spells (see `relevance`).
    fn broad_terms(&self, index: &Index, query: &str) -> (Vec<(u32, f32)>, Vec<QueryWord>) {
        let mut words = Vec::new();
        tokenize::words(query, &mut words);
        let mut languages = index.languages;
        languages.insert(self.analyze.default_language);
        let language = tokenize::detect(
            &words,
            self.analyze.languages,
            self.analyze.default_language,
        );
        let only_stop_words = words.iter().all(|w| tokenize::is_stop_word(w, language));
        let cap = self.options.retry_expansion.max(1);
        let vocab = index.vocab.read().unwrap_or_else(|e| e.into_inner());
        let unseen = relevance::unseen_mass(index);
        let mut out: HashSet<u32> = HashSet::new();
        let mut evidence: Vec<QueryWord> = Vec::new();
        for word in &words {
            let mut held = QueryWord::default();
            let counts = only_stop_words || !tokenize::is_stop_word(word, language);
            let mut idf = f32::INFINITY;
            let mut forms = vec![word.clone()];
            for l in languages.iter() {
                let stem = tokenize::stem(word, l);
                if !forms.contains(&stem) {
                    forms.push(stem);
                }
            }
            let length = |text: &str| text.chars().count() as f32;
            for form in &forms {
                let mut found: Vec<(u32, f32)> = Vec::new();
                if let Some(term) = vocab.lookup(form) {
                    found.push((term, 1.0));
                    if index.df(term) > 0 {
                        idf = idf.min(index.idf(term));
                    }
                }
                if form.chars().count() >= 3 {
                    for term in vocab.with_prefix(form, cap) {
                        let share = length(form) / length(vocab.name(term)).max(1.0);
                        found.push((term, share));
                    }
                    for (end, _) in form.char_indices().skip(3) {
                        let share = length(&form[..end]) / length(form);
                        found.extend(vocab.lookup(&form[..end]).map(|t| (t, share)));
                    }
                }
                for (term, share) in found {
                    out.insert(term);
                    held.add(term, share);
                }
            }
            if counts {
                let idf = if idf.is_finite() { idf } else { 0.0 };
                held.mass = relevance::word_mass(tokenize::is_intent_word(word), idf, unseen);
            }
            evidence.push(held);
        }
        let mut out: Vec<u32> = out.into_iter().collect();
        out.sort_unstable();
        (out.into_iter().map(|t| (t, 1.0)).collect(), evidence)
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
        let everything = Relevance::all();
        let firewall = self.firewall(index, scope, now, &everything);
        let eligible = |doc: u32| index.in_scope(doc, scope) && firewall.is_current(doc);
        let size = options.manifest_size.max(1);
        let (terms, _) = self.query_terms(index, query);
        let mut chosen: Vec<u32> = Vec::new();
        for hit in index.rank(&terms, scope, size, 0) {
            if eligible(hit.doc) {
                chosen.push(hit.doc);
            }
        }
        if chosen.len() < size {
            let taken: HashSet<u32> = chosen.iter().copied().collect();
            let mut recent: Vec<(chrono::DateTime<chrono::Utc>, u32)> = (0..index.len())
                .filter_map(|i| u32::try_from(i).ok())
                .filter(|d| !taken.contains(d) && eligible(*d))
                .filter_map(|d| Some((index.doc(d)?.valid()?.updated_at, d)))
                .collect();
            recent.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            chosen.extend(recent.into_iter().take(size - chosen.len()).map(|(_, d)| d));
        }
        // Read again: a record no longer holding the bytes it was judged on is
        // left out.
        let mut memories: Vec<(u32, Memory)> = Vec::with_capacity(chosen.len());
        for doc in chosen {
            let Some(analysed) = index.doc(doc) else {
                continue;
            };
            let read = self.read_memory(analysed).await;
            if let Some(memory) = read.map_err(|e| e.to_string())? {
                memories.push((doc, memory));
            }
        }
        let manifest: Vec<picker::Entry<'_>> = memories
            .iter()
            .map(|(doc, memory)| picker::Entry { doc: *doc, memory })
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

/// The persisted index's payload cut into `chunks`, decoded as a new process
/// loads it and encoded again as it would be saved; `Err` with why it is
/// refused. For the decoder's fuzz target (`fuzz/fuzz_targets/recall_index.rs`):
/// never a panic, and what is accepted comes back as the same bytes.
#[doc(hidden)]
pub fn reencode_persisted_index(chunks: &[&[u8]]) -> Result<Vec<u8>, &'static str> {
    persist::reencode(chunks)
}

/// Most words of one query given sub-word relatives (a long query pasted as a
/// question costs at most this many vocabulary look-ups).
const MAX_EXPANDED_WORDS: usize = 32;

/// Whether a candidate set is empty or holds only undecodable records.
fn unusable(index: &Index, hits: &[Hit]) -> bool {
    hits.iter().all(|h| {
        index
            .doc(h.doc)
            .is_none_or(|d| matches!(d.outcome, Outcome::Rejected { corrupt: true, .. }))
    })
}
