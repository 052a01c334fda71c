//! Keeping the index current: the generation is read first; when it changed,
//! the `memories` namespace is listed by id and version (no values), and only
//! records whose version changed are read and analysed again.
//!
//! Versions and the generation change with every write through the store, but not
//! with a hand edit of a dream-fs file (its version may survive: the store sees
//! the edit only when it reads the value) nor with a planted or swapped record.
//! So an analysis is never trusted for what recall shows without the bytes it was
//! made from, nor kept: before a memory is shown, its record is read again,
//! hashed and decoded ([`Recall::show`]); when one differs, the index is rebuilt from every
//! record read anew ([`Recall::reindex`]), analyses kept only for the same bytes.

use std::sync::{Arc, RwLock};

use std::future::Future;
use std::sync::OnceLock;

use dream_core::{Memory, Record, RecordId};
use dream_scan::Scanner;
use sha2::{Digest, Sha256};

use crate::error::DreamError;
use crate::layout;

use super::analyze::{self, AnalyzeConfig, Doc};
use super::index::Index;
use super::mapped::Mapped;
use super::persist::{self, Unusable};
use super::vocab::Vocabulary;
use super::{FirewallVerdict, Recall, RecallError, RecordVerdict};

/// One listed record: its analysis kept from the previous index, or its bytes
/// read to be analysed (with the position of the same id in the previous
/// index, whose analysis is kept when the bytes are the same).
enum Listed {
    Kept(Arc<Doc>),
    Read(RecordId, Record, Option<u32>),
}

/// Changed records are read one by one while they are at most
/// `1 / READ_ONE_BY_ONE_FRACTION` of the namespace plus `READ_ONE_BY_ONE_MIN`;
/// more, and the values are listed page by page.
const READ_ONE_BY_ONE_FRACTION: usize = 8;
/// See [`READ_ONE_BY_ONE_FRACTION`].
const READ_ONE_BY_ONE_MIN: usize = 64;

/// A walk through an index's records (sorted by id), for ids asked in
/// increasing order.
struct Walk<'a> {
    records: Option<&'a Mapped>,
    at: usize,
}

impl<'a> Walk<'a> {
    fn new(index: Option<&'a Index>) -> Self {
        Walk {
            records: index.map(|i| &i.records),
            at: 0,
        }
    }

    /// The position of `id`, if indexed.
    fn find(&mut self, id: &RecordId) -> Option<u32> {
        let records = self.records?;
        while self.at < records.len() && records.head(self.at).is_some_and(|h| h.id < id.as_str()) {
            self.at += 1;
        }
        let same = records.head(self.at).is_some_and(|h| h.id == id.as_str());
        same.then(|| u32::try_from(self.at).ok()).flatten()
    }
}

/// Runs a store read, once more when it failed with a retryable error.
async fn retried<T, F, Fut>(mut read: F) -> Result<T, RecallError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, DreamError>>,
{
    match read().await {
        Err(DreamError::Store(e)) if e.is_retryable() => read().await.map_err(from_engine),
        other => other.map_err(from_engine),
    }
}

/// The recall error for an engine read's error.
fn from_engine(e: DreamError) -> RecallError {
    match e {
        DreamError::Store(e) => RecallError::Store(e),
        DreamError::Corrupt { key, reason } => RecallError::Corrupt { key, reason },
        // The shared readers fail only with the two above.
        other => RecallError::Store(dream_core::StoreError::Corrupt {
            key: None,
            reason: other.to_string(),
        }),
    }
}

impl Recall {
    /// The index for the store's current generation, refreshed when it changed:
    /// from this process's previous index, or — with [`RecallOptions::persist`]
    /// (super::RecallOptions::persist) — from the persisted one when it is newer or
    /// of another lineage, else from nothing. Records whose version is unchanged
    /// keep their analysis, and so do records read again with the same bytes.
    pub(super) async fn index(&self) -> Result<Arc<Index>, RecallError> {
        let generation = self.read_generation().await?;
        let mut slot = self.index.lock().await;
        if let Some(index) = &*slot
            && index.generation == generation
        {
            return Ok(index.clone());
        }
        let mut base = slot.clone();
        if self.persist {
            match persist::load(&*self.store, &self.fingerprint, self.options.seal.as_ref()).await {
                Ok(snapshot) => {
                    let ours = base.as_ref().is_some_and(|b| {
                        b.lineage == snapshot.lineage && b.generation >= snapshot.generation
                    });
                    if !ours {
                        let vocab = Arc::new(RwLock::new(snapshot.vocab));
                        let loaded = self
                            .open(
                                snapshot.generation,
                                snapshot.lineage,
                                snapshot.records,
                                vocab,
                            )
                            .await?;
                        if loaded.generation == generation {
                            *slot = Some(loaded.clone());
                            return Ok(loaded);
                        }
                        base = Some(loaded);
                    }
                }
                // Never written, or removed by a purge: start from nothing, so no
                // word of a purged memory is carried over.
                Err(Unusable::Absent) => base = None,
                Err(Unusable::Rejected(why)) => {
                    tracing::warn!(why, "persisted recall index ignored; rebuilding it");
                    base = None;
                }
            }
        }
        let entries = self.listing(base.as_deref()).await?;
        self.rebuild(&mut slot, generation, base, entries).await
    }

    /// The index rebuilt from every record read anew: an analysis is kept only for
    /// the same bytes, whatever the versions and the generation say. When nothing
    /// differs from the current index, it is kept as it is.
    pub(super) async fn reindex(&self) -> Result<Arc<Index>, RecallError> {
        let generation = self.read_generation().await?;
        let mut slot = self.index.lock().await;
        let base = slot.clone();
        let entries = self.list_values(base.as_deref()).await?;
        if let Some(base) = &base
            && base.generation == generation
            && same_bytes(base, &entries)
        {
            return Ok(base.clone());
        }
        self.rebuild(&mut slot, generation, base, entries).await
    }

    /// Fills in the memory of every record `records` show (`used` and
    /// `conflict` ones), read again and decoded ([`Recall::read_memory`]);
    /// `false` as soon as one no longer holds the bytes `index` analysed it from.
    pub(super) async fn show(
        &self,
        index: &Index,
        records: &mut [RecordVerdict],
    ) -> Result<bool, RecallError> {
        let shown = records
            .iter_mut()
            .filter(|r| matches!(r.verdict, FirewallVerdict::Used | FirewallVerdict::Conflict));
        for record in shown {
            let Some(doc) = index.find(&record.id).and_then(|at| index.doc(at)) else {
                return Ok(false);
            };
            match self.read_memory(doc).await? {
                Some(memory) => record.memory = Some(Arc::new(memory)),
                None => return Ok(false),
            }
        }
        Ok(true)
    }

    /// The memory `doc` was analysed from, its record read again: `None` when
    /// the record no longer holds the same bytes.
    pub(super) async fn read_memory(&self, doc: &Doc) -> Result<Option<Memory>, RecallError> {
        let key = layout::key(layout::MEMORIES, doc.id.clone());
        let read = retried(|| async { Ok(self.store.get(&key).await?) }).await?;
        Ok(read
            .filter(|r| <[u8; 32]>::from(Sha256::digest(&r.value)) == doc.hash)
            .and_then(|r| analyze::memory(&r.value)))
    }

    /// Analyses `entries` over `base` (or from nothing), builds the index for
    /// `generation`, keeps it in `slot` and, with persistence, writes it.
    async fn rebuild(
        &self,
        slot: &mut Option<Arc<Index>>,
        generation: u64,
        base: Option<Arc<Index>>,
        entries: Vec<Listed>,
    ) -> Result<Arc<Index>, RecallError> {
        let (lineage, vocab) = match &base {
            Some(b) => (b.lineage, b.vocab.clone()),
            None => (rand::random(), Arc::default()),
        };
        let scanner = self.scanner.clone();
        let config = self.analyze.clone();
        let analysed = tokio::task::spawn_blocking({
            let vocab = Arc::clone(&vocab);
            let base = base.clone();
            move || analyse_all(entries, base.as_deref(), &scanner, &config, &vocab)
        })
        .await
        .map_err(|_| RecallError::IndexBuild)?;
        let built = self.build(generation, lineage, analysed, vocab).await?;
        *slot = Some(built.clone());
        if self.persist {
            let payload = {
                let vocab = built.vocab.read().unwrap_or_else(|e| e.into_inner());
                persist::encode(&vocab, built.records.bytes())
            };
            let saved = persist::save(
                &self.store,
                generation,
                lineage,
                payload,
                &self.fingerprint,
                self.options.seal.as_ref(),
            )
            .await;
            match saved {
                Ok(saved) => tracing::debug!(?saved, generation, "recall index persisted"),
                Err(e) => tracing::warn!(error = %e, "recall index not persisted"),
            }
        }
        Ok(built)
    }

    /// Builds the index over analysed records (extending the vocabulary's
    /// sub-word index first, when sub-words are on).
    async fn build(
        &self,
        generation: u64,
        lineage: u64,
        docs: Vec<Arc<Doc>>,
        vocab: Arc<RwLock<Vocabulary>>,
    ) -> Result<Arc<Index>, RecallError> {
        let params = self.options.rank;
        let subwords = self.options.subwords;
        let built = tokio::task::spawn_blocking(move || {
            if subwords {
                grams(&vocab);
            }
            Index::build(generation, lineage, &docs, vocab, &params)
        })
        .await
        .map_err(|_| RecallError::IndexBuild)?;
        built.map(Arc::new).ok_or(RecallError::IndexBuild)
    }

    /// The index over persisted records (extending the vocabulary's sub-word
    /// index first, when sub-words are on).
    async fn open(
        &self,
        generation: u64,
        lineage: u64,
        records: Mapped,
        vocab: Arc<RwLock<Vocabulary>>,
    ) -> Result<Arc<Index>, RecallError> {
        let params = self.options.rank;
        let subwords = self.options.subwords;
        let opened = tokio::task::spawn_blocking(move || {
            if subwords {
                grams(&vocab);
            }
            Index::open(generation, lineage, records, vocab, &params)
        })
        .await
        .map_err(|_| RecallError::IndexBuild)?;
        Ok(Arc::new(opened))
    }

    async fn read_generation(&self) -> Result<u64, RecallError> {
        let (generation, _) = retried(|| layout::read_generation(&*self.store)).await?;
        Ok(generation)
    }

    /// Every record of `memories` with its version: unchanged records are taken
    /// from `old`, changed ones read. Reads one by one when few changed, else lists
    /// the values page by page.
    async fn listing(&self, old: Option<&Index>) -> Result<Vec<Listed>, RecallError> {
        let max = self.options.max_memories;
        let too_many = || RecallError::TooManyMemories { max };
        let Some(old) = old else {
            return self.list_values(None).await;
        };
        let versions =
            retried(|| layout::list_versions_all(&*self.store, layout::MEMORIES, max)).await?;
        if versions.len() > max {
            return Err(too_many());
        }
        // Both listings are sorted by id, so they are walked together.
        let mut plan: Vec<(RecordId, Option<u32>, Option<Arc<Doc>>)> =
            Vec::with_capacity(versions.len());
        let mut changed = 0usize;
        let mut walk = Walk::new(Some(old));
        for entry in versions {
            let previous = walk.find(&entry.id);
            let kept = previous
                .filter(|at| {
                    old.records
                        .head(*at as usize)
                        .is_some_and(|h| h.version == entry.version)
                })
                .and_then(|at| old.doc(at).cloned());
            changed += usize::from(kept.is_none());
            plan.push((entry.id, previous, kept));
        }
        if changed > plan.len() / READ_ONE_BY_ONE_FRACTION + READ_ONE_BY_ONE_MIN {
            return self.list_values(Some(old)).await;
        }
        let mut out = Vec::with_capacity(plan.len());
        for (id, previous, kept) in plan {
            if let Some(doc) = kept {
                out.push(Listed::Kept(doc));
                continue;
            }
            let key = layout::key(layout::MEMORIES, id.clone());
            let record = retried(|| async { Ok(self.store.get(&key).await?) }).await?;
            // Deleted since the listing: the next generation says so.
            if let Some(record) = record {
                out.push(Listed::Read(id, record, previous));
            }
        }
        Ok(out)
    }

    /// Every record of `memories` read page by page, each with the analysis of
    /// the same id in `old`.
    async fn list_values(&self, old: Option<&Index>) -> Result<Vec<Listed>, RecallError> {
        let max = self.options.max_memories;
        let entries = retried(|| layout::list_all(&*self.store, layout::MEMORIES, max)).await?;
        if entries.len() > max {
            return Err(RecallError::TooManyMemories { max });
        }
        let mut walk = Walk::new(old);
        Ok(entries
            .into_iter()
            .map(|e| {
                let previous = walk.find(&e.id);
                Listed::Read(e.id, e.record, previous)
            })
            .collect())
    }
}

/// Whether `entries`, every record read, are the records `index` analysed:
/// the same ids with the same versions and bytes.
fn same_bytes(index: &Index, entries: &[Listed]) -> bool {
    index.len() == entries.len()
        && entries.iter().enumerate().all(|(at, entry)| {
            let Some(head) = index.records.head(at) else {
                return false;
            };
            match entry {
                Listed::Read(id, record, _) => {
                    id.as_str() == head.id
                        && record.version == head.version
                        && <[u8; 32]>::from(Sha256::digest(&record.value)) == head.hash
                }
                Listed::Kept(kept) => kept.id.as_str() == head.id && kept.version == head.version,
            }
        })
}

/// Extends the vocabulary's sub-word index to every term.
fn grams(vocab: &RwLock<Vocabulary>) {
    vocab
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .index_grams();
}

/// Records analysed on one thread before the work is split across cores.
const PARALLEL_THRESHOLD: usize = 512;

/// Analyses every listed record that was read, unless its bytes are those of
/// its previous analysis in `base`; kept records keep theirs. The scanner is built on
/// first use. New records are analysed on every available core; the vocabulary is
/// locked only while one record is tokenised, so a recall still on the previous
/// index never waits for a whole build.
fn analyse_all(
    entries: Vec<Listed>,
    base: Option<&Index>,
    scanner: &OnceLock<Scanner>,
    config: &AnalyzeConfig,
    vocab: &RwLock<Vocabulary>,
) -> Vec<Arc<Doc>> {
    let mut docs: Vec<Option<Arc<Doc>>> = Vec::with_capacity(entries.len());
    let mut todo: Vec<(usize, RecordId, Record, Option<u32>)> = Vec::new();
    for (i, entry) in entries.into_iter().enumerate() {
        match entry {
            Listed::Kept(doc) => docs.push(Some(doc)),
            Listed::Read(id, record, previous) => {
                docs.push(None);
                todo.push((i, id, record, previous));
            }
        }
    }
    let analyse = |(i, id, record, previous): (usize, RecordId, Record, Option<u32>)| {
        let hash: [u8; 32] = Sha256::digest(&record.value).into();
        let same = previous.filter(|at| {
            base.and_then(|b| b.records.head(*at as usize))
                .is_some_and(|h| h.hash == hash)
        });
        if let Some(doc) = same.and_then(|at| base?.doc(at)) {
            return (
                i,
                Arc::new(Doc {
                    version: record.version,
                    ..Doc::clone(doc)
                }),
            );
        }
        let scanner = scanner.get_or_init(crate::scan::memory_scanner);
        let doc = analyze::analyze(id, record.version, &record.value, scanner, config, vocab);
        (i, Arc::new(doc))
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let done: Vec<(usize, Arc<Doc>)> = if threads > 1 && todo.len() > PARALLEL_THRESHOLD {
        let chunk = todo.len().div_ceil(threads);
        let mut chunks: Vec<Vec<_>> = Vec::new();
        let mut rest = todo.into_iter();
        loop {
            let part: Vec<_> = rest.by_ref().take(chunk).collect();
            if part.is_empty() {
                break;
            }
            chunks.push(part);
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = chunks
                .into_iter()
                .map(|part| scope.spawn(move || part.into_iter().map(analyse).collect::<Vec<_>>()))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    } else {
        todo.into_iter().map(analyse).collect()
    };
    for (i, doc) in done {
        docs[i] = Some(doc);
    }
    docs.into_iter().flatten().collect()
}
