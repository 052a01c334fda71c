//! TLS for `dream mcp --listen` (`--tls-cert FILE --tls-key FILE`): the
//! server's certificate chain and private key, as PEM files, into a rustls
//! server configuration on the ring provider (the one the network stores use).
//! With it the server may listen beyond loopback: the bearer token then crosses
//! the network encrypted.

use std::io::Read as _;
use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::http::HttpError;

/// Largest key file accepted, in bytes.
const MAX_KEY_FILE: u64 = 64 * 1024;

/// The server's TLS identity: a certificate chain and its key, ready to serve.
#[derive(Clone)]
pub struct TlsIdentity {
    config: Arc<ServerConfig>,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsIdentity(..)")
    }
}

impl TlsIdentity {
    /// Reads a PEM certificate chain (the server's certificate first) and its PEM
    /// private key from a regular file that neither group nor others can access
    /// (mode 0600 or stricter). HTTP/1.1 only, TLS 1.2 and 1.3.
    pub fn from_files(cert: &Path, key: &Path) -> Result<Self, HttpError> {
        let fail = |what: &str, path: &Path, reason: String| {
            HttpError::Tls(format!("the TLS {what} {}: {reason}", path.display()))
        };
        let pem = dream_tls::read_ca_file(cert).map_err(|e| fail("certificate", cert, e.reason))?;
        let chain = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| fail("certificate", cert, format!("it is not valid PEM: {e}")))?;
        let key_der = read_key(key).map_err(|reason| fail("key", key, reason))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| HttpError::Tls(format!("TLS setup failed: {e}")))?
            .with_no_client_auth()
            .with_single_cert(chain, key_der)
            .map_err(|e| {
                HttpError::Tls(format!(
                    "the TLS certificate {} and key {} do not make an identity: {e}",
                    cert.display(),
                    key.display()
                ))
            })?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsIdentity {
            config: Arc::new(config),
        })
    }

    /// The acceptor that runs the server's side of each handshake.
    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.config.clone())
    }
}

/// The one private key in a PEM file others cannot read.
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    use std::os::unix::fs::PermissionsExt as _;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read it: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err("it is not a file".to_owned());
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "it has mode {mode:o}: others may read the private key; chmod 600 it"
        ));
    }
    let mut pem = zeroize::Zeroizing::new(Vec::new());
    file.take(MAX_KEY_FILE + 1)
        .read_to_end(&mut pem)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if pem.len() as u64 > MAX_KEY_FILE {
        return Err("it is larger than 64 KiB".to_owned());
    }
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| format!("it holds no PEM private key: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_others_can_read_or_a_file_that_is_no_key_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key.pem");
        std::fs::write(&key, "not a key\n").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = read_key(&key).unwrap_err();
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = read_key(&key).unwrap_err();
        assert!(e.contains("no PEM private key"), "{e}");
        let e = read_key(&dir.path().join("missing.pem")).unwrap_err();
        assert!(e.starts_with("cannot read it"), "{e}");
        let e = TlsIdentity::from_files(&key, &key).unwrap_err();
        assert!(e.to_string().contains("certificate"), "{e}");
    }
}
