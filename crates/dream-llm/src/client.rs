//! [`HttpModel`]: one provider endpoint behind the [`LanguageModel`] trait, with
//! timeouts, retries, a response cap and key-free errors.

use std::fmt;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use dream_core::llm::{Completion, CompletionRequest, LanguageModel, ModelError};
use rand::Rng;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{StatusCode, Url};

use crate::config::{ANTHROPIC_VERSION, ModelOptions, Provider};
use crate::error::ConfigError;
use crate::wire;

/// The cap on an error body read for its message, in bytes.
const MAX_ERROR_BODY: usize = 64 << 10;

/// A language model reached over HTTP. Build it with [`ModelOptions`].
pub struct HttpModel {
    transport: Transport,
    announcement: Option<String>,
}

impl fmt::Debug for HttpModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpModel")
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

/// One provider endpoint: the HTTP client, the key in its header, attempts
/// with timeouts, retries with backoff (honouring `Retry-After`) within a
/// deadline, a capped answer and key-free errors. Shared by the chat clients
/// and the embedding clients.
pub(crate) struct Transport {
    pub(crate) config: ModelOptions,
    pub(crate) endpoint: Url,
    client: reqwest::Client,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("provider", &self.config.provider)
            .field("model", &self.config.model)
            .field("endpoint", &self.endpoint.as_str())
            .field(
                "api_key",
                &self.config.api_key.as_ref().map(|_| "[redacted]"),
            )
            .finish_non_exhaustive()
    }
}

/// One failed attempt and whether another is worth making.
struct Failure {
    error: ModelError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    fn fatal(error: ModelError) -> Self {
        Self {
            error,
            retryable: false,
            retry_after: None,
        }
    }

    fn transient(error: ModelError, retry_after: Option<Duration>) -> Self {
        Self {
            error,
            retryable: true,
            retry_after,
        }
    }
}

impl HttpModel {
    pub(crate) fn new(config: ModelOptions) -> Result<Self, ConfigError> {
        let path = config.provider.endpoint_path();
        let transport = Transport::new(config, path)?;
        let announcement = transport.announcement(path, "model", "prompts");
        Ok(Self {
            transport,
            announcement,
        })
    }

    /// The provider.
    pub fn provider(&self) -> Provider {
        self.transport.config.provider
    }

    /// The configured model name.
    pub fn model(&self) -> &str {
        &self.transport.config.model
    }

    /// The full URL every call is sent to (key-free).
    pub fn endpoint(&self) -> &Url {
        &self.transport.endpoint
    }

    /// A line to show before the first call when the base URL is not the
    /// provider's official one (always, for an OpenAI-compatible server):
    /// prompts will go to that address.
    pub fn announcement(&self) -> Option<String> {
        self.announcement.clone()
    }
}

impl Transport {
    /// A client for `config`, posting to its base URL joined with `path`.
    pub(crate) fn new(config: ModelOptions, path: &str) -> Result<Self, ConfigError> {
        config.validate()?;
        let base = config.resolved_base_url()?;
        let endpoint = join(&base, path);
        let mut builder = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.request_timeout)
            // An API never redirects; following one could carry the key elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("dream/", env!("CARGO_PKG_VERSION")));
        if !config.use_env_proxy {
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| ConfigError::Client(error_chain(&e)))?;
        Ok(Self {
            config,
            endpoint,
            client,
        })
    }

    /// A line saying where `what` (`prompts`, `memory text`) goes, when the base
    /// URL is not the provider's official one (always, for an OpenAI-compatible
    /// server); `path` is the endpoint's path under the official base URL and
    /// `noun` what sends (`model`, `embedder`).
    pub(crate) fn announcement(&self, path: &str, noun: &str, what: &str) -> Option<String> {
        let config = &self.config;
        let endpoint = &self.endpoint;
        let default_endpoint = config
            .provider
            .default_base_url()
            .and_then(|b| Url::parse(b).ok())
            .map(|b| join(&b, path));
        if default_endpoint.as_ref() == Some(endpoint) {
            return None;
        }
        let plain = if endpoint.scheme() == "http" {
            " over plain http"
        } else {
            ""
        };
        let official = if config.provider.default_base_url().is_some() {
            ", not the provider's official address"
        } else {
            ""
        };
        Some(format!(
            "{noun} {}:{} sends {what} to {endpoint}{plain}{official}",
            config.provider.name(),
            config.model
        ))
    }

    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let Some(key) = &self.config.api_key else {
            return Ok(headers);
        };
        // `ApiKey` admits visible ASCII only, so this cannot fail; stay typed anyway.
        let invalid = || ModelError::InvalidRequest("the API key cannot be sent".to_owned());
        match self.config.provider {
            Provider::OpenAi | Provider::OpenAiCompatible => {
                let mut value = HeaderValue::try_from(format!("Bearer {}", key.expose()))
                    .map_err(|_| invalid())?;
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
            }
            Provider::Anthropic => {
                let mut value = HeaderValue::try_from(key.expose()).map_err(|_| invalid())?;
                value.set_sensitive(true);
                headers.insert("x-api-key", value);
                headers.insert(
                    "anthropic-version",
                    HeaderValue::from_static(ANTHROPIC_VERSION),
                );
            }
        }
        Ok(headers)
    }

    /// One attempt of at most `limit`: send, read the capped body, classify the outcome.
    async fn attempt(&self, body: Bytes, limit: Duration) -> Result<Bytes, Failure> {
        let headers = self.headers().map_err(Failure::fatal)?;
        let exchange = async {
            let response = self
                .client
                .post(self.endpoint.clone())
                .headers(headers)
                .body(body)
                .send()
                .await
                .map_err(transport_failure)?;
            let status = response.status();
            let retry_after = retry_after(response.headers());
            if status.is_success() {
                return read_capped(response, self.config.max_response_bytes).await;
            }
            let cap = MAX_ERROR_BODY.min(self.config.max_response_bytes);
            let body = read_capped(response, cap).await.unwrap_or_default();
            Err(self.status_failure(status, retry_after, &body))
        };
        match tokio::time::timeout(limit, exchange).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Failure::transient(ModelError::Timeout, None)),
        }
    }

    fn status_failure(
        &self,
        status: StatusCode,
        retry_after: Option<Duration>,
        body: &[u8],
    ) -> Failure {
        let code = status.as_u16();
        match code {
            401 | 403 => Failure::fatal(ModelError::Unauthorized { status: code }),
            429 => Failure::transient(ModelError::RateLimited, retry_after),
            408 => Failure::transient(ModelError::Timeout, retry_after),
            _ => {
                let error = ModelError::Provider {
                    status: code,
                    message: self.scrubbed(&wire::error_message(body)),
                };
                if status.is_server_error() {
                    Failure::transient(error, retry_after)
                } else {
                    Failure::fatal(error)
                }
            }
        }
    }

    /// A provider message passed through the configured redaction (whole, before it
    /// is shortened), then with the key (any run of 8 of its bytes) removed.
    fn scrubbed(&self, message: &str) -> String {
        let redacted = self.config.redactor.map(|redact| redact(message));
        let message = redacted.as_deref().unwrap_or(message);
        match &self.config.api_key {
            Some(key) => wire::scrub(message, &[(key.expose(), 8)]),
            None => wire::scrub(message, &[]),
        }
    }

    /// A text bound for a log line (a debug-logged prompt or answer): passed through
    /// the configured redaction, with the key removed, but not shortened.
    pub(crate) fn logged(&self, text: &str) -> String {
        let redacted = self.config.redactor.map(|redact| redact(text));
        let text = redacted.unwrap_or_else(|| text.to_owned());
        match &self.config.api_key {
            Some(key) if text.contains(key.expose()) => text.replace(key.expose(), "[redacted]"),
            _ => text,
        }
    }

    /// The delay before retry number `retry` (0-based): doubling from the
    /// base, capped, with jitter in [50%, 100%].
    fn backoff(&self, retry: u32) -> Duration {
        let doubled = self
            .config
            .backoff_base
            .saturating_mul(1u32.checked_shl(retry.min(30)).unwrap_or(u32::MAX));
        let capped = doubled.min(self.config.max_backoff);
        capped.mul_f64(rand::rng().random_range(0.5..=1.0))
    }
}

#[async_trait]
impl LanguageModel for HttpModel {
    fn describe(&self) -> String {
        self.transport.describe()
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, ModelError> {
        let config = &self.transport.config;
        let provider = config.provider;
        wire::check_request(provider, request)?;
        let body = wire::request_body(provider, &config.model, request);
        let body = Bytes::from(serde_json::to_vec(&body).map_err(|_| {
            ModelError::InvalidRequest("the request could not be encoded".to_owned())
        })?);
        if config.debug_prompts {
            tracing::debug!(
                target: "dream_llm::prompt",
                model = %self.describe(),
                json = request.json,
                max_tokens = request.max_tokens,
                system = %self.transport.logged(&request.system),
                user = %self.transport.logged(&request.user),
                "prompt"
            );
        }
        let started = Instant::now();
        let (answer, retries) = self.transport.call(body).await?;
        let completion = wire::parse_answer(provider, &config.model, &answer)
            .map_err(|e| self.transport.fail(e, started))?;
        if config.debug_prompts {
            tracing::debug!(
                target: "dream_llm::prompt",
                model = %self.describe(),
                truncated = completion.truncated,
                answer = %self.transport.logged(&completion.text),
                "answer"
            );
        }
        tracing::debug!(
            model = %self.describe(),
            input_tokens = completion.usage.input,
            output_tokens = completion.usage.output,
            truncated = completion.truncated,
            retries,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "model call done"
        );
        Ok(completion)
    }
}

impl Transport {
    /// `provider:model`, key-free.
    pub(crate) fn describe(&self) -> String {
        format!("{}:{}", self.config.provider.name(), self.config.model)
    }

    /// Posts `body` until an answer arrives, retrying what is worth a retry
    /// within the budget and the deadline; returns the answer and the retries made.
    pub(crate) async fn call(&self, body: Bytes) -> Result<(Bytes, u32), ModelError> {
        let started = Instant::now();
        let mut waited = Duration::ZERO;
        let mut retry = 0;
        loop {
            let left = self.config.deadline.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(self.fail(ModelError::Timeout, started));
            }
            let limit = left.min(self.config.request_timeout);
            let failure = match self.attempt(body.clone(), limit).await {
                Ok(answer) => return Ok((answer, retry)),
                Err(failure) => failure,
            };
            if !failure.retryable || retry >= self.config.max_retries {
                return Err(self.fail(failure.error, started));
            }
            let delay = failure.retry_after.unwrap_or_else(|| self.backoff(retry));
            if waited.saturating_add(delay) > self.config.max_total_wait {
                tracing::warn!(
                    model = %self.describe(),
                    delay_ms = delay.as_millis() as u64,
                    "the provider asks for a longer wait than the retry budget allows"
                );
                return Err(self.fail(failure.error, started));
            }
            if started.elapsed().saturating_add(delay) >= self.config.deadline {
                tracing::warn!(
                    model = %self.describe(),
                    deadline_s = self.config.deadline.as_secs_f64(),
                    "no time is left for another attempt before the call's deadline"
                );
                return Err(self.fail(failure.error, started));
            }
            tracing::warn!(
                model = %self.describe(),
                error = %failure.error,
                retry = retry + 1,
                of = self.config.max_retries,
                delay_ms = delay.as_millis() as u64,
                "retrying model call"
            );
            tokio::time::sleep(delay).await;
            waited += delay;
            retry += 1;
        }
    }
}

impl Transport {
    /// Logs a failed call (key-free) and returns its error.
    pub(crate) fn fail(&self, error: ModelError, started: Instant) -> ModelError {
        tracing::warn!(
            model = %self.describe(),
            error = %error,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "model call failed"
        );
        error
    }
}

/// `base` with `path` appended to its path (`/v1` + `/chat/completions`).
fn join(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let joined = format!("{}{path}", base.path().trim_end_matches('/'));
    url.set_path(&joined);
    url
}

/// Reads a body, stopping as soon as it passes `cap` bytes.
async fn read_capped(mut response: reqwest::Response, cap: usize) -> Result<Bytes, Failure> {
    let too_large = || Failure::fatal(ModelError::TooLarge { limit: cap });
    if response.content_length().is_some_and(|n| n > cap as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport_failure)? {
        if body.len() + chunk.len() > cap {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(body))
}

/// A transport error, described without the URL; every kind is worth a retry
/// except a request that could not be built.
fn transport_failure(e: reqwest::Error) -> Failure {
    if e.is_timeout() {
        return Failure::transient(ModelError::Timeout, None);
    }
    if e.is_builder() {
        return Failure::fatal(ModelError::InvalidRequest(
            "the request could not be built".to_owned(),
        ));
    }
    let what = if e.is_connect() {
        "could not connect"
    } else if e.is_body() || e.is_decode() {
        "the connection failed while reading the answer"
    } else {
        "the request failed"
    };
    Failure::transient(
        ModelError::Transport(format!("{what}: {}", error_chain(&e))),
        None,
    )
}

/// The innermost cause of an error (an OS or protocol message), without the URL.
fn error_chain(e: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = e;
    while let Some(next) = source.source() {
        source = next;
    }
    if std::ptr::addr_eq(source, e) {
        return "no further detail".to_owned();
    }
    wire::scrub(&source.to_string(), &[])
}

/// How long the provider asks us to wait: `retry-after-ms` (OpenAI), then
/// `retry-after` as seconds or an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = text("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = when.signed_duration_since(chrono::Utc::now());
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "0.25")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&headers(&[
                ("retry-after-ms", "1500"),
                ("retry-after", "9")
            ])),
            Some(Duration::from_millis(1500))
        );
        let soon = (chrono::Utc::now() + chrono::TimeDelta::seconds(30)).to_rfc2822();
        let wait = retry_after(&headers(&[("retry-after", &soon)])).unwrap();
        assert!(
            wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Sun, 06 Nov 1994 08:49:37 GMT"
            )])),
            Some(Duration::ZERO)
        );
        for junk in ["-1", "NaN", "1e400", "soon", ""] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", junk)])),
                None,
                "{junk}"
            );
        }
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn urls_join_like_the_sdks() {
        let u = |s| Url::parse(s).unwrap();
        assert_eq!(
            join(&u("https://api.openai.com/v1"), "/chat/completions").as_str(),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            join(&u("https://api.openai.com/v1/"), "/chat/completions").as_str(),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            join(&u("https://api.anthropic.com"), "/v1/messages").as_str(),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            join(&u("http://127.0.0.1:8080/proxy/anthropic/"), "/v1/messages").as_str(),
            "http://127.0.0.1:8080/proxy/anthropic/v1/messages"
        );
    }

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let model = ModelOptions::openai_compatible("m", "http://127.0.0.1:1/v1")
            .retries(
                10,
                Duration::from_millis(100),
                Duration::from_secs(1),
                Duration::from_secs(10),
            )
            .build()
            .unwrap()
            .transport;
        for _ in 0..50 {
            let first = model.backoff(0);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let third = model.backoff(2);
            assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
            let late = model.backoff(40);
            assert!(late >= Duration::from_millis(500) && late <= Duration::from_secs(1));
        }
    }

    #[test]
    fn official_urls_are_not_announced_custom_ones_are() {
        let key = || crate::ApiKey::new("sk-x").unwrap();
        let official = ModelOptions::openai("gpt-4o-mini")
            .api_key(key())
            .build()
            .unwrap();
        assert_eq!(official.announcement(), None);
        assert_eq!(
            official.endpoint().as_str(),
            "https://api.openai.com/v1/chat/completions"
        );
        let trailing = ModelOptions::openai("gpt-4o-mini")
            .api_key(key())
            .base_url("https://api.openai.com/v1/")
            .build()
            .unwrap();
        assert_eq!(trailing.announcement(), None);
        let anthropic = ModelOptions::anthropic("claude-x")
            .api_key(key())
            .build()
            .unwrap();
        assert_eq!(anthropic.announcement(), None);
        assert_eq!(
            anthropic.endpoint().as_str(),
            "https://api.anthropic.com/v1/messages"
        );
        let proxied = ModelOptions::anthropic("claude-x")
            .api_key(key())
            .base_url("https://gateway.example.com/anthropic")
            .build()
            .unwrap();
        let line = proxied.announcement().unwrap();
        assert!(
            line.contains("https://gateway.example.com/anthropic/v1/messages"),
            "{line}"
        );
        assert!(
            line.contains("not the provider's official address"),
            "{line}"
        );
        let local = ModelOptions::openai_compatible("llama3", "http://localhost:11434/v1")
            .build()
            .unwrap();
        let line = local.announcement().unwrap();
        assert!(line.contains("http://localhost:11434/v1/chat/completions over plain http"));
        assert!(!format!("{official:?}").contains("sk-x"));
    }
}
