//! Vector recall (issue 19): vectors computed by the engine from each memory's
//! text and stored beside it, recomputed when the model, dimension or text
//! changes, removed by purges; hybrid ranking with the lexical fallback when the
//! query cannot be embedded; the firewall judging whatever ranked a record; and
//! a hub memory that must not dominate.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use dream_core::testing::{HashEmbedder, MemoryStore};
use dream_core::{
    Bytes, Key, Memory, MemoryId, MemoryKind, Namespace, RecordId, RecordStore, Scope, SessionId,
    SystemClock, Write, render_memory,
};
use dream_engine::recall::{
    FirewallVerdict, FusionParams, Ranker, Recall, RecallOptions, VectorOptions,
};
use dream_engine::{Dream, NewMemory, Options, Remembered, layout};

const DIMS: usize = 384;

fn memory(id: &str, scope: &str, name: &str, content: &str) -> Memory {
    let at = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
    let mut m = Memory::new(
        MemoryId::new(id).unwrap(),
        MemoryKind::Project,
        name,
        name,
        content,
        at,
    );
    m.scope = Scope::new(scope).unwrap();
    m.sources = vec![SessionId::new("s1").unwrap()];
    m
}

/// Writes memories as stored records (as the engine renders them).
async fn plant(store: &MemoryStore, memories: &[Memory]) {
    for m in memories {
        let key = Key::new(
            Namespace::new(layout::MEMORIES).unwrap(),
            RecordId::new(m.id.as_str()).unwrap(),
        );
        store
            .put(&key, Bytes::from(render_memory(m)), Write::any())
            .await
            .unwrap();
    }
}

async fn vector_ids(store: &MemoryStore) -> Vec<String> {
    let page = store
        .list(&Namespace::new(layout::VECTORS).unwrap(), None, 1000)
        .await
        .unwrap();
    page.entries
        .into_iter()
        .map(|e| e.id.as_str().to_owned())
        .collect()
}

fn stored(remembered: Remembered) -> MemoryId {
    match remembered {
        Remembered::Stored(memory) => memory.id,
        other => panic!("{other:?}"),
    }
}

fn options(scope: &str) -> Options {
    Options {
        scope: Scope::new(scope).unwrap(),
        ..Options::default()
    }
}

fn hybrid(embedder: &HashEmbedder) -> RecallOptions {
    RecallOptions {
        vectors: Some(VectorOptions::new(Arc::new(embedder.clone()))),
        ..RecallOptions::default()
    }
}

fn recall(store: &Arc<MemoryStore>, options: RecallOptions) -> Recall {
    Recall::new(store.clone(), Arc::new(SystemClock), options)
}

#[tokio::test]
async fn vectors_are_backfilled_and_recomputed_when_model_dimension_or_text_change() {
    let store = Arc::new(MemoryStore::new());
    let embedder = HashEmbedder::new(DIMS);
    let dream = Dream::open(store.clone(), options("p"))
        .unwrap()
        .with_embedder(Arc::new(embedder.clone()));
    let a = stored(
        dream
            .remember(NewMemory::new(
                MemoryKind::Project,
                "Test runner",
                "The project uses Vitest, not Jest",
            ))
            .await
            .unwrap(),
    );
    dream
        .remember(NewMemory::new(
            MemoryKind::Project,
            "Deploys",
            "Deploys go to Fly.io from the main branch",
        ))
        .await
        .unwrap();
    let report = dream.backfill_vectors().await.unwrap();
    assert_eq!(report.embedded + report.current, 2, "{report:?}");
    let again = dream.backfill_vectors().await.unwrap();
    assert_eq!((again.embedded, again.current), (0, 2));
    assert_eq!(vector_ids(&store).await.len(), 2);

    // Another dimension: every vector is recomputed.
    let wider = Dream::open(store.clone(), options("p"))
        .unwrap()
        .with_embedder(Arc::new(HashEmbedder::new(DIMS * 2)));
    assert_eq!(wider.backfill_vectors().await.unwrap().embedded, 2);
    assert_eq!(dream.backfill_vectors().await.unwrap().embedded, 2);

    // A changed text: only that memory's vector.
    let mut changed = dream.get(&a).await.unwrap().unwrap();
    changed.content = "The project uses Vitest with jsdom".into();
    plant(&store, &[changed]).await;
    let after = dream.backfill_vectors().await.unwrap();
    assert_eq!((after.embedded, after.current), (1, 1));

    // A memory gone: its vector goes at the next backfill.
    dream.forget(&a).await.unwrap();
    let pruned = dream.backfill_vectors().await.unwrap();
    assert_eq!(pruned.removed, 1);
    assert_eq!(vector_ids(&store).await.len(), 1);
}

#[tokio::test]
async fn a_failing_or_slow_embedder_never_blocks_a_write_and_recall_falls_back() {
    let store = Arc::new(MemoryStore::new());
    let embedder = HashEmbedder::new(DIMS);
    embedder.set_failing(true);
    let dream = Dream::open(store.clone(), options("p"))
        .unwrap()
        .with_embedder(Arc::new(embedder.clone()));
    dream
        .remember(NewMemory::new(
            MemoryKind::Project,
            "Test runner",
            "The project uses Vitest, not Jest",
        ))
        .await
        .unwrap();
    assert!(dream.backfill_vectors().await.is_err());
    assert!(vector_ids(&store).await.is_empty());

    // Recall: the query cannot be embedded, lexical ranking answers and says why.
    let fallback = recall(&store, hybrid(&embedder));
    let scope = Scope::new("p").unwrap();
    let found = fallback.recall("vitest", &scope, 5).await.unwrap();
    assert!(
        matches!(&found.ranker, Ranker::LexicalFallback { reason } if reason.contains("failed")),
        "{:?}",
        found.ranker
    );
    assert_eq!(found.records[0].verdict, FirewallVerdict::Used);
    let nothing = fallback.recall("kubernetes", &scope, 5).await.unwrap();
    let diagnosis = nothing.policy.diagnosis.unwrap();
    assert!(diagnosis.contains("lexical ranking only"), "{diagnosis}");

    // Slow: the query's embedding times out within the recall's bound.
    embedder.set_failing(false);
    embedder.set_delay(Some(Duration::from_secs(30)));
    let mut slow = hybrid(&embedder);
    slow.vectors.as_mut().unwrap().timeout = Duration::from_millis(200);
    let slow_recall = recall(&store, slow);
    let started = Instant::now();
    let found = slow_recall.recall("vitest", &scope, 5).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        matches!(&found.ranker, Ranker::LexicalFallback { reason } if reason.contains("timed out")),
        "{:?}",
        found.ranker
    );
    assert_eq!(found.records[0].verdict, FirewallVerdict::Used);

    // A write while the embedder hangs returns at once (the backfill runs behind).
    let started = Instant::now();
    dream
        .remember(NewMemory::new(
            MemoryKind::Project,
            "Editor",
            "The team edits with Helix",
        ))
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn vector_ranking_finds_a_record_no_query_word_matches() {
    let store = Arc::new(MemoryStore::new());
    plant(
        &store,
        &[
            memory(
                "runner",
                "p",
                "Test runner",
                "The project uses Vitest, not Jest",
            ),
            memory("deploys", "p", "Deploys", "Deploys go to Fly.io from main"),
            memory("db", "p", "Database", "Postgres 16 holds the orders"),
            memory("style", "p", "Style", "Tabs, not spaces, in Go files"),
        ],
    )
    .await;
    let embedder = HashEmbedder::new(DIMS);
    let dream = Dream::open(store.clone(), options("p"))
        .unwrap()
        .with_embedder(Arc::new(embedder.clone()));
    assert_eq!(dream.backfill_vectors().await.unwrap().embedded, 4);
    let scope = Scope::new("p").unwrap();
    // "vittest" (a typo) shares no stem with the memory: BM25F without sub-words finds
    // nothing, the vectors (shared trigrams) do.
    let lexical = recall(
        &store,
        RecallOptions {
            subwords: false,
            ..RecallOptions::default()
        },
    );
    let none = lexical.recall("vittest", &scope, 5).await.unwrap();
    assert!(none.used().next().is_none());
    let fused = recall(
        &store,
        RecallOptions {
            subwords: false,
            ..hybrid(&embedder)
        },
    );
    let found = fused.recall("vittest", &scope, 5).await.unwrap();
    assert!(
        matches!(found.ranker, Ranker::Hybrid { .. }),
        "{:?}",
        found.ranker
    );
    assert_eq!(found.records[0].id.as_str(), "runner", "{found}");
    assert_eq!(found.records[0].verdict, FirewallVerdict::Used);
    // Vectors alone (lexical switched off) rank it first too.
    let vectors_only = recall(
        &store,
        RecallOptions {
            lexical: false,
            ..hybrid(&embedder)
        },
    );
    let found = vectors_only.recall("vittest", &scope, 5).await.unwrap();
    assert_eq!(found.records[0].id.as_str(), "runner", "{found}");
}

#[tokio::test]
async fn the_firewall_judges_a_record_however_it_was_ranked() {
    let store = Arc::new(MemoryStore::new());
    let mut ungrounded = memory("tips", "p", "Vitest tips", "Run vitest in watch mode");
    ungrounded.sources.clear();
    let mut doubtful = memory("doubt", "p", "Vitest maybe", "Vitest might be replaced");
    doubtful.confidence = 0.2;
    plant(
        &store,
        &[
            memory("runner", "p", "Test runner", "The project uses Vitest"),
            ungrounded,
            doubtful,
            memory(
                "elsewhere",
                "q",
                "Vitest elsewhere",
                "Vitest in another project",
            ),
        ],
    )
    .await;
    let embedder = HashEmbedder::new(DIMS);
    let dream = Dream::open(store.clone(), options("p"))
        .unwrap()
        .with_embedder(Arc::new(embedder.clone()));
    dream.backfill_vectors().await.unwrap();
    let vectors_only = recall(
        &store,
        RecallOptions {
            lexical: false,
            ..hybrid(&embedder)
        },
    );
    let result = vectors_only
        .recall("vitest", &Scope::new("p").unwrap(), 5)
        .await
        .unwrap();
    assert!(matches!(result.ranker, Ranker::Hybrid { .. }));
    assert!(!result.retried, "{result}");
    let verdict = |id: &str| {
        let r = result.verdict_of(id).expect("ranked by its vector");
        (r.verdict, r.reason.code)
    };
    assert_eq!(
        verdict("tips"),
        (FirewallVerdict::Ignored, "ungrounded"),
        "{result}"
    );
    assert_eq!(
        verdict("doubt"),
        (FirewallVerdict::Ignored, "low-confidence"),
        "{result}"
    );
    assert_eq!(
        verdict("runner"),
        (FirewallVerdict::Used, "safe-fact"),
        "{result}"
    );
    assert!(
        result.verdict_of("elsewhere").is_none(),
        "vectors stay in scope"
    );
}

#[tokio::test]
async fn purges_remove_the_vectors() {
    let store = Arc::new(MemoryStore::new());
    let embedder = HashEmbedder::new(DIMS);
    let dream = Dream::open(store.clone(), options("p"))
        .unwrap()
        .with_embedder(Arc::new(embedder.clone()));
    let a = stored(
        dream
            .remember(NewMemory::new(
                MemoryKind::Project,
                "Runner",
                "We use Vitest",
            ))
            .await
            .unwrap(),
    );
    dream
        .remember(NewMemory::new(MemoryKind::Project, "Deploys", "Fly.io"))
        .await
        .unwrap();
    dream.backfill_vectors().await.unwrap();
    assert_eq!(vector_ids(&store).await.len(), 2);
    dream.forget_purge(&a).await.unwrap();
    assert!(
        vector_ids(&store).await.is_empty(),
        "a purge removes derived state"
    );
    dream.backfill_vectors().await.unwrap();
    assert_eq!(vector_ids(&store).await.len(), 1);
    dream.purge_scope(&Scope::new("p").unwrap()).await.unwrap();
    assert!(vector_ids(&store).await.is_empty());
}

/// Twelve topics, each with a query that paraphrases it; and a hub whose text
/// stuffs a phrase of every topic, so its vector sits near their centre.
const TOPICS: [(&str, &str, &str); 12] = [
    (
        "runner",
        "The test runner is Vitest with jsdom",
        "which framework runs our unit tests",
    ),
    (
        "deploy",
        "Deployments ship to Fly.io from the main branch",
        "where do we deploy the app",
    ),
    (
        "db",
        "PostgreSQL 16 stores orders and invoices",
        "what database keeps the invoices",
    ),
    (
        "style",
        "Go code is formatted by gofmt on save",
        "how is golang code formatted",
    ),
    (
        "review",
        "Every pull request needs two approvals",
        "how many approvals does a PR need",
    ),
    (
        "oncall",
        "On-call rotates weekly on Mondays",
        "when does the on-call rotation change",
    ),
    (
        "secrets",
        "Secrets live in 1Password vaults",
        "where are the secrets stored",
    ),
    (
        "cache",
        "Redis caches sessions for thirty minutes",
        "how long are sessions cached",
    ),
    (
        "lint",
        "ESLint runs in CI with the strict preset",
        "which linter does CI run",
    ),
    (
        "docs",
        "Docs are written in mdBook under docs/",
        "what tool builds the documentation",
    ),
    (
        "release",
        "Releases are tagged with semver on Fridays",
        "when are releases tagged",
    ),
    (
        "editor",
        "The team edits with Helix and rust-analyzer",
        "what editor does the team use",
    ),
];

#[tokio::test]
async fn a_hub_memory_does_not_dominate() {
    let store = Arc::new(MemoryStore::new());
    let mut memories: Vec<Memory> = TOPICS
        .iter()
        .map(|(id, text, _)| memory(id, "p", text, text))
        .collect();
    let stuffed: Vec<&str> = TOPICS.iter().map(|(_, text, _)| *text).collect();
    let hub_text = format!(
        "Which, what, where, when and how: how does the team use, run, keep, store? {}",
        stuffed.join(". ")
    );
    memories.push(memory("hub", "p", "Project notes", &hub_text));
    plant(&store, &memories).await;
    let embedder = HashEmbedder::new(DIMS);
    let dream = Dream::open(store.clone(), options("p"))
        .unwrap()
        .with_embedder(Arc::new(embedder.clone()));
    dream.backfill_vectors().await.unwrap();
    let scope = Scope::new("p").unwrap();

    let hub_first = |fusion: FusionParams, lexical: bool| {
        let store = store.clone();
        let embedder = embedder.clone();
        let scope = scope.clone();
        async move {
            let mut options = hybrid(&embedder);
            options.lexical = lexical;
            options.vectors.as_mut().unwrap().fusion = fusion;
            let ranked = recall(&store, options);
            let mut hub = 0;
            let mut gold = 0;
            for (id, _, query) in TOPICS {
                let result = ranked.recall(query, &scope, 5).await.unwrap();
                match result.records.first().map(|r| r.id.as_str()) {
                    Some("hub") => hub += 1,
                    Some(first) if first == id => gold += 1,
                    _ => {}
                }
            }
            (hub, gold)
        }
    };
    // The attack works on naive vector ranking: raw cosine, no floor, vectors only.
    let naive = FusionParams {
        center: false,
        min_similarity: -1.0,
        ..FusionParams::default()
    };
    let (naive_hub, _) = hub_first(naive, false).await;
    assert!(
        naive_hub >= 6,
        "the hub is not a hub: first for {naive_hub} of 12 queries"
    );
    // Centred and floored, fused with the lexical ranks, it does not dominate.
    let (hub, gold) = hub_first(FusionParams::default(), true).await;
    assert!(hub <= 2, "the hub is first for {hub} of 12 queries");
    assert!(
        gold >= 6,
        "the right memory is first for only {gold} of 12 queries"
    );
    // Even by vectors alone.
    let (hub, _) = hub_first(FusionParams::default(), false).await;
    assert!(
        hub <= 2,
        "by vectors alone, the hub is first for {hub} of 12 queries"
    );
}
