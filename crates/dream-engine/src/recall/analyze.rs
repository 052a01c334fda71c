//! One stored record, analysed once per version: decoded, scanned (firewall step 2),
//! validated (step 3) and tokenised for ranking. The result is cached by
//! `(record id, version)`; versions are never reused, so a cached analysis is
//! never stale.

use std::borrow::Cow;
use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, Utc};
use dream_core::{Memory, MemoryStatus, RecordId, Scope, Version, parse_memory};
use dream_scan::{Category, Finding, Report, Scanner, Severity, Verdict};

use sha2::{Digest, Sha256};

use super::dates;
use super::reason::{Reason, codes};
use super::terms::Terms;
use super::tokenize::{self, Detector, Language, LanguageSet};
use super::vocab::Vocabulary;

/// Number of ranked fields, in order: name, description, tags, content, kind.
pub(crate) const FIELDS: usize = 5;

/// The words the `kind` field indexes for each memory kind.
fn kind_words(kind: dream_core::MemoryKind) -> &'static str {
    match kind {
        dream_core::MemoryKind::User => "user preference",
        dream_core::MemoryKind::Feedback => "feedback correction",
        dream_core::MemoryKind::Project => "project decision",
        dream_core::MemoryKind::Reference => "reference link",
    }
}

/// How records are analysed; fixed for the life of a `Recall`.
#[derive(Debug, Clone)]
pub(crate) struct AnalyzeConfig {
    pub languages: LanguageSet,
    pub default_language: Language,
    pub quarantine_suspicious: bool,
    /// The store's seal key, if records are sealed.
    pub seal: Option<crate::seal::SealKey>,
}

/// What ranking and the firewall's whole-store steps need of a record that
/// passed the scan and validation. The memory itself is not kept: recall reads
/// a shown record again and decodes it from the same bytes (see `refresh`).
#[derive(Debug, Clone)]
pub(crate) struct Valid {
    pub scope: Scope,
    pub status: MemoryStatus,
    /// The memories it claims to supersede.
    pub supersedes: Box<[RecordId]>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub confidence: f64,
    pub pinned: bool,
    /// It names its provenance: sources or evidence.
    pub grounded: bool,
    /// SHA-256 of the subject key: `metadata.subject` when it is a string, else
    /// the name; case-folded, white space collapsed. Equal digests, same subject.
    pub subject: [u8; 32],
    /// SHA-256 of the case-folded, white-space-collapsed content: equal digests agree.
    pub agreement: [u8; 32],
    /// Set when the scanner found the record merely suspicious (see `RecallOptions`).
    pub suspicious: Option<Box<str>>,
    /// The record carries this store's seal (always true when records are not sealed).
    pub verified: bool,
    /// Why an `unconfirmed` memory waits for the person ([`why_unconfirmed`](super::why_unconfirmed)).
    pub unconfirmed: Option<Box<str>>,
    /// The days its name, description and content name (see `dates`).
    pub days: Box<[NaiveDate]>,
    /// Bytes of its name, description and content (see `estimated_tokens`).
    pub text_bytes: usize,
    /// SHA-256 of its embedded text (see `vectors`).
    pub embedded: [u8; 32],
}

impl Valid {
    /// The facts of `memory` (see [`analyze`]).
    pub(crate) fn of(memory: &Memory, suspicious: Option<String>, verified: bool) -> Valid {
        Valid {
            scope: memory.scope.clone(),
            status: memory.status,
            supersedes: memory
                .supersedes
                .iter()
                .cloned()
                .map(RecordId::from)
                .collect(),
            created_at: memory.created_at,
            updated_at: memory.updated_at,
            expires_at: memory.expires_at,
            confidence: memory.confidence,
            pinned: memory.pinned,
            grounded: !memory.sources.is_empty() || !memory.evidence.is_empty(),
            subject: Sha256::digest(subject_key(memory).as_bytes()).into(),
            agreement: Sha256::digest(fold(&memory.content).as_bytes()).into(),
            suspicious: suspicious.map(String::into_boxed_str),
            verified,
            unconfirmed: (memory.status == MemoryStatus::Unconfirmed)
                .then(|| super::why_unconfirmed(memory).into_boxed_str()),
            days: dates::days_named([&memory.name, &memory.description, &memory.content]),
            text_bytes: super::brief::text_bytes(memory),
            embedded: Sha256::digest(crate::vectors::embedded_text(memory).as_bytes()).into(),
        }
    }

    /// The key of the subject index: the subject digest's first bytes.
    pub fn subject_hash(&self) -> u64 {
        let mut head = [0u8; 8];
        head.copy_from_slice(&self.subject[..8]);
        u64::from_le_bytes(head)
    }

    /// Written by this store's engine and the person's word: it may retire,
    /// oppose or be opposed by other records.
    pub fn trusted(&self) -> bool {
        self.verified && self.status == MemoryStatus::Active
    }
}

/// What steps 2 and 3 of the firewall decided for a record.
#[derive(Debug, Clone)]
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
#[derive(Debug, Clone)]
pub(crate) struct Doc {
    pub id: RecordId,
    pub version: Version,
    /// SHA-256 of the record's bytes: a record read again with the same bytes
    /// keeps its analysis, whatever its version.
    pub hash: [u8; 32],
    pub outcome: Outcome,
    /// Distinct term ids (see `Vocabulary`) with their frequency per field, sorted.
    pub terms: Terms,
    /// Number of terms per field.
    pub lengths: [u32; FIELDS],
    /// The language the record was analysed in.
    pub language: Language,
    /// The scanner found something in the record's id: never show it.
    pub id_flagged: bool,
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

/// The distinct words one thread's records hold (each once per language), in
/// the order first met. The vocabulary interns them afterwards, one thread's
/// lexicon after another in record order ([`Lexicon::intern`]): term ids are
/// then those of records tokenised one after another, however the records were
/// split across threads, and no thread waits for the vocabulary while it works.
#[derive(Debug, Default)]
pub(crate) struct Lexicon {
    /// Per language (in `Language::ALL` order): word → its index in `order`.
    seen: Vec<HashMap<Box<str>, u32>>,
    order: Vec<(Box<str>, Language)>,
}

impl Lexicon {
    /// The index of `word` in `language`, noting it when new.
    fn word(&mut self, word: &str, language: Language) -> u32 {
        let slot = Language::ALL
            .iter()
            .position(|l| *l == language)
            .unwrap_or(0);
        if self.seen.len() <= slot {
            self.seen.resize_with(slot + 1, HashMap::new);
        }
        if let Some(at) = self.seen[slot].get(word) {
            return *at;
        }
        let at = u32::try_from(self.order.len()).unwrap_or(u32::MAX);
        self.seen[slot].insert(Box::from(word), at);
        self.order.push((Box::from(word), language));
        at
    }

    /// Each word's term in `vocab` (new terms interned in the order the words
    /// were met), `None` for a stop word.
    pub fn intern(&self, vocab: &mut Vocabulary) -> Vec<Option<u32>> {
        self.order
            .iter()
            .map(|(word, language)| vocab.term(word, *language))
            .collect()
    }
}

/// A record analysed but for its term ids: its words as indexes into the
/// [`Lexicon`] of the thread that analysed it, until [`Tokenised::finish`].
#[derive(Debug)]
pub(crate) struct Tokenised {
    doc: Doc,
    /// Each word in order: its lexicon index shifted left by 3, or its field.
    words: Vec<u64>,
}

impl Tokenised {
    /// The analysis, its words' terms given by `terms` (what its lexicon's
    /// [`Lexicon::intern`] returned).
    pub fn finish(self, terms: &[Option<u32>]) -> Doc {
        let mut occurrences: Vec<(u32, usize)> = Vec::with_capacity(self.words.len());
        let mut lengths = [0u32; FIELDS];
        for word in self.words {
            let field = (word & 7) as usize;
            if let Some(term) = terms.get((word >> 3) as usize).copied().flatten() {
                occurrences.push((term, field));
                lengths[field] = lengths[field].saturating_add(1);
            }
        }
        occurrences.sort_unstable();
        let mut counted: Vec<(u32, [u16; FIELDS])> = Vec::new();
        for (term, field) in occurrences {
            match counted.last_mut() {
                Some((last, counts)) if *last == term => {
                    counts[field] = counts[field].saturating_add(1);
                }
                _ => {
                    let mut counts = [0u16; FIELDS];
                    counts[field] = 1;
                    counted.push((term, counts));
                }
            }
        }
        Doc {
            terms: Terms::pack(&counted),
            lengths,
            ..self.doc
        }
    }
}

/// Analyses one record's bytes, whose SHA-256 is `hash`, noting its words in
/// `lexicon`.
pub(crate) fn analyze(
    id: RecordId,
    version: Version,
    bytes: &[u8],
    hash: [u8; 32],
    scanner: &Scanner,
    config: &AnalyzeConfig,
    lexicon: &mut Lexicon,
) -> Tokenised {
    let (text, parsed) = decode(bytes);
    let (outcome, (words, language), id_flagged) = match parsed {
        Err(codec_error) => {
            // Step 2 before step 3: an undecodable record is still scanned as text,
            // and so is the id it is stored under.
            let mut report = scanner.scan(&text);
            let id_flagged = merge_ids(scanner, &mut report, id.as_str());
            let outcome = if let Some(reason) = quarantine_reason(&report, false) {
                Outcome::Quarantined(reason)
            } else if let Some(codec_error) = codec_error {
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
            let tokens = tokenised(["", "", "", &text, ""], config, lexicon);
            (outcome, tokens, id_flagged)
        }
        Ok(memory) => {
            let tags = memory.tags.join(" ");
            let (report, id_flagged) = scan_memory(scanner, &id, &memory);
            let refused =
                if let Some(reason) = quarantine_reason(&report, config.quarantine_suspicious) {
                    Some(Outcome::Quarantined(reason))
                } else {
                    validate(&id, &memory)
                        .err()
                        .map(|reason| Outcome::Rejected {
                            reason,
                            corrupt: false,
                        })
                };
            let fields = [
                &*memory.name,
                &*memory.description,
                &*tags,
                &*memory.content,
                kind_words(memory.kind),
            ];
            let tokens = tokenised(fields, config, lexicon);
            let outcome = match refused {
                Some(outcome) => outcome,
                None => {
                    let suspicious = (report.verdict == Verdict::Suspicious).then(|| cite(&report));
                    let verified =
                        crate::seal::verified(config.seal.as_ref(), id.as_str(), text.as_bytes());
                    Outcome::Valid(Valid::of(&memory, suspicious, verified))
                }
            };
            (outcome, tokens, id_flagged)
        }
    };
    Tokenised {
        doc: Doc {
            id,
            version,
            hash,
            outcome,
            terms: Terms::default(),
            lengths: [0; FIELDS],
            language,
            id_flagged,
        },
        words,
    }
}

/// One record analysed alone, its terms interned in `vocab` at once.
#[cfg(test)]
pub(crate) fn analyze_alone(
    id: RecordId,
    version: Version,
    bytes: &[u8],
    scanner: &Scanner,
    config: &AnalyzeConfig,
    vocab: &mut Vocabulary,
) -> Doc {
    let mut lexicon = Lexicon::default();
    let hash = Sha256::digest(bytes).into();
    let tokenised = analyze(id, version, bytes, hash, scanner, config, &mut lexicon);
    tokenised.finish(&lexicon.intern(vocab))
}

/// A record's text (lossy when it is not UTF-8) and the memory it holds, or
/// the codec's error (`None` when it is not UTF-8).
fn decode(bytes: &[u8]) -> (Cow<'_, str>, Result<Memory, Option<String>>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (
            Cow::Borrowed(text),
            parse_memory(text).map_err(|e| Some(e.to_string())),
        ),
        Err(_) => (String::from_utf8_lossy(bytes), Err(None)),
    }
}

/// The memory a record's bytes hold, decoded as [`analyze`] decodes it: what
/// recall shows of a record whose bytes are those it analysed.
pub(crate) fn memory(bytes: &[u8]) -> Option<Memory> {
    decode(bytes).1.ok()
}

/// A record's words (see [`Tokenised::words`]) and its language.
type Words = (Vec<u64>, Language);

fn tokenised(fields: [&str; FIELDS], config: &AnalyzeConfig, lexicon: &mut Lexicon) -> Words {
    let mut detector = Detector::default();
    // The kind's words are ours, not the record's: they do not vote on its language.
    for text in &fields[..FIELDS - 1] {
        tokenize::for_each_word(text, |w| detector.add(w));
    }
    let language = detector.language(config.languages, config.default_language);
    let mut words: Vec<u64> = Vec::new();
    for (field, text) in (0u64..).zip(fields) {
        tokenize::for_each_word(text, |w| {
            words.push(u64::from(lexicon.word(w, language)) << 3 | field);
        });
    }
    (words, language)
}

/// Step 2 for a decoded memory. Its free text and metadata go through `scan_json`
/// in the write gate's shape (`{name, description, content, tags, metadata}`), so a
/// memory the gate admitted meets the same rules and the same depth cap here; the
/// ids it names (the record's, its own, scope, supersedes, sources — charset-limited,
/// yet able to spell words) are scanned as one text, reported at `/ids`. Kind,
/// status, dates, numbers and flags are typed by the codec and hold no text.
/// Returns the report and whether the record's own id was flagged.
fn scan_memory(scanner: &Scanner, record: &RecordId, memory: &Memory) -> (Report, bool) {
    let mut report = scanner.scan_json(&crate::gate::proposal_json(memory));
    let id_flagged = merge_ids(scanner, &mut report, record.as_str());
    let mut ids = format!("{} {}", memory.id, memory.scope);
    for id in &memory.supersedes {
        ids.push(' ');
        ids.push_str(id.as_str());
    }
    for id in &memory.sources {
        ids.push(' ');
        ids.push_str(id.as_str());
    }
    merge_ids(scanner, &mut report, &ids);
    (report, id_flagged)
}

/// Scans `ids` and merges the findings into `report` at `/ids`; whether any fired.
fn merge_ids(scanner: &Scanner, report: &mut Report, ids: &str) -> bool {
    let of_ids = scanner.scan(ids);
    report.verdict = report.verdict.max(of_ids.verdict);
    let flagged = !of_ids.findings.is_empty();
    report
        .findings
        .extend(of_ids.findings.into_iter().map(|f| Finding {
            path: Some("/ids".to_owned()),
            ..f
        }));
    flagged
}

/// Step 2 alone for one memory (stored as record `record`): the quarantine
/// reason recall's firewall gives it, if any, and whether the record's own id
/// was flagged. What the MCP server's `show`, `list`, `history` and resources
/// run, so they withhold exactly what recall quarantines.
pub(crate) fn screen(
    scanner: &Scanner,
    record: &RecordId,
    memory: &Memory,
    strict: bool,
) -> Option<(Reason, bool)> {
    let (report, id_flagged) = scan_memory(scanner, record, memory);
    quarantine_reason(&report, strict).map(|reason| (reason, id_flagged))
}

/// The quarantine reason when the scan verdict is instruction or secret (or merely
/// suspicious, when `strict`).
fn quarantine_reason(report: &Report, strict: bool) -> Option<Reason> {
    let code = match report.verdict {
        Verdict::Secret => codes::SECRET,
        Verdict::Instruction => codes::INSTRUCTION,
        Verdict::Suspicious if strict => codes::SUSPICIOUS,
        _ => return None,
    };
    Some(Reason::new(code, Some(cite(report))))
}

/// Names the scanner rules that fired and where, never the flagged text: the
/// findings that earned the verdict first, at most three.
fn cite(report: &Report) -> String {
    let earned = |f: &Finding| match report.verdict {
        Verdict::Secret => f.category == Category::Secret,
        Verdict::Instruction => f.category.is_instruction() && f.severity == Severity::High,
        _ => true,
    };
    let ordered = report
        .findings
        .iter()
        .filter(|f| earned(f))
        .chain(report.findings.iter().filter(|f| !earned(f)));
    let mut parts: Vec<String> = Vec::new();
    for finding in ordered {
        let part = match &finding.path {
            Some(path) if !path.is_empty() => format!("{} at {}", finding.rule, location(path)),
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

/// A JSON pointer with only what is not record text: the top-level field (one of
/// `Memory`'s own names) and array indexes; every other segment is a metadata key,
/// possibly the flagged text itself, and is shown as `*`.
fn location(pointer: &str) -> String {
    let mut out = String::new();
    for (i, segment) in pointer.split('/').skip(1).enumerate() {
        out.push('/');
        let own_field = i == 0 && segment.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        if own_field || (!segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit())) {
            out.push_str(&segment[..segment.len().min(20)]);
        } else {
            out.push('*');
        }
    }
    out
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
        return invalid(
            codes::INVALID_DATE,
            "updated_at is before created_at".into(),
        );
    }
    if let Some(expires) = memory.expires_at
        && expires < memory.created_at
    {
        return invalid(
            codes::INVALID_DATE,
            "expires_at is before created_at".into(),
        );
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

/// Case-folds and collapses white space: the words, each `to_lowercase`d,
/// joined by one space.
fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        if word.is_ascii() {
            out.extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            out.push_str(&word.to_lowercase());
        }
    }
    out
}

/// The subject key of the conflict rule.
fn subject_key(memory: &Memory) -> String {
    match memory.metadata.get("subject") {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => fold(s),
        _ => fold(&memory.name),
    }
}

#[cfg(test)]
mod tests {
    use super::fold;

    #[test]
    fn fold_lower_cases_each_word_and_joins_them_with_one_space() {
        let texts = [
            "",
            "   ",
            "We  ship\ton\n\nFRIDAYS ",
            " ΟΔΥΣΣΕΥΣ ΣΑΣ Σ straße İstanbul ǅ ",
            "mixed Ünïcödé and ASCII",
        ];
        for text in texts {
            let reference = text
                .split_whitespace()
                .map(str::to_lowercase)
                .collect::<Vec<_>>()
                .join(" ");
            assert_eq!(fold(text), reference, "{text:?}");
        }
    }
}
