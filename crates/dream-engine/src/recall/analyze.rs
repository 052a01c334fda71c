//! One stored record, analysed once per version: decoded, scanned (firewall step 2),
//! validated (step 3) and tokenised for ranking. The result is cached by
//! `(record id, version)`; versions are never reused, so a cached analysis is
//! never stale.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use dream_core::{Memory, RecordId, Version, parse_memory};
use dream_scan::{Report, Scanner, Verdict as ScanVerdict};

use super::tokenize::{self, Language, LanguageSet};
use super::{Reason, codes};

/// Number of ranked fields, in order: name, description, tags, content.
pub(crate) const FIELDS: usize = 4;

/// How records are analysed; fixed for the life of a `Recall`.
#[derive(Debug, Clone)]
pub(crate) struct AnalyzeConfig {
    pub languages: LanguageSet,
    pub default_language: Language,
    pub quarantine_suspicious: bool,
}

/// A record that passed the scan and validation.
#[derive(Debug)]
pub(crate) struct Valid {
    pub memory: Arc<Memory>,
    /// `metadata.subject` when it is a string, else the name; case-folded,
    /// white space collapsed.
    pub subject: String,
    /// Hash of the case-folded, white-space-collapsed content: equal hashes agree.
    pub agreement: u64,
    /// Set when the scanner found the record merely suspicious (see `RecallOptions`).
    pub suspicious: Option<String>,
}

/// What steps 2 and 3 of the firewall decided for a record.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Passed the scan and validation.
    Valid(Valid),
    /// Instruction- or secret-shaped somewhere (step 2).
    Quarantined(Reason),
    /// Failed decoding or validation (step 3); `corrupt` when it could not be
    /// decoded at all (not UTF-8, or not a Markdown memory).
    Rejected { reason: Reason, corrupt: bool },
}

/// One analysed record.
#[derive(Debug)]
pub(crate) struct Doc {
    pub id: RecordId,
    pub version: Version,
    pub outcome: Outcome,
    /// Distinct index terms with their frequency per field, sorted by term.
    pub terms: Vec<(Box<str>, [u16; FIELDS])>,
    /// Number of terms per field.
    pub lengths: [u32; FIELDS],
    /// The language the record was analysed in.
    pub language: Language,
}

impl Doc {
    /// The valid memory, if the record passed steps 2 and 3.
    pub fn valid(&self) -> Option<&Valid> {
        match &self.outcome {
            Outcome::Valid(v) => Some(v),
            _ => None,
        }
    }
}

/// Analyses one record's bytes.
pub(crate) fn analyze(
    id: RecordId,
    version: Version,
    bytes: &[u8],
    scanner: &Scanner,
    config: &AnalyzeConfig,
) -> Doc {
    let (text, utf8) = match std::str::from_utf8(bytes) {
        Ok(text) => (std::borrow::Cow::Borrowed(text), true),
        Err(_) => (String::from_utf8_lossy(bytes), false),
    };
    let parsed = if utf8 {
        parse_memory(&text).map_err(|e| e.to_string())
    } else {
        Err(String::new())
    };
    let memory = match parsed {
        Ok(memory) => memory,
        Err(codec_error) => {
            // Step 2 before step 3: an undecodable record is still scanned as text.
            let report = scanner.scan(&text);
            let outcome = if let Some(reason) = quarantine_reason(&report, false) {
                Outcome::Quarantined(reason)
            } else if utf8 {
                Outcome::Rejected {
                    reason: Reason::new(codes::MALFORMED, Some(codec_error)),
                    corrupt: true,
                }
            } else {
                Outcome::Rejected {
                    reason: Reason::new(codes::UNREADABLE, Some("not UTF-8".into())),
                    corrupt: true,
                }
            };
            let words = split_fields(["", "", "", &text]);
            return tokenised(id, version, outcome, words, config);
        }
    };

    let tags = memory.tags.join(" ");
    let words = split_fields([&memory.name, &memory.description, &tags, &memory.content]);
    let report = match serde_json::to_value(&memory) {
        Ok(value) => scanner.scan_json(&value),
        // A parsed memory always serialises; should it not, fail closed.
        Err(_) => scanner.scan(&text),
    };
    let outcome = if let Some(reason) = quarantine_reason(&report, config.quarantine_suspicious) {
        Outcome::Quarantined(reason)
    } else if let Err(reason) = validate(&id, &memory) {
        Outcome::Rejected {
            reason,
            corrupt: false,
        }
    } else {
        let suspicious = (report.verdict == ScanVerdict::Suspicious).then(|| cite(&report));
        Outcome::Valid(Valid {
            subject: subject_key(&memory),
            agreement: agreement(&memory.content),
            memory: Arc::new(memory),
            suspicious,
        })
    };
    tokenised(id, version, outcome, words, config)
}

fn split_fields(fields: [&str; FIELDS]) -> [Vec<String>; FIELDS] {
    let mut words: [Vec<String>; FIELDS] = Default::default();
    for (slot, text) in words.iter_mut().zip(fields) {
        tokenize::words(text, slot);
    }
    words
}

fn tokenised(
    id: RecordId,
    version: Version,
    outcome: Outcome,
    field_words: [Vec<String>; FIELDS],
    config: &AnalyzeConfig,
) -> Doc {
    let all: Vec<String> = field_words.iter().flatten().cloned().collect();
    let language = tokenize::detect(&all, config.languages, config.default_language);
    let mut counts: BTreeMap<String, [u16; FIELDS]> = BTreeMap::new();
    let mut lengths = [0u32; FIELDS];
    let mut terms = Vec::new();
    for (field, words) in field_words.iter().enumerate() {
        terms.clear();
        tokenize::terms(words, language, &mut terms);
        lengths[field] = u32::try_from(terms.len()).unwrap_or(u32::MAX);
        for term in terms.drain(..) {
            let slot = &mut counts.entry(term).or_default()[field];
            *slot = slot.saturating_add(1);
        }
    }
    Doc {
        id,
        version,
        outcome,
        terms: counts
            .into_iter()
            .map(|(t, c)| (t.into_boxed_str(), c))
            .collect(),
        lengths,
        language,
    }
}

/// The quarantine reason when the scan verdict is instruction or secret (or merely
/// suspicious, when `strict`).
fn quarantine_reason(report: &Report, strict: bool) -> Option<Reason> {
    let code = match report.verdict {
        ScanVerdict::Secret => codes::SECRET,
        ScanVerdict::Instruction => codes::INSTRUCTION,
        ScanVerdict::Suspicious if strict => codes::SUSPICIOUS,
        _ => return None,
    };
    Some(Reason::new(code, Some(cite(report))))
}

/// Names the scanner rules that fired and where, never the flagged text.
fn cite(report: &Report) -> String {
    let mut parts: Vec<String> = Vec::new();
    for finding in &report.findings {
        let part = match &finding.path {
            Some(path) if !path.is_empty() => {
                format!("{} at {}", finding.rule, super::printable(path, 80))
            }
            _ => finding.rule.to_owned(),
        };
        if !parts.contains(&part) {
            parts.push(part);
        }
        if parts.len() == 3 {
            break;
        }
    }
    if parts.is_empty() {
        "no rule named".to_owned()
    } else {
        format!("rule {}", parts.join(", "))
    }
}

/// Step 3: everything the codec does not already enforce. Never repairs.
fn validate(record: &RecordId, memory: &Memory) -> Result<(), Reason> {
    let invalid = |code: &'static str, detail: String| Err(Reason::new(code, Some(detail)));
    if memory.id.as_str() != record.as_str() {
        return invalid(
            codes::INVALID_ID,
            format!("record {record} holds memory {}", memory.id),
        );
    }
    if memory.name.trim().is_empty() {
        return invalid(codes::INVALID_FIELD, "name is empty".into());
    }
    if memory.content.trim().is_empty() {
        return invalid(codes::INVALID_FIELD, "content is empty".into());
    }
    if !memory.confidence.is_finite() || !(0.0..=1.0).contains(&memory.confidence) {
        return invalid(codes::INVALID_FIELD, "confidence is not in 0..=1".into());
    }
    if memory.updated_at < memory.created_at {
        return invalid(codes::INVALID_DATE, "updated_at is before created_at".into());
    }
    if let Some(expires) = memory.expires_at
        && expires < memory.created_at
    {
        return invalid(codes::INVALID_DATE, "expires_at is before created_at".into());
    }
    if memory.supersedes.iter().any(|s| s == &memory.id) {
        return invalid(codes::INVALID_FIELD, "supersedes itself".into());
    }
    match memory.metadata.get("subject") {
        None | Some(serde_json::Value::String(_)) => {}
        Some(_) => {
            return invalid(
                codes::INVALID_FIELD,
                "metadata.subject is not a string".into(),
            );
        }
    }
    Ok(())
}

/// Case-folds and collapses white space.
fn fold(text: &str) -> String {
    text.split_whitespace()
        .map(|w| w.to_lowercase())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The subject key of the conflict rule.
fn subject_key(memory: &Memory) -> String {
    match memory.metadata.get("subject") {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => fold(s),
        _ => fold(&memory.name),
    }
}

fn agreement(content: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    fold(content).hash(&mut hasher);
    hasher.finish()
}
