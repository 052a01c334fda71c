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
    /// The built-in local model, run in this process: --embedding-model DIR (a
    /// sentence-transformers BERT model: config.json, tokenizer.json,
    /// model.safetensors) or ORG/NAME from the Hugging Face cache (`dream model
    /// fetch`). Memory text never leaves the machine.
    Local,
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
    let model = config.redact_with(super::redact_secrets).build()?;
    if let Some(line) = model.announcement() {
        eprintln!("{line}");
    }
    Ok(Some(Arc::new(model)))
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
        _ => Err(CliError::not_built("llm")),
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
    /// Whether `model` came from `dream.toml` (then, for `--embedder local`, only a
    /// Hugging Face cache name: a file in the working directory never picks a
    /// directory of weights).
    #[cfg_attr(not(feature = "local-embedder"), allow(dead_code))]
    pub model_from_file: bool,
}

/// Builds the chosen embedder; `None` when none is chosen (the default: no
/// vectors, no network). Always announces on stderr where memory text is sent
/// (the local model: that it stays here).
pub fn build_embedder(
    choice: EmbedderChoice,
    spec: EmbedderSpec,
) -> Result<Option<Arc<dyn dream::core::Embedder>>, CliError> {
    if choice == EmbedderChoice::Local {
        return build_local(spec).map(Some);
    }
    build_remote(choice, spec)
}

/// The local model: a directory or a Hugging Face cache name, loaded once per
/// process (off the async runtime's worker).
#[cfg(feature = "local-embedder")]
fn build_local(spec: EmbedderSpec) -> Result<Arc<dyn dream::core::Embedder>, CliError> {
    use dream::core::Embedder;
    use dream::embed::LocalEmbedder;
    use dream::embed::hub::HubCache;
    use std::sync::{Mutex, OnceLock};
    /// The models this process loaded, by directory.
    type Loaded = Mutex<Vec<(std::path::PathBuf, Arc<LocalEmbedder>)>>;
    static LOADED: OnceLock<Loaded> = OnceLock::new();
    if spec.base_url.is_some() {
        return Err(CliError::usage(
            "--embedding-url needs --embedder openai, compatible or ollama (the local model is in this process)",
        ));
    }
    let name = spec.model.ok_or_else(|| {
        CliError::usage(
            "--embedder local needs --embedding-model DIR or ORG/NAME (a model of the Hugging Face cache; `dream model fetch` downloads one)",
        )
    })?;
    let cache = HubCache::from_env()?;
    let dir = LocalEmbedder::locate(&name, !spec.model_from_file, &cache).map_err(|e| {
        if spec.model_from_file {
            CliError::usage(format!(
                "embedding_model in dream.toml: {e} (a directory of weights is taken only from --embedding-model)"
            ))
        } else {
            CliError::from(e)
        }
    })?;
    let loaded = LOADED.get_or_init(Default::default);
    let known = loaded
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(d, _)| *d == dir)
        .map(|(_, m)| m.clone());
    let embedder = match known {
        Some(embedder) => embedder,
        None => {
            let load = || LocalEmbedder::load(&dir, name.clone());
            let embedder = match tokio::runtime::Handle::try_current() {
                Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                    tokio::task::block_in_place(load)
                }
                _ => load(),
            }
            .map_err(|e| CliError::usage(format!("cannot load the local embedding model: {e}")))?;
            let embedder = Arc::new(embedder);
            loaded
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((dir.clone(), embedder.clone()));
            embedder
        }
    };
    if let Some(dims) = spec.dimensions
        && dims != embedder.dimensions()
    {
        return Err(CliError::usage(format!(
            "--embedding-dims {dims}: the local model {} returns {} dimensions",
            embedder.describe(),
            embedder.dimensions()
        )));
    }
    Ok(embedder)
}

/// Without the `local-embedder` feature there is no local model.
#[cfg(not(feature = "local-embedder"))]
fn build_local(_: EmbedderSpec) -> Result<Arc<dyn dream::core::Embedder>, CliError> {
    Err(CliError::not_built("local-embedder"))
}

/// An embeddings service over HTTP.
#[cfg(feature = "llm")]
fn build_remote(
    choice: EmbedderChoice,
    spec: EmbedderSpec,
) -> Result<Option<Arc<dyn dream::core::Embedder>>, CliError> {
    use dream::core::Embedder;
    use dream::llm::{ApiKey, EmbedderOptions};
    let EmbedderSpec {
        model,
        dimensions,
        base_url,
        ..
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
        EmbedderChoice::None | EmbedderChoice::Local => unreachable!("handled above"),
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
    let embedder = config
        .http(|c| c.redact_with(super::redact_secrets))
        .build()?;
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

/// Without the `llm` feature no embeddings service exists.
#[cfg(not(feature = "llm"))]
fn build_remote(
    choice: EmbedderChoice,
    _: EmbedderSpec,
) -> Result<Option<Arc<dyn dream::core::Embedder>>, CliError> {
    match choice {
        EmbedderChoice::None => Ok(None),
        _ => Err(CliError::not_built("llm")),
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

/// `dream model`: the local embedding models.
#[derive(Debug, clap::Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    command: ModelCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ModelCommand {
    /// Download a sentence-transformers model into the Hugging Face cache
    /// (HF_HUB_CACHE, HF_HOME/hub or ~/.cache/huggingface/hub) for `--embedder
    /// local --embedding-model ORG/NAME`: from https://huggingface.co, or HF_ENDPOINT.
    Fetch(FetchArgs),
    /// Compute the vector of every memory whose vector is missing or stale for
    /// the chosen --embedder (another model, or changed text), with a progress
    /// bar; writes do this in the background, this does it now.
    Embed,
}

#[derive(Debug, clap::Args)]
struct FetchArgs {
    /// ORG/NAME[@REVISION] (a bare NAME is sentence-transformers/NAME).
    name: String,
}

/// The files of a model: required ones first, then those a sentence-transformers
/// model may have (pooling, sequence length, licence).
#[cfg_attr(
    not(all(feature = "llm", feature = "local-embedder")),
    allow(dead_code)
)]
const MODEL_FILES: [(&str, bool); 8] = [
    ("config.json", true),
    ("tokenizer.json", true),
    ("model.safetensors", true),
    ("modules.json", false),
    ("sentence_bert_config.json", false),
    ("1_Pooling/config.json", false),
    ("config_sentence_transformers.json", false),
    ("LICENSE", false),
];

/// `dream model …`.
pub async fn model(global: &super::context::Global, args: ModelArgs) -> super::Outcome {
    match args.command {
        ModelCommand::Fetch(args) => fetch(args).await,
        ModelCommand::Embed => embed(global).await,
    }
}

/// `dream model embed`: the backfill, now, with a bar.
async fn embed(global: &super::context::Global) -> super::Outcome {
    let dream = global.open(super::context::Access::Write).await?;
    if !dream.has_embedder() {
        return Err(CliError::usage(
            "`dream model embed` needs --embedder (local, openai, compatible or ollama)",
        ));
    }
    let bar = super::progress(0, "embedding memories");
    let report = dream
        .backfill_vectors_with_progress(|done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })
        .await?;
    bar.finish_and_clear();
    outln!(
        "{} embedded, {} already current, {} removed",
        report.embedded,
        report.current,
        report.removed
    )?;
    Ok(super::Found::Nothing)
}

#[cfg(all(feature = "llm", feature = "local-embedder"))]
async fn fetch(args: FetchArgs) -> super::Outcome {
    use dream::core::Embedder;
    use dream::embed::hub::{HubCache, ModelName, is_commit};
    use dream::embed::{LocalEmbedder, MAX_CONFIG_BYTES, MAX_TOKENIZER_BYTES, MAX_WEIGHTS_BYTES};
    let name = ModelName::parse(&args.name)?;
    let cache = HubCache::from_env()?;
    let hub = dream::llm::HubClient::from_env()?;
    if let Some(line) = hub.announcement() {
        eprintln!("{line}");
    }
    let repo = name.repo();
    let mut files = Vec::new();
    let mut commit: Option<String> = None;
    for (file, required) in MODEL_FILES {
        let cap = match file {
            "model.safetensors" => MAX_WEIGHTS_BYTES,
            "tokenizer.json" => MAX_TOKENIZER_BYTES,
            _ => MAX_CONFIG_BYTES,
        } as usize;
        eprintln!("fetching {repo}@{} {file}", name.revision());
        let Some(got) = hub.download(&repo, name.revision(), file, cap).await? else {
            if required {
                return Err(CliError::usage(format!(
                    "{repo}@{}: the hub has no {file} (not a sentence-transformers model with safetensors weights?)",
                    name.revision()
                )));
            }
            continue;
        };
        match (&commit, got.commit) {
            (None, Some(c)) => commit = Some(c),
            (Some(a), Some(b)) if *a != b => {
                return Err(CliError::usage(format!(
                    "{repo}@{} moved to another commit during the download; fetch it again",
                    name.revision()
                )));
            }
            _ => {}
        }
        files.push((file, got.bytes));
    }
    let commit = match commit {
        Some(c) if is_commit(&c) => c,
        Some(_) => return Err(CliError::usage("the hub named a commit that is not one")),
        None if is_commit(name.revision()) => name.revision().to_owned(),
        None => {
            return Err(CliError::usage(
                "the hub did not say which commit it served (no X-Repo-Commit); give NAME@COMMIT",
            ));
        }
    };
    let mut snapshot = None;
    for (file, bytes) in &files {
        let path = cache.store_file(&name, &commit, file, bytes)?;
        if *file == "config.json" {
            snapshot = path.parent().map(std::path::Path::to_path_buf);
        }
    }
    let snapshot = snapshot.expect("config.json is required");
    // The ref moves only once the files load as a model.
    let label = repo.clone();
    let dir = snapshot.clone();
    let embedder = tokio::task::spawn_blocking(move || LocalEmbedder::load(&dir, label))
        .await
        .map_err(|e| CliError::usage(format!("loading the model failed: {e}")))?
        .map_err(|e| {
            CliError::usage(format!("the downloaded files are not a usable model: {e}"))
        })?;
    cache.store_ref(&name, &commit)?;
    outln!(
        "{repo}@{commit}: {} dimensions, in {}",
        embedder.dimensions(),
        super::streams::escape(&snapshot.display().to_string())
    )?;
    Ok(super::Found::Nothing)
}

#[cfg(not(all(feature = "llm", feature = "local-embedder")))]
async fn fetch(_: FetchArgs) -> super::Outcome {
    Err(CliError::usage(
        "`dream model fetch` needs features `llm` and `local-embedder`; rebuild with --features full",
    ))
}
