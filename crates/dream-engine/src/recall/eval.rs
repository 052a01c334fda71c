//! Scoring recall against gold answers: recall@1/5/10 and MRR.
//!
//! A query's recall@k is the share of its gold memories among the first k ranked
//! ids (1 or 0 when it has one gold memory); its reciprocal rank is one over the
//! rank of its first gold memory, 0 when none is ranked. A group's scores are the
//! means over its queries. Used by `dream recall --queries … --gold …` and by the
//! ranking tests over the development set, so both report the same numbers.

use std::collections::BTreeMap;

use super::types::{FirewallVerdict, RecallResult};

/// The depths recall is reported at.
pub const DEPTHS: [usize; 3] = [1, 5, 10];

/// Running means over a group of queries.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Score {
    /// Queries added.
    pub queries: usize,
    /// Sum of the queries' recall at each of [`DEPTHS`].
    found: [f64; DEPTHS.len()],
    /// Sum of the queries' reciprocal ranks.
    reciprocal: f64,
}

impl Score {
    /// Adds one query: the ids in rank order, best first, and its gold ids. A query
    /// without gold ids counts as found nowhere.
    pub fn add<R: AsRef<str>, G: AsRef<str>>(&mut self, ranked: &[R], gold: &[G]) {
        self.queries += 1;
        if gold.is_empty() {
            return;
        }
        let is_gold = |id: &R| gold.iter().any(|g| g.as_ref() == id.as_ref());
        for (found, depth) in self.found.iter_mut().zip(DEPTHS) {
            let hits = ranked.iter().take(depth).filter(|id| is_gold(id)).count();
            *found += hits.min(gold.len()) as f64 / gold.len() as f64;
        }
        if let Some(rank) = first_rank(ranked, gold) {
            self.reciprocal += 1.0 / (rank as f64 + 1.0);
        }
    }

    /// Mean recall at `depth` (one of [`DEPTHS`]), in percent; 0 for another depth
    /// or an empty group.
    pub fn recall_at(&self, depth: usize) -> f64 {
        match DEPTHS.iter().position(|d| *d == depth) {
            Some(i) if self.queries > 0 => 100.0 * self.found[i] / self.queries as f64,
            _ => 0.0,
        }
    }

    /// Mean reciprocal rank (0 to 1; 0 for an empty group).
    pub fn mrr(&self) -> f64 {
        if self.queries == 0 {
            0.0
        } else {
            self.reciprocal / self.queries as f64
        }
    }
}

/// The 0-based rank of the first gold id in `ranked`.
pub fn first_rank<R: AsRef<str>, G: AsRef<str>>(ranked: &[R], gold: &[G]) -> Option<usize> {
    ranked
        .iter()
        .position(|id| gold.iter().any(|g| g.as_ref() == id.as_ref()))
}

/// The ids a recall ranked, best first, at most `depth`: every judged record in
/// rank order, whatever its verdict, without the conflicting records the conflict
/// rule brought in from outside the candidates (those were not ranked).
pub fn ranked_ids(result: &RecallResult, depth: usize) -> Vec<&str> {
    result
        .records
        .iter()
        .filter(|r| r.verdict != FirewallVerdict::Conflict || r.score > 0.0)
        .take(depth)
        .map(|r| r.id.as_str())
        .collect()
}

/// Scores per group (a query kind), plus the group `all`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// Group name → its score, in name order; `all` holds every query.
    pub groups: BTreeMap<String, Score>,
}

impl Metrics {
    /// The group holding every query.
    pub const ALL: &'static str = "all";

    /// Adds one query of `kind` (see [`Score::add`]).
    pub fn add<R: AsRef<str>, G: AsRef<str>>(&mut self, kind: &str, ranked: &[R], gold: &[G]) {
        self.groups
            .entry(kind.to_owned())
            .or_default()
            .add(ranked, gold);
        if kind != Self::ALL {
            self.groups
                .entry(Self::ALL.to_owned())
                .or_default()
                .add(ranked, gold);
        }
    }

    /// A Markdown table: one row per group (`all` last), queries, R@1/5/10 in
    /// percent and MRR.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("| kind | queries | R@1 % | R@5 % | R@10 % | MRR |\n");
        out.push_str("|---|---|---|---|---|---|\n");
        let rows = self
            .groups
            .iter()
            .filter(|(g, _)| *g != Self::ALL)
            .chain(self.groups.get_key_value(Self::ALL));
        for (group, score) in rows {
            out.push_str(&format!(
                "| {group} | {} | {:.1} | {:.1} | {:.1} | {:.3} |\n",
                score.queries,
                score.recall_at(1),
                score.recall_at(5),
                score.recall_at(10),
                score.mrr()
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_is_the_share_of_gold_found_and_mrr_the_first_rank() {
        let mut s = Score::default();
        s.add(&["a", "b", "c"], &["b"]);
        assert_eq!(s.recall_at(1), 0.0);
        assert_eq!(s.recall_at(5), 100.0);
        assert!((s.mrr() - 0.5).abs() < 1e-9);
        // Two gold, one found in the top 5, the other at rank 7.
        let ranked = ["x", "g1", "x", "x", "x", "x", "g2"];
        s.add(&ranked, &["g1", "g2"]);
        assert_eq!(s.queries, 2);
        assert!((s.recall_at(5) - 75.0).abs() < 1e-9);
        assert!((s.recall_at(10) - 100.0).abs() < 1e-9);
        assert!((s.mrr() - 0.5).abs() < 1e-9);
        // Nothing found, and no gold at all: both count, as misses.
        s.add(&["x"], &["y"]);
        s.add::<&str, &str>(&["x"], &[]);
        assert_eq!(s.queries, 4);
        assert!((s.recall_at(10) - 50.0).abs() < 1e-9);
        assert_eq!(s.recall_at(3), 0.0);
        assert_eq!(Score::default().mrr(), 0.0);
        assert_eq!(first_rank(&ranked, &["g2"]), Some(6));
    }

    #[test]
    fn metrics_group_by_kind_and_all() {
        let mut m = Metrics::default();
        m.add("typo", &["a"], &["a"]);
        m.add("synonym", &["b"], &["a"]);
        assert_eq!(m.groups["all"].queries, 2);
        assert_eq!(m.groups["typo"].recall_at(1), 100.0);
        assert_eq!(m.groups["all"].recall_at(1), 50.0);
        let table = m.to_markdown();
        let rows: Vec<&str> = table.lines().skip(2).collect();
        assert_eq!(rows.len(), 3);
        assert!(rows[0].starts_with("| synonym | 1 | 0.0"), "{table}");
        assert!(rows[2].starts_with("| all | 2 | 50.0"), "{table}");
    }
}
