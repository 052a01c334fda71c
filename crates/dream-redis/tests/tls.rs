//! `rediss://` against private `redis-server`s that speak only TLS, with
//! throwaway CAs made by the `openssl` CLI: the whole conformance suite passes
//! over TLS, and a server whose certificate is not signed by the trusted CA, or
//! is not valid for the host, is refused with [`CertificateRefused`].

mod common;

use std::sync::Arc;

use common::{RedisServer, ServerOptions};
use dream_conformance::Fixture;
use dream_conformance::tls::TestCa;
use dream_core::StoreError;
use dream_redis::rustls::CertificateError;
use dream_redis::{CertificateRefused, RedisOptions, RedisStore};

/// A TLS-only server with a certificate for `sans` from a fresh CA, the CA, and
/// the temp dir holding their files; `None` after the skip notice.
fn tls_server(test: &str, sans: &[&str]) -> Option<(RedisServer, TestCa, tempfile::TempDir)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(ca) = TestCa::new(dir.path(), "ca").expect("make a CA") else {
        common::skip_because(test, "no openssl CLI to make a throwaway CA");
        return None;
    };
    let issued = ca.issue("server", sans).expect("issue a certificate");
    let server = common::private_or_skip(
        test,
        ServerOptions {
            tls: Some(issued),
            ..ServerOptions::default()
        },
    )?;
    Some((server, ca, dir))
}

fn config(url: &str, ca: &TestCa) -> RedisOptions {
    RedisOptions::from_url(url)
        .expect("rediss URL")
        .with_prefix(&common::fresh_prefix())
        .expect("prefix")
        .with_ca_file(&ca.cert)
        .expect("CA file")
}

async fn make() -> Fixture {
    let started = tokio::task::spawn_blocking(|| {
        tls_server(
            "the conformance suite over TLS",
            &["DNS:localhost", "IP:127.0.0.1"],
        )
    })
    .await
    .expect("start Redis");
    let Some((server, ca, dir)) = started else {
        // Nothing to test: end this test process after the loud notice above.
        std::process::exit(0);
    };
    let url = format!("rediss://localhost:{}/0", server.port());
    let store = RedisStore::open(config(&url, &ca))
        .await
        .expect("open over TLS");
    Fixture::new(Arc::new(store), (server, dir))
}

dream_conformance::conformance_suite!(make);

/// Opens `url` trusting `ca` and returns the certificate failure it must end in.
fn refused(url: &str, ca: &TestCa) -> CertificateRefused {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let err = runtime
        .block_on(RedisStore::open(config(url, ca)))
        .expect_err("the server must be refused");
    let shown = err.to_string();
    assert!(
        shown.contains("failed verification"),
        "not said plainly: {shown}"
    );
    assert!(!err.is_retryable(), "a bad certificate is not transient");
    match err {
        StoreError::Backend { source, .. } => source
            .downcast_ref::<CertificateRefused>()
            .cloned()
            .unwrap_or_else(|| panic!("not a CertificateRefused: {source:?}")),
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn a_server_signed_by_another_ca_is_refused() {
    let Some((server, _ca, dir)) = tls_server(
        "a_server_signed_by_another_ca_is_refused",
        &["DNS:localhost", "IP:127.0.0.1"],
    ) else {
        return;
    };
    let other = TestCa::new(dir.path(), "other")
        .expect("make a CA")
        .expect("openssl ran a moment ago");
    let refusal = refused(&server.url(), &other);
    assert_eq!(refusal.reason, CertificateError::UnknownIssuer, "{refusal}");
    assert!(
        refusal.server.contains(&server.port().to_string()),
        "{refusal}"
    );
}

#[test]
fn a_certificate_for_another_host_is_refused() {
    let Some((server, ca, _dir)) = tls_server(
        "a_certificate_for_another_host_is_refused",
        &["DNS:cache.example.net"],
    ) else {
        return;
    };
    for host in ["127.0.0.1", "localhost"] {
        let url = format!("rediss://{host}:{}", server.port());
        let refusal = refused(&url, &ca);
        assert!(
            matches!(
                refusal.reason,
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
            ),
            "{host}: {refusal}"
        );
    }
}

#[test]
fn without_a_ca_file_only_public_roots_are_trusted() {
    let Some((server, _ca, _dir)) = tls_server(
        "without_a_ca_file_only_public_roots_are_trusted",
        &["IP:127.0.0.1"],
    ) else {
        return;
    };
    let config = RedisOptions::from_url(&server.url()).expect("rediss URL");
    assert!(config.server().ends_with("(tls)"), "{config:?}");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let err = runtime
        .block_on(RedisStore::open(config))
        .expect_err("a private CA is not a public root");
    match err {
        StoreError::Backend { source, .. } => {
            let refusal = source
                .downcast_ref::<CertificateRefused>()
                .unwrap_or_else(|| panic!("not a CertificateRefused: {source:?}"));
            assert_eq!(refusal.reason, CertificateError::UnknownIssuer);
        }
        other => panic!("unexpected error {other:?}"),
    }
}
