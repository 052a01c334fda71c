//! `dream mcp`: Dream as an MCP server over stdio (crates/dream-mcp). Stdout then
//! carries only the protocol: no progress bars, no colour; logs go to stderr.
//! With `--listen`, over streamable HTTP on a loopback address, behind a bearer
//! token (from a 0600 file or `DREAM_MCP_TOKEN`, never a flag).

use std::sync::Arc;

use clap::Args;
use dream_core::SystemClock;
use dream_engine::Dream;
use dream_engine::recall::{PickerOptions, Recall, RecallOptions};
use dream_mcp::http::TOKEN_ENV;
use dream_mcp::{BearerToken, DreamServer, HttpOptions, McpOptions};

use super::context::Global;
use super::{CliError, Found, Outcome};

/// `dream mcp [--allow-admin]`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Also offer the tools that undo a safety decision or destroy data (forget,
    /// confirm, apply). Off by default: an agent must not confirm its own memories.
    #[arg(long)]
    pub allow_admin: bool,
    /// Serve streamable HTTP on this loopback address (e.g. 127.0.0.1:8765) instead of
    /// stdio. Every request needs `Authorization: Bearer TOKEN`, the token read from
    /// --token-file or DREAM_MCP_TOKEN.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// With --listen: a file (mode 0600) holding the bearer token.
    #[arg(long, value_name = "PATH", requires = "listen")]
    pub token_file: Option<std::path::PathBuf>,
    /// With --listen: a browser origin to admit besides the server's own
    /// (scheme://host:port); requests with any other Origin get 403.
    #[arg(long, value_name = "ORIGIN", requires = "listen")]
    pub allow_origin: Vec<String>,
}

/// Opens the store like every other command (same --store, --scope, seal key and
/// model) and serves MCP on stdin/stdout until the client disconnects.
pub async fn mcp(global: &Global, args: McpArgs) -> Outcome {
    let config = global.file_config()?;
    let store = global.open_store(&config, true).await?;
    let seal = global.seal_key(&config)?;
    let model = global.model(&config)?;
    let mut dream = Dream::open(store.clone(), global.options(&config)?)?;
    if let Some(key) = &seal {
        dream = dream.with_seal(key.clone());
    }
    // The persisted index, as `recall::open_recall` uses it.
    let mut options = RecallOptions {
        seal,
        persist: true,
        ..RecallOptions::default()
    };
    if let Some(model) = model {
        options.picker = Some(PickerOptions::new(model.clone()));
        dream = dream.with_model(model);
    }
    let recall = Recall::new(store, Arc::new(SystemClock), options);
    let server = DreamServer::new(
        dream,
        recall,
        McpOptions {
            allow_admin: args.allow_admin,
        },
    );
    let Some(listen) = args.listen else {
        server.serve_stdio().await?;
        return Ok(Found::Nothing);
    };
    let token = match &args.token_file {
        Some(path) => BearerToken::from_file(path)?,
        None => BearerToken::from_env()?.ok_or_else(|| {
            CliError::usage(format!(
                "--listen needs a bearer token: put it in a file of mode 0600 (--token-file) \
                 or in {TOKEN_ENV}"
            ))
        })?,
    };
    let mut options = HttpOptions::new(listen, token);
    options.extra_origins = args.allow_origin;
    let http = server.bind_http(options).await?;
    eprintln!("serving MCP on http://{}/mcp", http.local_addr()?);
    // Runs until the process is stopped (a lease a pass held then expires).
    http.run().await?;
    Ok(Found::Nothing)
}
