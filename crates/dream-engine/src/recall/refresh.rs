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
use super::index::{Index, RankParams};
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

    /// Builds the index over analysed records.
    async fn build(
        &self,
        generation: u64,
        lineage: u64,
        docs: Vec<Arc<Doc>>,
        vocab: Arc<RwLock<Vocabulary>>,
    ) -> Result<Arc<Index>, RecallError> {
        let built = self
            .with_grams(vocab, move |vocab, params| {
                Index::build(generation, lineage, &docs, vocab, params)
            })
            .await?;
        built.map(Arc::new).ok_or(RecallError::IndexBuild)
    }

    /// The index over persisted records.
    async fn open(
        &self,
        generation: u64,
        lineage: u64,
        records: Mapped,
        vocab: Arc<RwLock<Vocabulary>>,
    ) -> Result<Arc<Index>, RecallError> {
        let opened = self
            .with_grams(vocab, move |vocab, params| {
                Index::open(generation, lineage, records, vocab, params)
            })
            .await?;
        Ok(Arc::new(opened))
    }

    /// Runs `make` on the blocking pool once the vocabulary's sub-word index
    /// covers every term (when sub-words are on), as building and opening an
    /// index both need.
    async fn with_grams<T: Send + 'static>(
        &self,
        vocab: Arc<RwLock<Vocabulary>>,
        make: impl FnOnce(Arc<RwLock<Vocabulary>>, &RankParams) -> T + Send + 'static,
    ) -> Result<T, RecallError> {
        let params = self.options.rank;
        let subwords = self.options.subwords;
        tokio::task::spawn_blocking(move || {
            if subwords {
                grams(&vocab);
            }
            make(vocab, &params)
        })
        .await
        .map_err(|_| RecallError::IndexBuild)
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

/// One record of [`analyse_all`] on its way: its analysis kept from the base
/// (the same bytes), or tokenised and waiting for its term ids.
enum Pending {
    Kept(Arc<Doc>),
    Tokenised(Box<analyze::Tokenised>),
}

/// Analyses every listed record that was read, unless its bytes are those of
/// its previous analysis in `base`; kept records keep theirs. The scanner is built on
/// first use. New records are analysed on every available core, each part noting
/// its words in its own lexicon; the vocabulary is then locked only while the
/// parts' new words are interned in record order (so the term ids do not depend
/// on the split), and a recall still on the previous index never waits for a
/// whole build.
fn analyse_all(
    entries: Vec<Listed>,
    base: Option<&Index>,
    scanner: &OnceLock<Scanner>,
    config: &AnalyzeConfig,
    vocab: &RwLock<Vocabulary>,
) -> Vec<Arc<Doc>> {
    let reads = entries
        .iter()
        .filter(|e| matches!(e, Listed::Read(..)))
        .count();
    let parts = if reads > PARALLEL_THRESHOLD {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    };
    analyse_in_parts(entries, base, scanner, config, vocab, parts)
}

/// [`analyse_all`] with the records to analyse cut into `parts`.
fn analyse_in_parts(
    entries: Vec<Listed>,
    base: Option<&Index>,
    scanner: &OnceLock<Scanner>,
    config: &AnalyzeConfig,
    vocab: &RwLock<Vocabulary>,
    parts: usize,
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
    let analyse = |(id, record, previous): (RecordId, Record, Option<u32>),
                   lexicon: &mut analyze::Lexicon| {
        let hash: [u8; 32] = Sha256::digest(&record.value).into();
        let same = previous.filter(|at| {
            base.and_then(|b| b.records.head(*at as usize))
                .is_some_and(|h| h.hash == hash)
        });
        if let Some(doc) = same.and_then(|at| base?.doc(at)) {
            return Pending::Kept(Arc::new(Doc {
                version: record.version,
                ..Doc::clone(doc)
            }));
        }
        let scanner = scanner.get_or_init(crate::scan::memory_scanner);
        Pending::Tokenised(Box::new(analyze::analyze(
            id,
            record.version,
            &record.value,
            hash,
            scanner,
            config,
            lexicon,
        )))
    };
    let tokenised = on_threads(split(todo, parts), |part| {
        let mut lexicon = analyze::Lexicon::default();
        let pending: Vec<(usize, Pending)> = part
            .into_iter()
            .map(|(i, id, record, previous)| (i, analyse((id, record, previous), &mut lexicon)))
            .collect();
        (lexicon, pending)
    });
    let terms: Vec<Vec<Option<u32>>> = {
        let mut vocab = vocab.write().unwrap_or_else(|e| e.into_inner());
        tokenised
            .iter()
            .map(|(lexicon, _)| lexicon.intern(&mut vocab))
            .collect()
    };
    let finished = on_threads(
        tokenised
            .into_iter()
            .map(|(_, pending)| pending)
            .zip(&terms)
            .collect(),
        |(pending, terms)| {
            pending
                .into_iter()
                .map(|(i, p)| match p {
                    Pending::Kept(doc) => (i, doc),
                    Pending::Tokenised(t) => (i, Arc::new(t.finish(terms))),
                })
                .collect::<Vec<_>>()
        },
    );
    for (i, doc) in finished.into_iter().flatten() {
        docs[i] = Some(doc);
    }
    docs.into_iter().flatten().collect()
}

/// `items` cut into at most `parts` runs of about equal length, in order.
fn split<T>(items: Vec<T>, parts: usize) -> Vec<Vec<T>> {
    let chunk = items.len().div_ceil(parts.max(1)).max(1);
    let mut out: Vec<Vec<T>> = Vec::with_capacity(parts);
    let mut rest = items.into_iter();
    loop {
        let part: Vec<T> = rest.by_ref().take(chunk).collect();
        if part.is_empty() {
            return out;
        }
        out.push(part);
    }
}

/// `work` on each part, on a thread of its own when there are several; the
/// results in the parts' order.
fn on_threads<T: Send, R: Send>(parts: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    if parts.len() < 2 {
        return parts.into_iter().map(work).collect();
    }
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .into_iter()
            .map(|part| scope.spawn(move || work(part)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::mapped::Mapped;
    use crate::recall::tokenize::{Language, LanguageSet};

    /// The same records analysed in one part and in several give the same
    /// vocabulary (term ids in the same order) and the same index bytes.
    #[test]
    fn analyses_do_not_depend_on_how_the_records_are_split() {
        let config = AnalyzeConfig {
            languages: LanguageSet::of(&[Language::English, Language::German]),
            default_language: Language::English,
            quarantine_suspicious: false,
            seal: None,
        };
        let texts = [
            "We ship on Fridays after the review.",
            "Die Tests laufen mit vitest und der Server startet neu.",
            "The runner uses jest; deploys wait for Monday.",
            "not a memory",
        ];
        let listed = || -> Vec<Listed> {
            (0..40)
                .map(|i| {
                    let id = RecordId::new(format!("m{i:03}")).unwrap();
                    let mut memory = dream_core::Memory::new(
                        dream_core::MemoryId::new(id.as_str()).unwrap(),
                        dream_core::MemoryKind::ALL[i % 4],
                        format!("note {i}"),
                        texts[(i + 1) % texts.len()].to_owned(),
                        format!("{} {}", texts[i % texts.len()], i * 7),
                        chrono::DateTime::UNIX_EPOCH,
                    );
                    memory.tags = vec![format!("tag{}", i % 5)];
                    let bytes = if i % 9 == 0 {
                        texts[i % texts.len()].as_bytes().to_vec()
                    } else {
                        dream_core::render_memory(&memory).into_bytes()
                    };
                    let record = Record {
                        value: bytes.into(),
                        version: dream_core::Version(i as u64 + 1),
                    };
                    Listed::Read(id, record, None)
                })
                .collect()
        };
        let scanner = OnceLock::new();
        let built = |parts: usize| {
            let vocab = RwLock::new(Vocabulary::default());
            let docs = analyse_in_parts(listed(), None, &scanner, &config, &vocab, parts);
            let vocab = vocab.into_inner().unwrap();
            let names: Vec<String> = (0..vocab.len())
                .map(|t| vocab.name(u32::try_from(t).unwrap()).to_owned())
                .collect();
            (names, Mapped::encode(&docs, vocab.len()))
        };
        let (names, bytes) = built(1);
        assert!(names.len() > 20, "the records hold words");
        for parts in [2, 3, 7] {
            assert_eq!(
                built(parts),
                (names.clone(), bytes.clone()),
                "{parts} parts"
            );
        }
    }
}
