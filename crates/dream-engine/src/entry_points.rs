//! The kernel's doors, in one list: every public way text can become, change,
//! bring back or remove a memory, and every way it can only be read.
//!
//! Each public method of [`crate::Dream`] is a row of [`WRITES`] or a name in
//! [`READS`]; the engine's test `tests/engine/kernel.rs` fails when a method is
//! in neither (so a new entry point cannot be added without a row), and drives
//! every row of [`WRITES`] with agent-, tool- or foreign-sourced text to show
//! that none of it is recalled `used` until the person runs `dream confirm`.
//! Front ends reach the store only through these methods (`via` names them).

/// Who decides the trust of what a write entry point stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// The caller's identity ([`crate::Caller`], a role other than `user`, or
    /// [`crate::ImportSource`]): only the person's own calls give the person's
    /// word; an agent, a tool or a foreign source is held.
    Caller,
    /// The write gate and provenance over the cited, sealed messages: a memory
    /// is the person's word only when the person's own messages carry it.
    Provenance,
    /// The person's own act on what is already stored (confirm, release): the
    /// one way trust is raised, never reachable by an agent but with
    /// `allow_admin`.
    PersonsAct,
    /// The one verified read of what it brings back (a trash or history copy,
    /// a stored plan, a record to convert): what fails its seal stays held.
    Verified,
    /// It removes records or derives data (vectors) only; it raises nothing.
    Removes,
    /// The raw store: a record written through it carries no seal, so every
    /// reader holds it.
    Raw,
}

/// One public write entry point of the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteEntry {
    /// The [`crate::Dream`] method.
    pub method: &'static str,
    /// The front ends that reach it: `dream` commands, MCP tools, hooks.
    pub via: &'static [&'static str],
    /// Who decides the trust of what it stores.
    pub trust: Trust,
}

const fn entry(method: &'static str, via: &'static [&'static str], trust: Trust) -> WriteEntry {
    WriteEntry { method, via, trust }
}

/// Every public write entry point of [`crate::Dream`].
pub const WRITES: &[WriteEntry] = &[
    entry("log_session", &["dream log", "library"], Trust::Caller),
    entry(
        "log_session_as",
        &["MCP log_session (an agent)", "library"],
        Trust::Caller,
    ),
    entry(
        "log_transcript",
        &["dream log --from claude-code|codex [--hook] (a hook)"],
        Trust::Caller,
    ),
    entry("dream", &["dream dream", "MCP dream"], Trust::Provenance),
    entry(
        "dry_run",
        &["dream dream --dry-run", "MCP dream with dry_run"],
        Trust::Provenance,
    ),
    entry(
        "apply",
        &["dream apply", "MCP apply (admin)"],
        Trust::Verified,
    ),
    entry("remember", &["dream remember"], Trust::Caller),
    entry("remember_as", &["MCP remember"], Trust::Caller),
    entry("import", &["dream remember --id"], Trust::Caller),
    entry("import_markdown", &["library"], Trust::Caller),
    entry(
        "import_with",
        &["dream import [--untrusted] [--replace]"],
        Trust::Caller,
    ),
    entry(
        "confirm",
        &["dream confirm ID", "MCP confirm (admin)"],
        Trust::PersonsAct,
    ),
    entry(
        "confirm_edited",
        &["dream review (edit)"],
        Trust::PersonsAct,
    ),
    entry("confirm_all", &["dream confirm --all"], Trust::PersonsAct),
    entry("release", &["dream quarantine release"], Trust::PersonsAct),
    entry("restore", &["dream restore"], Trust::Verified),
    entry("restore_entry", &["dream restore --entry"], Trust::Verified),
    entry(
        "carry_trust",
        &["dream rekey --from-plain|--to-plain"],
        Trust::Verified,
    ),
    entry(
        "forget",
        &["dream forget", "MCP forget (admin)"],
        Trust::Removes,
    ),
    entry(
        "forget_purge",
        &["dream forget --purge", "MCP forget with purge (admin)"],
        Trust::Removes,
    ),
    entry(
        "forget_purge_with_sources",
        &["dream forget --purge --with-sources"],
        Trust::Removes,
    ),
    entry(
        "purge_scope",
        &["dream purge", "MCP purge_scope (admin)"],
        Trust::Removes,
    ),
    entry(
        "purge_matching",
        &["dream purge --matching"],
        Trust::Removes,
    ),
    entry(
        "expire_trash",
        &["library (a pass also does it)"],
        Trust::Removes,
    ),
    entry(
        "drop_quarantined",
        &["dream quarantine drop"],
        Trust::Removes,
    ),
    entry("backfill_vectors", &["dream model embed"], Trust::Removes),
    entry(
        "backfill_vectors_with_progress",
        &["dream model embed"],
        Trust::Removes,
    ),
    entry("store", &["library"], Trust::Raw),
];

/// Every public method of [`crate::Dream`] that writes nothing (or only what
/// the engine derives for itself, like a handle's settings).
pub const READS: &[&str] = &[
    "open",
    "claim_holder",
    "with_progress",
    "with_seal",
    "with_clock",
    "with_consolidator",
    "with_model",
    "with_embedder",
    "scope",
    "options",
    "consolidator",
    "subscribe",
    "watch_changes",
    "generation",
    "list",
    "get",
    "history",
    "trash",
    "quarantine",
    "audit",
    "stats",
    "export",
    "existing",
    "check_gates",
    "last_success",
    "plans",
    "purge_scope_dry_run",
    "purge_matching_dry_run",
    "stuck_sessions",
    "session",
    "has_embedder",
    "backfill_idle",
];
