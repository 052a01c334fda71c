//! Why a model or embedder configuration was refused: the one error every
//! configuration step returns (`config.rs`, `key.rs`, `embed.rs`, `client.rs`).

/// Why a model configuration was refused. Never shows a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The key value is unusable.
    #[error("invalid API key: {0}")]
    InvalidKey(&'static str),
    /// The environment variable the caller named is not set.
    #[error("the environment variable {var} is not set")]
    MissingEnv {
        /// The variable's name.
        var: String,
    },
    /// The environment variable the caller named holds an unusable key.
    #[error("the environment variable {var} holds an invalid API key: {why}")]
    InvalidEnvKey {
        /// The variable's name.
        var: String,
        /// Why the value was refused.
        why: &'static str,
    },
    /// This provider needs a key and none was given.
    #[error("{provider} needs an API key (give one explicitly or call api_key_from_env)")]
    MissingKey {
        /// The provider's short name.
        provider: &'static str,
    },
    /// This provider has no key variable (OpenAI-compatible: pass a key or none).
    #[error("{provider} has no standard API key variable; pass the key explicitly")]
    NoKeyVariable {
        /// The provider's short name.
        provider: &'static str,
    },
    /// An OpenAI-compatible server needs its base URL.
    #[error("an OpenAI-compatible server needs a base URL")]
    MissingBaseUrl,
    /// The base URL is unusable.
    #[error("invalid base URL: {0}")]
    InvalidBaseUrl(&'static str),
    /// The model name is unusable.
    #[error("invalid model name: {0}")]
    InvalidModel(&'static str),
    /// A timeout, retry or size setting is unusable.
    #[error("invalid setting: {0}")]
    InvalidSetting(&'static str),
    /// The HTTP client could not be built.
    #[error("could not build the HTTP client: {0}")]
    Client(String),
}
