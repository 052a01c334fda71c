//! The binary form of analysed records and of the vocabulary, as the persisted
//! index stores them (see `persist`). Little-endian, length-prefixed; decoding
//! checks every bound and every string and fails with `None`, never panics.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use dream_core::{Memory, MemoryId, MemoryKind, MemoryStatus, RecordId, Role, Scope, SessionId};

use super::analyze::{Doc, FIELDS, Outcome, Valid, hash64};
use super::codes;
use super::tokenize::Language;
use super::types::Reason;

/// Appends values to a buffer.
#[derive(Default)]
pub(crate) struct Writer(pub Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    pub fn str(&mut self, s: &str) {
        self.len(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }
    fn bytes32(&mut self, b: &[u8; 32]) {
        self.0.extend_from_slice(b);
    }
    fn time(&mut self, t: DateTime<Utc>) {
        self.u64(t.timestamp() as u64);
        self.u32(t.timestamp_subsec_nanos());
    }
    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
            None => self.u8(0),
        }
    }
    fn reason(&mut self, r: &Reason) {
        self.str(r.code);
        self.opt_str(r.detail.as_deref());
    }
    fn strs<'a>(&mut self, items: impl ExactSizeIterator<Item = &'a str>) {
        self.len(items.len());
        for s in items {
            self.str(s);
        }
    }

    /// One analysed record.
    pub fn doc(&mut self, doc: &Doc) {
        self.str(doc.id.as_str());
        self.u64(doc.version.0);
        self.bytes32(&doc.hash);
        self.u8(doc.language.bit().trailing_zeros() as u8);
        self.u8(u8::from(doc.id_flagged));
        for l in doc.lengths {
            self.u32(l);
        }
        self.len(doc.terms.len());
        for (term, tf) in &doc.terms {
            self.u32(*term);
            for c in tf {
                self.u16(*c);
            }
        }
        match &doc.outcome {
            Outcome::Valid(v) => {
                self.u8(0);
                self.memory(&v.memory);
                self.str(&v.subject);
                self.bytes32(&v.agreement);
                self.opt_str(v.suspicious.as_deref());
                self.u8(u8::from(v.verified));
            }
            Outcome::Quarantined(reason) => {
                self.u8(1);
                self.reason(reason);
            }
            Outcome::Rejected { reason, corrupt } => {
                self.u8(2);
                self.reason(reason);
                self.u8(u8::from(*corrupt));
            }
        }
    }

    fn memory(&mut self, m: &Memory) {
        self.str(m.id.as_str());
        self.str(&m.name);
        self.str(&m.description);
        self.str(m.kind.as_str());
        self.str(&m.content);
        self.strs(m.tags.iter().map(String::as_str));
        self.str(m.scope.as_str());
        self.str(m.status.as_str());
        self.strs(m.supersedes.iter().map(MemoryId::as_str));
        match m.expires_at {
            Some(t) => {
                self.u8(1);
                self.time(t);
            }
            None => self.u8(0),
        }
        self.time(m.created_at);
        self.time(m.updated_at);
        self.strs(m.sources.iter().map(SessionId::as_str));
        self.strs(m.evidence.iter().map(|r| r.as_str()));
        self.u64(m.confidence.to_bits());
        self.u8(u8::from(m.pinned));
        if m.metadata.is_empty() {
            self.str("");
        } else {
            self.str(&serde_json::Value::Object(m.metadata.clone()).to_string());
        }
    }
}

/// Reads values back; every method is `None` past the end or on a bad value.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    /// Whether every byte was read.
    pub fn done(&self) -> bool {
        self.pos == self.buf.len()
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn flag(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// A count of items each at least `min` bytes long, checked against what is left.
    pub fn count(&mut self, min: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n.checked_mul(min.max(1))? <= self.buf.len() - self.pos).then_some(n)
    }
    pub fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }
    fn bytes32(&mut self) -> Option<[u8; 32]> {
        self.take(32)?.try_into().ok()
    }
    fn time(&mut self) -> Option<DateTime<Utc>> {
        let secs = self.u64()? as i64;
        let nanos = self.u32()?;
        DateTime::from_timestamp(secs, nanos)
    }
    fn opt_str(&mut self) -> Option<Option<&'a str>> {
        match self.u8()? {
            0 => Some(None),
            1 => Some(Some(self.str()?)),
            _ => None,
        }
    }
    fn reason(&mut self) -> Option<Reason> {
        let code = self.str()?;
        let code = codes::ALL.into_iter().find(|c| *c == code)?;
        let detail = self.opt_str()?.map(str::to_owned);
        Some(Reason { code, detail })
    }
    fn strs(&mut self) -> Option<Vec<&'a str>> {
        let n = self.count(4)?;
        (0..n).map(|_| self.str()).collect()
    }

    /// One analysed record.
    pub fn doc(&mut self) -> Option<Doc> {
        let id = RecordId::new(self.str()?).ok()?;
        let version = dream_core::Version(self.u64()?);
        let hash = self.bytes32()?;
        let language = *Language::ALL.get(usize::from(self.u8()?))?;
        let id_flagged = self.flag()?;
        let mut lengths = [0u32; FIELDS];
        for l in &mut lengths {
            *l = self.u32()?;
        }
        let n = self.count(4 + 2 * FIELDS)?;
        let mut terms = Vec::with_capacity(n);
        for _ in 0..n {
            let term = self.u32()?;
            let mut tf = [0u16; FIELDS];
            for c in &mut tf {
                *c = self.u16()?;
            }
            terms.push((term, tf));
        }
        let outcome = match self.u8()? {
            0 => {
                let memory = self.memory()?;
                let subject = self.str()?.to_owned();
                let agreement = self.bytes32()?;
                let suspicious = self.opt_str()?.map(str::to_owned);
                let verified = self.flag()?;
                Outcome::Valid(Valid {
                    memory: Arc::new(memory),
                    subject_hash: hash64(&subject),
                    subject,
                    agreement,
                    suspicious,
                    verified,
                })
            }
            1 => Outcome::Quarantined(self.reason()?),
            2 => Outcome::Rejected {
                reason: self.reason()?,
                corrupt: self.flag()?,
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

    fn memory(&mut self) -> Option<Memory> {
        let id = MemoryId::new(self.str()?).ok()?;
        let name = self.str()?.to_owned();
        let description = self.str()?.to_owned();
        let kind = MemoryKind::parse(self.str()?)?;
        let content = self.str()?.to_owned();
        let tags = self.strs()?.into_iter().map(str::to_owned).collect();
        let scope = Scope::new(self.str()?).ok()?;
        let status = MemoryStatus::parse(self.str()?)?;
        let supersedes = self
            .strs()?
            .into_iter()
            .map(|s| MemoryId::new(s).ok())
            .collect::<Option<_>>()?;
        let expires_at = match self.u8()? {
            0 => None,
            1 => Some(self.time()?),
            _ => return None,
        };
        let created_at = self.time()?;
        let updated_at = self.time()?;
        let sources = self
            .strs()?
            .into_iter()
            .map(|s| SessionId::new(s).ok())
            .collect::<Option<_>>()?;
        let evidence = self
            .strs()?
            .into_iter()
            .map(Role::parse)
            .collect::<Option<_>>()?;
        let confidence = f64::from_bits(self.u64()?);
        let pinned = self.flag()?;
        let metadata = match self.str()? {
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
}
