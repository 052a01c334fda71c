//! The language-model seam the engine calls. Implementations live in `dream-llm`
//! (HTTP providers) and, for tests, in `testing::ScriptedModel`.

use std::fmt::Debug;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// One request to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionRequest {
    /// The system text (trusted rules).
    pub system: String,
    /// The user text (framed, sanitized data).
    pub user: String,
    /// Ask for a JSON object.
    pub json: bool,
    /// Output token limit.
    pub max_tokens: u32,
    /// Sampling temperature.
    pub temperature: f32,
}

/// Tokens a call used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input: u64,
    /// Completion tokens.
    pub output: u64,
}

impl std::ops::AddAssign for TokenUsage {
    fn add_assign(&mut self, other: Self) {
        self.input += other.input;
        self.output += other.output;
    }
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// The answer text (untrusted).
    pub text: String,
    /// Tokens used.
    pub usage: TokenUsage,
    /// The model that answered.
    pub model: String,
    /// True when the answer was cut off by its token limit.
    pub truncated: bool,
}

/// Why a model call failed. Never carries a key or a request body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// No model is configured.
    #[error("no language model is configured")]
    NotConfigured,
    /// The request could not be sent or no answer arrived (after retries).
    #[error("could not reach the model provider: {0}")]
    Transport(String),
    /// The call took longer than its timeout (after retries).
    #[error("the model call timed out")]
    Timeout,
    /// The provider refused the credentials (401/403).
    #[error("the provider rejected the credentials (HTTP {status})")]
    Unauthorized {
        /// HTTP status.
        status: u16,
    },
    /// The provider kept rate-limiting (429) after retries.
    #[error("rate limited by the provider")]
    RateLimited,
    /// The provider answered with an error status.
    #[error("the provider answered HTTP {status}: {message}")]
    Provider {
        /// HTTP status.
        status: u16,
        /// The provider's error message (its `error.message`), shortened.
        message: String,
    },
    /// The answer body was larger than allowed.
    #[error("the answer was larger than {limit} bytes")]
    TooLarge {
        /// The cap, in bytes.
        limit: usize,
    },
    /// The answer could not be understood.
    #[error("invalid answer from the model: {0}")]
    InvalidResponse(String),
    /// The answer was cut off by its token limit.
    #[error("the answer was cut off by its token limit")]
    Truncated,
    /// A scripted model ran out of answers (tests).
    #[error("the scripted model has no answer left")]
    ScriptExhausted,
}

/// A language model. Dyn-compatible: the engine holds `Arc<dyn LanguageModel>`.
#[async_trait]
pub trait LanguageModel: Send + Sync + Debug + 'static {
    /// A short, key-free description (`openai:gpt-4o-mini`).
    fn describe(&self) -> String;
    /// Runs one completion.
    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, ModelError>;
}

#[async_trait]
impl<T: LanguageModel + ?Sized> LanguageModel for std::sync::Arc<T> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, ModelError> {
        (**self).complete(request).await
    }
}
