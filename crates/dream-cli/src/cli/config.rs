//! `dream.toml`: optional settings from the working directory.
//!
//! A config file in the working directory is untrusted (anyone who can write a
//! repository can plant one), so it may set only the store, the scope, the model
//! and embedding model names, the embedding dimension and limits. A base URL, an API key, a password, a key file or the choice
//! of a remote provider are refused with an error naming the key: those come only
//! from flags and the environment.

use std::path::Path;

use dream::core::store_url::{StoreUrl, StoreUrlError};
use serde::Deserialize;

/// Keys that must never come from a file in the working directory.
const FORBIDDEN: &[&str] = &[
    "base_url",
    "base-url",
    "api_key",
    "api-key",
    "key",
    "key_file",
    "key-file",
    "password",
    "llm",
    "embedder",
    "embedding_url",
    "embedding-url",
    "redis_url",
    "token",
    "secret",
];

/// What `dream.toml` may set.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Store URL (`fs:PATH`, `sqlite:PATH`, `redis://host:port[/db][?prefix=…]` without a password).
    pub store: Option<String>,
    /// Default scope.
    pub scope: Option<String>,
    /// Model name for the provider chosen with `--llm`.
    pub model: Option<String>,
    /// Embedding model name for the embedder chosen with `--embedder`.
    pub embedding_model: Option<String>,
    /// Dimension of that model's vectors.
    pub embedding_dims: Option<usize>,
    /// Engine limits.
    #[serde(default)]
    pub limits: Limits,
}

/// Engine limits `dream.toml` may tune.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Sessions needed before an unforced dream runs.
    pub min_sessions: Option<usize>,
    /// Hours since the last successful dream before an unforced dream runs.
    pub min_hours: Option<u64>,
    /// Most memories kept; beyond it the oldest unpinned go to the trash.
    pub max_memories: Option<usize>,
    /// Sessions kept in the log.
    pub session_log: Option<usize>,
    /// Seconds one model attempt may take (`--timeout`).
    pub model_timeout: Option<u64>,
    /// Seconds one model call may take in all, retries and waits included (`--deadline`).
    pub model_deadline: Option<u64>,
}

/// Why `dream.toml` was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// It could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// It tried to set something only flags or the environment may set.
    #[error("{path}: `{key}` may not be set in a config file; use a flag or the environment")]
    Forbidden {
        /// The file.
        path: String,
        /// The refused key.
        key: String,
    },
    /// It is not valid.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

impl FileConfig {
    /// Loads `path` if it exists; a missing file is the empty config.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: shown,
                    source,
                });
            }
        };
        Self::parse(&text, &shown)
    }

    /// Parses config text; `shown` names the file in errors.
    pub fn parse(text: &str, shown: &str) -> Result<Self, ConfigError> {
        let invalid = |e: toml::de::Error| ConfigError::Invalid {
            path: shown.to_owned(),
            reason: located(text, &e),
        };
        let table: toml::Table = toml::from_str(text).map_err(invalid)?;
        if let Some(key) = forbidden_key(&table) {
            return Err(ConfigError::Forbidden {
                path: shown.to_owned(),
                key,
            });
        }
        let config: FileConfig = toml::from_str(text).map_err(invalid)?;
        if let Some(store) = &config.store
            && let Err(StoreUrlError::Password { .. }) = StoreUrl::parse(store)
        {
            return Err(ConfigError::Forbidden {
                path: shown.to_owned(),
                key: "store (a Redis or PostgreSQL URL with credentials)".into(),
            });
        }
        Ok(config)
    }
}

fn forbidden_key(table: &toml::Table) -> Option<String> {
    for (key, value) in table {
        if FORBIDDEN.contains(&key.to_ascii_lowercase().as_str()) {
            return Some(key.clone());
        }
        if let toml::Value::Table(inner) = value
            && let Some(found) = forbidden_key(inner)
        {
            return Some(format!("{key}.{found}"));
        }
    }
    None
}

/// A TOML error with the line and column where it starts, when it has a place.
fn located(text: &str, error: &toml::de::Error) -> String {
    match error.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {column}: {}", error.message())
        }
        None => error.message().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_store_scope_model_and_limits() {
        let config = FileConfig::parse(
            "store = \"sqlite:dream.db\"\nscope = \"web\"\nmodel = \"gpt-4o-mini\"\n[limits]\nmax_memories = 50\nmodel_timeout = 20\nmodel_deadline = 45\n",
            "dream.toml",
        )
        .unwrap();
        assert_eq!(config.store.as_deref(), Some("sqlite:dream.db"));
        assert_eq!(config.limits.max_memories, Some(50));
        assert_eq!(config.limits.model_timeout, Some(20));
        assert_eq!(config.limits.model_deadline, Some(45));
    }

    #[test]
    fn a_broken_file_is_reported_with_its_line() {
        let error = FileConfig::parse(
            "scope = \"web\"\n\n[limits]\nmax_memories = \n",
            "dream.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(error.starts_with("dream.toml: line 4, column "), "{error}");
        let error = FileConfig::parse("[limits]\nmin_hours = \"soon\"\n", "dream.toml")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("dream.toml: line 2, column 13: "),
            "{error}"
        );
    }

    #[test]
    fn refuses_urls_keys_and_passwords() {
        for text in [
            "base_url = \"https://evil.example/v1\"",
            "api_key = \"sk-x\"",
            "llm = \"openai\"",
            "[limits]\npassword = \"x\"",
            "store = \"redis://:hunter2@127.0.0.1:6379\"",
            "store = \"postgres://alice:hunter2@db/mem\"",
            "store = \"postgresql://db/mem?password=hunter2\"",
            "store = \"valkeys://u:hunter2@h:6380\"",
            "store = \"postgres?schema=s&password=hunter2\"",
        ] {
            let err = FileConfig::parse(text, "dream.toml").unwrap_err();
            assert!(
                matches!(err, ConfigError::Forbidden { .. }),
                "{text}: {err}"
            );
            assert!(!err.to_string().contains("hunter2"));
        }
        assert!(matches!(
            FileConfig::parse("surprise = 1", "dream.toml"),
            Err(ConfigError::Invalid { .. })
        ));
    }
}
