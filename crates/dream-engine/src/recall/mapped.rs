//! The index's records and tables in one buffer, read in place: what a build
//! writes, what the persisted index stores after its vocabulary (see
//! `persist`), and what a process holds. Nothing is decoded for every record
//! at a load: a record's analysis is decoded on first use (a ranked candidate,
//! a record the firewall compares it with), and a posting list is walked where
//! it lies.
//!
//! The buffer is a sequence of items, each its length then its bytes:
//!
//! 1. the number of records, the languages they were analysed in, the number
//!    of terms with a posting list;
//! 2. the analyses, sorted by record id ([`write_doc`], [`read_doc`]);
//! 3. one row per record, 12 bytes: where its analysis starts in item 2, its
//!    scope id (`u32::MAX` when it is not a valid record), its rank in the
//!    tie-break order (more confident, then more recently updated, first);
//! 4. the scopes, by id;
//! 5. the supersessions: each superseded id with the valid, verified records
//!    claiming to supersede it, sorted by id;
//! 6. the subjects: one row of 12 bytes per valid record (its subject hash,
//!    then the record), sorted;
//! 7. one row per term, 8 bytes: where its posting list starts in item 8 and
//!    how many records it holds;
//! 8. the posting lists: each the records holding the term with their counts
//!    per field, packed as a record's terms are (`terms`).
//!
//! [`Mapped::open`] checks what it reads at once (the items, every row of the
//! tables, the scopes and supersessions); an analysis is checked when it is
//! decoded, a posting list while it is walked: neither can panic on any bytes.
//! An analysis that does not decode is treated as absent (never judged, never
//! shown); a posting list stops at its first malformed entry. The persisted
//! index hashes the whole buffer before it is opened.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use chrono::{Datelike, NaiveDate};
use dream_core::{Bytes, MemoryStatus, RecordId, Scope};

use super::analyze::{Doc, FIELDS, Outcome, Valid};
use super::reason::{Reason, codes};
use super::terms::{Packed, Packer, Terms};
use super::tokenize::{Language, LanguageSet};
use super::wire::{Reader, Writer};

/// Scope id of a record whose scope is unknown (not a valid record).
pub(crate) const UNKNOWN_SCOPE: u32 = u32::MAX;
/// Bytes of a record's row: offset, scope, tie-break rank.
const RECORD_ROW: usize = 12;
/// Bytes of a subject row: hash, record.
const SUBJECT_ROW: usize = 12;
/// Bytes of a term's row: offset, document frequency.
const TERM_ROW: usize = 8;

/// The index's records and tables (see the module docs).
pub(crate) struct Mapped {
    bytes: Bytes,
    len: usize,
    terms: usize,
    languages: LanguageSet,
    rows: Range<usize>,
    records: Range<usize>,
    subjects: Range<usize>,
    term_rows: Range<usize>,
    postings: Range<usize>,
    scopes: HashMap<Scope, u32>,
    successors: HashMap<RecordId, Vec<u32>>,
    /// Each record's analysis, once decoded (`None`: it does not decode).
    decoded: Box<[OnceLock<Option<Arc<Doc>>>]>,
}

impl std::fmt::Debug for Mapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapped")
            .field("records", &self.len)
            .field("terms", &self.terms)
            .field("bytes", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

/// The little-endian `u32` at `at`, if there.
fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let end = at.checked_add(4)?;
    Some(u32::from_le_bytes(bytes.get(at..end)?.try_into().ok()?))
}

/// The little-endian `u64` at `at`, if there.
fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let end = at.checked_add(8)?;
    Some(u64::from_le_bytes(bytes.get(at..end)?.try_into().ok()?))
}

/// Writes one item: its length, then what `write` writes.
pub(crate) fn item(w: &mut Writer, write: impl FnOnce(&mut Writer)) {
    let at = w.0.len();
    w.u32(0);
    write(w);
    let n = u32::try_from(w.0.len() - at - 4).unwrap_or(u32::MAX);
    w.0[at..at + 4].copy_from_slice(&n.to_le_bytes());
}

/// Reads one item's length and skips its bytes; their range.
pub(crate) fn read_item(r: &mut Reader<'_>) -> Option<Range<usize>> {
    let n = r.u32()? as usize;
    let start = r.position();
    let end = start.checked_add(n)?;
    r.take_to(end)?;
    Some(start..end)
}

impl Mapped {
    /// The buffer for analysed records sorted by id, whose term ids below
    /// `terms` get posting lists.
    pub fn encode(docs: &[Arc<Doc>], terms: usize) -> Vec<u8> {
        let mut languages = LanguageSet::default();
        for doc in docs {
            languages.insert(doc.language);
        }
        let mut scopes: Vec<&Scope> = Vec::new();
        let mut scope_ids: HashMap<&Scope, u32> = HashMap::new();
        let mut successors: BTreeMap<&RecordId, Vec<u32>> = BTreeMap::new();
        let mut subjects: Vec<(u64, u32)> = Vec::new();
        let mut doc_scope: Vec<u32> = Vec::with_capacity(docs.len());
        let mut lists: Vec<Packer> = (0..terms).map(|_| Packer::default()).collect();
        let mut offsets: Vec<u32> = Vec::with_capacity(docs.len());

        let mut w = Writer::default();
        item(&mut w, |w| {
            w.len(docs.len());
            w.u32(u32::from(languages.0));
            w.len(terms);
        });
        item(&mut w, |w| {
            let start = w.0.len();
            for (i, doc) in docs.iter().enumerate() {
                let i = u32::try_from(i).unwrap_or(u32::MAX);
                offsets.push(u32::try_from(w.0.len() - start).unwrap_or(u32::MAX));
                write_doc(w, doc);
                let scope = match doc.valid() {
                    Some(valid) => {
                        // Only the engine's own records retire others: a planted or
                        // edited record's `supersedes` is void.
                        if valid.verified {
                            for old in &valid.supersedes {
                                successors.entry(old).or_default().push(i);
                            }
                        }
                        subjects.push((valid.subject_hash(), i));
                        *scope_ids.entry(&valid.scope).or_insert_with(|| {
                            scopes.push(&valid.scope);
                            u32::try_from(scopes.len() - 1).unwrap_or(UNKNOWN_SCOPE - 1)
                        })
                    }
                    None => UNKNOWN_SCOPE,
                };
                doc_scope.push(scope);
                for (term, counts) in doc.terms.iter() {
                    if let Some(list) = lists.get_mut(term as usize) {
                        list.push(i, &counts);
                    }
                }
            }
        });
        subjects.sort_unstable();
        let prior = tie_break_ranks(docs);
        item(&mut w, |w| {
            for ((offset, scope), rank) in offsets.iter().zip(&doc_scope).zip(&prior) {
                w.u32(*offset);
                w.u32(*scope);
                w.u32(*rank);
            }
        });
        item(&mut w, |w| w.strs(scopes.iter().map(|s| s.as_str())));
        item(&mut w, |w| {
            w.len(successors.len());
            for (old, by) in &successors {
                w.str(old.as_str());
                w.len(by.len());
                for doc in by {
                    w.u32(*doc);
                }
            }
        });
        item(&mut w, |w| {
            for (hash, doc) in &subjects {
                w.u64(*hash);
                w.u32(*doc);
            }
        });
        let mut at = 0usize;
        item(&mut w, |w| {
            for list in &lists {
                w.u32(u32::try_from(at).unwrap_or(u32::MAX));
                w.u32(list.len());
                at += list.bytes_len();
            }
        });
        item(&mut w, |w| {
            for list in lists {
                w.0.extend_from_slice(&list.into_bytes());
            }
        });
        w.0
    }

    /// Opens a buffer [`Mapped::encode`] wrote, checking its items and tables;
    /// `None` when they are malformed.
    pub fn open(bytes: Bytes) -> Option<Mapped> {
        let mut r = Reader::new(&bytes);
        let header = read_item(&mut r)?;
        let records = read_item(&mut r)?;
        let rows = read_item(&mut r)?;
        let scopes_item = read_item(&mut r)?;
        let successors_item = read_item(&mut r)?;
        let subjects = read_item(&mut r)?;
        let term_rows = read_item(&mut r)?;
        let postings = read_item(&mut r)?;
        if !r.done() {
            return None;
        }

        let mut h = Reader::new(&bytes[header]);
        let len = h.u32()? as usize;
        let languages = LanguageSet(u16::try_from(h.u32()?).ok()?);
        let terms = h.u32()? as usize;
        if !h.done() || rows.len() != len.checked_mul(RECORD_ROW)? {
            return None;
        }

        let mut s = Reader::new(&bytes[scopes_item]);
        let scopes: HashMap<Scope, u32> = s
            .strs()?
            .into_iter()
            .zip(0u32..)
            .map(|(name, id)| Some((Scope::new(name).ok()?, id)))
            .collect::<Option<_>>()?;
        if !s.done() {
            return None;
        }
        let table = &bytes[rows.clone()];
        let mut previous = 0u32;
        for row in table.chunks_exact(RECORD_ROW) {
            let (offset, scope, rank) = (u32_at(row, 0)?, u32_at(row, 4)?, u32_at(row, 8)?);
            let scope_known = scope == UNKNOWN_SCOPE || (scope as usize) < scopes.len();
            if offset < previous || offset as usize > records.len() || !scope_known {
                return None;
            }
            if rank as usize >= len {
                return None;
            }
            previous = offset;
        }
        if len > 0 && u32_at(table, 0)? != 0 {
            return None;
        }

        let mut s = Reader::new(&bytes[successors_item]);
        let count = s.count(8)?;
        let mut successors: HashMap<RecordId, Vec<u32>> = HashMap::with_capacity(count);
        for _ in 0..count {
            let old = RecordId::new(s.str()?).ok()?;
            let by = (0..s.count(4)?)
                .map(|_| s.u32().filter(|d| (*d as usize) < len))
                .collect::<Option<Vec<u32>>>()?;
            if successors.insert(old, by).is_some() {
                return None;
            }
        }
        if !s.done() || subjects.len() % SUBJECT_ROW != 0 {
            return None;
        }
        let subject_table = &bytes[subjects.clone()];
        let mut previous: Option<(u64, u32)> = None;
        for row in subject_table.chunks_exact(SUBJECT_ROW) {
            let entry = (u64_at(row, 0)?, u32_at(row, 8)?);
            if entry.1 as usize >= len || previous.is_some_and(|p| p >= entry) {
                return None;
            }
            previous = Some(entry);
        }

        if term_rows.len() != terms.checked_mul(TERM_ROW)? {
            return None;
        }
        let mut previous = 0u32;
        for row in bytes[term_rows.clone()].chunks_exact(TERM_ROW) {
            let offset = u32_at(row, 0)?;
            if offset < previous || offset as usize > postings.len() {
                return None;
            }
            previous = offset;
        }
        if terms > 0 && u32_at(&bytes[term_rows.clone()], 0)? != 0 {
            return None;
        }

        Some(Mapped {
            decoded: (0..len).map(|_| OnceLock::new()).collect(),
            bytes,
            len,
            terms,
            languages,
            rows,
            records,
            subjects,
            term_rows,
            postings,
            scopes,
            successors,
        })
    }

    /// The buffer.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Number of terms with a posting list.
    pub fn terms(&self) -> usize {
        self.terms
    }

    /// Languages the records were analysed in.
    pub fn languages(&self) -> LanguageSet {
        self.languages
    }

    /// Field `field` (0: offset, 1: scope, 2: rank) of record `doc`'s row.
    fn row(&self, doc: usize, field: usize) -> Option<u32> {
        if doc >= self.len {
            return None;
        }
        u32_at(&self.bytes, self.rows.start + doc * RECORD_ROW + field * 4)
    }

    /// The bytes of record `doc`'s analysis.
    fn record(&self, doc: usize) -> Option<&[u8]> {
        let start = self.row(doc, 0)? as usize;
        let end = match self.row(doc + 1, 0) {
            Some(next) => next as usize,
            None => self.records.len(),
        };
        self.bytes
            .get(self.records.start..self.records.end)?
            .get(start..end)
    }

    /// The head of record `doc`'s analysis, read in place.
    pub fn head(&self, doc: usize) -> Option<Head<'_>> {
        read_head(&mut Reader::new(self.record(doc)?))
    }

    /// Record `doc`'s analysis, decoded on first use; `None` past the end or
    /// when it does not decode.
    pub fn doc(&self, doc: usize) -> Option<&Arc<Doc>> {
        self.decoded
            .get(doc)?
            .get_or_init(|| {
                let mut r = Reader::new(self.record(doc)?);
                let decoded = read_doc(&mut r)?;
                r.done().then(|| Arc::new(decoded))
            })
            .as_ref()
    }

    /// The position of record `id`, if indexed.
    pub fn find(&self, id: &str) -> Option<usize> {
        let (mut low, mut high) = (0, self.len);
        while low < high {
            let mid = low + (high - low) / 2;
            match self.head(mid)?.id.cmp(id) {
                Ordering::Less => low = mid + 1,
                Ordering::Greater => high = mid,
                Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Record `doc`'s scope id ([`UNKNOWN_SCOPE`] when it is not valid).
    pub fn scope_of(&self, doc: usize) -> u32 {
        self.row(doc, 1).unwrap_or(UNKNOWN_SCOPE)
    }

    /// Record `doc`'s rank in the tie-break order.
    pub fn tie_break(&self, doc: usize) -> u32 {
        self.row(doc, 2).unwrap_or(u32::MAX)
    }

    /// The id of `scope`, when a valid record has it.
    pub fn scope_id(&self, scope: &Scope) -> Option<u32> {
        self.scopes.get(scope).copied()
    }

    /// The valid, verified records claiming to supersede `id`.
    pub fn successors(&self, id: &RecordId) -> &[u32] {
        self.successors.get(id).map_or(&[], Vec::as_slice)
    }

    /// The valid records whose subject hash is `hash`, in record order.
    pub fn subject_group(&self, hash: u64) -> impl Iterator<Item = u32> + '_ {
        let table = self.bytes.get(self.subjects.clone()).unwrap_or_default();
        let rows = table.len() / SUBJECT_ROW;
        let hash_of = move |row: usize| u64_at(table, row * SUBJECT_ROW).unwrap_or(u64::MAX);
        let (mut low, mut high) = (0, rows);
        while low < high {
            let mid = low + (high - low) / 2;
            if hash_of(mid) < hash {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        (low..rows)
            .take_while(move |row| hash_of(*row) == hash)
            .filter_map(move |row| u32_at(table, row * SUBJECT_ROW + 8))
    }

    /// Number of records holding `term`.
    pub fn df(&self, term: u32) -> usize {
        self.term_row(term).map_or(0, |(_, df)| df as usize)
    }

    /// Offset and document frequency of `term`'s posting list.
    fn term_row(&self, term: u32) -> Option<(usize, u32)> {
        let term = term as usize;
        if term >= self.terms {
            return None;
        }
        let at = self.term_rows.start + term * TERM_ROW;
        Some((
            u32_at(&self.bytes, at)? as usize,
            u32_at(&self.bytes, at + 4)?,
        ))
    }

    /// The records holding `term` with their counts per field, in record order.
    pub fn postings(&self, term: u32) -> Packed<'_> {
        let empty = Packed { len: 0, bytes: &[] };
        let Some((start, len)) = self.term_row(term) else {
            return empty;
        };
        let end = match self.term_row(term + 1) {
            Some((next, _)) => next,
            None => self.postings.len(),
        };
        let bytes = self
            .bytes
            .get(self.postings.clone())
            .and_then(|p| p.get(start..end));
        bytes.map_or(empty, |bytes| Packed { len, bytes })
    }

    /// Number of postings (one per distinct term per record).
    pub fn postings_len(&self) -> usize {
        (0..self.terms)
            .filter_map(|t| u32::try_from(t).ok())
            .map(|t| self.df(t))
            .sum()
    }

    /// Heap bytes held: the buffer, the decoded analyses' slots, the tables.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.len()
            + self.decoded.len() * std::mem::size_of::<OnceLock<Option<Arc<Doc>>>>()
            + self
                .successors
                .values()
                .map(|v| v.len() * 4 + 48)
                .sum::<usize>()
    }
}

/// Each record's rank in the tie-break order: valid records first, more
/// confident, then more recently updated, then by position.
fn tie_break_ranks(docs: &[Arc<Doc>]) -> Vec<u32> {
    // Sorted on keys read once, not looked up at every comparison.
    let mut order: Vec<_> = docs
        .iter()
        .zip(0u32..)
        .map(|(doc, i)| {
            let key = doc.valid().map(|v| (v.confidence, v.updated_at));
            (key, i)
        })
        .collect();
    order.sort_unstable_by(|(ka, a), (kb, b)| match (ka, kb) {
        (Some(x), Some(y)) => {
            y.0.partial_cmp(&x.0)
                .unwrap_or(Ordering::Equal)
                .then(y.1.cmp(&x.1))
                .then(a.cmp(b))
        }
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    });
    let mut prior = vec![0u32; docs.len()];
    for (rank, (_, doc)) in order.into_iter().enumerate() {
        prior[doc as usize] = u32::try_from(rank).unwrap_or(u32::MAX);
    }
    prior
}

// One analysed record in binary (item 2 of the buffer), in the primitives of
// `wire`: decoding checks every bound and every string and fails with `None`,
// never panics.

fn write_reason(w: &mut Writer, r: &Reason) {
    w.str(r.code);
    w.opt_str(r.detail.as_deref());
}

/// Writes one analysed record.
pub(crate) fn write_doc(w: &mut Writer, doc: &Doc) {
    w.str(doc.id.as_str());
    w.u64(doc.version.0);
    w.bytes32(&doc.hash);
    w.u8(doc.language.bit().trailing_zeros() as u8);
    w.u8(u8::from(doc.id_flagged));
    for l in doc.lengths {
        w.var(u64::from(l));
    }
    doc.terms.write_to(w);
    match &doc.outcome {
        Outcome::Valid(v) => {
            w.u8(0);
            write_valid(w, v);
        }
        Outcome::Quarantined(reason) => {
            w.u8(1);
            write_reason(w, reason);
        }
        Outcome::Rejected { reason, corrupt } => {
            w.u8(2);
            write_reason(w, reason);
            w.u8(u8::from(*corrupt));
        }
    }
}

fn write_valid(w: &mut Writer, v: &Valid) {
    w.str(v.scope.as_str());
    w.str(v.status.as_str());
    w.strs(v.supersedes.iter().map(RecordId::as_str));
    w.time(v.created_at);
    w.time(v.updated_at);
    match v.expires_at {
        Some(t) => {
            w.u8(1);
            w.time(t);
        }
        None => w.u8(0),
    }
    w.u64(v.confidence.to_bits());
    w.u8(u8::from(v.pinned));
    w.u8(u8::from(v.grounded));
    w.bytes32(&v.subject);
    w.bytes32(&v.agreement);
    w.opt_str(v.suspicious.as_deref());
    w.u8(u8::from(v.verified));
    w.opt_str(v.unconfirmed.as_deref());
    w.len(v.days.len());
    for day in &v.days {
        w.u32(day.num_days_from_ce() as u32);
    }
    w.var(v.text_bytes as u64);
    w.bytes32(&v.embedded);
}

fn read_reason(r: &mut Reader<'_>) -> Option<Reason> {
    let code = r.str()?;
    let code = codes::ALL.into_iter().find(|c| *c == code)?;
    let detail = r.opt_str()?.map(str::to_owned);
    Some(Reason { code, detail })
}

/// What an analysed record opens with, read in place.
pub(crate) struct Head<'a> {
    pub id: &'a str,
    pub version: dream_core::Version,
    pub hash: [u8; 32],
    pub language: Language,
    pub id_flagged: bool,
    pub lengths: [u32; FIELDS],
}

/// Reads the head of an analysed record (its id not yet checked).
pub(crate) fn read_head<'a>(r: &mut Reader<'a>) -> Option<Head<'a>> {
    let id = r.str()?;
    let version = dream_core::Version(r.u64()?);
    let hash = r.bytes32()?;
    let language = *Language::ALL.get(usize::from(r.u8()?))?;
    let id_flagged = r.flag()?;
    let mut lengths = [0u32; FIELDS];
    for l in &mut lengths {
        *l = u32::try_from(r.var()?).ok()?;
    }
    Some(Head {
        id,
        version,
        hash,
        language,
        id_flagged,
        lengths,
    })
}

/// Reads one analysed record back.
pub(crate) fn read_doc(r: &mut Reader<'_>) -> Option<Doc> {
    let head = read_head(r)?;
    let id = RecordId::new(head.id).ok()?;
    let terms = Terms::read_from(r)?;
    let outcome = match r.u8()? {
        0 => Outcome::Valid(read_valid(r)?),
        1 => Outcome::Quarantined(read_reason(r)?),
        2 => Outcome::Rejected {
            reason: read_reason(r)?,
            corrupt: r.flag()?,
        },
        _ => return None,
    };
    Some(Doc {
        id,
        version: head.version,
        hash: head.hash,
        outcome,
        terms,
        lengths: head.lengths,
        language: head.language,
        id_flagged: head.id_flagged,
    })
}

fn read_valid(r: &mut Reader<'_>) -> Option<Valid> {
    let scope = Scope::new(r.str()?).ok()?;
    let status = MemoryStatus::parse(r.str()?)?;
    let supersedes = r
        .strs()?
        .into_iter()
        .map(|s| RecordId::new(s).ok())
        .collect::<Option<_>>()?;
    let created_at = r.time()?;
    let updated_at = r.time()?;
    let expires_at = match r.u8()? {
        0 => None,
        1 => Some(r.time()?),
        _ => return None,
    };
    let confidence = f64::from_bits(r.u64()?);
    let pinned = r.flag()?;
    let grounded = r.flag()?;
    let subject = r.bytes32()?;
    let agreement = r.bytes32()?;
    let suspicious = r.opt_str()?.map(Box::from);
    let verified = r.flag()?;
    let unconfirmed = r.opt_str()?.map(Box::from);
    let days = (0..r.count(4)?)
        .map(|_| NaiveDate::from_num_days_from_ce_opt(r.u32()? as i32))
        .collect::<Option<_>>()?;
    let text_bytes = usize::try_from(r.var()?).ok()?;
    let embedded = r.bytes32()?;
    Some(Valid {
        scope,
        status,
        supersedes,
        created_at,
        updated_at,
        expires_at,
        confidence,
        pinned,
        grounded,
        subject,
        agreement,
        suspicious,
        verified,
        unconfirmed,
        days,
        text_bytes,
        embedded,
    })
}

#[cfg(test)]
mod tests {

    use chrono::TimeZone;
    use dream_core::{Memory, MemoryId, MemoryKind, SessionId, Version, render_memory};

    use super::super::analyze::{AnalyzeConfig, analyze_alone};
    use super::super::vocab::Vocabulary;
    use super::*;

    /// Four records, sorted by id: `a` superseded by `c`, `b` and `d` on the
    /// same subject, and an undecodable `e`; with the number of terms.
    fn docs() -> (Vec<Arc<Doc>>, usize) {
        let at = chrono::Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap();
        let memory = |id: &str, name: &str, content: &str, supersedes: &[&str]| {
            let mut m = Memory::new(
                MemoryId::new(id).unwrap(),
                MemoryKind::Project,
                name,
                "how we ship",
                content,
                at,
            );
            m.sources = vec![SessionId::new("s1").unwrap()];
            m.supersedes = supersedes
                .iter()
                .map(|s| MemoryId::new(*s).unwrap())
                .collect();
            render_memory(&m).into_bytes()
        };
        let records = [
            ("a", memory("a", "Release", "We ship on Fridays.", &[])),
            ("b", memory("b", "Runner", "Tests run with vitest.", &[])),
            ("c", memory("c", "Release", "We ship on Mondays.", &["a"])),
            ("d", memory("d", "Runner", "Tests run with jest.", &[])),
            ("e", b"not a memory \xff".to_vec()),
        ];
        let config = AnalyzeConfig {
            languages: LanguageSet::of(&[Language::English]),
            default_language: Language::English,
            quarantine_suspicious: false,
            seal: None,
        };
        let scanner = crate::scan::memory_scanner();
        let mut vocab = Vocabulary::default();
        let docs = records
            .into_iter()
            .map(|(id, bytes)| {
                let id = RecordId::new(id).unwrap();
                Arc::new(analyze_alone(
                    id,
                    Version(1),
                    &bytes,
                    &scanner,
                    &config,
                    &mut vocab,
                ))
            })
            .collect();
        let terms = vocab.len();
        (docs, terms)
    }

    #[test]
    fn records_and_tables_read_back_in_place() {
        let (docs, terms) = docs();
        let mapped = Mapped::open(Bytes::from(Mapped::encode(&docs, terms))).unwrap();
        assert_eq!((mapped.len(), mapped.terms()), (docs.len(), terms));
        for (i, doc) in docs.iter().enumerate() {
            let (mut a, mut b) = (Writer::default(), Writer::default());
            write_doc(&mut a, doc);
            write_doc(&mut b, mapped.doc(i).unwrap());
            assert_eq!(a.0, b.0, "record {i}");
            assert_eq!(mapped.find(doc.id.as_str()), Some(i));
        }
        assert_eq!(mapped.find("zz"), None);
        assert_eq!(mapped.successors(&RecordId::new("a").unwrap()), [2]);
        assert!(mapped.successors(&RecordId::new("b").unwrap()).is_empty());
        let runner = docs[1].valid().unwrap().subject_hash();
        assert_eq!(mapped.subject_group(runner).collect::<Vec<_>>(), [1, 3]);
        let default = mapped.scope_id(&Scope::new("default").unwrap()).unwrap();
        let scopes: Vec<u32> = (0..docs.len()).map(|d| mapped.scope_of(d)).collect();
        assert_eq!(scopes, [default, default, default, default, UNKNOWN_SCOPE]);
        let mut ranks: Vec<u32> = (0..docs.len()).map(|d| mapped.tie_break(d)).collect();
        assert_eq!(ranks[4], 4, "the undecodable record ranks last");
        ranks.sort_unstable();
        assert_eq!(ranks, [0, 1, 2, 3, 4]);
        for term in 0..u32::try_from(terms).unwrap() {
            let holding: Vec<(u32, [u16; 5])> = docs
                .iter()
                .zip(0u32..)
                .filter_map(|(d, i)| d.terms.iter().find(|(t, _)| *t == term).map(|t| (i, t.1)))
                .collect();
            assert_eq!(mapped.postings(term).iter().collect::<Vec<_>>(), holding);
            assert_eq!(mapped.df(term), holding.len());
        }
        assert_eq!(mapped.postings(u32::MAX).len, 0);
    }

    #[test]
    fn every_read_on_a_flipped_or_truncated_buffer_is_bounded() {
        let (docs, terms) = docs();
        let bytes = Mapped::encode(&docs, terms);
        let hashes: Vec<u64> = docs
            .iter()
            .filter_map(|d| d.valid())
            .map(|v| v.subject_hash())
            .collect();
        let read_all = |mapped: &Mapped| {
            for doc in 0..mapped.len() + 1 {
                let id = mapped.head(doc).map(|h| h.id.to_owned());
                let _ = (mapped.doc(doc), mapped.scope_of(doc), mapped.tie_break(doc));
                if let Some(id) = id {
                    let _ = mapped.find(&id);
                }
            }
            for term in 0..u32::try_from(mapped.terms()).unwrap() + 1 {
                let _ = mapped.postings(term).iter().count();
            }
            for hash in &hashes {
                let _ = mapped.subject_group(*hash).count();
            }
        };
        for end in 0..bytes.len() {
            assert!(
                Mapped::open(Bytes::copy_from_slice(&bytes[..end])).is_none(),
                "cut at {end}"
            );
        }
        for at in 0..bytes.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut flipped = bytes.clone();
                flipped[at] ^= flip;
                if let Some(mapped) = Mapped::open(Bytes::from(flipped)) {
                    read_all(&mapped);
                }
            }
        }
    }

    #[test]
    fn terms_and_lengths_round_trip() {
        let doc = Doc {
            id: RecordId::new("m1").unwrap(),
            version: dream_core::Version(7),
            hash: [3; 32],
            outcome: Outcome::Rejected {
                reason: Reason::new(codes::MALFORMED, None),
                corrupt: true,
            },
            terms: Terms::pack(&[(0, [1, 0, 0, 0, 0]), (9, [0, 300, 0, 2, 0])]),
            lengths: [3, 0, 9, 100_000, u32::MAX],
            language: Language::ALL[1],
            id_flagged: true,
        };
        let mut w = Writer::default();
        write_doc(&mut w, &doc);
        let mut r = Reader::new(&w.0);
        let back = read_doc(&mut r).unwrap();
        assert!(r.done());
        assert_eq!(back.terms, doc.terms);
        assert_eq!(back.lengths, doc.lengths);
        assert_eq!(
            (back.id, back.version, back.hash),
            (doc.id, doc.version, doc.hash)
        );
        assert_eq!(
            (back.language, back.id_flagged),
            (doc.language, doc.id_flagged)
        );
    }
}
