//! The binary form of analysed records, as the persisted index stores them (see
//! `persist`), in the primitives of `wire`; decoding checks every bound and
//! every string and fails with `None`, never panics.

use std::sync::Arc;

use dream_core::{Memory, MemoryId, MemoryKind, MemoryStatus, RecordId, Role, Scope, SessionId};

use super::analyze::{Doc, FIELDS, Outcome, Valid, hash64};
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
            write_memory(w, &v.memory);
            w.str(&v.subject);
            w.bytes32(&v.agreement);
            w.opt_str(v.suspicious.as_deref());
            w.u8(u8::from(v.verified));
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

fn write_memory(w: &mut Writer, m: &Memory) {
    w.str(m.id.as_str());
    w.str(&m.name);
    w.str(&m.description);
    w.str(m.kind.as_str());
    w.str(&m.content);
    w.strs(m.tags.iter().map(String::as_str));
    w.str(m.scope.as_str());
    w.str(m.status.as_str());
    w.strs(m.supersedes.iter().map(MemoryId::as_str));
    match m.expires_at {
        Some(t) => {
            w.u8(1);
            w.time(t);
        }
        None => w.u8(0),
    }
    w.time(m.created_at);
    w.time(m.updated_at);
    w.strs(m.sources.iter().map(SessionId::as_str));
    w.strs(m.evidence.iter().map(|r| r.as_str()));
    w.u64(m.confidence.to_bits());
    w.u8(u8::from(m.pinned));
    if m.metadata.is_empty() {
        w.str("");
    } else {
        w.str(&serde_json::Value::Object(m.metadata.clone()).to_string());
    }
}

fn read_reason(r: &mut Reader<'_>) -> Option<Reason> {
    let code = r.str()?;
    let code = codes::ALL.into_iter().find(|c| *c == code)?;
    let detail = r.opt_str()?.map(str::to_owned);
    Some(Reason { code, detail })
}

/// Reads one analysed record back.
pub(crate) fn read_doc(r: &mut Reader<'_>) -> Option<Doc> {
    let id = RecordId::new(r.str()?).ok()?;
    let version = dream_core::Version(r.u64()?);
    let hash = r.bytes32()?;
    let language = *Language::ALL.get(usize::from(r.u8()?))?;
    let id_flagged = r.flag()?;
    let mut lengths = [0u32; FIELDS];
    for l in &mut lengths {
        *l = u32::try_from(r.var()?).ok()?;
    }
    let terms = Terms::read_from(r)?;
    let outcome = match r.u8()? {
        0 => {
            let memory = read_memory(r)?;
            let subject = r.str()?.to_owned();
            let agreement = r.bytes32()?;
            let suspicious = r.opt_str()?.map(str::to_owned);
            let verified = r.flag()?;
            Outcome::Valid(Valid {
                memory: Arc::new(memory),
                subject_hash: hash64(&subject),
                subject,
                agreement,
                suspicious,
                verified,
            })
        }
        1 => Outcome::Quarantined(read_reason(r)?),
        2 => Outcome::Rejected {
            reason: read_reason(r)?,
            corrupt: r.flag()?,
        },
        _ => return None,
    };
    Some(Doc {
        id,
        version,
        hash,
        outcome,
        terms,
        lengths,
        language,
        id_flagged,
    })
}

fn read_memory(r: &mut Reader<'_>) -> Option<Memory> {
    let id = MemoryId::new(r.str()?).ok()?;
    let name = r.str()?.to_owned();
    let description = r.str()?.to_owned();
    let kind = MemoryKind::parse(r.str()?)?;
    let content = r.str()?.to_owned();
    let tags = r.strs()?.into_iter().map(str::to_owned).collect();
    let scope = Scope::new(r.str()?).ok()?;
    let status = MemoryStatus::parse(r.str()?)?;
    let supersedes = r
        .strs()?
        .into_iter()
        .map(|s| MemoryId::new(s).ok())
        .collect::<Option<_>>()?;
    let expires_at = match r.u8()? {
        0 => None,
        1 => Some(r.time()?),
        _ => return None,
    };
    let created_at = r.time()?;
    let updated_at = r.time()?;
    let sources = r
        .strs()?
        .into_iter()
        .map(|s| SessionId::new(s).ok())
        .collect::<Option<_>>()?;
    let evidence = r
        .strs()?
        .into_iter()
        .map(Role::parse)
        .collect::<Option<_>>()?;
    let confidence = f64::from_bits(r.u64()?);
    let pinned = r.flag()?;
    let metadata = match r.str()? {
        "" => serde_json::Map::new(),
        text => match serde_json::from_str(text).ok()? {
            serde_json::Value::Object(map) => map,
            _ => return None,
        },
    };
    Some(Memory {
        id,
        name,
        description,
        kind,
        content,
        tags,
        scope,
        status,
        supersedes,
        expires_at,
        created_at,
        updated_at,
        sources,
        evidence,
        confidence,
        pinned,
        metadata,
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
