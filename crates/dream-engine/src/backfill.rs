//! The vector backfill: the handle's memory vectors (the records of
//! [`crate::vectors`]) kept current with its embedder.
//!
//! Vectors are derived state: computed outside the lease after a write
//! ([`Dream::backfill_vectors`], started in the background by every event of a
//! handle with an embedder), so a failing or slow embedder never blocks a
//! write or a pass; removed with the persisted recall index by every purge, and
//! then backfilled again. Written through the handle's store, so an encrypted
//! store encrypts them. After each backfill that changed something,
//! `state/vectors` holds a fresh nonce, so recall reloads its vectors.
//!
//! [`Dream::backfill_vectors`]: crate::Dream::backfill_vectors

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use dream_core::{Embedder, Record, RecordId, Write};

use crate::error::{DreamError, Result};
use crate::handles::Upkeep;
use crate::layout::{self, hash_bytes};
use crate::state::State;
use crate::vectors::{Header, StoredVector, VectorReport, decode, embedded_text, encode};

/// Most texts sent to the embedder per call during a backfill.
pub(crate) const BACKFILL_BATCH: usize = 64;

impl Upkeep<'_> {
    pub(crate) async fn backfill_idle(&self) {
        while !self.backfills.is_idle() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    pub(crate) async fn backfill_vectors(&self) -> Result<VectorReport> {
        self.backfill_vectors_with_progress(|_, _| {}).await
    }

    pub(crate) async fn backfill_vectors_with_progress(
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
}

impl State {
    /// Starts a background backfill unless one is running (then it runs once
    /// more when done). Needs a Tokio runtime; failures are logged, never raised.
    pub(crate) fn schedule_backfill(&self) {
        if self.embedder.is_none() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        if !self.backfills.request() {
            return;
        }
        let state = self.clone();
        tokio::spawn(async move {
            loop {
                while state.backfills.take_request() {
                    if let Err(error) = state.upkeep().backfill_vectors().await {
                        tracing::warn!(%error, "vector backfill failed; the next write retries");
                    }
                }
                if !state.backfills.stop() {
                    return;
                }
            }
        });
    }
}
