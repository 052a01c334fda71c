//! A background job that runs at most once at a time: asked while it runs, it
//! runs once more when done, so no request is lost and none runs twice at once.
//! The handle keeps one per job (the vector backfill, `backfill.rs`); the
//! job's owner spawns the runner when [`SingleFlight::request`] says to.

use std::sync::atomic::{AtomicBool, Ordering};

/// The running and pending marks of one job, shared by a handle's clones.
#[derive(Debug, Default)]
pub(crate) struct SingleFlight {
    running: AtomicBool,
    pending: AtomicBool,
}

impl SingleFlight {
    /// Asks for a run. True when no runner runs: the caller must start one.
    pub fn request(&self) -> bool {
        self.pending.store(true, Ordering::SeqCst);
        !self.running.swap(true, Ordering::SeqCst)
    }

    /// For the runner: takes the pending request, true when there was one.
    pub fn take_request(&self) -> bool {
        self.pending.swap(false, Ordering::SeqCst)
    }

    /// For the runner, when no request is left: stops it. True when a request
    /// came in meanwhile and no other runner took it: this runner goes on.
    pub fn stop(&self) -> bool {
        self.running.store(false, Ordering::SeqCst);
        self.pending.load(Ordering::SeqCst) && !self.running.swap(true, Ordering::SeqCst)
    }

    /// Whether no run is going on or asked for.
    pub fn is_idle(&self) -> bool {
        !(self.running.load(Ordering::SeqCst) || self.pending.load(Ordering::SeqCst))
    }
}
