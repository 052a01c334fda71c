//! `sslmode=verify-full` / `verify-ca` against a PostgreSQL server this test
//! starts (initdb into a temp dir, `ssl=on`, a certificate for `localhost` from a
//! throwaway CA made by the `openssl` CLI). As root the server runs as the
//! `postgres` user (it refuses root); without `initdb`, `openssl` or that user
//! the test skips loudly, unless `DREAM_REQUIRE_POSTGRES=1`.

mod common;
#[path = "common/server.rs"]
mod server;

use std::path::Path;
use std::sync::Arc;

use server::{PrivateServer, utf8};

use dream_conformance::rules;
use dream_conformance::tls::TestCa;
use dream_core::{RecordStore, StoreError};
use dream_postgres::rustls::CertificateError;
use dream_postgres::tokio_postgres::{self, NoTls};
use dream_postgres::{CertificateRefused, PostgresOptions, PostgresStore};

/// The private server, with TLS on.
fn start_tls(dir: &Path, cert: &Path, key: &Path) -> Result<PrivateServer, String> {
    PrivateServer::start(
        dir,
        &format!(
            "-c ssl=on -c ssl_cert_file={} -c ssl_key_file={} -c fsync=off",
            utf8(cert),
            utf8(key)
        ),
    )
}

/// The URL of the server as `host`, with `sslmode=mode` and `sslrootcert=ca`.
fn tls_url(server: &PrivateServer, host: &str, mode: &str, ca: &Path) -> String {
    server.url(host, &format!("sslmode={mode}&sslrootcert={}", utf8(ca)))
}

fn config(url: &str) -> PostgresOptions {
    PostgresOptions::from_url(url)
        .expect("TLS URL")
        .with_schema(&common::fresh_schema())
        .expect("schema")
        .with_pool_size(4)
}

async fn refused(url: &str) -> CertificateRefused {
    let err = PostgresStore::open(config(url))
        .await
        .expect_err("the server must be refused");
    let shown = err.to_string();
    assert!(
        shown.contains("failed verification"),
        "not said plainly: {shown}"
    );
    assert!(
        !err.is_retryable(),
        "a bad certificate is not transient: {err:?}"
    );
    match err {
        StoreError::Backend { source, .. } => source
            .downcast_ref::<CertificateRefused>()
            .cloned()
            .unwrap_or_else(|| panic!("not a CertificateRefused: {source:?}")),
        other => panic!("unexpected error {other:?}"),
    }
}

/// How many of the server's `dream` connections use TLS, and how many do not,
/// asked over the unix socket in `dir`.
async fn dream_connections(server: &PrivateServer, dir: &Path) -> (i64, i64) {
    let mut config = tokio_postgres::Config::new();
    config
        .host_path(dir)
        .port(server.port)
        .user("postgres")
        .dbname("postgres");
    let (client, connection) = config.connect(NoTls).await.expect("unix socket");
    tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT count(*) FILTER (WHERE s.ssl), count(*) FILTER (WHERE NOT s.ssl) \
             FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = 'dream'",
            &[],
        )
        .await
        .expect("pg_stat_ssl");
    (row.get(0), row.get(1))
}

#[test]
fn verify_full_and_verify_ca_check_the_server() {
    let test = "verify_full_and_verify_ca_check_the_server";
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(ca) = TestCa::new(dir.path(), "ca").expect("make a CA") else {
        common::skip(test, "no openssl CLI to make a throwaway CA");
        return;
    };
    let other = TestCa::new(dir.path(), "other")
        .expect("make a CA")
        .expect("openssl ran a moment ago");
    // Valid for `localhost` only: 127.0.0.1 is a host-name mismatch.
    let issued = ca.issue("server", &["DNS:localhost"]).expect("issue");
    let server = match start_tls(dir.path(), &issued.cert, &issued.key) {
        Ok(server) => server,
        Err(why) => {
            common::skip(test, &format!("could not start a private server: {why}"));
            return;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        // verify-full with the right CA and host: a sample of the conformance
        // rules passes over TLS, each in a fresh schema.
        let url = tls_url(&server, "localhost", "verify-full", &ca.cert);
        // (The private server is thrown away: the schemas are not dropped.)
        let fresh = || async {
            Arc::new(PostgresStore::open(config(&url)).await.expect("open")) as Arc<dyn RecordStore>
        };
        rules::round_trips_values(fresh().await).await;
        rules::list_is_sorted_and_paginated(fresh().await).await;
        rules::concurrent_cas_increments_lose_nothing(fresh().await).await;
        rules::lease_is_exclusive(fresh().await).await;
        rules::expired_lease_is_taken_over_and_stale_fence_refused(fresh().await).await;
        rules::batch_applies_puts_and_deletes(fresh().await).await;
        let store = PostgresStore::open(config(&url)).await.expect("open");
        let (tls, plain) = dream_connections(&server, dir.path()).await;
        assert!(
            tls >= 1 && plain == 0,
            "{tls} TLS and {plain} plain connections"
        );
        drop(store);

        // The wrong host for the certificate: refused by verify-full, accepted
        // by verify-ca (which checks the chain only).
        let refusal = refused(&tls_url(&server, "127.0.0.1", "verify-full", &ca.cert)).await;
        assert!(
            matches!(
                refusal.reason,
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
            ),
            "{refusal}"
        );
        assert!(
            refusal.server.contains(&server.port.to_string()),
            "{refusal}"
        );
        let store = PostgresStore::open(config(&tls_url(
            &server,
            "127.0.0.1",
            "verify-ca",
            &ca.cert,
        )))
        .await
        .expect("verify-ca ignores the host name");
        let key = dream_core::Key::new(
            dream_core::Namespace::new("ns").unwrap(),
            dream_core::RecordId::new("k").unwrap(),
        );
        store
            .put(
                &key,
                dream_core::Bytes::from_static(b"v"),
                dream_core::Write::any(),
            )
            .await
            .expect("write over verify-ca");

        // Another CA: refused by both modes, whatever the host.
        for (host, mode) in [("localhost", "verify-full"), ("127.0.0.1", "verify-ca")] {
            let refusal = refused(&tls_url(&server, host, mode, &other.cert)).await;
            assert_eq!(
                refusal.reason,
                CertificateError::UnknownIssuer,
                "{mode}: {refusal}"
            );
        }
    });
    drop(server);
}
