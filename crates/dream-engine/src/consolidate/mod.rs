//! The consolidator seam: a batch of sessions and the scope's memories in, a
//! [`Plan`] out. Two implementations feed the same write gate: the LLM one
//! ([`LlmConsolidator`]) and the deterministic, offline rule-based one
//! ([`RuleBasedConsolidator`]).

mod durable;
pub(crate) mod groups;
mod llm;
mod rules;

use std::fmt::Debug;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use dream_core::{Memory, Message, Scope, SessionId, TokenUsage};

pub use llm::{LlmConsolidator, SYSTEM_RULES};
pub use rules::RuleBasedConsolidator;
pub(crate) use rules::states_something;

use crate::error::Result;
use crate::plan::Plan;

/// One session of a batch, as a consolidator sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchSession {
    /// Its batch reference (`S1`, `S2`, …): what plan actions cite.
    pub reference: String,
    /// Its id.
    pub id: SessionId,
    /// When it was logged.
    pub created_at: DateTime<Utc>,
    /// The transcript (secrets already redacted).
    pub messages: Vec<Message>,
    /// Rule ids of instruction- or suspicious-shaped text the scanner saw in it.
    pub flags: Vec<String>,
}

/// What a consolidator is given.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// The time of the pass (for absolute dates).
    pub now: DateTime<Utc>,
    /// The scope of the sessions and memories.
    pub scope: Scope,
    /// The sessions, oldest first.
    pub sessions: Vec<BatchSession>,
    /// The scope's memories, as stored.
    pub memories: Vec<Memory>,
}

/// What a consolidator returns.
#[derive(Debug, Clone, PartialEq)]
pub struct Consolidation {
    /// The proposed plan (untrusted until the gate judged it).
    pub plan: Plan,
    /// Tokens used.
    pub usage: TokenUsage,
    /// The model that answered, or the offline mode's name.
    pub model: String,
}

/// Turns a batch into a plan. Implementations must not write to any store.
#[async_trait]
pub trait Consolidator: Send + Sync + Debug + 'static {
    /// A short, key-free description (`llm:openai:gpt-4o-mini`, `rule-based (offline)`).
    fn describe(&self) -> String;
    /// Proposes a plan for the batch. An error fails the pass; the sessions stay pending.
    async fn consolidate(&self, batch: &Batch) -> Result<Consolidation>;
    /// Whether `statement`, a sentence of the person's that the offline reading
    /// takes as lasting, states something lasting in this consolidator's
    /// judgement (`None`: it cannot tell), with the tokens the judgement used.
    /// Asked only of what a group's answer left uncited (see `groups`).
    async fn judges_lasting(&self, statement: &str) -> (Option<bool>, TokenUsage);
}
