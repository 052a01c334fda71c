//! The in-memory index: BM25F postings over every record of the `memories`
//! namespace, plus the whole store's supersession and subject indexes, built only
//! from records that passed the scan and validation.
//!
//! BM25F: for a term `t` and a document `d`,
//! `tf~ = Σ_f w_f · tf_f(t, d) / (1 − b_f + b_f · len_f(d) / avglen_f)` and
//! `score += idf(t) · tf~ · (k1 + 1) / (k1 + tf~)`, with
//! `idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))`. The per-field factor
//! `w_f / (1 − b_f + b_f · len_f / avglen_f)` is computed once per document when
//! the index is opened, and with it each posting's `tf~` as the posting is read.
//! The records, postings and tables are read in place (see `mapped`).
//!
//! Each query term carries a weight `q_t` that multiplies its contribution: 1 for a
//! query word's own stems, [`RankParams::intent_weight`] for intent words (`tell`,
//! `remember`, `use`, …), and `subword_weight · similarity` (at most) for a sub-word
//! variant, whose idf is also capped at that of the word's own stems so an exact
//! word always outweighs its sub-word relatives. Equal scores go to the more
//! confident, then the more recently updated record, then the smaller id.
//!
//! Pseudo-relevance feedback ([`RankParams::feedback_terms`]): a first ranking's
//! best valid records of the scope lend the query their most telling terms
//! (summed idf, weighted by rank; neither unique to one record nor in more than a
//! tenth of them), at [`RankParams::feedback_weight`] at most, and the second
//! ranking is returned. It only orders candidates: the firewall judges each.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use dream_core::{Bytes, Scope};

use super::analyze::{Doc, FIELDS};
use super::mapped::{Mapped, UNKNOWN_SCOPE};
use super::tokenize::{self, Language, LanguageSet};
use super::vocab::Vocabulary;

/// Ranking parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankParams {
    /// Field weights: name, description, tags, content, kind.
    pub weights: [f32; FIELDS],
    /// Length normalisation per field (0 = none, 1 = full).
    pub b: [f32; FIELDS],
    /// Term-frequency saturation.
    pub k1: f32,
    /// Weight of a sub-word variant of a query word, times its similarity (0..1):
    /// below 1, so the exact word wins.
    pub subword_weight: f32,
    /// Most sub-word variants one query word expands to (the most similar first).
    pub max_variants: usize,
    /// Cap a sub-word variant's idf at that of the query word's own stems (when
    /// the index holds them), so a rare relative never outweighs the exact word.
    pub subword_idf_cap: bool,
    /// Weight of a query word's stem made by another language's stemmer, when
    /// the stem of the query's own language is indexed (`builder` read as German
    /// is `build`): a relative of the word, below 1 so the word itself wins.
    pub other_language_weight: f32,
    /// Weight of a query's intent words (`tell`, `remember`, `use`, …), kept but
    /// not allowed to outweigh what the query is about.
    pub intent_weight: f32,
    /// Pseudo-relevance feedback: how many terms of the best-ranked records are
    /// added to the query for a second ranking (0 = off). Finds what the query's
    /// own words only name around: the record that says how next to the one that
    /// says what.
    pub feedback_terms: usize,
    /// How many of the best-ranked valid records of the scope feed back.
    pub feedback_docs: usize,
    /// Query weight of the best feedback term (the others in proportion), below
    /// the query's own words.
    pub feedback_weight: f32,
    /// When the query names a time (`yesterday`, `last week`, `in March`, `on
    /// 2026-03-14`, read against the clock): a candidate created, updated or
    /// holding an absolute date in that span has its score times `1 +` this
    /// (0 = off). Its words are still matched as words: "in June" may name when
    /// the memory was written or what it is about.
    pub date_weight: f32,
}

impl Default for RankParams {
    fn default() -> Self {
        RankParams {
            weights: [3.0, 2.0, 2.0, 1.0, 0.5],
            b: [0.3, 0.5, 0.3, 0.75, 0.0],
            k1: 1.2,
            subword_weight: 0.6,
            max_variants: 12,
            subword_idf_cap: true,
            other_language_weight: 0.6,
            intent_weight: 0.3,
            feedback_terms: 5,
            feedback_docs: 3,
            feedback_weight: 0.3,
            date_weight: 1.0,
        }
    }
}

/// The indexed terms of one query word: its stem in each language of the index.
#[derive(Debug, Default)]
pub(crate) struct WordTerms {
    /// The word's distinct stems, indexed or not (what sub-words are matched on).
    pub forms: Vec<String>,
    /// Indexed stems with their query weight (before the word's own weight).
    pub terms: Vec<(u32, f32)>,
    /// The word's idf: that of its most common indexed stem (0 when none is).
    pub idf: f32,
}

/// A ranked document.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Hit {
    pub doc: u32,
    pub score: f32,
}

/// The index for one generation of the store.
#[derive(Debug)]
pub(crate) struct Index {
    /// The `state/generation` read before the listing this index was built from.
    pub generation: u64,
    /// Which line of indexes it descends from: an index refreshed from another
    /// keeps its lineage (and its vocabulary); one built from nothing gets a new one.
    pub lineage: u64,
    /// Every record of the namespace, sorted by id, with the postings and the
    /// whole store's supersession and subject tables.
    pub records: Mapped,
    /// Languages the documents were analysed in.
    pub languages: LanguageSet,
    /// The vocabulary the documents' term ids refer to (shared, append-only).
    pub vocab: Arc<RwLock<Vocabulary>>,
    /// `w_f / (1 − b_f + b_f · len_f / avglen_f)` per document and field.
    factors: Vec<[f32; FIELDS]>,
    k1: f32,
    /// [`RankParams::feedback_terms`], `feedback_docs` and `feedback_weight`.
    feedback: (usize, usize, f32),
}

impl Index {
    /// Builds the index from analysed records sorted by id, whose term ids refer
    /// to `vocab`; `None` only if what it wrote does not open.
    pub fn build(
        generation: u64,
        lineage: u64,
        docs: &[Arc<Doc>],
        vocab: Arc<RwLock<Vocabulary>>,
        params: &RankParams,
    ) -> Option<Index> {
        let terms = vocab.read().unwrap_or_else(|e| e.into_inner()).len();
        let records = Mapped::open(Bytes::from(Mapped::encode(docs, terms)))?;
        Some(Index::open(generation, lineage, records, vocab, params))
    }

    /// The index over `records`, whose term ids refer to `vocab`.
    pub fn open(
        generation: u64,
        lineage: u64,
        records: Mapped,
        vocab: Arc<RwLock<Vocabulary>>,
        params: &RankParams,
    ) -> Index {
        let n = records.len();
        let lengths: Vec<[u32; FIELDS]> = (0..n)
            .map(|doc| records.head(doc).map_or([0; FIELDS], |h| h.lengths))
            .collect();
        let mut totals = [0f64; FIELDS];
        for doc in &lengths {
            for (total, len) in totals.iter_mut().zip(doc) {
                *total += f64::from(*len);
            }
        }
        let averages = totals.map(|t| if n == 0 { 1.0 } else { (t / n as f64).max(1.0) });
        let factors = lengths
            .iter()
            .map(|doc| {
                std::array::from_fn(|field| {
                    let b = f64::from(params.b[field].clamp(0.0, 1.0));
                    let relative = f64::from(doc[field]) / averages[field];
                    let norm = 1.0 - b + b * relative;
                    (f64::from(params.weights[field].max(0.0)) / norm.max(1e-6)) as f32
                })
            })
            .collect();
        Index {
            generation,
            lineage,
            languages: records.languages(),
            records,
            vocab,
            factors,
            k1: params.k1.max(0.0),
            feedback: (
                params.feedback_terms,
                params.feedback_docs,
                params.feedback_weight,
            ),
        }
    }

    /// Number of records indexed.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Record `doc`'s analysis (decoded on first use); `None` past the end or
    /// when it does not decode.
    pub fn doc(&self, doc: u32) -> Option<&Arc<Doc>> {
        self.records.doc(doc as usize)
    }

    /// The document of record `id`, if indexed.
    pub fn find(&self, id: &dream_core::RecordId) -> Option<u32> {
        self.records
            .find(id.as_str())
            .and_then(|doc| u32::try_from(doc).ok())
    }

    /// Number of valid records in `scope`.
    pub fn count_in_scope(&self, scope: &Scope) -> usize {
        match self.records.scope_id(scope) {
            Some(id) => (0..self.len())
                .filter(|doc| self.records.scope_of(*doc) == id)
                .count(),
            None => 0,
        }
    }

    /// Whether a document is a valid record of `scope`.
    pub fn in_scope(&self, doc: u32, scope: &Scope) -> bool {
        self.records
            .scope_id(scope)
            .is_some_and(|id| self.records.scope_of(doc as usize) == id)
    }

    /// Number of documents holding `term`.
    pub fn df(&self, term: u32) -> usize {
        self.records.df(term)
    }

    /// The idf of `term` (0 when no document holds it).
    pub fn idf(&self, term: u32) -> f32 {
        let df = self.df(term);
        if df == 0 {
            return 0.0;
        }
        let n = self.len() as f64;
        let df = df as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32
    }

    /// The indexed stems of query `word` in `language` (the query's) and in every
    /// language of the index. One word has one idf: each stem's weight is scaled
    /// so its idf counts as at most the word's most common stem's (a stem only
    /// another language's stemmer makes is rare: `nora` → `nor` in a short
    /// record read as Italian, and must not outweigh the word as most records
    /// hold it). When the stem of `language` is indexed, the other stems weigh
    /// [`RankParams::other_language_weight`].
    pub fn word_terms(
        &self,
        vocab: &Vocabulary,
        word: &str,
        language: Language,
        params: &RankParams,
    ) -> WordTerms {
        let mut languages = self.languages;
        languages.insert(language);
        let own = vocab
            .lookup(&tokenize::stem(word, language))
            .filter(|t| self.df(*t) > 0);
        let mut out = WordTerms::default();
        let mut found: Vec<(u32, f32)> = Vec::new();
        for l in languages.iter() {
            let stem = tokenize::stem(word, l);
            if let Some(term) = vocab.lookup(&stem)
                && self.df(term) > 0
                && !found.iter().any(|(t, _)| *t == term)
            {
                found.push((term, self.idf(term)));
            }
            if !out.forms.contains(&stem) {
                out.forms.push(stem);
            }
        }
        out.idf = found
            .iter()
            .map(|(_, idf)| *idf)
            .fold(f32::INFINITY, f32::min);
        if !out.idf.is_finite() {
            out.idf = 0.0;
        }
        for (term, idf) in found {
            let mut weight = 1.0;
            if own.is_some() && own != Some(term) {
                weight *= params.other_language_weight.max(0.0);
            }
            if idf > out.idf {
                weight *= out.idf / idf;
            }
            out.terms.push((term, weight));
        }
        out
    }

    /// Number of postings (one per distinct term per document).
    pub fn postings_len(&self) -> usize {
        self.records.postings_len()
    }

    /// Approximate heap bytes of the index: its records, postings and tables
    /// read in place, the analyses decoded so far aside, and the per-document
    /// factors.
    pub fn ranking_bytes(&self) -> usize {
        self.records.heap_bytes() + self.factors.capacity() * std::mem::size_of::<[f32; FIELDS]>()
    }

    /// Ranks documents by BM25F for the distinct weighted term ids `terms`
    /// (term, query weight). Returns at most
    /// `pool` hits that are valid records of `scope` or of unknown scope
    /// (undecodable records, which the firewall rejects) and at most `other_pool`
    /// hits from other scopes, best first; equal scores go to the more confident,
    /// then the more recently updated record, then the smaller record id. With
    /// [`RankParams::feedback_terms`], the query is first extended with the most
    /// telling terms of its best-ranked records (pseudo-relevance feedback).
    pub fn rank(
        &self,
        terms: &[(u32, f32)],
        scope: &Scope,
        pool: usize,
        other_pool: usize,
    ) -> Vec<Hit> {
        let (n_terms, n_docs, weight) = self.feedback;
        if n_terms == 0 || n_docs == 0 || weight <= 0.0 {
            return self.rank_once(terms, scope, pool, other_pool);
        }
        let first = self.rank_once(terms, scope, n_docs, 0);
        let mut gain: HashMap<u32, f32> = HashMap::new();
        let n = self.len();
        // Only records that passed the scan and validation, of this scope, feed
        // back; a term in one record only, or in more than a tenth, adds nothing.
        let feeding = first
            .iter()
            .filter(|h| self.in_scope(h.doc, scope))
            .filter_map(|h| self.doc(h.doc).filter(|d| d.valid().is_some()));
        for (r, doc) in feeding.enumerate() {
            for (term, _) in doc.terms.iter() {
                let df = self.df(term);
                if df < 2 || df * 10 > n || terms.iter().any(|(t, _)| *t == term) {
                    continue;
                }
                *gain.entry(term).or_default() += self.idf(term) / (r as f32 + 1.0);
            }
        }
        let mut gain: Vec<(u32, f32)> = gain.into_iter().collect();
        gain.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        gain.truncate(n_terms);
        let best = gain.first().map_or(1.0, |g| g.1);
        let mut expanded = terms.to_vec();
        expanded.extend(gain.into_iter().map(|(t, g)| (t, weight * g / best)));
        self.rank_once(&expanded, scope, pool, other_pool)
    }

    fn rank_once(
        &self,
        terms: &[(u32, f32)],
        scope: &Scope,
        pool: usize,
        other_pool: usize,
    ) -> Vec<Hit> {
        let n = self.len() as f64;
        let mut scores = vec![0f32; self.len()];
        let mut touched: Vec<u32> = Vec::new();
        for (term, weight) in terms {
            if *weight <= 0.0 {
                continue;
            }
            let list = self.records.postings(*term);
            if list.len == 0 {
                continue;
            }
            let df = f64::from(list.len);
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32 * weight;
            for (doc, counts) in list.iter() {
                let (Some(slot), Some(factors)) =
                    (scores.get_mut(doc as usize), self.factors.get(doc as usize))
                else {
                    break;
                };
                let tf: f32 = counts
                    .iter()
                    .zip(factors)
                    .map(|(count, factor)| f32::from(*count) * factor)
                    .sum();
                if tf <= 0.0 {
                    continue;
                }
                if *slot == 0.0 {
                    touched.push(doc);
                }
                *slot += idf * tf * (self.k1 + 1.0) / (self.k1 + tf);
            }
        }

        let local = self.records.scope_id(scope);
        let (mut mine, mut others): (Vec<Hit>, Vec<Hit>) = touched
            .into_iter()
            .map(|doc| Hit {
                doc,
                score: scores[doc as usize],
            })
            .filter(|h| h.score > 0.0)
            .partition(|h| {
                let s = self.records.scope_of(h.doc as usize);
                s == UNKNOWN_SCOPE || Some(s) == local
            });
        let by_score = |a: &Hit, b: &Hit| {
            b.score
                .total_cmp(&a.score)
                .then(
                    self.records
                        .tie_break(a.doc as usize)
                        .cmp(&self.records.tie_break(b.doc as usize)),
                )
                .then(a.doc.cmp(&b.doc))
        };
        top(&mut mine, pool, by_score);
        top(&mut others, other_pool, by_score);
        mine.extend(others);
        mine.sort_unstable_by(by_score);
        mine
    }
}

/// Keeps the best `k` hits of `hits`, in no particular order.
fn top(hits: &mut Vec<Hit>, k: usize, by_score: impl Fn(&Hit, &Hit) -> Ordering) {
    if k == 0 {
        hits.clear();
    } else if hits.len() > k {
        hits.select_nth_unstable_by(k - 1, by_score);
        hits.truncate(k);
    }
}
