//! Why a record got its verdict: the reason codes, one per cause, and
//! [`Reason`], a code with a detail made safe to show ([`printable`]). The
//! analysis, the firewall, the persisted index and the result types all speak
//! in reasons, so they sit below each of them.

use std::fmt;

/// Reason codes, one per cause. Each verdict's reason starts with one.
pub mod codes {
    /// Admitted: scanned clean, valid, current, in scope, unopposed, grounded.
    pub const SAFE_FACT: &str = "safe-fact";
    /// Instruction-shaped text somewhere in the record.
    pub const INSTRUCTION: &str = "instruction";
    /// Secret-shaped text somewhere in the record.
    pub const SECRET: &str = "secret";
    /// Suspicious text, quarantined because `quarantine_suspicious` is set.
    pub const SUSPICIOUS: &str = "suspicious";
    /// The Markdown codec refused the record.
    pub const MALFORMED: &str = "malformed";
    /// The record is not UTF-8.
    pub const UNREADABLE: &str = "unreadable";
    /// The record's id does not match the memory's id.
    pub const INVALID_ID: &str = "invalid-id";
    /// A field is empty or out of its domain.
    pub const INVALID_FIELD: &str = "invalid-field";
    /// The dates contradict each other.
    pub const INVALID_DATE: &str = "invalid-date";
    /// Replaced by a successor of the same scope, or marked superseded.
    pub const SUPERSEDED: &str = "superseded";
    /// Withdrawn.
    pub const REVOKED: &str = "revoked";
    /// Past its expiry, or marked expired.
    pub const EXPIRED: &str = "expired";
    /// Belongs to another scope.
    pub const OTHER_SCOPE: &str = "other-scope";
    /// POLICY reason when the top record was held at scope.
    pub const HELD_AT_SCOPE: &str = "held-at-scope";
    /// A local record replaced only by successors of other scopes.
    pub const CROSS_SCOPE_CURRENT_STATE: &str = "cross-scope-current-state";
    /// Disagrees with another current record about the same subject.
    pub const CONFLICT: &str = "conflict";
    /// No provenance.
    pub const UNGROUNDED: &str = "ungrounded";
    /// Held: the record does not carry this store's seal (a hand edit, a planted
    /// file, a record from another store) until a person confirms it.
    pub const UNVERIFIED: &str = "unverified";
    /// Held: the memory rests only on tool, assistant or system text, or is a
    /// standing order that sends data out, until a person confirms it.
    pub const UNCONFIRMED_SOURCE: &str = "unconfirmed-source";
    /// Confidence below the threshold.
    pub const LOW_CONFIDENCE: &str = "low-confidence";
    /// Admitted, but `limit` records were already used.
    pub const OVER_LIMIT: &str = "over-limit";
    /// Below the query's relevance floor: neither its words nor its meaning
    /// say it is about the question.
    pub const NOT_RELEVANT: &str = "not-relevant";
    /// POLICY reason when no candidate was found.
    pub const NO_CANDIDATES: &str = "no-candidates";

    /// Every code above.
    pub const ALL: [&str; 23] = [
        SAFE_FACT,
        INSTRUCTION,
        SECRET,
        SUSPICIOUS,
        MALFORMED,
        UNREADABLE,
        INVALID_ID,
        INVALID_FIELD,
        INVALID_DATE,
        SUPERSEDED,
        REVOKED,
        EXPIRED,
        OTHER_SCOPE,
        HELD_AT_SCOPE,
        CROSS_SCOPE_CURRENT_STATE,
        CONFLICT,
        UNGROUNDED,
        UNVERIFIED,
        UNCONFIRMED_SOURCE,
        LOW_CONFIDENCE,
        OVER_LIMIT,
        NOT_RELEVANT,
        NO_CANDIDATES,
    ];
}

/// Why a record got its verdict: a code from [`codes`] and an optional detail
/// (rule ids, paths, ids, codec errors — never flagged text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// The cause.
    pub code: &'static str,
    /// More about it, printable and bounded.
    pub detail: Option<String>,
}

impl Reason {
    /// A reason; the detail is made printable and bounded.
    pub fn new(code: &'static str, detail: Option<String>) -> Self {
        Reason {
            code,
            detail: detail.map(|d| printable(&d, 300)),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.detail {
            Some(detail) => write!(f, "{} ({detail})", self.code),
            None => f.write_str(self.code),
        }
    }
}

/// Escapes control characters and bounds `text` to `max` characters.
pub(crate) fn printable(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 2));
    for (count, c) in text.chars().enumerate() {
        if count == max {
            out.push('…');
            break;
        }
        if c.is_control() || dream_core::model::is_line_break(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
