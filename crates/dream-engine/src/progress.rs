//! What a pass tells about itself as it runs: its stages, and the callback that
//! hears them. The handle keeps the callback ([`Dream::with_progress`]) and the
//! pass calls it, so both import this module and neither imports the other.
//!
//! [`Dream::with_progress`]: crate::Dream::with_progress
//!
//! [`Dream::with_progress`]: crate::Dream::with_progress

use std::sync::Arc;

/// A stage of a dream pass (or a dry run), told to the [`PassProgress`]
/// callback as it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassStage {
    /// The pending sessions were read: this many go into the pass.
    SessionsRead {
        /// Sessions in the pass.
        sessions: usize,
    },
    /// The consolidator (the model, for a model-backed one) works on them.
    Consolidating,
    /// The pass's changes are written, as one journaled commit.
    Writing {
        /// Records written or deleted.
        records: usize,
    },
}

/// What [`Dream::with_progress`] calls at each
/// [`PassStage`].
///
/// [`Dream::with_progress`]: crate::Dream::with_progress
pub type PassProgress = Arc<dyn Fn(PassStage) + Send + Sync>;
