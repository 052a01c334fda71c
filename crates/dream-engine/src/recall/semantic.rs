//! Vector ranking for recall: the query's embedding (bounded by a timeout), the
//! scope's stored vectors (read from namespace `vectors`, kept while the index
//! generation and the backfill stamp stay the same), brute-force cosine over
//! them (see `fusion`), and the query's cosine to [`UNRELATED`] texts, embedded
//! once per process and model, against which relevance is judged (see
//! `relevance`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use dream_core::{Embedder, Scope};

use super::fusion::{FusionParams, Similarities, VectorSet};
use super::index::Index;
use super::{Recall, RecallError};
use crate::layout;
use crate::vectors::decode;

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

/// Short texts about matters no memory of a coding agent is likely to hold:
/// the query's cosine to them is what "unrelated" means for this query and
/// this model, whatever the size of the store (written for Dream).
pub const UNRELATED: [&str; 24] = [
    "The bakery on the corner sells fresh bread every morning.",
    "It rained all weekend, so the picnic was cancelled.",
    "My cousin is learning to play the violin.",
    "The football match ended in a draw after extra time.",
    "We booked a cabin by the lake for the summer holidays.",
    "Tomatoes grow best in a sunny spot with regular watering.",
    "The museum opens a new exhibition about ancient Egypt next month.",
    "He ran his first marathon in just under four hours.",
    "The recipe calls for two eggs and a cup of flour.",
    "Our neighbour's cat likes to sleep on the warm car roof.",
    "The train to the coast was delayed by twenty minutes.",
    "She painted the living room a pale shade of green.",
    "The library extended its opening hours on Saturdays.",
    "A strong wind knocked over the garden fence last night.",
    "The novel is set in a small fishing village in the north.",
    "They adopted a puppy from the animal shelter.",
    "The concert tickets sold out within an hour.",
    "Fresh snow fell on the mountains overnight.",
    "The printer on the second floor is out of paper again.",
    "Lunch today was soup and a cheese sandwich.",
    "The spreadsheet lists every invoice from last quarter.",
    "Someone left an umbrella in the meeting room.",
    "The laptop battery lasts about six hours on a full charge.",
    "Traffic was heavy on the bridge this morning.",
];

/// [`UNRELATED`] embedded by one model (unit vectors).
#[derive(Debug)]
pub(crate) struct Unrelated {
    model: String,
    vectors: Vec<Vec<f32>>,
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
    /// The query's similarity to each of the scope's vectors; `Err` with a
    /// reason when the query's embedding failed or timed out, or the vectors
    /// could not be read.
    pub(crate) async fn similarities(
        &self,
        options: &VectorOptions,
        index: &Index,
        query: &str,
        scope: &Scope,
    ) -> Result<Similarities, String> {
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
            return Ok(Similarities::default());
        };
        let similar = loaded
            .set
            .similarities(&vector, options.fusion.center, *group);
        Ok(match self.unrelated(options).await {
            Ok(unrelated) => similar.against(&vector, &unrelated.vectors),
            Err(reason) => {
                // Meaning then vouches for nothing; the words still may.
                tracing::info!(%reason, "unrelated texts not embedded");
                similar
            }
        })
    }

    /// [`UNRELATED`] embedded by `options.embedder`, once per process and model.
    async fn unrelated(&self, options: &VectorOptions) -> Result<Arc<Unrelated>, String> {
        let embedder = &options.embedder;
        let mut cached = self.unrelated.lock().await;
        if let Some(unrelated) = cached.as_ref()
            && unrelated.model == embedder.model()
        {
            return Ok(unrelated.clone());
        }
        let texts: Vec<String> = UNRELATED.iter().map(|t| (*t).to_owned()).collect();
        let vectors = match tokio::time::timeout(options.timeout, embedder.embed(&texts)).await {
            Err(_) => return Err("timed out".into()),
            Ok(Err(e)) => return Err(e.to_string()),
            Ok(Ok(vectors)) => vectors,
        };
        dream_core::embed::check_vectors(&vectors, texts.len(), embedder.dimensions())
            .map_err(|e| e.to_string())?;
        let unrelated = Arc::new(Unrelated {
            model: embedder.model().to_owned(),
            vectors: vectors
                .into_iter()
                .map(dream_core::embed::normalized)
                .collect(),
        });
        *cached = Some(unrelated.clone());
        Ok(unrelated)
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
                crate::error::DreamError::Store(e) => RecallError::Store(e),
                _ => RecallError::IndexBuild,
            })?;
        let mut scopes: HashMap<Scope, u32> = HashMap::new();
        let mut items = Vec::new();
        for entry in entries {
            let Some(at) = index.find(&entry.id) else {
                continue;
            };
            let Some(valid) = index.doc(at).and_then(|d| d.valid()) else {
                continue;
            };
            let Some(stored) = decode(&entry.record.value) else {
                continue;
            };
            if !stored.is_current(embedder, &hex::encode(valid.embedded)) {
                continue;
            }
            let next = scopes.len() as u32;
            let group = *scopes.entry(valid.scope.clone()).or_insert(next);
            items.push((at, group, stored.vector));
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
