//! Hybrid ranking: reciprocal-rank fusion of ranked lists (lexical BM25F with
//! its sub-words, vectors), and the vector list itself.
//!
//! A document at rank `r` (1-based) of a list of weight `w` earns `w / (k + r)`;
//! its fused score is the sum over the lists that hold it. Ranks, not scores,
//! are fused, so no list's scale can swamp another, and one list can give a
//! record at most `w / (k + 1)`.
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
//!    [`FusionParams::min_similarity`] enter the vector list. A record must be
//!    closer to the query than to the average memory to be ranked by meaning at all.
//!
//! The firewall judges whatever the fused list holds, exactly as it judges a
//! lexical list: a vector brings a candidate, never a verdict.

use std::collections::HashMap;

use super::index::Hit;

/// Fewest vectors in a scope for centring on their mean.
pub const MIN_CENTRED: usize = 8;

/// How ranks are fused and vectors are ranked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusionParams {
    /// The RRF constant `k` (default 60): larger flattens the bonus of the top ranks.
    pub k: f32,
    /// Weight of the lexical list (default 1).
    pub lexical_weight: f32,
    /// Weight of the vector list (default 1).
    pub vector_weight: f32,
    /// Least centred cosine for a record to enter the vector list (default 0.1).
    pub min_similarity: f32,
    /// Centre the vectors on their mean before comparing (default true; off only
    /// to measure what centring does).
    pub center: bool,
}

impl Default for FusionParams {
    fn default() -> Self {
        FusionParams {
            k: 60.0,
            lexical_weight: 1.0,
            vector_weight: 1.0,
            min_similarity: 0.1,
            center: true,
        }
    }
}

/// One ranked list: documents best first, and its weight.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ranked<'a> {
    pub docs: &'a [u32],
    pub weight: f32,
}

/// Fuses `lists` into at most `pool` hits, best first. Ties go to the better
/// single rank, then to the earlier list (the lexical one: a record that only
/// the vectors found never wins a tie against one the words found), then the
/// lower document number.
pub(crate) fn fuse(lists: &[Ranked<'_>], k: f32, pool: usize) -> Vec<Hit> {
    let mut fused: HashMap<u32, (f32, (usize, usize))> = HashMap::new();
    for (which, list) in lists.iter().enumerate() {
        if list.weight <= 0.0 {
            continue;
        }
        for (at, doc) in list.docs.iter().enumerate() {
            let entry = fused.entry(*doc).or_insert((0.0, (usize::MAX, usize::MAX)));
            entry.0 += list.weight / (k + at as f32 + 1.0);
            entry.1 = entry.1.min((at, which));
        }
    }
    let mut hits: Vec<(u32, f32, (usize, usize))> = fused
        .into_iter()
        .map(|(doc, (score, best))| (doc, score, best))
        .collect();
    hits.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)));
    hits.truncate(pool);
    hits.into_iter()
        .map(|(doc, score, _)| Hit { doc, score })
        .collect()
}

/// The vectors of one index's documents, unit length, with what centring needs.
#[derive(Debug)]
pub(crate) struct VectorSet {
    /// The document (index position) of each vector.
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
    pub fn new(items: Vec<(u32, u32, Vec<f32>)>, dimensions: usize) -> Self {
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

    /// The documents of `group` whose vector is closest to `query` (best first,
    /// at most `pool`), each at least `min_similarity` (centred when `center`,
    /// see the module docs).
    pub fn rank(&self, query: &[f32], params: &FusionParams, pool: usize, group: u32) -> Vec<u32> {
        if query.len() != self.dimensions || pool == 0 {
            return Vec::new();
        }
        let q = dream_core::embed::normalized(query.to_vec());
        let mean = match self.means.get(group as usize) {
            Some(Some(mean)) if params.center => Some(mean),
            _ => None,
        };
        let (q_mean, mean_sq) = mean.map_or((0.0, 0.0), |m| (dot(&q, m), dot(m, m)));
        let q_norm = (1.0 - 2.0 * q_mean + mean_sq).max(0.0).sqrt();
        let mut scored: Vec<(f32, u32)> = Vec::new();
        for (i, v) in self.data.chunks_exact(self.dimensions).enumerate() {
            if self.groups[i] != group {
                continue;
            }
            let doc = self.docs[i];
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
            if similarity >= params.min_similarity {
                scored.push((similarity, doc));
            }
        }
        let by = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if scored.len() > pool {
            scored.select_nth_unstable_by(pool - 1, by);
            scored.truncate(pool);
        }
        scored.sort_unstable_by(by);
        scored.into_iter().map(|(_, doc)| doc).collect()
    }
}

/// The dot product of two slices of the same length.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_sums_reciprocal_ranks() {
        let lexical = [1, 2, 3];
        let vectors = [3, 4];
        let hits = fuse(
            &[
                Ranked {
                    docs: &lexical,
                    weight: 1.0,
                },
                Ranked {
                    docs: &vectors,
                    weight: 1.0,
                },
            ],
            60.0,
            10,
        );
        let order: Vec<u32> = hits.iter().map(|h| h.doc).collect();
        // 3 is in both lists; 2 and 4 tie (both second in a list): lower doc first.
        assert_eq!(order, vec![3, 1, 2, 4]);
        assert!((hits[0].score - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-6);
        let capped = fuse(
            &[Ranked {
                docs: &lexical,
                weight: 1.0,
            }],
            60.0,
            2,
        );
        assert_eq!(capped.len(), 2);
        let off = fuse(
            &[Ranked {
                docs: &lexical,
                weight: 0.0,
            }],
            60.0,
            2,
        );
        assert!(off.is_empty());
    }

    #[test]
    fn centring_removes_the_shared_direction() {
        // Every vector shares a large first component; the hub is almost only that.
        let mut pairs = vec![
            (0, 0, vec![1.0, 0.6, 0.0, 0.0]),
            (1, 0, vec![1.0, 0.0, 0.6, 0.0]),
            (2, 0, vec![1.0, 0.0, 0.0, 0.6]),
            (3, 0, vec![1.0, 0.05, 0.05, 0.05]),
            (4, 1, vec![1.0, 0.6, 0.0, 0.0]),
        ];
        // More of topics 1 and 2, so the scope has enough vectors to centre on.
        for doc in 5..10 {
            pairs.push((doc, 0, vec![1.0, 0.0, 0.6, 0.6]));
        }
        let set = VectorSet::new(pairs, 4);
        let raw = FusionParams {
            center: false,
            min_similarity: -1.0,
            ..FusionParams::default()
        };
        // A query about nothing in particular, plus a little of topic 0.
        let query = [1.0, 0.1, 0.0, 0.0];
        assert_eq!(
            set.rank(&query, &raw, 4, 0)[0],
            3,
            "raw cosine favours the hub"
        );
        let centred = FusionParams::default();
        let ranked = set.rank(&query, &centred, 4, 0);
        assert_eq!(ranked.first(), Some(&0), "{ranked:?}");
        assert!(
            !ranked.contains(&3),
            "the hub is below the floor: {ranked:?}"
        );
        assert_eq!(
            set.rank(&query, &centred, 4, 1),
            vec![4],
            "another group, too small to centre"
        );
        assert!(set.rank(&[1.0], &centred, 4, 0).is_empty());
    }
}
