//! Query-less recall: every memory of a scope through the firewall, the admitted
//! ones ordered by how much they matter (pinned first, then confidence weighted
//! by recency), for a session's start and for the memory files agents read.

use chrono::{DateTime, Utc};
use dream_core::{Memory, Scope};

use super::firewall;
use super::index::Hit;
use super::{FirewallVerdict, Reason, Recall, RecallError, RecallResult, codes};

/// Days over which a memory's recency weight halves.
const HALF_LIFE_DAYS: f64 = 30.0;

/// A rough token count of a rendered memory: about four bytes a token, plus
/// its heading and fence.
pub fn estimated_tokens(memory: &Memory) -> usize {
    (memory.name.len() + memory.description.len() + memory.content.len()) / 4 + 16
}

/// How much a memory matters at `now`: pinned ones above all, then confidence
/// times a recency weight that halves every [`HALF_LIFE_DAYS`].
fn weight(memory: &Memory, now: DateTime<Utc>) -> f64 {
    let age_days = (now - memory.updated_at).num_seconds().max(0) as f64 / 86_400.0;
    let recency = 0.5f64.powf(age_days / HALF_LIFE_DAYS);
    memory.confidence * recency + if memory.pinned { 2.0 } else { 0.0 }
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
        // Every record is shown or judged: read every one anew, analyses kept
        // for the same bytes (see `refresh`).
        let index = self.reindex().await?;
        let hits: Vec<Hit> = (0..index.docs.len() as u32)
            .filter(|doc| index.in_scope(*doc, scope))
            .map(|doc| Hit { doc, score: 0.0 })
            .collect();
        let now = self.clock.now();
        // No question: every memory of the scope is in the brief.
        let everything = super::relevance::Relevance::all();
        let mut records = self
            .firewall(&index, scope, now, &everything)
            .judge(&hits, usize::MAX);
        let rank = |r: &super::RecordVerdict| match (&r.memory, r.verdict) {
            (Some(memory), FirewallVerdict::Used) => weight(memory, now),
            _ => f64::NEG_INFINITY,
        };
        records.sort_by(|a, b| rank(b).total_cmp(&rank(a)).then_with(|| a.id.cmp(&b.id)));
        if let Some(budget) = budget {
            let mut spent = 0usize;
            for record in records
                .iter_mut()
                .filter(|r| r.verdict == FirewallVerdict::Used)
            {
                let cost = record.memory.as_deref().map_or(0, estimated_tokens);
                if spent + cost > budget {
                    record.verdict = FirewallVerdict::Ignored;
                    record.reason =
                        Reason::new(codes::OVER_LIMIT, Some(format!("token budget {budget}")));
                    record.memory = None;
                } else {
                    spent += cost;
                }
            }
        }
        let policy = firewall::policy(&records, || {
            format!(
                "no memory of scope {scope} was admitted ({} valid in scope)",
                index.count_in_scope(scope)
            )
        });
        Ok(RecallResult {
            policy,
            records,
            ranker: super::Ranker::Lexical,
            retried: false,
            generation: index.generation,
        })
    }
}
