//! The model chosen with `--llm`. Offline (the default) builds nothing and
//! reaches no network; a remote model is built only when chosen explicitly.

use std::sync::Arc;

use clap::ValueEnum;
use dream::core::LanguageModel;

use super::CliError;

/// Which language model consolidates and recalls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum LlmChoice {
    /// No model, no network: the deterministic rule-based consolidator and lexical recall.
    #[default]
    Offline,
    /// OpenAI Chat Completions (key from OPENAI_API_KEY).
    Openai,
    /// Anthropic Messages (key from ANTHROPIC_API_KEY).
    Anthropic,
    /// An OpenAI-compatible server at --base-url (Ollama, vLLM, llama.cpp server, …).
    Compatible,
}

/// Which embedding model computes memory vectors for recall by meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum EmbedderChoice {
    /// No embedder, no vectors, no network: recall ranks by words.
    #[default]
    None,
    /// OpenAI's embeddings endpoint (key from OPENAI_API_KEY).
    Openai,
    /// An OpenAI-compatible embeddings server at --embedding-url (Ollama, vLLM,
    /// llama.cpp server, text-embeddings-inference; optional key from DREAM_COMPATIBLE_API_KEY).
    Compatible,
    /// Ollama's native /api/embed at --embedding-url.
    Ollama,
}

/// Environment variable with an optional key for `--llm compatible`.
#[cfg(feature = "llm")]
pub const COMPATIBLE_KEY_ENV: &str = "DREAM_COMPATIBLE_API_KEY";

/// Time limits of a model call from `--timeout`/`--deadline` or `dream.toml`, in
/// seconds; `None` keeps the client's default.
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(not(feature = "llm"), allow(dead_code))] // read only by the model client
pub struct TimeLimits {
    /// One attempt.
    pub attempt: Option<u64>,
    /// The whole call, retries and waits included.
    pub call: Option<u64>,
}

impl TimeLimits {
    #[cfg_attr(not(feature = "llm"), allow(dead_code))]
    fn is_set(&self) -> bool {
        self.attempt.is_some() || self.call.is_some()
    }
}

/// Builds the chosen model; `None` for offline. Announces a non-default base URL on stderr.
#[cfg(feature = "llm")]
pub fn build(
    choice: LlmChoice,
    name: Option<String>,
    base_url: Option<String>,
    limits: TimeLimits,
) -> Result<Option<Arc<dyn LanguageModel>>, CliError> {
    use dream::llm::{ApiKey, ModelOptions};
    use std::time::Duration;
    let config = match choice {
        LlmChoice::Offline => {
            if base_url.is_some() {
                return Err(CliError::usage(
                    "--base-url needs --llm openai, anthropic or compatible",
                ));
            }
            if limits.is_set() {
                return Err(CliError::usage(
                    "--timeout and --deadline need --llm openai, anthropic or compatible",
                ));
            }
            return Ok(None);
        }
        LlmChoice::Openai => {
            ModelOptions::openai(name.unwrap_or_else(|| "gpt-4o-mini".into())).api_key_from_env()
        }
        LlmChoice::Anthropic => {
            ModelOptions::anthropic(name.unwrap_or_else(|| "claude-3-5-haiku-latest".into()))
                .api_key_from_env()
        }
        LlmChoice::Compatible => {
            let url = base_url
                .clone()
                .ok_or_else(|| CliError::usage("--llm compatible needs --base-url"))?;
            let name = name.ok_or_else(|| CliError::usage("--llm compatible needs --model"))?;
            let config = ModelOptions::openai_compatible(name, url);
            match std::env::var_os(COMPATIBLE_KEY_ENV) {
                Some(_) => config.api_key(ApiKey::from_env(COMPATIBLE_KEY_ENV)?),
                None => config,
            }
        }
    };
    let config = match base_url {
        Some(url) if choice != LlmChoice::Compatible => config.base_url(url),
        _ => config,
    };
    let (attempt, call) = config.time_limits();
    let seconds = |flag: &str, value: Option<u64>, default: Duration| match value {
        Some(0) => Err(CliError::usage(format!("{flag} must be at least 1 second"))),
        Some(s) => Ok(Duration::from_secs(s)),
        None => Ok(default),
    };
    let call = seconds("--deadline", limits.call, call)?;
    let attempt = seconds("--timeout", limits.attempt, attempt.min(call))?;
    let config = config
        .timeouts(dream::llm::DEFAULT_CONNECT_TIMEOUT.min(attempt), attempt)
        .deadline(call);
    let model = config.redact_with(redact_secrets).build()?;
    if let Some(line) = model.announcement() {
        eprintln!("{line}");
    }
    Ok(Some(Arc::new(model)))
}

/// A provider's error message with its secrets redacted, as session text is.
#[cfg(feature = "llm")]
fn redact_secrets(text: &str) -> String {
    dream::scan::Scanner::new(dream::scan::Mode::Transcript)
        .redact(text)
        .into_owned()
}

/// Without the `llm` feature only offline mode exists.
#[cfg(not(feature = "llm"))]
pub fn build(
    choice: LlmChoice,
    _: Option<String>,
    _: Option<String>,
    _: TimeLimits,
) -> Result<Option<Arc<dyn LanguageModel>>, CliError> {
    match choice {
        LlmChoice::Offline => Ok(None),
        _ => Err(CliError::usage(
            "this dream was built without feature `llm`; rebuild with --features llm",
        )),
    }
}

/// The embedding model chosen with `--embedder`: its name, dimension and base URL.
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(feature = "llm"), allow(dead_code))] // read only by the embedding client
pub struct EmbedderSpec {
    /// `--embedding-model` or `embedding_model` in `dream.toml`.
    pub model: Option<String>,
    /// `--embedding-dims` or `embedding_dims` in `dream.toml`.
    pub dimensions: Option<usize>,
    /// `--embedding-url`.
    pub base_url: Option<String>,
}

/// Builds the chosen embedder; `None` when none is chosen (the default: no
/// vectors, no network). Always announces on stderr where memory text is sent.
#[cfg(feature = "llm")]
pub fn build_embedder(
    choice: EmbedderChoice,
    spec: EmbedderSpec,
) -> Result<Option<Arc<dyn dream::core::Embedder>>, CliError> {
    use dream::core::Embedder;
    use dream::llm::{ApiKey, EmbedderOptions};
    let EmbedderSpec {
        model,
        dimensions,
        base_url,
    } = spec;
    if choice == EmbedderChoice::None {
        if base_url.is_some() {
            return Err(CliError::usage(
                "--embedding-url needs --embedder openai, compatible or ollama",
            ));
        }
        return Ok(None);
    }
    let dimensions = dimensions.ok_or_else(|| {
        CliError::usage("--embedder needs --embedding-dims (or embedding_dims in dream.toml)")
    })?;
    let model = model.ok_or_else(|| {
        CliError::usage("--embedder needs --embedding-model (or embedding_model in dream.toml)")
    })?;
    let url = || {
        base_url
            .clone()
            .ok_or_else(|| CliError::usage("--embedder compatible and ollama need --embedding-url"))
    };
    let config = match choice {
        EmbedderChoice::None => unreachable!("handled above"),
        EmbedderChoice::Openai => {
            let config = EmbedderOptions::openai(model, dimensions).http(|c| c.api_key_from_env());
            match &base_url {
                Some(url) => config.http(|c| c.base_url(url.clone())),
                None => config,
            }
        }
        EmbedderChoice::Compatible => {
            let config = EmbedderOptions::openai_compatible(model, url()?, dimensions);
            match std::env::var_os(COMPATIBLE_KEY_ENV) {
                Some(_) => {
                    let key = ApiKey::from_env(COMPATIBLE_KEY_ENV)?;
                    config.http(|c| c.api_key(key))
                }
                None => config,
            }
        }
        EmbedderChoice::Ollama => EmbedderOptions::ollama(model, url()?, dimensions),
    };
    let embedder = config.http(|c| c.redact_with(redact_secrets)).build()?;
    let line = embedder.announcement().unwrap_or_else(|| {
        format!(
            "embedder {} sends memory text to {}",
            embedder.describe(),
            embedder.endpoint()
        )
    });
    eprintln!("{line}");
    Ok(Some(Arc::new(embedder)))
}

/// Without the `llm` feature no embedder exists.
#[cfg(not(feature = "llm"))]
pub fn build_embedder(
    choice: EmbedderChoice,
    _: EmbedderSpec,
) -> Result<Option<Arc<dyn dream::core::Embedder>>, CliError> {
    match choice {
        EmbedderChoice::None => Ok(None),
        _ => Err(CliError::usage(
            "this dream was built without feature `llm`; rebuild with --features llm",
        )),
    }
}

/// Longest wait, after a write, for its memory vectors.
const SETTLE_VECTORS: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits, a bounded time, for the vector backfill a write started in the
/// background, then checks nothing is left (a failed background run is retried
/// once here), so a command that wrote leaves its vectors stored; says so when
/// it could not. The write itself is already committed.
pub async fn settle_vectors(dream: &dream::engine::Dream) {
    if !dream.has_embedder() {
        return;
    }
    let settle = async {
        dream.backfill_idle().await;
        dream.backfill_vectors().await
    };
    let why = match tokio::time::timeout(SETTLE_VECTORS, settle).await {
        Ok(Ok(_)) => return,
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("still computing after {} s", SETTLE_VECTORS.as_secs()),
    };
    eprintln!(
        "note: memory vectors not updated ({why}); recall ranks by words until a later write backfills them"
    );
}
