//! Vector ranking for recall: the query's embedding (bounded by a timeout), the
//! scope's stored vectors (read from namespace `vectors`, kept while the index
//! generation and the backfill stamp stay the same), and brute-force cosine over
//! them (see `fusion`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use dream_core::{Embedder, Scope};

use super::fusion::{FusionParams, VectorSet};
use super::index::Index;
use super::{Recall, RecallError};
use crate::layout::{self, hash_bytes};
use crate::vectors::{decode, embedded_text};

/// Vector ranking: the embedder, how long the query's embedding may take, and
/// how its ranks are fused with the lexical ones.
#[derive(Debug, Clone)]
pub struct VectorOptions {
    /// Embeds the query; must be the model the stored vectors were made with
    /// (vectors of another model or dimension are not used).
    pub embedder: Arc<dyn Embedder>,
    /// Longest wait for the query's embedding; past it, lexical ranking is used
    /// (default 5 s).
    pub timeout: Duration,
    /// Fusion and hub protection.
    pub fusion: FusionParams,
}

impl VectorOptions {
    /// Defaults around `embedder`.
    pub fn new(embedder: Arc<dyn Embedder>) -> Self {
        VectorOptions {
            embedder,
            timeout: Duration::from_secs(5),
            fusion: FusionParams::default(),
        }
    }
}

/// The vectors loaded for one index.
#[derive(Debug)]
pub(crate) struct Loaded {
    generation: u64,
    lineage: u64,
    stamp: Option<Bytes>,
    scopes: HashMap<Scope, u32>,
    set: VectorSet,
}

impl Recall {
    /// The scope's documents closest in meaning to `query`, best first; `Err`
    /// with a reason when the query's embedding failed or timed out, or the
    /// vectors could not be read.
    pub(crate) async fn vector_ranks(
        &self,
        options: &VectorOptions,
        index: &Index,
        query: &str,
        scope: &Scope,
        pool: usize,
    ) -> Result<Vec<u32>, String> {
        let embedder = &options.embedder;
        let texts = [query.to_owned()];
        let vector = match tokio::time::timeout(options.timeout, embedder.embed(&texts)).await {
            Err(_) => {
                return Err(format!(
                    "the query's embedding ({}) timed out after {} ms",
                    embedder.describe(),
                    options.timeout.as_millis()
                ));
            }
            Ok(Err(e)) => {
                return Err(format!(
                    "the query's embedding ({}) failed: {e}",
                    embedder.describe()
                ));
            }
            Ok(Ok(mut vectors)) => {
                dream_core::embed::check_vectors(&vectors, 1, embedder.dimensions())
                    .map_err(|e| format!("the query's embedding is unusable: {e}"))?;
                vectors.remove(0)
            }
        };
        let loaded = self
            .vector_set(embedder.as_ref(), index)
            .await
            .map_err(|e| format!("the stored vectors could not be read: {e}"))?;
        let Some(group) = loaded.scopes.get(scope) else {
            return Ok(Vec::new());
        };
        Ok(loaded.set.rank(&vector, &options.fusion, pool, *group))
    }

    /// The current vectors of `index`'s valid memories, read again when the
    /// index or the backfill stamp changed.
    async fn vector_set(
        &self,
        embedder: &dyn Embedder,
        index: &Index,
    ) -> Result<Arc<Loaded>, RecallError> {
        let stamp = self
            .store
            .get(&layout::vector_stamp_key())
            .await?
            .map(|r| r.value);
        let mut cached = self.vectors.lock().await;
        if let Some(loaded) = cached.as_ref()
            && loaded.generation == index.generation
            && loaded.lineage == index.lineage
            && loaded.stamp == stamp
        {
            return Ok(loaded.clone());
        }
        let entries = layout::list_all(&*self.store, layout::VECTORS, self.options.max_memories)
            .await
            .map_err(|e| match e {
                crate::DreamError::Store(e) => RecallError::Store(e),
                _ => RecallError::IndexBuild,
            })?;
        let mut scopes: HashMap<Scope, u32> = HashMap::new();
        let mut items = Vec::new();
        for entry in entries {
            let Ok(at) = index.docs.binary_search_by(|d| d.id.cmp(&entry.id)) else {
                continue;
            };
            let Some(valid) = index.docs[at].valid() else {
                continue;
            };
            let Some(stored) = decode(&entry.record.value) else {
                continue;
            };
            let text = hash_bytes(embedded_text(&valid.memory).as_bytes());
            if !stored.is_current(embedder, &text) {
                continue;
            }
            let next = scopes.len() as u32;
            let group = *scopes.entry(valid.memory.scope.clone()).or_insert(next);
            items.push((at as u32, group, stored.vector));
        }
        let loaded = Arc::new(Loaded {
            generation: index.generation,
            lineage: index.lineage,
            stamp,
            scopes,
            set: VectorSet::new(items, embedder.dimensions()),
        });
        tracing::debug!(vectors = loaded.set.len(), "recall vectors loaded");
        *cached = Some(loaded.clone());
        Ok(loaded)
    }
}
