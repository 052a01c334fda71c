//! Time per embedding on one core: the local embedder beside a raw baseline
//! (candle-transformers' BertModel run as its own examples run it: the same
//! tokenizer, the same forward pass, mean pooling, no Dream wrapper), each
//! inside a one-thread rayon pool, so the matrix kernels use one core.
//!
//! Needs the model: DREAM_TEST_MINILM=/var/tmp/dream-test-models/all-MiniLM-L6-v2
//! (python3 scripts/fetch-test-models.py). Quick run:
//! `cargo bench -p dream-embed --bench embed -- --quick`

#![allow(missing_docs)] // criterion_group! makes an undocumented function

use std::path::PathBuf;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use criterion::{Criterion, criterion_group, criterion_main};
use dream_embed::LocalEmbedder;
use tokenizers::Tokenizer;

/// A memory-sized text (about 20 tokens) and a longer one (about 120).
const SHORT: &str =
    "We use Vitest for unit tests, not Jest; run them with pnpm test before every push.";

fn long() -> String {
    [SHORT; 6].join(" ")
}

struct Raw {
    bert: BertModel,
    tokenizer: Tokenizer,
}

impl Raw {
    fn load(dir: &std::path::Path) -> Raw {
        let config: Config =
            serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
        // The file's own padding (to 128 tokens) off and its cut at the model's
        // 256 tokens, as the local embedder tokenises: the same tokens in both.
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: 256,
                ..Default::default()
            }))
            .unwrap();
        let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).unwrap();
        Raw {
            bert: BertModel::load(vb, &config).unwrap(),
            tokenizer,
        }
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        let encoding = self.tokenizer.encode(text, true).unwrap();
        let ids = Tensor::new(encoding.get_ids(), &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        let types = ids.zeros_like().unwrap();
        let hidden = self.bert.forward(&ids, &types, None).unwrap();
        let (_, n, _) = hidden.dims3().unwrap();
        let pooled = (hidden.sum(1).unwrap() / n as f64).unwrap();
        pooled.squeeze(0).unwrap().to_vec1().unwrap()
    }
}

fn bench(c: &mut Criterion) {
    let Some(dir) = std::env::var_os("DREAM_TEST_MINILM").map(PathBuf::from) else {
        eprintln!("SKIPPED: DREAM_TEST_MINILM is unset (python3 scripts/fetch-test-models.py)");
        return;
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let raw = Raw::load(&dir);
    let local = LocalEmbedder::load(&dir, "all-MiniLM-L6-v2").unwrap();
    let long = long();
    let mut group = c.benchmark_group("embed_one_core");
    for (label, text) in [("short", SHORT.to_owned()), ("long", long)] {
        let texts = vec![text.clone()];
        group.bench_function(format!("raw_candle_bert/{label}"), |b| {
            b.iter(|| pool.install(|| raw.embed(&text)))
        });
        group.bench_function(format!("local_embedder/{label}"), |b| {
            b.iter(|| pool.install(|| local.embed_blocking(&texts).unwrap()))
        });
    }
    // A backfill batch: 16 memories, one forward pass.
    let batch: Vec<String> = (0..16).map(|i| format!("{SHORT} ({i})")).collect();
    group.bench_function("local_embedder/batch16_short", |b| {
        b.iter(|| pool.install(|| local.embed_blocking(&batch).unwrap()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
