//! Choosing a model: [`Provider`], [`ModelOptions`] (a builder) and
//! [`ModelSelection`] (one model for consolidation, one for recall).

use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;

use crate::client::HttpModel;
use crate::error::ConfigError;
use crate::key::{ANTHROPIC_API_KEY_VAR, ApiKey, OPENAI_API_KEY_VAR};

/// The official OpenAI base URL (it includes `/v1`; the client appends `/chat/completions`).
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The official Anthropic base URL (without `/v1`; the client appends `/v1/messages`).
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header value sent with every Anthropic call.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default timeout of one attempt, from sending the request to the end of the body.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Default deadline of one call, every attempt and wait included: a model that
/// never answers holds a pass this long at most.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(120);
/// Default number of retries after the first attempt.
pub const DEFAULT_MAX_RETRIES: u32 = 3;
/// Default first backoff delay (doubled on every retry, with jitter).
pub const DEFAULT_BACKOFF_BASE: Duration = Duration::from_millis(500);
/// Default cap on one backoff delay computed by the client.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Default cap on the total time spent waiting between attempts of one call.
pub const DEFAULT_MAX_TOTAL_WAIT: Duration = Duration::from_secs(90);
/// Default cap on a response body, in bytes.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 4 << 20;
/// The longest model name accepted, in bytes.
pub const MAX_MODEL_NAME_LEN: usize = 256;

/// A model provider's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI's Chat Completions API.
    OpenAi,
    /// Anthropic's Messages API.
    Anthropic,
    /// A server speaking OpenAI's Chat Completions (Ollama, vLLM, llama.cpp
    /// server, …): a base URL is required, a key is optional.
    OpenAiCompatible,
}

impl Provider {
    /// The short name used in descriptions (`openai`, `anthropic`, `openai-compatible`).
    pub fn name(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::OpenAiCompatible => "openai-compatible",
        }
    }

    /// The standard environment variable for this provider's key, if any.
    pub fn key_env_var(self) -> Option<&'static str> {
        match self {
            Provider::OpenAi => Some(OPENAI_API_KEY_VAR),
            Provider::Anthropic => Some(ANTHROPIC_API_KEY_VAR),
            Provider::OpenAiCompatible => None,
        }
    }

    /// The official base URL, if the provider has one.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Provider::OpenAi => Some(OPENAI_DEFAULT_BASE_URL),
            Provider::Anthropic => Some(ANTHROPIC_DEFAULT_BASE_URL),
            Provider::OpenAiCompatible => None,
        }
    }

    /// The path the client appends to the base URL.
    pub fn endpoint_path(self) -> &'static str {
        match self {
            Provider::OpenAi | Provider::OpenAiCompatible => "/chat/completions",
            Provider::Anthropic => "/v1/messages",
        }
    }
}

/// Redacts the secret-shaped parts of a text (see [`ModelOptions::redact_with`]).
pub type Redactor = fn(&str) -> String;

/// How to reach one model: provider, model name, base URL, key, timeouts,
/// retries and limits. Built with [`ModelOptions::openai`], [`ModelOptions::anthropic`]
/// or [`ModelOptions::openai_compatible`], then the setters, then [`ModelOptions::build`].
/// Nothing here reads the environment unless [`ModelOptions::api_key_from_env`] is called.
#[derive(Debug, Clone)]
pub struct ModelOptions {
    pub(crate) provider: Provider,
    pub(crate) model: String,
    pub(crate) base_url: Option<String>,
    pub(crate) api_key: Option<ApiKey>,
    pub(crate) key_error: Option<ConfigError>,
    pub(crate) connect_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) deadline: Duration,
    pub(crate) max_retries: u32,
    pub(crate) backoff_base: Duration,
    pub(crate) max_backoff: Duration,
    pub(crate) max_total_wait: Duration,
    pub(crate) max_response_bytes: usize,
    pub(crate) debug_prompts: bool,
    pub(crate) allow_plain_http: bool,
    pub(crate) use_env_proxy: bool,
    pub(crate) redactor: Option<Redactor>,
}

impl ModelOptions {
    fn new(provider: Provider, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: model.into(),
            base_url: None,
            api_key: None,
            key_error: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            deadline: DEFAULT_DEADLINE,
            max_retries: DEFAULT_MAX_RETRIES,
            backoff_base: DEFAULT_BACKOFF_BASE,
            max_backoff: DEFAULT_MAX_BACKOFF,
            max_total_wait: DEFAULT_MAX_TOTAL_WAIT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            debug_prompts: false,
            allow_plain_http: false,
            use_env_proxy: true,
            redactor: None,
        }
    }

    /// OpenAI Chat Completions with this model (for example `gpt-4o-mini`).
    pub fn openai(model: impl Into<String>) -> Self {
        Self::new(Provider::OpenAi, model)
    }

    /// Anthropic Messages with this model (for example `claude-sonnet-4-5`).
    pub fn anthropic(model: impl Into<String>) -> Self {
        Self::new(Provider::Anthropic, model)
    }

    /// An OpenAI-compatible server at `base_url` (as for the OpenAI SDK, the
    /// base URL usually ends in `/v1`; the client appends `/chat/completions`).
    pub fn openai_compatible(model: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self::new(Provider::OpenAiCompatible, model).base_url(base_url)
    }

    /// The provider.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// Uses this base URL instead of the provider's official one.
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// Uses this key.
    pub fn api_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self.key_error = None;
        self
    }

    /// Reads the key from the provider's standard variable (`OPENAI_API_KEY`,
    /// `ANTHROPIC_API_KEY`), now. A failure is reported by [`ModelOptions::build`].
    pub fn api_key_from_env(mut self) -> Self {
        let read = match self.provider.key_env_var() {
            Some(var) => ApiKey::from_env(var),
            None => Err(ConfigError::NoKeyVariable {
                provider: self.provider.name(),
            }),
        };
        match read {
            Ok(key) => {
                self.api_key = Some(key);
                self.key_error = None;
            }
            Err(e) => self.key_error = Some(e),
        }
        self
    }

    /// Sets the connect timeout and the timeout of one attempt (request sent to
    /// body fully read).
    pub fn timeouts(mut self, connect: Duration, request: Duration) -> Self {
        self.connect_timeout = connect;
        self.request_timeout = request;
        self
    }

    /// Sets the deadline of one call: attempts, retries and waits together end
    /// by then (an attempt is cut short when the deadline comes first).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The timeout of one attempt and the deadline of one call.
    pub fn time_limits(&self) -> (Duration, Duration) {
        (self.request_timeout, self.deadline)
    }

    /// Sets the retry policy: at most `max_retries` retries after the first
    /// attempt, backoff starting at `base` and doubling, each computed delay
    /// capped at `max_backoff`, and all waits of one call together at most
    /// `max_total_wait` (a `Retry-After` that would exceed it ends the call).
    pub fn retries(
        mut self,
        max_retries: u32,
        base: Duration,
        max_backoff: Duration,
        max_total_wait: Duration,
    ) -> Self {
        self.max_retries = max_retries;
        self.backoff_base = base;
        self.max_backoff = max_backoff;
        self.max_total_wait = max_total_wait;
        self
    }

    /// Caps a response body at `bytes`; reading stops past the cap.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Logs prompts and answers through `tracing` at DEBUG (target
    /// `dream_llm::prompt`). Off by default. Headers are never logged.
    pub fn debug_prompts(mut self, on: bool) -> Self {
        self.debug_prompts = on;
        self
    }

    /// Allows plain `http://` to a host other than loopback (off by default:
    /// a key or prompt would cross the network in clear).
    pub fn allow_plain_http(mut self, on: bool) -> Self {
        self.allow_plain_http = on;
        self
    }

    /// Whether the standard proxy variables (`HTTPS_PROXY`, `NO_PROXY`, …) are
    /// honoured. On by default.
    pub fn use_env_proxy(mut self, on: bool) -> Self {
        self.use_env_proxy = on;
        self
    }

    /// Passes every error message a provider sends back through `redact` before it
    /// is logged or returned, so a body that echoes a secret-shaped string (another
    /// key, a token from the prompt) shows it redacted. This crate does not depend on
    /// the scanner: the caller supplies it (the `dream` CLI passes `dream-scan`'s
    /// redaction). The client's own key is removed from messages either way.
    pub fn redact_with(mut self, redact: Redactor) -> Self {
        self.redactor = Some(redact);
        self
    }

    /// Validates the configuration and builds the client.
    pub fn build(self) -> Result<HttpModel, ConfigError> {
        HttpModel::new(self)
    }

    /// The base URL in effect, parsed and checked.
    pub(crate) fn resolved_base_url(&self) -> Result<Url, ConfigError> {
        let raw = match (&self.base_url, self.provider.default_base_url()) {
            (Some(url), _) => url.as_str(),
            (None, Some(default)) => default,
            (None, None) => return Err(ConfigError::MissingBaseUrl),
        };
        check_base_url(raw, self.allow_plain_http)
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        check_model_name(&self.model)?;
        if let Some(e) = &self.key_error {
            return Err(e.clone());
        }
        if self.api_key.is_none() && self.provider != Provider::OpenAiCompatible {
            return Err(ConfigError::MissingKey {
                provider: self.provider.name(),
            });
        }
        if self.connect_timeout.is_zero()
            || self.request_timeout.is_zero()
            || self.deadline.is_zero()
        {
            return Err(ConfigError::InvalidSetting("timeouts must be positive"));
        }
        if self.max_retries > 20 {
            return Err(ConfigError::InvalidSetting("at most 20 retries"));
        }
        if self.max_response_bytes == 0 {
            return Err(ConfigError::InvalidSetting(
                "the response cap must be positive",
            ));
        }
        Ok(())
    }
}

fn check_model_name(model: &str) -> Result<(), ConfigError> {
    if model.is_empty() {
        return Err(ConfigError::InvalidModel("the name is empty"));
    }
    if model.len() > MAX_MODEL_NAME_LEN {
        return Err(ConfigError::InvalidModel("the name is too long"));
    }
    if !model.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ConfigError::InvalidModel(
            "the name holds characters other than visible ASCII",
        ));
    }
    Ok(())
}

/// Parses and checks a base URL: http(s), a host, no credentials, no query or
/// fragment, and plain http only to loopback unless allowed.
pub(crate) fn check_base_url(raw: &str, allow_plain_http: bool) -> Result<Url, ConfigError> {
    let url = Url::parse(raw.trim()).map_err(|_| ConfigError::InvalidBaseUrl("not a URL"))?;
    match url.scheme() {
        "https" => {}
        "http" => {
            if !allow_plain_http && !is_loopback(&url) {
                return Err(ConfigError::InvalidBaseUrl(
                    "plain http is allowed only to a loopback host (or with allow_plain_http)",
                ));
            }
        }
        _ => {
            return Err(ConfigError::InvalidBaseUrl(
                "the scheme must be http or https",
            ));
        }
    }
    if url.host().is_none() {
        return Err(ConfigError::InvalidBaseUrl("the URL has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ConfigError::InvalidBaseUrl(
            "credentials in the URL are refused; pass the key as an API key",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ConfigError::InvalidBaseUrl(
            "the URL must not have a query or fragment",
        ));
    }
    Ok(url)
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The models Dream uses, chosen explicitly: one for consolidation (the dream
/// pass) and one for recall. Either may be absent; nothing is ever chosen
/// because a key happens to be in the environment.
#[derive(Debug, Clone, Default)]
pub struct ModelSelection {
    /// The model that consolidates sessions into memories.
    pub consolidation: Option<ModelOptions>,
    /// The model used at recall time.
    pub recall: Option<ModelOptions>,
}

impl ModelSelection {
    /// Builds both clients.
    pub fn build(self) -> Result<Models, ConfigError> {
        Ok(Models {
            consolidation: self
                .consolidation
                .map(|c| c.build().map(Arc::new))
                .transpose()?,
            recall: self.recall.map(|c| c.build().map(Arc::new)).transpose()?,
        })
    }
}

/// Built clients for [`ModelSelection`].
#[derive(Debug, Clone, Default)]
pub struct Models {
    /// The consolidation model, if selected.
    pub consolidation: Option<Arc<HttpModel>>,
    /// The recall model, if selected.
    pub recall: Option<Arc<HttpModel>>,
}

impl Models {
    /// Every line to show before the first call: one per model using a
    /// non-default base URL.
    pub fn announcements(&self) -> Vec<String> {
        [
            ("consolidation", &self.consolidation),
            ("recall", &self.recall),
        ]
        .into_iter()
        .filter_map(|(role, model)| {
            let line = model.as_ref()?.announcement()?;
            Some(format!("{role}: {line}"))
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ApiKey {
        ApiKey::new("sk-test-key").unwrap()
    }

    #[test]
    fn base_urls_are_checked() {
        assert!(check_base_url("https://api.openai.com/v1", false).is_ok());
        assert!(check_base_url("http://127.0.0.1:11434/v1", false).is_ok());
        assert!(check_base_url("http://localhost:8080", false).is_ok());
        assert!(check_base_url("http://[::1]:8080/v1", false).is_ok());
        assert!(check_base_url("http://10.0.0.5:8000/v1", true).is_ok());
        for (bad, allow) in [
            ("http://10.0.0.5:8000/v1", false),
            ("http://example.com/v1", false),
            ("ftp://example.com", true),
            ("file:///etc/passwd", true),
            ("https://user:pw@example.com/v1", true),
            ("https://user@example.com/v1", true),
            ("https://example.com/v1?key=1", true),
            ("https://example.com/v1#x", true),
            ("not a url", true),
            ("", true),
        ] {
            let err = check_base_url(bad, allow).unwrap_err();
            assert!(matches!(err, ConfigError::InvalidBaseUrl(_)), "{bad}");
            assert!(!err.to_string().contains("pw"), "{err}");
        }
    }

    #[test]
    fn keys_are_required_where_the_provider_needs_one() {
        assert_eq!(
            ModelOptions::openai("gpt-4o-mini").build().unwrap_err(),
            ConfigError::MissingKey { provider: "openai" }
        );
        assert_eq!(
            ModelOptions::anthropic("claude-x").build().unwrap_err(),
            ConfigError::MissingKey {
                provider: "anthropic"
            }
        );
        assert!(
            ModelOptions::openai_compatible("llama3", "http://127.0.0.1:11434/v1")
                .build()
                .is_ok()
        );
        assert!(
            ModelOptions::openai("gpt-4o-mini")
                .api_key(key())
                .build()
                .is_ok()
        );
    }

    #[test]
    fn an_env_failure_surfaces_at_build() {
        let err = ModelOptions::openai_compatible("m", "http://127.0.0.1:1/v1")
            .api_key_from_env()
            .build()
            .unwrap_err();
        assert_eq!(
            err,
            ConfigError::NoKeyVariable {
                provider: "openai-compatible"
            }
        );
    }

    #[test]
    fn model_names_are_checked() {
        for bad in ["", "gpt 4", "gpt\n4", &"m".repeat(MAX_MODEL_NAME_LEN + 1)] {
            assert!(matches!(
                ModelOptions::openai(bad).api_key(key()).build(),
                Err(ConfigError::InvalidModel(_))
            ));
        }
    }

    #[test]
    fn settings_are_checked() {
        let zero = Duration::ZERO;
        let s = Duration::from_secs(1);
        let cfg = || ModelOptions::openai("gpt-4o-mini").api_key(key());
        assert!(matches!(
            cfg().timeouts(zero, s).build(),
            Err(ConfigError::InvalidSetting(_))
        ));
        assert!(matches!(
            cfg().timeouts(s, zero).build(),
            Err(ConfigError::InvalidSetting(_))
        ));
        assert!(matches!(
            cfg().deadline(zero).build(),
            Err(ConfigError::InvalidSetting(_))
        ));
        assert!(matches!(
            cfg().max_response_bytes(0).build(),
            Err(ConfigError::InvalidSetting(_))
        ));
        assert!(matches!(
            cfg().retries(21, s, s, s).build(),
            Err(ConfigError::InvalidSetting(_))
        ));
    }

    #[test]
    fn selection_builds_each_role_and_announces_custom_urls() {
        let models = ModelSelection {
            consolidation: Some(ModelOptions::openai("gpt-4o-mini").api_key(key())),
            recall: Some(ModelOptions::openai_compatible(
                "llama3",
                "http://127.0.0.1:11434/v1",
            )),
        }
        .build()
        .unwrap();
        assert_eq!(
            models.consolidation.as_ref().unwrap().provider(),
            Provider::OpenAi
        );
        assert_eq!(
            models.recall.as_ref().unwrap().provider(),
            Provider::OpenAiCompatible
        );
        let lines = models.announcements();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("recall: "), "{lines:?}");
        assert!(lines[0].contains("http://127.0.0.1:11434/v1"), "{lines:?}");

        let none = ModelSelection::default().build().unwrap();
        assert!(none.consolidation.is_none() && none.recall.is_none());
        assert!(none.announcements().is_empty());
    }
}
