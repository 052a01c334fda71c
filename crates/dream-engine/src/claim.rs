//! Who holds a scope's claim (the lock a pass holds): a note kept beside it,
//! rewritten at each renewal, so a claim left by a process that stopped (killed,
//! or its machine lost) is told from a pass still running, with the time it
//! frees itself. The lease that takes the claim writes the note (`lease.rs`);
//! the pass reads it ([`Dream::claim_holder`](crate::Dream::claim_holder)).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The holder of a scope's claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimHolder {
    /// The holding process's id.
    pub pid: u32,
    /// The host it runs on ([`this_host`] there).
    pub host: String,
    /// When the claim frees itself unless renewed (the holder renews it every
    /// third of its ttl while it runs).
    pub expires_at: DateTime<Utc>,
}

impl ClaimHolder {
    /// The note for this process, holding until `expires_at`.
    pub(crate) fn this_process(expires_at: DateTime<Utc>) -> Self {
        ClaimHolder {
            pid: std::process::id(),
            host: this_host(),
            expires_at,
        }
    }

    /// Whether the holder runs on this host, where its process can be looked for.
    pub fn is_on_this_host(&self) -> bool {
        self.host == this_host()
    }
}

/// This host's name (the kernel's, else `/etc/hostname`; empty when neither
/// can be read, which no holder then matches).
pub fn this_host() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .map(|name| name.trim().to_owned())
        .unwrap_or_default()
}
