//! The binary form of analysed records, as the persisted index stores them (see
//! `persist`), in the primitives of `wire`; decoding checks every bound and
//! every string and fails with `None`, never panics.

use chrono::{Datelike, NaiveDate};
use dream_core::{MemoryStatus, RecordId, Scope};

use super::analyze::{Doc, FIELDS, Outcome, Valid};
use super::reason::{Reason, codes};
use super::terms::Terms;
use super::tokenize::Language;
use super::wire::{Reader, Writer};

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
    use super::*;

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
