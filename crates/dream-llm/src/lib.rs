//! Dream's language models over HTTP: OpenAI Chat Completions, Anthropic
//! Messages and OpenAI-compatible servers (Ollama, vLLM, llama.cpp server, …),
//! and embedding models ([`EmbedderOptions`]: OpenAI's `/v1/embeddings`, the same
//! format on compatible servers, Ollama's `/api/embed`) over the same transport.
//!
//! [`HubClient`] downloads model files from the Hugging Face hub's file endpoint,
//! only when the person asks (`dream model fetch`).
//!
//! This is the only crate in Dream that reaches the network, and only for a
//! model selected explicitly: nothing here picks a provider because a key is in
//! the environment. Keys come from an explicit [`ApiKey`] or from a standard
//! variable read on request ([`ModelOptions::api_key_from_env`]); they are
//! redacted in `Debug`, `Display`, errors and logs. Every call has a connect
//! timeout, a per-attempt timeout and a deadline for the whole call (two minutes
//! by default), retries 429, 5xx and timeouts with exponential backoff and jitter
//! (honouring `Retry-After`, within a total wait budget and the deadline), never retries 400, 401 or 403, and stops reading an answer past a
//! size cap. A non-default base URL is reported by [`HttpModel::announcement`]
//! so the caller can show it before the first call.
//!
//! TLS is rustls with the `ring` provider only.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use dream_core::llm::{CompletionRequest, LanguageModel, recover_json_object};
//! use dream_llm::ModelOptions;
//!
//! let model = ModelOptions::openai("gpt-4o-mini").api_key_from_env().build()?;
//! if let Some(line) = model.announcement() {
//!     eprintln!("{line}");
//! }
//! let answer = model
//!     .complete(&CompletionRequest {
//!         system: "You consolidate notes.".into(),
//!         user: "…".into(),
//!         json: true,
//!         max_tokens: 1024,
//!         temperature: 0.0,
//!     })
//!     .await?;
//! let plan = recover_json_object(&answer.text, answer.truncated)?;
//! # let _ = plan; Ok(()) }
//! ```

mod client;
mod config;
mod embed;
mod error;
mod hub;
mod key;
mod wire;

pub use client::HttpModel;
pub use config::{
    ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_VERSION, DEFAULT_BACKOFF_BASE, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_DEADLINE, DEFAULT_MAX_BACKOFF, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_TOTAL_WAIT, DEFAULT_REQUEST_TIMEOUT, MAX_MODEL_NAME_LEN, ModelOptions,
    ModelSelection, Models, OPENAI_DEFAULT_BASE_URL, Provider, Redactor,
};
pub use embed::{DEFAULT_EMBED_BATCH, EmbedWire, EmbedderOptions, HttpEmbedder, MAX_EMBED_REQUEST};
pub use error::ConfigError;
pub use hub::{DEFAULT_HUB_ENDPOINT, HUB_ENDPOINT_VAR, HubClient, HubFile, MAX_HUB_REDIRECTS};
pub use key::{ANTHROPIC_API_KEY_VAR, ApiKey, MAX_KEY_LEN, OPENAI_API_KEY_VAR};
