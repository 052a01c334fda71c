//! A PostgreSQL server of a test's own: `initdb` into a temp dir, started with
//! `pg_ctl` on a free port, restarted (`-m fast` or `-m immediate`, a crash) when
//! the test says, stopped (immediate) on drop. As root the programs run as the
//! `postgres` user (the server refuses root).

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A private server; `dir` holds its data, socket and log.
pub struct PrivateServer {
    dir: PathBuf,
    data: PathBuf,
    options: String,
    /// The TCP port, on `localhost`.
    pub port: u16,
    as_postgres: bool,
}

/// Runs `program args` as the `postgres` user when `as_postgres`.
fn run(as_postgres: bool, program: &str, args: &[&str]) -> Result<(), String> {
    let mut command = if as_postgres {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", program]);
        c
    } else {
        Command::new(program)
    };
    let output = command
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `path` as UTF-8 (temp dirs are).
pub fn utf8(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}

impl PrivateServer {
    /// initdb into `dir/data` and start, with `extra` server options (`-c name=value …`).
    pub fn start(dir: &Path, extra: &str) -> Result<PrivateServer, String> {
        let as_postgres = rustix::process::geteuid().is_root();
        if as_postgres {
            run(false, "chown", &["-R", "postgres:", utf8(dir)])?;
        }
        let data = dir.join("data");
        run(
            as_postgres,
            "initdb",
            &[
                "-D",
                utf8(&data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        )?;
        let port = free_port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=localhost {extra}",
            utf8(dir)
        );
        let server = PrivateServer {
            dir: dir.to_path_buf(),
            data,
            options,
            port,
            as_postgres,
        };
        server.pg_ctl(&["start"])?;
        Ok(server)
    }

    fn pg_ctl(&self, action: &[&str]) -> Result<(), String> {
        let log = self.dir.join("server.log");
        let mut args = vec![
            "-D",
            utf8(&self.data),
            "-l",
            utf8(&log),
            "-o",
            &self.options,
            "-w",
            "-t",
            "60",
        ];
        args.extend_from_slice(action);
        run(self.as_postgres, "pg_ctl", &args)
            .map_err(|e| format!("{e}\n{}", std::fs::read_to_string(&log).unwrap_or_default()))
    }

    /// Restarts the server: `mode` `fast` (sessions terminated, a clean
    /// shutdown) or `immediate` (every process killed, crash recovery on start).
    pub fn restart(&self, mode: &str) -> Result<(), String> {
        self.pg_ctl(&["-m", mode, "restart"])
    }

    /// The directory holding the server's unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// A URL for database `postgres` on `host`, with `query` (may be empty).
    pub fn url(&self, host: &str, query: &str) -> String {
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        format!("postgres://postgres@{host}:{}/postgres{query}", self.port)
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = run(
            self.as_postgres,
            "pg_ctl",
            &["-D", utf8(&self.data), "-m", "immediate", "-w", "stop"],
        );
    }
}
