//! `dream mcp`: Dream as an MCP server over stdio (crates/dream-mcp). Stdout then
//! carries only the protocol: no progress bars, no colour; logs go to stderr.
//! With `--listen`, over streamable HTTP behind a bearer token (from a 0600 file
//! or `DREAM_MCP_TOKEN`, never a flag): on a loopback address, or with
//! `--tls-cert` and `--tls-key` over HTTPS on any address; built without the
//! feature `mcp-http`, `--listen` is refused before anything is opened.

use clap::Args;
use dream::engine::Dream;
#[cfg(feature = "mcp-http")]
use dream_mcp::http::TOKEN_ENV;
#[cfg(feature = "mcp-http")]
use dream_mcp::{BearerToken, HttpOptions, TlsIdentity};
use dream_mcp::{DreamServer, McpOptions};

use super::context::Global;
use super::{CliError, Found, Outcome};

/// `dream mcp [--allow-admin]`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Also offer the tools that undo a safety decision or destroy data (forget,
    /// confirm, apply). Off by default: an agent must not confirm its own memories.
    #[arg(long)]
    pub allow_admin: bool,
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8765) instead of stdio:
    /// a loopback address, or any with --tls-cert and --tls-key. Every request needs
    /// `Authorization: Bearer TOKEN`, the token read from --token-file or DREAM_MCP_TOKEN.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// With --listen: serve HTTPS with this PEM certificate chain (server first).
    #[arg(long, value_name = "FILE", requires_all = ["listen", "tls_key"])]
    pub tls_cert: Option<std::path::PathBuf>,
    /// With --tls-cert: its PEM private key, in a file of mode 0600.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
    /// With --listen: a host name clients may use in `Host` besides the loopback
    /// names and the listening address (e.g. the name in the certificate).
    #[arg(long, value_name = "NAME", requires = "listen")]
    pub allow_host: Vec<String>,
    /// With --listen: a file (mode 0600) holding the bearer token. Repeat it to
    /// admit several tokens, one per client: each token holds at most a quarter
    /// of the sessions.
    #[arg(long, value_name = "PATH", requires = "listen")]
    pub token_file: Vec<std::path::PathBuf>,
    /// With --listen: a browser origin to admit besides the server's own
    /// (scheme://host:port); requests with any other Origin get 403.
    #[arg(long, value_name = "ORIGIN", requires = "listen")]
    pub allow_origin: Vec<String>,
}

/// Finds the store like every other command (same --store, DREAM_STORE, project
/// search, --scope, seal key and model) and serves MCP on stdin/stdout until
/// the client disconnects. The store and its seal key are made at the first
/// write, never by starting the server or reading (see `lazy`).
pub async fn mcp(global: &Global, args: McpArgs) -> Outcome {
    #[cfg(not(feature = "mcp-http"))]
    if args.listen.is_some() {
        return Err(CliError::not_built("mcp-http"));
    }
    let here = global.locate()?;
    let config = &here.config;
    let (store, seal) = global.open_lazily(&here).await?;
    let model = global.model(config)?;
    let mut dream = Dream::open(store.clone(), global.options(config)?)?;
    if let Some(seal) = &seal {
        dream = dream.with_seal(seal.key.clone());
    }
    if let Some(model) = &model {
        dream = dream.with_model(model.clone());
    }
    // A long-lived server: every write starts a vector backfill in the background.
    let embedder = global.embedder(config)?;
    if let Some(embedder) = &embedder {
        dream = dream.with_embedder(embedder.clone());
    }
    let recall = super::recall::build_recall(store, seal, model, embedder);
    let server = DreamServer::new(
        dream,
        recall,
        McpOptions {
            allow_admin: args.allow_admin,
        },
    );
    #[cfg(feature = "mcp-http")]
    if let Some(listen) = args.listen {
        return serve_http(server, listen, args).await;
    }
    server.serve_stdio().await?;
    Ok(Found::Nothing)
}

/// `dream mcp --listen ADDR`: streamable HTTP (HTTPS with `--tls-cert`) behind
/// the bearer tokens, until the process is stopped.
#[cfg(feature = "mcp-http")]
async fn serve_http(server: DreamServer, listen: std::net::SocketAddr, args: McpArgs) -> Outcome {
    let mut tokens = args
        .token_file
        .iter()
        .map(|path| BearerToken::from_file(path))
        .collect::<Result<Vec<_>, _>>()?;
    if tokens.is_empty()
        && let Some(token) = BearerToken::from_env()?
    {
        tokens.push(token);
    }
    if tokens.is_empty() {
        return Err(CliError::usage(format!(
            "--listen needs a bearer token: put it in a file of mode 0600 (--token-file) \
             or in {TOKEN_ENV}"
        )));
    }
    let token = tokens.remove(0);
    let mut options = HttpOptions::new(listen, token);
    options.extra_tokens = tokens;
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        options.tls = Some(TlsIdentity::from_files(cert, key)?);
    }
    options.extra_hosts = args.allow_host;
    options.extra_origins = args.allow_origin;
    let http = server.bind_http(options).await?;
    let scheme = if http.is_tls() { "https" } else { "http" };
    eprintln!("serving MCP on {scheme}://{}/mcp", http.local_addr()?);
    // Runs until the process is stopped (a lease a pass held then expires).
    http.run().await?;
    Ok(Found::Nothing)
}
