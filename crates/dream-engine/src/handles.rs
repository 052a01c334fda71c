//! The engine's work, split by job into four handles over one shared state.
//!
//! # Shape
//!
//! ```text
//! Dream (dream.rs)            the public facade: settings, and one line per
//!   │                         public method handing the call to a handle
//!   ├─ Writer                 text in: sessions, memories, imports, and the
//!   │                         person's acts that raise trust
//!   ├─ Pass                   the dream pass: gates, consolidation, plans
//!   ├─ Reader                 reads: memories, history, trash, quarantine,
//!   │                         audit, stats, exports, logged sessions
//!   └─ Upkeep                 forget, restore, purge, trash expiry, rekey,
//!                             vectors
//!         │ each borrows
//!         ▼
//! State (state.rs)            the store, scope, options, scanners, ids, feed,
//!                             seal, consolidator, embedder; and the helpers
//!                             every job uses (lease, journaled commit, audit,
//!                             orient, the one verified read)
//! ```
//!
//! # The shared state
//!
//! [`State`] holds what every job needs and is cheap to clone (its parts are
//! shared behind `Arc`s). Its helpers are the kernel's common ground: reading
//! the generation and the memories ([`State::orient`]), the one verified read
//! of a memory record, the store lease with its roll-forward of a leftover
//! journal ([`State::under_lease`]), a journaled commit with its change-feed
//! events ([`State::commit`]), and the ops every change carries (audit,
//! generation, history, expiry). Helpers that more than one job shares but
//! that belong to one record kind stay beside it as `impl State` blocks: the
//! session log in `sessions.rs`, the quarantine op and entry in
//! `manage/quarantine.rs`, the kept copies in `manage/trash.rs`, the vector
//! backfill's scheduling in `backfill.rs`.
//!
//! # The handles
//!
//! A handle is a borrow of the state with one job's methods; it dereferences
//! to [`State`], so a method reads `self.store` and calls `self.commit(…)` as
//! it did when everything was a method of `Dream`. Each method lives in the
//! file of its records (a `Writer` method in `sessions.rs`, another in
//! `manage/remember.rs`); a file holds the `impl` blocks of the handles it
//! serves. A job that needs another's work asks for that handle by name
//! (`self.pass()`, `self.upkeep()`), so every crossing between jobs is written
//! where it happens:
//!
//! - [`Writer`] — the trust kernel's write entry points: `log_session`,
//!   `log_session_as`, `log_transcript`, `remember`, `remember_as`, `import`,
//!   `import_markdown`, `import_with`, and the person's acts `confirm`,
//!   `confirm_edited`, `confirm_all`, `release`. A logged session may start a
//!   background pass (`auto_dream`, in `sessions.rs`): a crossing to [`Pass`].
//! - [`Pass`] — `dream`, `dry_run`, `plans`, `apply`, `check_gates`,
//!   `last_success`, `claim_holder`: the pass's gates, consolidation, write
//!   gate and journaled apply.
//! - [`Reader`] — the reads that change nothing: `list`, `get`, `history`,
//!   `trash`, `quarantine`, `audit`, `stats`, `export`, `existing`, `session`,
//!   `stuck_sessions`. `stats` asks [`Pass`] for the last success.
//! - [`Upkeep`] — removal, recovery and derived data: `forget`, `restore`,
//!   `restore_entry`, `expire_trash`, `drop_quarantined`, the purges,
//!   `carry_trust` (rekey), the vector backfill. The state calls on it twice:
//!   the store lease finishes an interrupted purge before anything else
//!   ([`State::lock_rolled`]), and every write schedules a backfill
//!   ([`State::schedule_backfill`]).
//!
//! Below the facade, the memory tool (`memory_tool.rs`) forgets as the agent
//! through `Dream`'s crate-private `state()`.
//!
//! # The facade
//!
//! [`crate::Dream`] owns a [`State`] and keeps the public API as it was: its
//! settings (`with_seal`, `with_model`, …) set the state, its accessors read
//! it, and every other public method is one line handing the call to a
//! handle. The public methods stay on `Dream` so that the list of the
//! kernel's doors ([`crate::entry_points`]) names one type, and the front ends
//! call `dream.method(…)` as before. The handles are the crate's own.

use std::ops::Deref;

use crate::state::State;

/// Declares each handle: a borrow of [`State`] that dereferences to it.
macro_rules! handles {
    ($($(#[$doc:meta])* $name:ident by $make:ident;)*) => {$(
        $(#[$doc])*
        pub(crate) struct $name<'a>(&'a State);

        impl Deref for $name<'_> {
            type Target = State;
            fn deref(&self) -> &State {
                self.0
            }
        }

        impl State {
            #[doc = concat!("This state's [`", stringify!($name), "`].")]
            pub(crate) fn $make(&self) -> $name<'_> {
                $name(self)
            }
        }
    )*};
}

handles! {
    /// The trust kernel's writer: every way text enters, and the person's acts
    /// that raise trust.
    Writer by writer;
    /// The dream pass: its gates, consolidation, plans and journaled apply.
    Pass by pass;
    /// The reads that change nothing.
    Reader by reader;
    /// Removal, recovery and derived data: forget, restore, purge, trash
    /// expiry, rekey, vectors.
    Upkeep by upkeep;
}
