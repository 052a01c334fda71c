//! What a person does directly: remember, list, get, forget, purge, history,
//! restore, the trash, the quarantine, the audit log, stats and imports. Every
//! memory mutation here goes through the same write gate and the same journaled,
//! fenced, generation-bumping commit as a dream pass.
//!
//! One file per part: remembering, reading and forgetting (`remember.rs`),
//! history and the trash (`trash.rs`), the quarantine and confirming
//! (`quarantine.rs`), export and import (`import.rs`); the audit log and
//! stats are here.

use chrono::{DateTime, Duration, Utc};
use dream_core::{Memory, MemoryStatus, Scope};
use serde::Serialize;

use crate::error::Result;
use crate::handles::Reader;
use crate::layout;
use crate::records::{AuditRecord, from_json, to_json};

mod import;
mod quarantine;
mod remember;
mod trash;

pub use import::{Existing, Exported, ImportReport, ImportSource, MAX_IMPORT};
pub use quarantine::Confirmed;
pub(crate) use remember::persons_word;
pub use remember::{NewMemory, Remembered};
pub use trash::{HistoryEntry, Purged, TrashEntry};

/// Counts for a dashboard.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// The scope.
    pub scope: Scope,
    /// Memories in this scope.
    pub memories: usize,
    /// Of which active.
    pub active: usize,
    /// Of which pinned.
    pub pinned: usize,
    /// Pending sessions in this scope that a pass takes.
    pub pending_sessions: usize,
    /// Pending sessions held for the person: passes left part of each unstored
    /// too many times (see [`Dream::stuck_sessions`]); a forced pass retries them.
    ///
    /// [`Dream::stuck_sessions`]: crate::Dream::stuck_sessions
    pub stuck_sessions: usize,
    /// Sessions in the log (every scope).
    pub logged_sessions: usize,
    /// Quarantine entries in this scope.
    pub quarantined: usize,
    /// Trash entries in this scope.
    pub trash: usize,
    /// The store's generation.
    pub generation: u64,
    /// The last successful pass.
    pub last_success: Option<DateTime<Utc>>,
    /// The consolidator.
    pub consolidator: String,
    /// The store's name.
    pub store: String,
}

fn json_string<T: Serialize>(value: &T) -> String {
    String::from_utf8(to_json(value).to_vec()).expect("JSON is UTF-8")
}

impl Reader<'_> {
    pub(crate) async fn audit(&self, since: DateTime<Utc>) -> Result<Vec<AuditRecord>> {
        let ns = layout::namespace(layout::AUDIT);
        // From the start of the log when `since` is the earliest time (nothing precedes it).
        let mut after = since
            .checked_sub_signed(Duration::milliseconds(1))
            .map(layout::ulid_floor);
        let mut out = Vec::new();
        loop {
            let page = self
                .store
                .list(&ns, after.as_ref(), dream_core::store::MAX_LIST_LIMIT)
                .await?;
            for entry in page.entries {
                let key = layout::key(layout::AUDIT, entry.id.clone());
                let a: AuditRecord = from_json(&key, &entry.record)?;
                if a.scope == self.scope && a.at >= since {
                    out.push(a);
                }
            }
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(out),
            }
        }
    }

    pub(crate) async fn stats(&self) -> Result<Stats> {
        let orient = self.orient().await?;
        let log = self.session_log().await?;
        let pending = log.to_dream(&self.scope, false).count();
        let stuck = log.pending(&self.scope).count() - pending;
        let memories: Vec<&Memory> = orient.memories.values().map(|k| &k.memory).collect();
        Ok(Stats {
            scope: self.scope.clone(),
            memories: memories.len(),
            active: memories
                .iter()
                .filter(|m| m.status == MemoryStatus::Active)
                .count(),
            pinned: memories.iter().filter(|m| m.pinned).count(),
            pending_sessions: pending,
            stuck_sessions: stuck,
            logged_sessions: log.entries.len(),
            quarantined: self.quarantine().await?.len(),
            trash: self.trash().await?.len(),
            generation: orient.generation,
            last_success: self.pass().last_success().await?.map(|s| s.at),
            consolidator: self.consolidator.describe(),
            store: self.store.info().name,
        })
    }
}
