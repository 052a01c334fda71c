//! What a rule is, and how the rule table compiles to [`NormRule`]s.

use std::ops::Range;

use crate::normalize::normalize_literal;
use crate::pattern::compile;
use crate::{Category, Severity};

use super::table::defs;

/// The rule applies to transcript scans.
pub(crate) const TRANSCRIPT: u8 = 1;
/// The rule applies to authored-memory scans.
pub(crate) const MEMORY: u8 = 2;
/// Both modes.
pub(crate) const BOTH: u8 = TRANSCRIPT | MEMORY;

/// A post-match check over the normalised text and the match's range.
pub(crate) type Check = fn(&str, Range<usize>) -> bool;

/// A rule over the normalised text.
pub(crate) struct NormRule {
    pub id: &'static str,
    pub category: Category,
    pub severity: Severity,
    pub modes: u8,
    pub regex: String,
    /// Trigger literals, and whether each must be a whole word.
    pub anchors: Vec<(String, bool)>,
    /// Bytes searched before and after each trigger literal.
    pub before: usize,
    /// A match must start a word (checked by the scanner, joins included).
    pub word_start: bool,
    pub after: usize,
    pub check: Option<Check>,
}

pub(super) struct Def {
    id: &'static str,
    category: Category,
    severity: Severity,
    modes: u8,
    src: Src,
    check: Option<Check>,
}

enum Src {
    Phrase(String),
    Raw {
        regex: String,
        anchors: &'static [&'static str],
    },
}

pub(super) fn phrase(id: &'static str, category: Category, pattern: impl Into<String>) -> Def {
    Def {
        id,
        category,
        severity: Severity::High,
        modes: BOTH,
        src: Src::Phrase(pattern.into()),
        check: None,
    }
}

pub(super) fn raw(
    id: &'static str,
    category: Category,
    regex: impl Into<String>,
    anchors: &'static [&'static str],
) -> Def {
    Def {
        id,
        category,
        severity: Severity::High,
        modes: BOTH,
        src: Src::Raw {
            regex: regex.into(),
            anchors,
        },
        check: None,
    }
}

impl Def {
    pub(super) fn medium(mut self) -> Self {
        self.severity = Severity::Medium;
        self
    }
    pub(super) fn transcript_only(mut self) -> Self {
        self.modes = TRANSCRIPT;
        self
    }
    pub(super) fn check(mut self, c: Check) -> Self {
        self.check = Some(c);
        self
    }
}

/// A regex alternation of plain words and phrases, each normalised as input text is
/// (`l` reads `i`, accents fold away), so the lists below are written in plain words
/// of the six languages. A space in a phrase matches blanks, `_` or `-`.
pub(super) fn words(list: &[&str]) -> String {
    let parts: Vec<String> = list
        .iter()
        .map(|w| {
            w.split(' ')
                .filter(|p| !p.is_empty())
                .map(|p| regex::escape(&normalize_literal(p)))
                .collect::<Vec<_>>()
                .join(r"[ \t_-]+")
        })
        .collect();
    format!("(?:{})", parts.join("|"))
}

/// Bytes searched on each side of a raw rule's trigger literal.
const RAW_RADIUS: usize = 320;

/// Compiles every rule. Panics on a malformed rule (a unit test compiles them all).
pub(crate) fn norm_rules() -> Vec<NormRule> {
    defs()
        .into_iter()
        .map(|def| {
            let (regex, anchors, before, after, word_start) = match def.src {
                Src::Phrase(p) => {
                    let c = compile(&p);
                    (c.regex, c.anchors, c.before, c.after, c.word_start)
                }
                Src::Raw { regex, anchors } => {
                    let mut a: Vec<(String, bool)> = anchors
                        .iter()
                        .map(|s| (crate::normalize::normalize_literal(s), false))
                        .collect();
                    a.sort();
                    a.dedup();
                    (regex, a, RAW_RADIUS, RAW_RADIUS, false)
                }
            };
            NormRule {
                id: def.id,
                category: def.category,
                severity: def.severity,
                modes: def.modes,
                regex,
                anchors,
                before,
                after,
                word_start,
                check: def.check,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles() {
        let mut failures = Vec::new();
        for def in defs() {
            let id = def.id;
            let regex = match def.src {
                Src::Phrase(p) => match std::panic::catch_unwind(|| compile(&p)) {
                    Ok(c) => c.regex,
                    Err(e) => {
                        let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
                        failures.push(format!("{id}: {}", &msg[msg.len().saturating_sub(160)..]));
                        continue;
                    }
                },
                Src::Raw { regex, .. } => regex,
            };
            if let Err(e) = regex_automata::meta::Regex::new(&regex) {
                failures.push(format!("{id}: {e}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
