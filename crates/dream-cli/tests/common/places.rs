//! Where an end-to-end test's store lives on each backend: fs and SQLite in the
//! test's directory, Redis under a fresh prefix, PostgreSQL in a fresh schema
//! (from `DREAM_TEST_REDIS_URL` / `DREAM_TEST_POSTGRES_URL`, skipped with a
//! banner when absent unless `DREAM_REQUIRE_REDIS=1` / `DREAM_REQUIRE_POSTGRES=1`).
//! A test binary including this declares `mod postgres_common` (the PostgreSQL
//! tests' common module) beside it.
#![allow(dead_code)]

use std::time::Duration;

use super::postgres_common;

/// Where one test's store lives, and what removes it.
pub struct Place {
    /// The `--store` URL.
    pub store: String,
    /// Environment the binary needs for it (the PostgreSQL URL).
    pub env: Vec<(&'static str, String)>,
    redis_prefix: Option<(String, String)>,
    _schema: Option<postgres_common::SchemaGuard>,
}

impl Drop for Place {
    fn drop(&mut self) {
        let Some((url, prefix)) = self.redis_prefix.take() else {
            return;
        };
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let config = dream::redis::RedisOptions::from_url(&url)
                .unwrap()
                .with_prefix(&prefix)
                .unwrap();
            if let Ok(store) = dream::redis::RedisStore::open(config).await {
                let _ = store.destroy().await;
            }
        });
    }
}

fn banner(what: &str) {
    eprintln!(
        "\n{}\n*** SKIPPED: {what} ***\n{}\n",
        "*".repeat(78),
        "*".repeat(78)
    );
}

/// The store of `backend` for one test; `None` (after a banner) when it cannot
/// run here.
pub fn place(backend: &str, name: &str) -> Option<Place> {
    let local = |store: &str| Place {
        store: store.into(),
        env: Vec::new(),
        redis_prefix: None,
        _schema: None,
    };
    match backend {
        "fs" => Some(local("fs:.dream")),
        "sqlite" => Some(local("sqlite:dream.db")),
        "redis" => {
            let url = std::env::var("DREAM_TEST_REDIS_URL")
                .unwrap_or_else(|_| "redis://127.0.0.1:6379/".to_owned());
            let prefix = format!("e2e-{name}-{}", std::process::id());
            let reachable = tokio::runtime::Runtime::new().unwrap().block_on(async {
                let config = dream::redis::RedisOptions::from_url(&url)
                    .ok()?
                    .with_connection_timeout(Duration::from_secs(2));
                dream::redis::RedisStore::open(config).await.ok()
            });
            if reachable.is_none() {
                if std::env::var("DREAM_REQUIRE_REDIS").is_ok_and(|v| v == "1") {
                    panic!("no Redis at {url}, and DREAM_REQUIRE_REDIS=1 requires it");
                }
                banner(&format!("no Redis at {url} for {name}"));
                return None;
            }
            Some(Place {
                store: format!("{url}?prefix={prefix}"),
                env: Vec::new(),
                redis_prefix: Some((url, prefix)),
                _schema: None,
            })
        }
        "postgres" => {
            if !postgres_common::available(name) {
                return None;
            }
            let schema = postgres_common::fresh_schema();
            let guard = postgres_common::SchemaGuard::new(&schema);
            Some(Place {
                store: format!("postgres?schema={schema}"),
                env: vec![("DREAM_POSTGRES_URL", postgres_common::url())],
                redis_prefix: None,
                _schema: Some(guard),
            })
        }
        other => panic!("unknown backend {other}"),
    }
}
