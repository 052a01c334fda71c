//! Hybrid ranking: the lexical list (BM25F with its sub-words) and the
//! vectors, fused by score, and the query's similarity to every vector of the
//! scope.
//!
//! # Fusion
//!
//! A record's fused score is its *lift* — how many standard deviations its
//! similarity to the query stands above the query's mean similarity to the
//! scope's memories — plus [`FusionParams::lexical_weight`] times the share of
//! the query's information its words hold (its *coverage*, see `relevance`).
//! Both parts are measured against the query itself, so neither list's scale
//! swamps the other: the words can lift a record by at most `lexical_weight`
//! standard deviations of meaning. A record that only the words found, without
//! a vector, has lift 0. On the development paraphrases, reciprocal-rank
//! fusion of the BM25F and vector lists did worse than meaning alone at every
//! weight tried (R@1 42.5 against 56.2), and so did BM25F scores over the
//! query's best; the coverage, weighted 0.5, ties meaning alone at R@1 and
//! gains at R@5 (88.8 against 88.1).
//!
//! # Hubs
//!
//! A "hub" is a record whose vector sits close to the centre of the vectors, so
//! raw cosine ranks it high for many unrelated queries — naturally, or because
//! someone wrote its text to be. Two rules keep one record from dominating:
//!
//! 1. **Centring**: similarity is the cosine of the query and the record after
//!    both are moved by the mean of the scope's vectors (when the scope holds at
//!    least [`MIN_CENTRED`]; fewer give no stable mean). The direction every
//!    text shares is removed; a record near the centre is near nothing.
//! 2. **Floor**: only records whose centred cosine reaches
//!    [`FusionParams::min_similarity`] enter as candidates by meaning. A record
//!    must be closer to the query than to the average memory to be brought by
//!    meaning at all.
//!
//! The firewall judges whatever the fused list holds, exactly as it judges a
//! lexical list: a vector brings a candidate, never a verdict.

use super::index::Hit;

/// Fewest vectors in a scope for centring on their mean.
pub const MIN_CENTRED: usize = 8;

/// How the lists are fused and vectors are ranked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusionParams {
    /// Weight of the words: a record whose words hold the whole query gains
    /// this many standard deviations of meaning (default 0.5, tuned on the
    /// development paraphrases and the word-query sets).
    pub lexical_weight: f32,
    /// Least centred cosine for a record to enter as a candidate by meaning
    /// (default 0.1).
    pub min_similarity: f32,
    /// Centre the vectors on their mean before comparing (default true; off only
    /// to measure what centring does).
    pub center: bool,
}

impl Default for FusionParams {
    fn default() -> Self {
        FusionParams {
            lexical_weight: 0.5,
            min_similarity: 0.1,
            center: true,
        }
    }
}

/// The query's similarity to every vector of one group (scope).
#[derive(Debug, Default)]
pub(crate) struct Similarities {
    /// `(document, similarity, plain cosine)`, sorted by document.
    by_doc: Vec<(u32, f32, f32)>,
    /// Mean and standard deviation of the similarities.
    mean: f32,
    spread: f32,
    /// Mean and standard deviation of the query's plain cosine to unrelated
    /// text (`None`: not measured).
    unrelated: Option<(f32, f32)>,
}

impl Similarities {
    /// The documents most similar to the query, best first, at most `pool`,
    /// each at least `min_similarity`.
    pub fn best(&self, pool: usize, min_similarity: f32) -> Vec<u32> {
        let mut scored: Vec<(f32, u32)> = self
            .by_doc
            .iter()
            .filter(|(_, s, _)| *s >= min_similarity)
            .map(|(doc, s, _)| (*s, *doc))
            .collect();
        if pool == 0 {
            return Vec::new();
        }
        let by = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if scored.len() > pool {
            scored.select_nth_unstable_by(pool - 1, by);
            scored.truncate(pool);
        }
        scored.sort_unstable_by(by);
        scored.into_iter().map(|(_, doc)| doc).collect()
    }

    /// How far `doc`'s similarity stands above the query's mean, in standard
    /// deviations (`None`: no vector of this group for it).
    pub fn lift(&self, doc: u32) -> Option<f32> {
        let (_, similarity, _) = self.of(doc)?;
        if self.spread <= f32::EPSILON {
            return Some(0.0);
        }
        Some((similarity - self.mean) / self.spread)
    }

    /// How many standard deviations `doc`'s plain cosine to the query stands
    /// above the query's cosine to unrelated text (`None`: no vector of this
    /// group for it, or unrelated text was not measured).
    pub fn margin(&self, doc: u32) -> Option<f32> {
        let (_, _, cosine) = self.of(doc)?;
        let (mean, spread) = self.unrelated?;
        Some((cosine - mean) / spread.max(MIN_SPREAD))
    }

    /// Measures the query's cosine to unrelated texts (`unrelated`, unit
    /// vectors) and keeps their mean and standard deviation for
    /// [`Similarities::margin`].
    pub fn against(mut self, query: &[f32], unrelated: &[Vec<f32>]) -> Self {
        if unrelated.is_empty() || unrelated.iter().any(|u| u.len() != query.len()) {
            return self;
        }
        let q = dream_core::embed::normalized(query.to_vec());
        let cosines: Vec<f32> = unrelated.iter().map(|u| dot(&q, u)).collect();
        self.unrelated = Some(mean_and_spread(cosines.iter().copied()));
        self
    }

    fn of(&self, doc: u32) -> Option<(u32, f32, f32)> {
        let at = self.by_doc.binary_search_by(|(d, _, _)| d.cmp(&doc)).ok()?;
        Some(self.by_doc[at])
    }
}

/// Fuses the lexical hits (best first, each with its coverage as `score`)
/// with the vectors' (see the module docs) into at most `pool` hits, best
/// first. Ties go to the larger coverage (a record that only the vectors found
/// never wins a tie against one the words found), then the lower document
/// number.
pub(crate) fn fuse(
    lexical: &[Hit],
    vectors: &Similarities,
    params: &FusionParams,
    pool: usize,
) -> Vec<Hit> {
    let mut fused: Vec<(u32, f32, f32)> = Vec::with_capacity(lexical.len() + pool);
    for hit in lexical {
        let lift = vectors.lift(hit.doc).unwrap_or(0.0);
        fused.push((hit.doc, lift + params.lexical_weight * hit.score, hit.score));
    }
    for doc in vectors.best(pool, params.min_similarity) {
        if !lexical.iter().any(|h| h.doc == doc) {
            fused.push((doc, vectors.lift(doc).unwrap_or(0.0), 0.0));
        }
    }
    fused.sort_unstable_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(b.2.total_cmp(&a.2))
            .then(a.0.cmp(&b.0))
    });
    fused.truncate(pool);
    fused
        .into_iter()
        .map(|(doc, score, _)| Hit { doc, score })
        .collect()
}

/// The vectors of one index's documents, unit length, with what centring needs.
#[derive(Debug)]
pub(crate) struct VectorSet {
    /// The document (index position) of each vector, ascending.
    docs: Vec<u32>,
    /// The group (scope) of each vector.
    groups: Vec<u32>,
    /// Every vector, `dimensions` numbers each, unit length.
    data: Vec<f32>,
    dimensions: usize,
    /// The mean of each group's vectors (`None`: too few to centre on).
    means: Vec<Option<Vec<f32>>>,
    /// `mean · v` per vector (its group's mean).
    mean_dot: Vec<f32>,
    /// `|v − mean|` per vector.
    centred_norm: Vec<f32>,
}

impl VectorSet {
    /// A set of `(document, group, vector)`, each vector of `dimensions`
    /// numbers (normalized here).
    pub fn new(mut items: Vec<(u32, u32, Vec<f32>)>, dimensions: usize) -> Self {
        items.sort_unstable_by_key(|(doc, _, _)| *doc);
        let mut docs = Vec::with_capacity(items.len());
        let mut groups = Vec::with_capacity(items.len());
        let mut data = Vec::with_capacity(items.len() * dimensions);
        let mut sums: Vec<(Vec<f32>, usize)> = Vec::new();
        for (doc, group, vector) in items {
            let unit = dream_core::embed::normalized(vector);
            let g = group as usize;
            if sums.len() <= g {
                sums.resize(g + 1, (vec![0f32; dimensions], 0));
            }
            for (m, x) in sums[g].0.iter_mut().zip(&unit) {
                *m += x;
            }
            sums[g].1 += 1;
            docs.push(doc);
            groups.push(group);
            data.extend_from_slice(&unit);
        }
        let means: Vec<Option<Vec<f32>>> = sums
            .into_iter()
            .map(|(mut sum, n)| {
                (n >= MIN_CENTRED).then(|| {
                    for m in &mut sum {
                        *m /= n as f32;
                    }
                    sum
                })
            })
            .collect();
        let mut mean_dot = Vec::with_capacity(docs.len());
        let mut centred_norm = Vec::with_capacity(docs.len());
        for (v, group) in data.chunks_exact(dimensions.max(1)).zip(&groups) {
            let (md, norm) = match &means[*group as usize] {
                Some(mean) => {
                    let md = dot(v, mean);
                    (md, (1.0 - 2.0 * md + dot(mean, mean)).max(0.0).sqrt())
                }
                None => (0.0, 1.0),
            };
            mean_dot.push(md);
            centred_norm.push(norm);
        }
        VectorSet {
            docs,
            groups,
            data,
            dimensions,
            means,
            mean_dot,
            centred_norm,
        }
    }

    /// How many vectors the set holds.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// The query's similarity (centred when `center`, see the module docs) to
    /// every vector of `group`; empty when the query's dimension differs.
    pub fn similarities(&self, query: &[f32], center: bool, group: u32) -> Similarities {
        if query.len() != self.dimensions {
            return Similarities::default();
        }
        let q = dream_core::embed::normalized(query.to_vec());
        let mean = match self.means.get(group as usize) {
            Some(Some(mean)) if center => Some(mean),
            _ => None,
        };
        let (q_mean, mean_sq) = mean.map_or((0.0, 0.0), |m| (dot(&q, m), dot(m, m)));
        let q_norm = (1.0 - 2.0 * q_mean + mean_sq).max(0.0).sqrt();
        let mut by_doc: Vec<(u32, f32, f32)> = Vec::new();
        for (i, v) in self.data.chunks_exact(self.dimensions).enumerate() {
            if self.groups[i] != group {
                continue;
            }
            let raw = dot(&q, v);
            let similarity = if mean.is_some() {
                let denominator = q_norm * self.centred_norm[i];
                if denominator <= f32::EPSILON {
                    0.0
                } else {
                    (raw - q_mean - self.mean_dot[i] + mean_sq) / denominator
                }
            } else {
                raw
            };
            by_doc.push((self.docs[i], similarity, raw));
        }
        let (mean, spread) = mean_and_spread(by_doc.iter().map(|(_, s, _)| *s));
        Similarities {
            by_doc,
            mean,
            spread,
            unrelated: None,
        }
    }
}

/// Least standard deviation a margin divides by (the query's cosines to
/// unrelated texts all alike would make any difference look large).
const MIN_SPREAD: f32 = 0.02;

/// The mean and standard deviation of `values` (0, 0 when empty).
fn mean_and_spread(values: impl Iterator<Item = f32> + Clone) -> (f32, f32) {
    let n = values.clone().count();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = values.clone().sum::<f32>() / n as f32;
    let variance = values.map(|v| (v - mean).powi(2)).sum::<f32>() / n as f32;
    (mean, variance.sqrt())
}

/// The dot product of two slices of the same length.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> VectorSet {
        // Three topics of three records each share a large first component; the
        // hub (9) is almost only that component.
        let mut items = Vec::new();
        for doc in 0..9u32 {
            let mut v = vec![1.0, 0.0, 0.0, 0.0];
            v[1 + (doc % 3) as usize] = 0.6;
            items.push((doc, 0, v));
        }
        items.push((9, 0, vec![1.0, 0.05, 0.05, 0.05]));
        items.push((10, 1, vec![1.0, 0.6, 0.0, 0.0]));
        VectorSet::new(items, 4)
    }

    #[test]
    fn fusion_adds_the_words_share_to_the_lift() {
        let set = set();
        let query = [1.0, 0.4, 0.0, 0.0];
        let similar = set.similarities(&query, true, 0);
        let lexical = [Hit { doc: 1, score: 1.0 }, Hit { doc: 0, score: 0.5 }];
        let params = FusionParams::default();
        let hits = fuse(&lexical, &similar, &params, 10);
        let order: Vec<u32> = hits.iter().map(|h| h.doc).collect();
        // Topic 0 (0, 3, 6) by meaning; 0 also by the words; 1 only by the words.
        assert_eq!(order[..3], [0, 3, 6], "{order:?}");
        assert!(order.contains(&1), "{order:?}");
        let lift0 = similar.lift(0).unwrap();
        assert!((hits[0].score - (lift0 + params.lexical_weight * 0.5)).abs() < 1e-5);
        // Without words, meaning alone; above the floor only.
        let alone = fuse(&[], &similar, &params, 10);
        let order: Vec<u32> = alone.iter().map(|h| h.doc).collect();
        assert_eq!(order[..3], [0, 3, 6], "{order:?}");
        assert!(
            !order.contains(&1) && !order.contains(&2),
            "other topics are below the floor: {order:?}"
        );
        assert_eq!(fuse(&lexical, &similar, &params, 1).len(), 1);
    }

    #[test]
    fn centring_ranks_by_what_sets_a_record_apart() {
        let set = set();
        let query = [1.0, 0.4, 0.0, 0.0];
        let ranked = set.similarities(&query, true, 0).best(10, 0.1);
        assert_eq!(ranked[..3], [0, 3, 6], "topic 0 first: {ranked:?}");
        assert!(
            !ranked.contains(&1) && !ranked.contains(&2),
            "other topics are below the floor"
        );
        let all = set.similarities(&query, false, 0).best(10, -1.0);
        assert_eq!(all.len(), 10);
        assert!(all.iter().position(|d| *d == 9) < all.iter().position(|d| *d == 1));
        assert_eq!(
            set.similarities(&query, true, 1).best(4, 0.1),
            vec![10],
            "another group, too small to centre"
        );
        assert!(set.similarities(&[1.0], true, 0).best(4, 0.1).is_empty());
    }

    #[test]
    fn lift_is_measured_against_the_query_own_spread() {
        let set = set();
        let similar = set.similarities(&[1.0, 0.4, 0.0, 0.0], true, 0);
        let lifts: Vec<f32> = (0..10).map(|d| similar.lift(d).unwrap()).collect();
        let mean = lifts.iter().sum::<f32>() / 10.0;
        let var = lifts.iter().map(|l| (l - mean).powi(2)).sum::<f32>() / 10.0;
        assert!(mean.abs() < 1e-4 && (var - 1.0).abs() < 1e-3, "{lifts:?}");
        assert!(lifts[0] > 1.0 && lifts[1] < 0.0, "{lifts:?}");
        assert_eq!(similar.lift(10), None, "another group's record");
        assert_eq!(similar.margin(0), None, "unrelated text not measured");
        // Against unrelated texts: topic 0's records stand out, the others less.
        let unrelated = vec![vec![0.0, 0.0, 0.0, 1.0], vec![0.0, 0.0, 1.0, 0.0]];
        let query = [1.0, 0.4, 0.0, 0.0];
        let similar = set
            .similarities(&query, true, 0)
            .against(&query, &unrelated);
        let (m0, m1) = (similar.margin(0).unwrap(), similar.margin(1).unwrap());
        assert!(m0 > m1 && m1 > 0.0, "{m0} {m1}");
    }
}
