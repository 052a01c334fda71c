//! Downloads of model files from the Hugging Face hub's file endpoint,
//! `GET {endpoint}/{org}/{name}/resolve/{revision}/{file}`, only when the person
//! asks (`dream model fetch`). The endpoint is `https://huggingface.co`, or
//! `HF_ENDPOINT` as huggingface_hub reads it (announced before the first call;
//! plain http only to loopback). No key is sent: public models only.
//!
//! The answer's `X-Repo-Commit` header names the commit the revision resolved
//! to, so the caller can lay the files out as the hub's cache does.

use std::time::Duration;

use bytes::Bytes;
use dream_core::llm::ModelError;
use reqwest::{StatusCode, Url};

use crate::config::check_base_url;
use crate::error::ConfigError;

/// The hub huggingface_hub talks to when `HF_ENDPOINT` is unset.
pub const DEFAULT_HUB_ENDPOINT: &str = "https://huggingface.co";
/// The variable that overrides it (as huggingface_hub reads it).
pub const HUB_ENDPOINT_VAR: &str = "HF_ENDPOINT";
/// Most redirects followed for one file (the hub sends large files to a CDN).
pub const MAX_HUB_REDIRECTS: usize = 5;

/// One downloaded file.
#[derive(Debug, Clone)]
pub struct HubFile {
    /// Its bytes.
    pub bytes: Bytes,
    /// The commit the revision resolved to (`X-Repo-Commit`), when the hub said.
    pub commit: Option<String>,
}

/// A client of the hub's file endpoint.
#[derive(Debug, Clone)]
pub struct HubClient {
    endpoint: Url,
    client: reqwest::Client,
}

/// Whether `part` is a path segment safe to put in a URL and a cache path.
fn safe_segment(part: &str) -> bool {
    !part.is_empty()
        && part.len() <= 128
        && !part.starts_with('.')
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl HubClient {
    /// A client of the hub at `endpoint` (https, or http to loopback).
    pub fn new(endpoint: &str) -> Result<Self, ConfigError> {
        let endpoint = check_base_url(endpoint, false)?;
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .read_timeout(Duration::from_secs(60))
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                if attempt.previous().len() >= MAX_HUB_REDIRECTS {
                    attempt.error("too many redirects")
                } else if attempt.url().scheme() != "https"
                    && attempt.previous().first().map(Url::scheme) == Some("https")
                {
                    attempt.error("a redirect from https to plain http")
                } else {
                    attempt.follow()
                }
            }))
            .user_agent(concat!("dream/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|_| ConfigError::InvalidBaseUrl("the HTTP client could not be built"))?;
        Ok(HubClient { endpoint, client })
    }

    /// The hub named by `HF_ENDPOINT`, else [`DEFAULT_HUB_ENDPOINT`].
    pub fn from_env() -> Result<Self, ConfigError> {
        match std::env::var(HUB_ENDPOINT_VAR) {
            Ok(endpoint) if !endpoint.trim().is_empty() => Self::new(&endpoint),
            _ => Self::new(DEFAULT_HUB_ENDPOINT),
        }
    }

    /// The endpoint, as checked.
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str().trim_end_matches('/')
    }

    /// A line to show before the first call when the endpoint is not the default.
    pub fn announcement(&self) -> Option<String> {
        (self.endpoint() != DEFAULT_HUB_ENDPOINT)
            .then(|| format!("models are downloaded from {}", self.endpoint()))
    }

    /// The URL of `file` of `repo` (`ORG/NAME`) at `revision`.
    pub fn file_url(&self, repo: &str, revision: &str, file: &str) -> Result<Url, ModelError> {
        let invalid =
            || ModelError::InvalidRequest(format!("invalid hub path {repo}@{revision}:{file}"));
        let (org, name) = repo.split_once('/').ok_or_else(invalid)?;
        if ![org, name, revision].into_iter().all(safe_segment)
            || !file.split('/').all(safe_segment)
        {
            return Err(invalid());
        }
        let mut url = self.endpoint.clone();
        {
            let mut segments = url.path_segments_mut().map_err(|_| invalid())?;
            segments.pop_if_empty();
            segments.extend([org, name, "resolve", revision]);
            segments.extend(file.split('/'));
        }
        Ok(url)
    }

    /// Downloads `file` of `repo` at `revision`, at most `cap` bytes; `Ok(None)`
    /// when the hub has no such file (404).
    pub async fn download(
        &self,
        repo: &str,
        revision: &str,
        file: &str,
        cap: usize,
    ) -> Result<Option<HubFile>, ModelError> {
        let url = self.file_url(repo, revision, file)?;
        let mut response = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| ModelError::Transport(transport(&e)))?;
        let status = response.status();
        if status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(ModelError::Unauthorized {
                status: status.as_u16(),
            });
        }
        if !status.is_success() {
            return Err(ModelError::Provider {
                status: status.as_u16(),
                message: format!("downloading {file}"),
            });
        }
        let commit = response
            .headers()
            .get("x-repo-commit")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if response.content_length().is_some_and(|n| n > cap as u64) {
            return Err(ModelError::TooLarge { limit: cap });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| ModelError::Transport(transport(&e)))?
        {
            if body.len() + chunk.len() > cap {
                return Err(ModelError::TooLarge { limit: cap });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Some(HubFile {
            bytes: Bytes::from(body),
            commit,
        }))
    }
}

/// A transport error without the URL.
fn transport(e: &reqwest::Error) -> String {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else if e.is_redirect() {
        "a refused redirect"
    } else {
        "the download failed"
    };
    let mut source: &dyn std::error::Error = e;
    while let Some(next) = source.source() {
        source = next;
    }
    if std::ptr::addr_eq(source, e) {
        what.to_owned()
    } else {
        format!("{what}: {}", crate::wire::scrub(&source.to_string(), &[]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_built_from_checked_segments() {
        let hub = HubClient::new("http://127.0.0.1:9/mirror/").unwrap();
        assert_eq!(
            hub.file_url("org/model", "main", "1_Pooling/config.json")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:9/mirror/org/model/resolve/main/1_Pooling/config.json"
        );
        for (repo, rev, file) in [
            ("org", "main", "x"),
            ("org/../x", "main", "x"),
            ("org/m", "..", "x"),
            ("org/m", "main", "../x"),
            ("org/m", "main", "a?b"),
            ("org/m", "ma in", "x"),
        ] {
            assert!(
                hub.file_url(repo, rev, file).is_err(),
                "{repo} {rev} {file}"
            );
        }
        assert!(HubClient::new("http://example.com").is_err());
        assert!(HubClient::new("https://example.com").is_ok());
        assert_eq!(
            HubClient::new(DEFAULT_HUB_ENDPOINT).unwrap().announcement(),
            None
        );
        assert!(hub.announcement().unwrap().contains("127.0.0.1:9/mirror"));
    }
}
