//! Embedding models over HTTP: OpenAI's `/v1/embeddings`, the same wire format
//! on OpenAI-compatible servers (Ollama, vLLM, llama.cpp server,
//! text-embeddings-inference), and Ollama's native `/api/embed`.
//!
//! An [`HttpEmbedder`] is a [`ModelOptions`] (base URL, key, timeouts, retries,
//! response cap, redaction: the same checks and the same transport as the chat
//! clients) plus the wire format, the expected dimension and a batch size.

use std::fmt;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use dream_core::embed::{EmbedError, Embedder, MAX_DIMENSIONS, check_texts, check_vectors};
use dream_core::llm::ModelError;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::client::Transport;
use crate::config::{ModelOptions, Provider};
use crate::error::ConfigError;

/// Default most texts sent in one request.
pub const DEFAULT_EMBED_BATCH: usize = 64;
/// Largest batch size accepted (OpenAI's limit on inputs per request).
pub const MAX_EMBED_REQUEST: usize = 2048;

/// An embeddings wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmbedWire {
    /// `POST {base}/embeddings` with `{"model","input":[…]}`, answered by
    /// `{"data":[{"index","embedding"}]}`: OpenAI and every OpenAI-compatible
    /// server (with their `/v1` base URL).
    OpenAi,
    /// Ollama's native `POST {base}/api/embed` with `{"model","input":[…]}`,
    /// answered by `{"embeddings":[[…]]}` (base URL without `/v1`).
    Ollama,
}

impl EmbedWire {
    /// The path appended to the base URL.
    pub fn endpoint_path(self) -> &'static str {
        match self {
            EmbedWire::OpenAi => "/embeddings",
            EmbedWire::Ollama => "/api/embed",
        }
    }
}

/// How to reach one embedding model.
#[derive(Debug, Clone)]
pub struct EmbedderOptions {
    http: ModelOptions,
    wire: EmbedWire,
    dimensions: usize,
    batch: usize,
}

impl EmbedderOptions {
    /// An embedder speaking `wire` through `http` (its provider, model name, base
    /// URL, key, timeouts and retries), returning vectors of `dimensions`.
    pub fn new(http: ModelOptions, wire: EmbedWire, dimensions: usize) -> Self {
        EmbedderOptions {
            http,
            wire,
            dimensions,
            batch: DEFAULT_EMBED_BATCH,
        }
    }

    /// OpenAI's embeddings endpoint with this model (`text-embedding-3-small`);
    /// the dimension is sent as `dimensions`. Give the key with [`EmbedderOptions::http`].
    pub fn openai(model: impl Into<String>, dimensions: usize) -> Self {
        Self::new(ModelOptions::openai(model), EmbedWire::OpenAi, dimensions)
    }

    /// An OpenAI-compatible server at `base_url` (usually ending in `/v1`).
    pub fn openai_compatible(
        model: impl Into<String>,
        base_url: impl Into<String>,
        dimensions: usize,
    ) -> Self {
        Self::new(
            ModelOptions::openai_compatible(model, base_url),
            EmbedWire::OpenAi,
            dimensions,
        )
    }

    /// Ollama's native API at `base_url` (`http://127.0.0.1:11434`).
    pub fn ollama(
        model: impl Into<String>,
        base_url: impl Into<String>,
        dimensions: usize,
    ) -> Self {
        EmbedderOptions {
            wire: EmbedWire::Ollama,
            ..Self::openai_compatible(model, base_url, dimensions)
        }
    }

    /// Changes the transport settings (key, timeouts, retries, redaction, …).
    pub fn http(mut self, change: impl FnOnce(ModelOptions) -> ModelOptions) -> Self {
        self.http = change(self.http);
        self
    }

    /// Sends at most `texts` per request (1 to [`MAX_EMBED_REQUEST`]).
    pub fn batch(mut self, texts: usize) -> Self {
        self.batch = texts;
        self
    }

    /// Validates the configuration and builds the client.
    pub fn build(self) -> Result<HttpEmbedder, ConfigError> {
        if self.dimensions == 0 || self.dimensions > MAX_DIMENSIONS {
            return Err(ConfigError::InvalidSetting(
                "the embedding dimension must be between 1 and 16384",
            ));
        }
        if self.batch == 0 || self.batch > MAX_EMBED_REQUEST {
            return Err(ConfigError::InvalidSetting(
                "the embedding batch must be between 1 and 2048 texts",
            ));
        }
        let path = self.wire.endpoint_path();
        let transport = Transport::new(self.http, path)?;
        let announcement = transport.announcement(path, "embedder", "memory text");
        Ok(HttpEmbedder {
            transport,
            wire: self.wire,
            dimensions: self.dimensions,
            batch: self.batch,
            announcement,
        })
    }
}

/// An embedding model reached over HTTP. Build it with [`EmbedderOptions`].
pub struct HttpEmbedder {
    transport: Transport,
    wire: EmbedWire,
    dimensions: usize,
    batch: usize,
    announcement: Option<String>,
}

impl fmt::Debug for HttpEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEmbedder")
            .field("transport", &self.transport)
            .field("wire", &self.wire)
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

impl HttpEmbedder {
    /// The full URL every call is sent to (key-free).
    pub fn endpoint(&self) -> &reqwest::Url {
        &self.transport.endpoint
    }

    /// A line to show before the first call when the base URL is not the
    /// provider's official one (always, for a compatible or Ollama server):
    /// memory text will go to that address.
    pub fn announcement(&self) -> Option<String> {
        self.announcement.clone()
    }

    fn request_body(&self, texts: &[String]) -> Value {
        let model = &self.transport.config.model;
        match self.wire {
            EmbedWire::OpenAi if self.transport.config.provider == Provider::OpenAi => json!({
                "model": model,
                "input": texts,
                "encoding_format": "float",
                "dimensions": self.dimensions,
            }),
            EmbedWire::OpenAi => json!({
                "model": model,
                "input": texts,
                "encoding_format": "float",
            }),
            EmbedWire::Ollama => json!({ "model": model, "input": texts }),
        }
    }

    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = serde_json::to_vec(&self.request_body(texts)).map_err(|_| {
            ModelError::InvalidRequest("the request could not be encoded".to_owned())
        })?;
        let started = Instant::now();
        let (answer, retries) = self.transport.call(Bytes::from(body)).await?;
        let vectors = parse_answer(self.wire, &answer, texts.len())
            .map_err(|e| self.transport.fail(e, started))?;
        check_vectors(&vectors, texts.len(), self.dimensions)?;
        tracing::debug!(
            embedder = %self.describe(),
            texts = texts.len(),
            retries,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "embedding call done"
        );
        Ok(vectors)
    }
}

#[async_trait]
impl Embedder for HttpEmbedder {
    fn model(&self) -> &str {
        &self.transport.config.model
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn describe(&self) -> String {
        match self.wire {
            EmbedWire::Ollama => format!("ollama:{}", self.transport.config.model),
            EmbedWire::OpenAi => self.transport.describe(),
        }
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        check_texts(texts)?;
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.batch) {
            out.extend(self.embed_batch(chunk).await?);
        }
        Ok(out)
    }
}

#[derive(Deserialize)]
struct OpenAiAnswer {
    data: Vec<OpenAiItem>,
}

#[derive(Deserialize)]
struct OpenAiItem {
    index: usize,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct OllamaAnswer {
    embeddings: Vec<Vec<f32>>,
}

/// The vectors of an answer, in the order of the texts sent. An OpenAI answer
/// must name every index below `expected` exactly once.
fn parse_answer(
    wire: EmbedWire,
    body: &[u8],
    expected: usize,
) -> Result<Vec<Vec<f32>>, ModelError> {
    let invalid = |what: String| ModelError::InvalidResponse(what);
    match wire {
        EmbedWire::OpenAi => {
            let answer: OpenAiAnswer = serde_json::from_slice(body)
                .map_err(|e| invalid(format!("not an embeddings answer: {e}")))?;
            if answer.data.len() != expected {
                // Handed on as they are: the count check reports the mismatch.
                return Ok(answer.data.into_iter().map(|i| i.embedding).collect());
            }
            let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
            for item in answer.data {
                let slot = slots
                    .get_mut(item.index)
                    .ok_or_else(|| invalid(format!("index {} out of range", item.index)))?;
                if slot.replace(item.embedding).is_some() {
                    return Err(invalid(format!("index {} given twice", item.index)));
                }
            }
            Ok(slots.into_iter().flatten().collect())
        }
        EmbedWire::Ollama => {
            let answer: OllamaAnswer = serde_json::from_slice(body)
                .map_err(|e| invalid(format!("not an embeddings answer: {e}")))?;
            Ok(answer.embeddings)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_answers_are_put_in_index_order() {
        let body = br#"{"object":"list","data":[
            {"object":"embedding","index":1,"embedding":[0.0,1.0]},
            {"object":"embedding","index":0,"embedding":[1.0,0.0]}],
            "model":"m","usage":{"prompt_tokens":2,"total_tokens":2}}"#;
        assert_eq!(
            parse_answer(EmbedWire::OpenAi, body, 2).unwrap(),
            vec![vec![1.0, 0.0], vec![0.0, 1.0]]
        );
        let twice = br#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]}"#;
        assert!(parse_answer(EmbedWire::OpenAi, twice, 2).is_err());
        let outside = br#"{"data":[{"index":5,"embedding":[1]}]}"#;
        assert!(parse_answer(EmbedWire::OpenAi, outside, 1).is_err());
        assert!(parse_answer(EmbedWire::OpenAi, b"{\"data\":[{\"index\":0}]}", 1).is_err());
        assert!(parse_answer(EmbedWire::OpenAi, b"[]", 0).is_err());
    }

    #[test]
    fn ollama_answers_are_read() {
        let body = br#"{"model":"all-minilm","embeddings":[[0.5,0.5],[1,0]],"total_duration":1}"#;
        assert_eq!(
            parse_answer(EmbedWire::Ollama, body, 2).unwrap(),
            vec![vec![0.5, 0.5], vec![1.0, 0.0]]
        );
        assert!(parse_answer(EmbedWire::Ollama, b"{\"embeddings\":\"x\"}", 1).is_err());
    }

    #[test]
    fn settings_are_checked() {
        let base = "http://127.0.0.1:1/v1";
        assert!(
            EmbedderOptions::openai_compatible("m", base, 0)
                .build()
                .is_err()
        );
        assert!(
            EmbedderOptions::openai_compatible("m", base, MAX_DIMENSIONS + 1)
                .build()
                .is_err()
        );
        assert!(
            EmbedderOptions::openai_compatible("m", base, 8)
                .batch(0)
                .build()
                .is_err()
        );
        assert!(
            EmbedderOptions::openai("text-embedding-3-small", 8)
                .build()
                .is_err()
        );
        let built = EmbedderOptions::ollama("all-minilm", "http://127.0.0.1:11434", 384)
            .build()
            .unwrap();
        assert_eq!(
            built.endpoint().as_str(),
            "http://127.0.0.1:11434/api/embed"
        );
        assert_eq!(built.describe(), "ollama:all-minilm");
        let line = built.announcement().unwrap();
        assert!(
            line.contains("sends memory text to http://127.0.0.1:11434/api/embed"),
            "{line}"
        );
    }
}
