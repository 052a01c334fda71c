//! Dream's engine: sessions, the scheduler, the dream pass, the write gate,
//! trash, history, quarantine and audit — over any [`dream_core::RecordStore`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), dream_engine::DreamError> {
//! use std::sync::Arc;
//! use dream_core::{Message, Role, testing::MemoryStore};
//! use dream_engine::{Dream, Options};
//!
//! // No model configured: the rule-based consolidator (offline mode).
//! let dream = Dream::open(Arc::new(MemoryStore::new()), Options::default())?;
//! dream.log_session(vec![Message::new(Role::User, "Call me Sam.")]).await?;
//! let report = dream.dream(true).await?; // `false` checks the gates first
//! assert_eq!(report.created.len(), 1);
//! assert_eq!(dream.list().await?[0].content, "Call the user Sam.");
//! # Ok(())
//! # }
//! ```
//!
//! Everything untrusted — transcripts, model answers, imported records — reaches
//! `memories` only through one write gate (`src/gate.rs`): the engine assigns
//! ids, scope, provenance and timestamps, checks every field, scans every string
//! and key at every depth, and quarantines what is instruction- or secret-shaped.
//! The storage layout is in [`layout`].

mod backfill;
mod caller;
mod claim;
mod consolidate;
mod convert;
mod diff;
mod dream;
pub mod entry_points;
mod error;
mod events;
mod feed;
mod gate;
mod handles;
mod journal;
pub mod layout;
mod lease;
mod manage;
pub mod memory_file;
pub mod memory_tool;
mod options;
mod pass;
mod plan;
mod progress;
mod provenance;
mod purge;
pub mod recall;
mod records;
mod scan;
mod seal;
mod sessions;
mod single_flight;
mod state;
pub mod transcripts;
pub mod vectors;

pub use caller::Caller;
pub use claim::{ClaimHolder, this_host};
pub use consolidate::{
    Batch, BatchSession, Consolidation, Consolidator, LlmConsolidator, RuleBasedConsolidator,
    SYSTEM_RULES,
};
pub use convert::Carried;
pub use diff::{escape_for_display, memory_changes};
pub use dream::Dream;
pub use error::{DreamError, Result};
pub use events::Event;
pub use feed::{DEFAULT_POLL, FeedEntry, MAX_FEED_PAGE, Subscription};
pub use journal::{ATOMIC_APPLY_FAILPOINTS, JOURNALED_APPLY_FAILPOINTS};
pub use lease::releases_settled;
pub use manage::{
    Confirmed, Existing, Exported, HistoryEntry, ImportReport, ImportSource, MAX_IMPORT, NewMemory,
    Purged, Remembered, Stats, TrashEntry,
};
pub use options::{
    MAX_MESSAGE_BYTES, MAX_MESSAGES_PER_SESSION, MAX_SESSION_BYTES, Options, limits,
};
pub use pass::{DreamReport, DryRun, HeldSession, PlanSummary, SessionYield, SkipReason};
pub use plan::{
    Citation, MAX_ACTIONS, MAX_EVIDENCE, Plan, PlanError, ProposedCreate, ProposedDelete,
    ProposedUpdate, Refusal, RefusalCause,
};
pub use progress::{PassProgress, PassStage};
pub use purge::{MIN_MATCHING_CHARS, PURGE_FAILPOINTS, PURGED_MARK, PurgeReport};
pub use records::{
    Actor, AuditAction, AuditRecord, FindingInfo, ProposalKind, QuarantineRecord, QuarantineSource,
    SessionRecord, SessionStatus, SuccessStamp,
};
pub use scan::{MEMORY_JSON_DEPTH, memory_scanner, transcript_scanner};
pub use seal::SealKey;
pub use sessions::Logged;
