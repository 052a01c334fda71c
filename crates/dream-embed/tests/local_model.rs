//! The local embedder on the real all-MiniLM-L6-v2 (fetched from PyPI by
//! scripts/fetch-test-models.py; never committed). Every test here says
//! `local_model` in its name: scripts/test.sh leaves them out, counted as
//! skipped, when DREAM_TEST_MINILM is unset.

use dream_core::Embedder;
use dream_embed::LocalEmbedder;

mod common;
use common::minilm;

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[tokio::test]
async fn local_model_matches_sentence_transformers() {
    let Some(dir) = minilm() else { return };
    let model = LocalEmbedder::load(&dir, "all-MiniLM-L6-v2").unwrap();
    assert_eq!(model.dimensions(), 384);
    assert_eq!(model.max_tokens(), 256);
    assert!(model.model().starts_with("local:"));
    // sentence-transformers' quick start: SentenceTransformer("all-MiniLM-L6-v2")
    // gives these cosine similarities for these three sentences.
    let texts = [
        "The weather is lovely today.",
        "It's so sunny outside!",
        "He drove to the stadium.",
    ]
    .map(String::from);
    let v = model.embed(&texts).await.unwrap();
    for x in &v {
        let norm = x.iter().map(|a| a * a).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "not unit length: {norm}");
    }
    let pairs = [(0, 1, 0.6660), (0, 2, 0.1046), (1, 2, 0.1411)];
    for (a, b, expected) in pairs {
        let got = cosine(&v[a], &v[b]);
        assert!(
            (got - expected).abs() < 2e-3,
            "{a}-{b}: {got}, sentence-transformers gives {expected}"
        );
    }
}

#[tokio::test]
async fn local_model_batches_pad_without_changing_vectors() {
    let Some(dir) = minilm() else { return };
    let model = LocalEmbedder::load(&dir, "m").unwrap();
    let short = "We use Vitest for unit tests, not Jest.".to_owned();
    let long = "The deployment pipeline runs on every merge to main and pushes the image \
                to the staging registry before the smoke tests start."
        .repeat(40); // past 256 tokens: cut off, not refused
    let alone = model.embed(std::slice::from_ref(&short)).await.unwrap();
    let together = model.embed(&[long, short]).await.unwrap();
    let same = cosine(&alone[0], &together[1]);
    assert!(same > 0.9999, "padding changed a vector: cosine {same}");
    let question = model
        .embed(&["which test runner do we use".to_owned()])
        .await
        .unwrap();
    let unrelated = model
        .embed(&["My sister's birthday is in March.".to_owned()])
        .await
        .unwrap();
    assert!(cosine(&question[0], &alone[0]) > cosine(&question[0], &unrelated[0]) + 0.2);
}

#[test]
fn local_model_id_follows_the_files() {
    let Some(dir) = minilm() else { return };
    let a = LocalEmbedder::load(&dir, "a").unwrap();
    // The same files elsewhere: the same id. Another pooling: another id.
    let copy = tempfile::tempdir().unwrap();
    for file in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "sentence_bert_config.json",
    ] {
        std::fs::copy(dir.join(file), copy.path().join(file)).unwrap();
    }
    std::fs::create_dir(copy.path().join("1_Pooling")).unwrap();
    std::fs::copy(
        dir.join("1_Pooling/config.json"),
        copy.path().join("1_Pooling/config.json"),
    )
    .unwrap();
    let b = LocalEmbedder::load(copy.path(), "b").unwrap();
    assert_eq!(a.model(), b.model());
    assert_ne!(a.describe(), b.describe());
    std::fs::write(
        copy.path().join("1_Pooling/config.json"),
        r#"{"pooling_mode_cls_token": true}"#,
    )
    .unwrap();
    let c = LocalEmbedder::load(copy.path(), "c").unwrap();
    assert_ne!(a.model(), c.model());
    std::fs::write(
        copy.path().join("1_Pooling/config.json"),
        r#"{"pooling_mode_max_tokens": true}"#,
    )
    .unwrap();
    assert!(LocalEmbedder::load(copy.path(), "d").is_err());
}
