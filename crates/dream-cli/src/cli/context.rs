//! Global options and what they open: the store (any backend, optionally
//! encrypted), the model (offline unless a remote one is chosen explicitly) and
//! the `Dream` handle.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use dream::core::{LanguageModel, RecordStore, Scope};
use dream::engine::{Dream, Options, SealKey};

use super::CliError;
use super::config::FileConfig;
use super::models::{EmbedderChoice, LlmChoice};

/// The default store: a `.dream/` directory in the working directory.
pub const DEFAULT_STORE: &str = "fs:.dream";
/// The config file read from the working directory.
pub const CONFIG_FILE: &str = "dream.toml";

/// Options every command takes.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The store: fs:PATH (default fs:.dream), sqlite:PATH, redis://host:port[/db][?prefix=P] or
    /// postgres://[user@]host[:port]/database[?schema=S] (no password here: `redis` alone takes
    /// the URL from DREAM_REDIS_URL or --redis-url-file, `postgres` alone from DREAM_POSTGRES_URL).
    #[arg(long, global = true, value_name = "URL")]
    pub store: Option<String>,
    /// File holding the URL (with its password) for `--store redis` or `--store
    /// postgres`, mode 0600 (`--redis-url-file` is the older name).
    #[arg(long, global = true, value_name = "PATH", alias = "redis-url-file")]
    pub url_file: Option<PathBuf>,
    /// Encrypt the store at rest; the key comes from DREAM_KEY (base64) or --key-file.
    #[arg(long, global = true)]
    pub encrypt: bool,
    /// File holding the encryption key (32 raw bytes or base64), mode 0600.
    #[arg(long, global = true, value_name = "PATH")]
    pub key_file: Option<PathBuf>,
    /// The scope (project) to work in (default `default`).
    #[arg(long, global = true)]
    pub scope: Option<String>,
    /// The language model: offline (default, no network), openai, anthropic or compatible.
    #[arg(long, global = true, value_enum)]
    pub llm: Option<LlmChoice>,
    /// The model name for --llm.
    #[arg(long, global = true)]
    pub model: Option<String>,
    /// A base URL for --llm (announced before the first call).
    #[arg(long, global = true, value_name = "URL")]
    pub base_url: Option<String>,
    /// The embedding model for recall by meaning: none (default, no network),
    /// local (built in, in this process), or the services openai, compatible or
    /// ollama, to which memory text is sent (announced).
    #[arg(long, global = true, value_enum)]
    pub embedder: Option<EmbedderChoice>,
    /// The embedding model name for --embedder (local: a model directory, or
    /// ORG/NAME[@REVISION] of the Hugging Face cache).
    #[arg(long, global = true, value_name = "NAME")]
    pub embedding_model: Option<String>,
    /// The dimension of the embedding model's vectors.
    #[arg(long, global = true, value_name = "N")]
    pub embedding_dims: Option<usize>,
    /// The embedding server's base URL for --embedder (announced before the first call).
    #[arg(long, global = true, value_name = "URL")]
    pub embedding_url: Option<String>,
    /// Sessions sent to the model in one request by a dream pass (default: 1 with
    /// --llm compatible, where small local models follow one session at a time;
    /// the whole batch with openai and anthropic).
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub sessions_per_request: Option<u16>,
    /// Output tokens one model answer may take (default 4096); a small local
    /// model is faster and rambles less with a few hundred.
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,
    /// Seconds one attempt of a model call may take (default 60).
    #[arg(long, global = true, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Seconds a model call may take in all, retries and waits included (default 120).
    #[arg(long, global = true, value_name = "SECS")]
    pub deadline: Option<u64>,
    /// More logging (-v info, -vv debug, -vvv trace); also shows error sources.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

impl Global {
    /// The settings of `dream.toml` in the working directory (empty if absent).
    pub fn file_config(&self) -> Result<FileConfig, CliError> {
        Ok(FileConfig::load(std::path::Path::new(CONFIG_FILE))?)
    }

    /// The store URL in force: the flag, then `dream.toml`, then the default.
    pub fn store_url(&self, config: &FileConfig) -> String {
        self.store
            .clone()
            .or_else(|| config.store.clone())
            .unwrap_or_else(|| DEFAULT_STORE.to_owned())
    }

    /// The scope in force.
    pub fn scope(&self, config: &FileConfig) -> Result<Scope, CliError> {
        let scope = self
            .scope
            .clone()
            .or_else(|| config.scope.clone())
            .unwrap_or_else(|| "default".to_owned());
        Ok(Scope::new(scope)?)
    }

    /// Opens the store named by the options, wrapped in encryption with `--encrypt`.
    /// A directory or SQLite store that does not exist yet is created only when
    /// `create` (commands that store something); a read says there is none.
    pub async fn open_store(
        &self,
        config: &FileConfig,
        create: bool,
    ) -> Result<Arc<dyn RecordStore>, CliError> {
        if self.key_file.is_some() && !self.encrypt {
            return Err(CliError::usage("--key-file needs --encrypt"));
        }
        // The key is loaded first, so a missing or bad key never creates a store.
        let key = if self.encrypt {
            Some(super::stores::load_key(self.key_file.as_deref())?)
        } else {
            None
        };
        let url = self.store_url(config);
        if !create {
            super::stores::require_existing(&url)?;
        }
        let store = super::stores::open(&url, self.url_file.as_deref()).await?;
        let namespaces = super::stores::check_encryption(&*store, key.is_some()).await?;
        Ok(match key {
            Some(key) => {
                let encrypted = super::stores::encrypt(store.clone(), key);
                super::stores::check_key_opens(&*encrypted, &namespaces).await?;
                super::stores::watch_conversion(encrypted, store, true)
            }
            None => super::stores::watch_conversion(store.clone(), store, false),
        })
    }

    /// The model chosen with `--llm`, if any; a non-default base URL is announced
    /// on stderr now, before any call.
    pub fn model(&self, config: &FileConfig) -> Result<Option<Arc<dyn LanguageModel>>, CliError> {
        let choice = self.llm.unwrap_or_default();
        let name = self.model.clone().or_else(|| config.model.clone());
        let limits = super::models::TimeLimits {
            attempt: self.timeout.or(config.limits.model_timeout),
            call: self.deadline.or(config.limits.model_deadline),
        };
        super::models::build(choice, name, self.base_url.clone(), limits)
    }

    /// The embedder chosen with `--embedder`, if any; where memory text goes is
    /// announced on stderr now, before any call.
    pub fn embedder(
        &self,
        config: &FileConfig,
    ) -> Result<Option<Arc<dyn dream::core::Embedder>>, CliError> {
        let spec = super::models::EmbedderSpec {
            model: self
                .embedding_model
                .clone()
                .or_else(|| config.embedding_model.clone()),
            dimensions: self.embedding_dims.or(config.embedding_dims),
            base_url: self.embedding_url.clone(),
            model_from_file: self.embedding_model.is_none() && config.embedding_model.is_some(),
        };
        super::models::build_embedder(self.embedder.unwrap_or_default(), spec)
    }

    /// Engine options: the scope and `dream.toml`'s limits over the defaults.
    pub fn options(&self, config: &FileConfig) -> Result<Options, CliError> {
        let mut options = Options {
            scope: self.scope(config)?,
            ..Options::default()
        };
        let limits = &config.limits;
        if let Some(n) = limits.min_sessions {
            options.min_sessions = n;
        }
        if let Some(h) = limits.min_hours {
            options.min_hours =
                u32::try_from(h).map_err(|_| CliError::usage("limits.min_hours is too large"))?;
        }
        if let Some(n) = limits.max_memories {
            options.max_memories = n;
        }
        if let Some(n) = limits.session_log {
            options.session_log = n;
        }
        if let Some(n) = self.max_tokens {
            options.max_tokens = n;
        }
        options.sessions_per_request = match (self.sessions_per_request, self.llm) {
            (Some(n), _) => Some(usize::from(n)),
            (None, Some(LlmChoice::Compatible)) => Some(1),
            (None, _) => None,
        };
        Ok(options)
    }

    /// The store's seal key (after the store is open, so its path resolves);
    /// none for an encrypted store, whose AEAD authenticates every record.
    pub fn seal_key(&self, config: &FileConfig) -> Result<Option<SealKey>, CliError> {
        if self.encrypt {
            return Ok(None);
        }
        self.location_seal_key(config).map(Some)
    }

    /// The seal key of the store's location, encrypted or not: what a conversion
    /// to or from plaintext carries trust to and from.
    pub fn location_seal_key(&self, config: &FileConfig) -> Result<SealKey, CliError> {
        let url =
            super::stores::resolve_shorthand(&self.store_url(config), self.url_file.as_deref())?;
        let locator = super::seal::locator(&url)?;
        super::seal::load_or_create(&super::seal::config_dir()?, &locator)
    }

    /// Opens an existing store and the engine over it (a read never creates one).
    pub async fn open(&self) -> Result<Dream, CliError> {
        self.open_engine(false).await
    }

    /// Opens the store, creating it when it does not exist yet, and the engine.
    pub async fn open_to_write(&self) -> Result<Dream, CliError> {
        self.open_engine(true).await
    }

    async fn open_engine(&self, create: bool) -> Result<Dream, CliError> {
        let config = self.file_config()?;
        let store = self.open_store(&config, create).await?;
        let mut dream = Dream::open(store, self.options(&config)?)?;
        if let Some(key) = self.seal_key(&config)? {
            dream = dream.with_seal(key);
        }
        if let Some(model) = self.model(&config)? {
            dream = dream.with_model(model);
        }
        if let Some(embedder) = self.embedder(&config)? {
            dream = dream.with_embedder(embedder);
        }
        Ok(dream)
    }
}
