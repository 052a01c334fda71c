//! Finding the PostgreSQL server for the tests.
//!
//! - `DREAM_TEST_POSTGRES_URL` names the server (default
//!   `postgres://postgres@127.0.0.1:5432/test`); each test uses a fresh random
//!   schema, dropped afterwards by a guard;
//! - when the server does not answer the test prints loudly that it skipped, and
//!   `DREAM_REQUIRE_POSTGRES=1` turns that into a failure.

#![allow(dead_code)]

use std::time::Duration;

use dream_postgres::tokio_postgres::{self, NoTls};
use dream_postgres::{PostgresOptions, PostgresStore};

/// URL of the server for tests.
pub const URL_ENV: &str = "DREAM_TEST_POSTGRES_URL";
/// `1` makes a missing server a failure instead of a skip.
pub const REQUIRE_ENV: &str = "DREAM_REQUIRE_POSTGRES";
/// The URL used when [`URL_ENV`] is not set.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The test server's URL.
pub fn url() -> String {
    std::env::var(URL_ENV).unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// Prints that `test` skipped, or panics when the server is required.
pub fn skip(test: &str, why: &str) {
    let message = format!("no PostgreSQL for {test} at {URL_ENV} (default {DEFAULT_URL}): {why}");
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        panic!("{message}, and {REQUIRE_ENV}=1 requires PostgreSQL");
    }
    eprintln!(
        "\n{}\n*** SKIPPED: {message} ***\n{}\n",
        "*".repeat(78),
        "*".repeat(78)
    );
}

/// Runs `f` with a plain connection on a private runtime in its own thread (so
/// it works from `Drop` and from inside another runtime).
pub fn with_client<T: Send + 'static>(
    f: impl for<'a> FnOnce(
        &'a tokio_postgres::Client,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>
    + Send
    + 'static,
) -> Result<T, String> {
    let url = url();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async move {
            let mut config: tokio_postgres::Config = url.parse().map_err(|e| format!("{e}"))?;
            config.connect_timeout(Duration::from_secs(3));
            let (client, connection) = config.connect(NoTls).await.map_err(|e| e.to_string())?;
            let task = tokio::spawn(connection);
            let out = f(&client).await;
            drop(client);
            let _ = task.await;
            Ok(out)
        })
    })
    .join()
    .map_err(|_| "the helper thread panicked".to_owned())?
}

/// Runs SQL on the test server.
pub fn execute(sql: &str) -> Result<(), String> {
    let sql = sql.to_owned();
    with_client(move |client| {
        Box::pin(async move { client.batch_execute(&sql).await.map_err(|e| e.to_string()) })
    })?
}

/// Whether the server answers; prints the skip (or panics) when it does not.
pub fn available(test: &str) -> bool {
    match execute("SELECT 1") {
        Ok(()) => true,
        Err(why) => {
            skip(test, &why);
            false
        }
    }
}

/// A fresh random schema name.
pub fn fresh_schema() -> String {
    format!("dream_test_{:016x}", rand::random::<u64>())
}

/// Drops a schema (CASCADE) when dropped.
pub struct SchemaGuard {
    schema: String,
}

impl SchemaGuard {
    /// Guards `schema`.
    pub fn new(schema: &str) -> Self {
        SchemaGuard {
            schema: schema.to_owned(),
        }
    }
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        let _ = execute(&format!(
            "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
            self.schema
        ));
    }
}

/// The test configuration for `schema`.
pub fn config(schema: &str) -> PostgresOptions {
    PostgresOptions::from_url(&url())
        .expect("test URL")
        .with_schema(schema)
        .expect("test schema")
        .with_pool_size(8)
}

/// Opens a store in `schema`.
pub async fn open(schema: &str) -> PostgresStore {
    PostgresStore::open(config(schema))
        .await
        .expect("open the PostgreSQL store")
}
