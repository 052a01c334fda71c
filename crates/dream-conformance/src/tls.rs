//! Throwaway certificate authorities for TLS tests, made with the `openssl` CLI.
//!
//! ```ignore
//! let dir = tempfile::tempdir()?;
//! let Some(ca) = TestCa::new(dir.path(), "ca")? else { return }; // no openssl: skip
//! let server = ca.issue("server", &["IP:127.0.0.1", "DNS:localhost"])?;
//! ```

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A self-signed CA (P-256, valid one day) whose files live in a directory.
#[derive(Debug, Clone)]
pub struct TestCa {
    dir: PathBuf,
    /// The CA certificate (PEM).
    pub cert: PathBuf,
    key: PathBuf,
}

/// A certificate and its key (PEM files) issued by a [`TestCa`].
#[derive(Debug, Clone)]
pub struct Issued {
    /// The certificate.
    pub cert: PathBuf,
    /// Its private key (mode 0600).
    pub key: PathBuf,
}

fn openssl(args: &[&str]) -> io::Result<()> {
    let output = Command::new("openssl")
        .args(args)
        .stdin(Stdio::null())
        .output()?;
    if output.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "openssl {} failed: {}",
            args.first().copied().unwrap_or(""),
            String::from_utf8_lossy(&output.stderr)
        )))
    }
}

fn path_str(path: &Path) -> io::Result<&str> {
    path.to_str()
        .ok_or_else(|| io::Error::other("a non-UTF-8 temp path"))
}

impl TestCa {
    /// Makes a CA named `name` in `dir`; `Ok(None)` when no `openssl` can be run.
    pub fn new(dir: &Path, name: &str) -> io::Result<Option<TestCa>> {
        let cert = dir.join(format!("{name}.pem"));
        let key = dir.join(format!("{name}.key"));
        let subject = format!("/CN=Dream test CA {name}");
        let made = openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "1",
            "-subj",
            &subject,
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            path_str(&key)?,
            "-out",
            path_str(&cert)?,
        ]);
        match made {
            Ok(()) => Ok(Some(TestCa {
                dir: dir.to_path_buf(),
                cert,
                key,
            })),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Issues a server certificate named `name` for the subject alternative
    /// names `sans` (`"IP:127.0.0.1"`, `"DNS:localhost"`).
    pub fn issue(&self, name: &str, sans: &[&str]) -> io::Result<Issued> {
        let cert = self.dir.join(format!("{name}.pem"));
        let key = self.dir.join(format!("{name}.key"));
        let csr = self.dir.join(format!("{name}.csr"));
        let ext = self.dir.join(format!("{name}.ext"));
        std::fs::write(
            &ext,
            format!(
                "subjectAltName={}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
                sans.join(",")
            ),
        )?;
        let subject = format!("/CN={name}");
        openssl(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            &subject,
            "-keyout",
            path_str(&key)?,
            "-out",
            path_str(&csr)?,
        ])?;
        openssl(&[
            "x509",
            "-req",
            "-days",
            "1",
            "-in",
            path_str(&csr)?,
            "-CA",
            path_str(&self.cert)?,
            "-CAkey",
            path_str(&self.key)?,
            "-CAcreateserial",
            "-extfile",
            path_str(&ext)?,
            "-out",
            path_str(&cert)?,
        ])?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))?;
        Ok(Issued { cert, key })
    }
}
