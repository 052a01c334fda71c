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
//! Vectors are derived state: computed outside the lease after a write
//! ([`Dream::backfill_vectors`], started in the background by every event of a
//! handle with an embedder), so a failing or slow embedder never blocks a
//! write or a pass; removed with the persisted recall index by every purge, and
//! then backfilled again. Written through the handle's store, so an encrypted
//! store encrypts them. After each backfill that changed something,
//! `state/vectors` holds a fresh nonce, so recall reloads its vectors.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use dream_core::{Embedder, Memory, Record, RecordId, Write};
use serde::{Deserialize, Serialize};

use crate::dream::Dream;
use crate::error::{DreamError, Result};
use crate::layout::{self, hash_bytes};

/// Most texts sent to the embedder per call during a backfill.
pub(crate) const BACKFILL_BATCH: usize = 64;

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

impl Dream {
    /// The same handle computing memory vectors with `embedder` (see
    /// [`Dream::backfill_vectors`]): after every event it records, a backfill
    /// runs in the background on the current Tokio runtime.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// Whether the handle has an embedder.
    pub fn has_embedder(&self) -> bool {
        self.embedder.is_some()
    }

    /// Waits until no background backfill of this handle runs or is pending.
    pub async fn backfill_idle(&self) {
        while !self.backfills.is_idle() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Computes and stores the vector of every memory whose vector is missing or
    /// stale (another model, dimension or text), and removes the vectors of
    /// memories that are gone. Runs outside the lease: a memory written meanwhile
    /// is picked up by the next backfill, and a vector written for a memory
    /// removed meanwhile is removed again here or by the next backfill (recall
    /// never uses a vector without its memory). Without an embedder, does nothing.
    pub async fn backfill_vectors(&self) -> Result<VectorReport> {
        self.backfill_vectors_with_progress(|_, _| {}).await
    }

    /// [`Dream::backfill_vectors`], calling `progress(done, total)` before the
    /// first batch and after each batch the embedder computed (`total`: the
    /// vectors missing or stale).
    pub async fn backfill_vectors_with_progress(
        &self,
        progress: impl Fn(usize, usize) + Send + Sync,
    ) -> Result<VectorReport> {
        let Some(embedder) = self.embedder.clone() else {
            return Ok(VectorReport::default());
        };
        let mut report = VectorReport::default();
        let mut memories: BTreeMap<RecordId, (String, String)> = BTreeMap::new();
        for entry in self.list_all(layout::MEMORIES).await? {
            if let Some(memory) = self.parse_entry(&entry.id, &entry.record) {
                let text = embedded_text(&memory);
                let hash = hash_bytes(text.as_bytes());
                memories.insert(entry.id, (text, hash));
            }
        }
        let mut stored: HashMap<RecordId, (Record, Option<StoredVector>)> = self
            .list_all(layout::VECTORS)
            .await?
            .into_iter()
            .map(|e| {
                let decoded = decode(&e.record.value);
                (e.id, (e.record, decoded))
            })
            .collect();
        let mut todo: Vec<(RecordId, String, String)> = Vec::new();
        for (id, (text, hash)) in &memories {
            let current = stored
                .remove(id)
                .and_then(|(_, v)| v)
                .is_some_and(|v| v.is_current(&*embedder, hash));
            if current {
                report.current += 1;
            } else {
                todo.push((id.clone(), text.clone(), hash.clone()));
            }
        }
        for (id, (record, _)) in stored {
            let key = layout::key(layout::VECTORS, id);
            if self
                .store
                .delete(&key, Write::matches(record.version))
                .await?
            {
                report.removed += 1;
            }
        }
        progress(0, todo.len());
        let mut done = 0;
        for chunk in todo.chunks(BACKFILL_BATCH) {
            let texts: Vec<String> = chunk.iter().map(|(_, t, _)| t.clone()).collect();
            let vectors = embedder
                .embed(&texts)
                .await
                .map_err(DreamError::Embedding)?;
            dream_core::embed::check_vectors(&vectors, texts.len(), embedder.dimensions())
                .map_err(DreamError::Embedding)?;
            for ((id, _, hash), vector) in chunk.iter().zip(vectors) {
                let header = Header {
                    model: embedder.model().to_owned(),
                    dimensions: embedder.dimensions(),
                    text: hash.clone(),
                };
                let key = layout::key(layout::VECTORS, id.clone());
                self.store
                    .put(&key, encode(&header, &vector), Write::any())
                    .await?;
                report.embedded += 1;
                // The memory may have been purged while it was embedded.
                let memory_key = layout::key(layout::MEMORIES, id.clone());
                if self.store.get(&memory_key).await?.is_none() {
                    self.store.delete(&key, Write::any()).await?;
                    report.embedded -= 1;
                    report.removed += 1;
                }
            }
            done += chunk.len();
            progress(done, todo.len());
        }
        if report.embedded > 0 || report.removed > 0 {
            let nonce = self.ids.next(self.now());
            self.store
                .put(
                    &layout::vector_stamp_key(),
                    Bytes::from(nonce),
                    Write::any(),
                )
                .await?;
        }
        tracing::debug!(
            embedder = %embedder.describe(),
            embedded = report.embedded,
            current = report.current,
            removed = report.removed,
            "vector backfill"
        );
        Ok(report)
    }

    /// Starts a background backfill unless one is running (then it runs once
    /// more when done). Needs a Tokio runtime; failures are logged, never raised.
    pub(crate) fn schedule_backfill(&self) {
        if self.embedder.is_none() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if !self.backfills.request() {
            return;
        }
        let dream = self.clone();
        tokio::spawn(async move {
            loop {
                while dream.backfills.take_request() {
                    if let Err(error) = dream.backfill_vectors().await {
                        tracing::warn!(%error, "vector backfill failed; the next write retries");
                    }
                }
                if !dream.backfills.stop() {
                    return;
                }
            }
        });
    }
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
