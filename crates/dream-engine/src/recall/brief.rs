//! Query-less recall: every memory of a scope through the firewall, the admitted
//! ones ordered by how much they matter (pinned first, then confidence weighted
//! by recency), for a session's start and for the memory files agents read.

use chrono::{DateTime, Utc};
use dream_core::{Memory, Scope};

use super::analyze::Valid;
use super::firewall;
use super::index::Hit;
use super::{FirewallVerdict, Reason, Recall, RecallError, RecallResult, RecordVerdict, codes};

/// Days over which a memory's recency weight halves.
const HALF_LIFE_DAYS: f64 = 30.0;

/// A rough token count of a rendered memory: about four bytes a token, plus
/// its heading and fence.
pub fn estimated_tokens(memory: &Memory) -> usize {
    tokens(text_bytes(memory))
}

/// Bytes of a memory's name, description and content.
pub(crate) fn text_bytes(memory: &Memory) -> usize {
    memory.name.len() + memory.description.len() + memory.content.len()
}

/// [`estimated_tokens`] of a memory of `text_bytes`.
fn tokens(text_bytes: usize) -> usize {
    text_bytes / 4 + 16
}

/// How much a memory matters at `now`: pinned ones above all, then confidence
/// times a recency weight that halves every [`HALF_LIFE_DAYS`].
fn weight(valid: &Valid, now: DateTime<Utc>) -> f64 {
    let age_days = (now - valid.updated_at).num_seconds().max(0) as f64 / 86_400.0;
    let recency = 0.5f64.powf(age_days / HALF_LIFE_DAYS);
    valid.confidence * recency + if valid.pinned { 2.0 } else { 0.0 }
}

impl Recall {
    /// Every record of `scope` judged by the firewall, as [`Recall::recall`] would
    /// judge it; admitted (`used`) records first, most important first. With a
    /// `budget` (estimated tokens, see [`estimated_tokens`]), admitted records past
    /// it are `ignored` (`over-limit`) and never rendered.
    pub async fn brief(
        &self,
        scope: &Scope,
        budget: Option<usize>,
    ) -> Result<RecallResult, RecallError> {
        let result = self.judge_brief(scope, budget).await?;
        if let Some(result) = result {
            return Ok(result);
        }
        // A memory about to be shown changed since it was read: once more.
        self.judge_brief(scope, budget)
            .await?
            .ok_or(RecallError::Changing)
    }

    /// [`Recall::brief`] once; `None` when a memory about to be shown no
    /// longer holds the bytes it was judged on.
    async fn judge_brief(
        &self,
        scope: &Scope,
        budget: Option<usize>,
    ) -> Result<Option<RecallResult>, RecallError> {
        // Every record is shown or judged: read every one anew, analyses kept
        // for the same bytes (see `refresh`).
        let index = self.reindex().await?;
        let hits: Vec<Hit> = (0..index.len() as u32)
            .filter(|doc| index.in_scope(*doc, scope))
            .map(|doc| Hit { doc, score: 0.0 })
            .collect();
        let now = self.clock.now();
        // No question: every memory of the scope is in the brief.
        let everything = super::relevance::Relevance::all();
        let records = self
            .firewall(&index, scope, now, &everything)
            .judge(&hits, usize::MAX);
        let valid = |r: &RecordVerdict| index.doc(index.find(&r.id)?)?.valid();
        let mut ranked: Vec<(f64, usize, RecordVerdict)> = records
            .into_iter()
            .map(|r| {
                let facts = valid(&r).filter(|_| r.verdict == FirewallVerdict::Used);
                let rank = facts.map_or(f64::NEG_INFINITY, |v| weight(v, now));
                let cost = facts.map_or(0, |v| tokens(v.text_bytes));
                (rank, cost, r)
            })
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.2.id.cmp(&b.2.id)));
        let mut spent = 0usize;
        let mut records: Vec<RecordVerdict> = Vec::with_capacity(ranked.len());
        for (_, cost, mut record) in ranked {
            if let Some(budget) = budget
                && record.verdict == FirewallVerdict::Used
            {
                if spent + cost > budget {
                    record.verdict = FirewallVerdict::Ignored;
                    record.reason =
                        Reason::new(codes::OVER_LIMIT, Some(format!("token budget {budget}")));
                } else {
                    spent += cost;
                }
            }
            records.push(record);
        }
        if !self.show(&index, &mut records).await? {
            return Ok(None);
        }
        let policy = firewall::policy(&records, || {
            format!(
                "no memory of scope {scope} was admitted ({} valid in scope)",
                index.count_in_scope(scope)
            )
        });
        Ok(Some(RecallResult {
            policy,
            records,
            ranker: super::Ranker::Lexical,
            retried: false,
            generation: index.generation,
        }))
    }
}
