//! [`LocalEmbedder`]: a sentence-transformers model of the BERT family, run in
//! process on the CPU with candle.
//!
//! A model directory holds `config.json` (the BERT configuration),
//! `tokenizer.json`, `model.safetensors` and, as sentence-transformers writes
//! them, `sentence_bert_config.json` (`max_seq_length`) and
//! `1_Pooling/config.json` (mean or CLS pooling; mean when absent). A text is
//! tokenised, cut to `max_seq_length` tokens, run through the encoder, pooled and
//! scaled to unit length: what `SentenceTransformer.encode(...,
//! normalize_embeddings=True)` returns for all-MiniLM-L6-v2.
//!
//! The model id stored beside every vector is `local:` plus the SHA-256 of the
//! files that decide a vector (configuration, tokenizer, pooling, weights), so
//! the same files give the same id wherever they are, and other files — another
//! model, another revision — make every stored vector stale (re-embedded by the
//! next backfill).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use dream_core::embed::{EmbedError, Embedder, check_texts, check_vectors};
use dream_core::llm::ModelError;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Largest `config.json`, pooling or sentence-transformers config read.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Largest `tokenizer.json` read.
pub const MAX_TOKENIZER_BYTES: u64 = 64 << 20;
/// Largest `model.safetensors` read (the weights are held in memory).
pub const MAX_WEIGHTS_BYTES: u64 = 2 << 30;
/// Tokens per text when the model does not say (`sentence_bert_config.json`).
pub const DEFAULT_MAX_TOKENS: usize = 256;
/// Texts run through the model together.
pub const FORWARD_BATCH: usize = 16;

/// Why a local model could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A file is missing or unreadable.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is larger than its bound.
    #[error("{path} is larger than {max} bytes")]
    TooLarge {
        /// The file.
        path: String,
        /// The bound.
        max: u64,
    },
    /// A file does not hold what a sentence-transformers BERT model holds.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// Pooling of token vectors into one text vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean of the (unpadded) token vectors.
    Mean,
    /// The first token's (`[CLS]`) vector.
    Cls,
}

#[derive(Debug, Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
}

#[derive(Debug, Deserialize)]
struct SentenceConfig {
    max_seq_length: Option<usize>,
}

struct Model {
    bert: BertModel,
    tokenizer: Tokenizer,
    pooling: Pooling,
}

/// A sentence-transformers BERT model run in process (see the module docs).
#[derive(Clone)]
pub struct LocalEmbedder {
    model: Arc<Model>,
    id: String,
    label: String,
    dimensions: usize,
    max_tokens: usize,
}

impl fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("id", &self.id)
            .field("label", &self.label)
            .field("dimensions", &self.dimensions)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, LoadError> {
    let io = |source| LoadError::Io {
        path: path.display().to_string(),
        source,
    };
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > max {
        return Err(LoadError::TooLarge {
            path: path.display().to_string(),
            max,
        });
    }
    std::fs::read(path).map_err(io)
}

fn read_optional(path: &Path, max: u64) -> Result<Option<Vec<u8>>, LoadError> {
    match read_bounded(path, max) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(LoadError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

fn invalid(path: &Path, reason: impl fmt::Display) -> LoadError {
    LoadError::Invalid {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

impl LocalEmbedder {
    /// Loads the model in `dir`; `label` names it in [`Embedder::describe`]
    /// (a directory or a hub name). Reads and hashes every file: call it off
    /// the async runtime (a blocking thread) where that matters.
    pub fn load(dir: &Path, label: impl Into<String>) -> Result<Self, LoadError> {
        let config_path = dir.join("config.json");
        let config_bytes = read_bounded(&config_path, MAX_CONFIG_BYTES)?;
        let config: Config =
            serde_json::from_slice(&config_bytes).map_err(|e| invalid(&config_path, e))?;
        if let Some(kind) = config.model_type.as_deref()
            && !matches!(kind, "bert" | "roberta" | "xlm-roberta" | "camembert")
        {
            return Err(invalid(
                &config_path,
                format!("model_type {kind:?} is not of the BERT family"),
            ));
        }
        if config.hidden_size == 0 || config.hidden_size > dream_core::embed::MAX_DIMENSIONS {
            return Err(invalid(&config_path, "hidden_size out of range"));
        }

        let pooling_path = dir.join("1_Pooling").join("config.json");
        let pooling_bytes = read_optional(&pooling_path, MAX_CONFIG_BYTES)?;
        let pooling = match &pooling_bytes {
            None => Pooling::Mean,
            Some(bytes) => {
                let p: PoolingConfig =
                    serde_json::from_slice(bytes).map_err(|e| invalid(&pooling_path, e))?;
                match (
                    p.pooling_mode_mean_tokens,
                    p.pooling_mode_cls_token,
                    p.pooling_mode_max_tokens
                        || p.pooling_mode_mean_sqrt_len_tokens
                        || p.pooling_mode_weightedmean_tokens
                        || p.pooling_mode_lasttoken,
                ) {
                    (true, false, false) => Pooling::Mean,
                    (false, true, false) => Pooling::Cls,
                    _ => {
                        return Err(invalid(
                            &pooling_path,
                            "only mean or CLS pooling (one of them) is supported",
                        ));
                    }
                }
            }
        };

        let sentence_path = dir.join("sentence_bert_config.json");
        let sentence_bytes = read_optional(&sentence_path, MAX_CONFIG_BYTES)?;
        let max_tokens = match &sentence_bytes {
            None => DEFAULT_MAX_TOKENS,
            Some(bytes) => serde_json::from_slice::<SentenceConfig>(bytes)
                .map_err(|e| invalid(&sentence_path, e))?
                .max_seq_length
                .unwrap_or(DEFAULT_MAX_TOKENS),
        }
        .clamp(1, config.max_position_embeddings.max(1));

        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer_bytes = read_bounded(&tokenizer_path, MAX_TOKENIZER_BYTES)?;
        let mut tokenizer =
            Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| invalid(&tokenizer_path, e))?;
        let pad_id = tokenizer
            .get_padding()
            .map(|p| p.pad_id)
            .unwrap_or(config.pad_token_id as u32);
        let pad_token = tokenizer
            .id_to_token(pad_id)
            .unwrap_or_else(|| "[PAD]".to_owned());
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| invalid(&tokenizer_path, e))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_id,
            pad_token,
            ..PaddingParams::default()
        }));

        let weights_path = dir.join("model.safetensors");
        let weights = read_bounded(&weights_path, MAX_WEIGHTS_BYTES)?;
        let mut hash = Sha256::new();
        for part in [
            &config_bytes[..],
            &tokenizer_bytes,
            pooling_bytes.as_deref().unwrap_or(b""),
            sentence_bytes.as_deref().unwrap_or(b""),
            &weights,
        ] {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part);
        }
        let digest = hash.finalize();
        let mut id = String::from("local:");
        for b in &digest[..12] {
            use std::fmt::Write as _;
            let _ = write!(id, "{b:02x}");
        }

        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| invalid(&weights_path, e))?;
        let bert = BertModel::load(vb, &config).map_err(|e| invalid(&weights_path, e))?;
        Ok(LocalEmbedder {
            model: Arc::new(Model {
                bert,
                tokenizer,
                pooling,
            }),
            id,
            label: label.into(),
            dimensions: config.hidden_size,
            max_tokens,
        })
    }

    /// The directory of a model given as a directory or a hub name (see
    /// [`crate::hub`]): an existing directory is used as it is when
    /// `allow_dir`, anything else is resolved through the hub cache.
    pub fn locate(
        spec: &str,
        allow_dir: bool,
        cache: &crate::hub::HubCache,
    ) -> Result<PathBuf, crate::hub::HubError> {
        let path = Path::new(spec);
        if allow_dir && path.is_dir() {
            return Ok(path.to_path_buf());
        }
        cache.resolve(&crate::hub::ModelName::parse(spec)?)
    }

    /// Most tokens of a text the model reads (the rest is cut off).
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The vectors of `texts`, unit length, computed on this thread.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(FORWARD_BATCH) {
            out.extend(self.forward(chunk).map_err(|e| e.to_string())?);
        }
        Ok(out)
    }

    fn forward(
        &self,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, Box<dyn std::error::Error + Send + Sync>> {
        let model = &self.model;
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encodings = model.tokenizer.encode_batch(inputs, true)?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.get_ids().len()).max(1);
        let mut ids = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        for encoding in &encodings {
            let (e_ids, e_mask) = (encoding.get_ids(), encoding.get_attention_mask());
            if e_ids.len() != width {
                return Err("the tokenizer padded a batch unevenly".into());
            }
            ids.extend_from_slice(e_ids);
            mask.extend_from_slice(e_mask);
        }
        let device = &model.bert.device;
        let ids = Tensor::from_vec(ids, (rows, width), device)?;
        let mask = Tensor::from_vec(mask, (rows, width), device)?;
        let types = ids.zeros_like()?;
        let hidden = model.bert.forward(&ids, &types, Some(&mask))?; // (rows, width, dims)
        let pooled = match model.pooling {
            Pooling::Mean => {
                let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (rows, width, 1)
                let summed = hidden.broadcast_mul(&mask)?.sum(1)?; // (rows, dims)
                let counts = mask.sum(1)?.maximum(1e-9)?; // (rows, 1)
                summed.broadcast_div(&counts)?
            }
            Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
        };
        let norms = pooled.sqr()?.sum_keepdim(1)?.sqrt()?.maximum(1e-12)?;
        let unit = pooled.broadcast_div(&norms)?;
        Ok(unit.to_vec2::<f32>()?)
    }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn model(&self) -> &str {
        &self.id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn describe(&self) -> String {
        format!("local:{}", self.label)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        check_texts(texts)?;
        let this = self.clone();
        let owned = texts.to_vec();
        let vectors = tokio::task::spawn_blocking(move || this.embed_blocking(&owned))
            .await
            .map_err(|e| {
                EmbedError::Model(ModelError::InvalidResponse(format!("local model: {e}")))
            })?
            .map_err(|e| {
                EmbedError::Model(ModelError::InvalidResponse(format!("local model: {e}")))
            })?;
        check_vectors(&vectors, texts.len(), self.dimensions)?;
        Ok(vectors)
    }
}
