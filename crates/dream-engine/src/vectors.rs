//! Memory vectors (namespace `vectors`): one record per memory, computed by
//! Dream from the memory's own text with the configured [`Embedder`] — never
//! accepted from outside — and stored beside it.
//!
//! A record is a one-line JSON header (`model`, `dimensions`, `text`: the
//! SHA-256 of the embedded text), a newline, then the vector as little-endian
//! `f32`s. A vector is current while its model, dimension and text hash match
//! the embedder and the memory; otherwise it is stale: recall does not use it
//! and the next backfill recomputes it.
//!
//! Vectors are derived state, kept current by the backfill
//! ([`Dream::backfill_vectors`](crate::Dream::backfill_vectors)). This module is
//! the record alone, which the backfill writes and recall reads.

use bytes::Bytes;
use dream_core::{Embedder, Memory};
use serde::{Deserialize, Serialize};

/// The text of a memory that is embedded: its name, description and content.
pub(crate) fn embedded_text(memory: &Memory) -> String {
    format!(
        "{}\n{}\n{}",
        memory.name, memory.description, memory.content
    )
}

/// The header of a vector record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Header {
    /// The embedder's model name.
    pub model: String,
    /// The vector's dimension.
    pub dimensions: usize,
    /// SHA-256 (hex) of the embedded text.
    pub text: String,
}

/// A decoded vector record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredVector {
    pub header: Header,
    pub vector: Vec<f32>,
}

impl StoredVector {
    /// Whether this vector is current for `embedder` and a memory whose embedded
    /// text hashes to `text`.
    pub fn is_current(&self, embedder: &dyn Embedder, text: &str) -> bool {
        self.header.model == embedder.model()
            && self.header.dimensions == embedder.dimensions()
            && self.header.text == text
    }
}

/// The record value of a vector.
pub(crate) fn encode(header: &Header, vector: &[f32]) -> Bytes {
    let mut out = serde_json::to_vec(header).expect("a header always encodes");
    out.push(b'\n');
    out.reserve(vector.len() * 4);
    for x in vector {
        out.extend_from_slice(&x.to_le_bytes());
    }
    Bytes::from(out)
}

/// A vector record, or `None` when it is not one this module wrote (wrong
/// shape, length or a non-finite number): such a record is treated as absent.
pub(crate) fn decode(value: &[u8]) -> Option<StoredVector> {
    let split = value.iter().position(|b| *b == b'\n')?;
    let header: Header = serde_json::from_slice(&value[..split]).ok()?;
    let body = &value[split + 1..];
    if header.dimensions == 0 || body.len() != header.dimensions.checked_mul(4)? {
        return None;
    }
    let vector: Vec<f32> = body
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if vector.iter().any(|x| !x.is_finite()) {
        return None;
    }
    Some(StoredVector { header, vector })
}

/// What one backfill did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VectorReport {
    /// Vectors computed and stored.
    pub embedded: usize,
    /// Memories whose vector was already current.
    pub current: usize,
    /// Vectors removed: their memory is gone.
    pub removed: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_junk_is_refused() {
        let header = Header {
            model: "m".into(),
            dimensions: 3,
            text: "abc".into(),
        };
        let value = encode(&header, &[1.0, -2.5, 0.0]);
        let back = decode(&value).unwrap();
        assert_eq!(back.header, header);
        assert_eq!(back.vector, vec![1.0, -2.5, 0.0]);
        assert!(decode(&value[..value.len() - 1]).is_none());
        assert!(decode(b"{}\n").is_none());
        assert!(decode(b"no header").is_none());
        let mut nan = encode(&header, &[1.0, 2.0, 3.0]).to_vec();
        let at = nan.len() - 4;
        nan[at..].copy_from_slice(&f32::NAN.to_le_bytes());
        assert!(decode(&nan).is_none());
    }
}
