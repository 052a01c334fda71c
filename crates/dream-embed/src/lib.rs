//! Dream's built-in local embedder: a sentence-transformers model of the BERT
//! family (safetensors weights, `tokenizer.json`; all-MiniLM-L6-v2 is the
//! reference) run in process on the CPU with candle, so recall can rank by
//! meaning with no embeddings service at all ([`LocalEmbedder`]).
//!
//! Models are found in a directory or by name in the Hugging Face hub cache
//! ([`hub`]). This crate never reaches the network: `dream model fetch` downloads
//! a model through `dream-llm` (the one network crate) and stores it with
//! [`hub::HubCache::store_file`]. Nothing is downloaded when the crate builds.

mod local;

pub mod hub;

pub use local::{
    DEFAULT_MAX_TOKENS, FORWARD_BATCH, LoadError, LocalEmbedder, MAX_CONFIG_BYTES,
    MAX_TOKENIZER_BYTES, MAX_WEIGHTS_BYTES, Pooling,
};
