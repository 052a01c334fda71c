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
use super::locate::{Located, locate};
use super::models::{EmbedderChoice, LlmChoice};

/// Options every command takes.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The store: fs:PATH, sqlite:PATH, redis://host:port[/db][?prefix=P] or
    /// postgres://[user@]host[:port]/database[?schema=S] (no password here: `redis` alone takes
    /// the URL from DREAM_REDIS_URL or --url-file, `postgres` alone from DREAM_POSTGRES_URL).
    /// Default: DREAM_STORE, else the project's: the nearest .dream (or dream.toml) from
    /// here up to the repository's top (made there by the first write).
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
    /// Output tokens one model answer may take at most (default 4096); each
    /// request asks for no more than twice the text it shows plus 256.
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
    /// The store this command uses, why, and the project's `dream.toml`: the
    /// one rule of `locate`.
    pub fn locate(&self) -> Result<Located, CliError> {
        locate(self.store.as_deref())
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

    /// Opens the store `here` names, wrapped in encryption with `--encrypt`. A
    /// directory or SQLite store that does not exist yet is created only for
    /// [`Access::Create`] (commands that store something); otherwise it is an
    /// error saying there is none.
    pub async fn open_store(
        &self,
        here: &Located,
        access: Access,
    ) -> Result<Arc<dyn RecordStore>, CliError> {
        let key = self.store_key()?;
        if access != Access::Create {
            here.require_existing()?;
        }
        let store = super::stores::open(&here.url, self.url_file.as_deref()).await?;
        self.wrap(store, key).await
    }

    /// The key `--encrypt` takes, loaded first, so a missing or bad key never
    /// creates a store.
    pub fn store_key(&self) -> Result<Option<super::stores::StoreKey>, CliError> {
        if self.key_file.is_some() && !self.encrypt {
            return Err(CliError::usage("--key-file needs --encrypt"));
        }
        if !self.encrypt {
            return Ok(None);
        }
        super::stores::load_key(self.key_file.as_deref()).map(Some)
    }

    /// A raw store checked for its encryption and wrapped in it when `key` is given.
    pub async fn wrap(
        &self,
        store: Arc<dyn RecordStore>,
        key: Option<super::stores::StoreKey>,
    ) -> Result<Arc<dyn RecordStore>, CliError> {
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
    /// none for an encrypted store, whose AEAD authenticates every record. A
    /// read never makes one: a store without its key is read with a throwaway
    /// key, so nothing in it verifies and recall holds every record.
    pub fn seal_key(&self, here: &Located, access: Access) -> Result<Option<Seal>, CliError> {
        if self.encrypt {
            return Ok(None);
        }
        let (dir, locator) = self.seal_location(here)?;
        if access == Access::Read {
            return Ok(Some(match super::seal::load(&dir, &locator)? {
                Some(key) => Seal { key, kept: true },
                None => Seal {
                    key: SealKey::generate(),
                    kept: false,
                },
            }));
        }
        let key = super::seal::load_or_create(&dir, &locator)?;
        Ok(Some(Seal { key, kept: true }))
    }

    /// The seal key of the store's location, encrypted or not (made if it has
    /// none): what a conversion to or from plaintext carries trust to and from.
    #[cfg(feature = "encryption")]
    pub fn location_seal_key(&self, here: &Located) -> Result<SealKey, CliError> {
        let (dir, locator) = self.seal_location(here)?;
        super::seal::load_or_create(&dir, &locator)
    }

    /// Where the store's seal key is filed: the configuration directory and the
    /// store's locator.
    fn seal_location(&self, here: &Located) -> Result<(std::path::PathBuf, String), CliError> {
        let url = dream::core::StoreUrl::parse(&here.url)?;
        let url = super::stores::resolve(&url, self.url_file.as_deref())?;
        Ok((super::seal::config_dir()?, super::seal::locator(&url)?))
    }

    /// The store `here` names and its seal key for a server that may write: the
    /// store (if it does not exist yet) and the key (if it has none) are made
    /// at its first write. The seal is `kept` only when both exist already, so
    /// nothing before that persists recall's index (a write).
    #[cfg(feature = "mcp")]
    pub async fn open_lazily(
        &self,
        here: &Located,
    ) -> Result<(Arc<dyn RecordStore>, Option<Seal>), CliError> {
        let key = self.store_key()?;
        let exists = here.exists();
        let existing = match exists {
            true => Some(super::stores::open(&here.url, self.url_file.as_deref()).await?),
            false => None,
        };
        let seal = self.seal_key(here, Access::Read)?;
        let first_write = super::lazy::FirstWrite {
            seal: match &seal {
                Some(seal) if !seal.kept => {
                    let (dir, locator) = self.seal_location(here)?;
                    Some((dir, locator, seal.key.clone()))
                }
                _ => None,
            },
            create: (!exists).then(|| (here.url.clone(), self.url_file.clone())),
        };
        let info = match &existing {
            Some(store) => store.info(),
            None => super::stores::info_before_made(&here.url)?,
        };
        let lazy = Arc::new(super::lazy::LazyStore::new(existing, info, first_write));
        let store = self.wrap(lazy, key).await?;
        let seal = seal.map(|seal| Seal {
            kept: seal.kept && exists,
            ..seal
        });
        Ok((store, seal))
    }

    /// Opens the store and the engine over it, as `access` allows.
    pub async fn open(&self, access: Access) -> Result<Dream, CliError> {
        let here = self.locate()?;
        let store = self.open_store(&here, access).await?;
        let config = &here.config;
        let mut dream = Dream::open(store, self.options(config)?)?;
        if let Some(seal) = self.seal_key(&here, access)? {
            dream = dream.with_seal(seal.key);
        }
        if let Some(model) = self.model(config)? {
            dream = dream.with_model(model);
        }
        if let Some(embedder) = self.embedder(config)? {
            dream = dream.with_embedder(embedder);
        }
        Ok(dream)
    }
}

/// What a command does with its store: whether it may create the store or its
/// seal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Only reads: the store must exist, and no seal key is made.
    Read,
    /// Changes an existing store: its seal key is made if it has none.
    Write,
    /// Stores something: the store is made where [`Located`] says, and its key.
    Create,
}

/// A store's seal key, and whether it is the one kept for the store (a
/// throwaway key, for a read of a store without one, is not).
#[derive(Debug, Clone)]
pub struct Seal {
    /// The key.
    pub key: SealKey,
    /// Whether it is kept in the configuration directory.
    pub kept: bool,
}
