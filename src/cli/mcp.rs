//! `dream mcp`: Dream as an MCP server over stdio (crates/dream-mcp). Stdout then
//! carries only the protocol: no progress bars, no colour; logs go to stderr.

use std::sync::Arc;

use clap::Args;
use dream_core::SystemClock;
use dream_engine::Dream;
use dream_engine::recall::{PickerOptions, Recall, RecallOptions};
use dream_mcp::{DreamServer, McpOptions};

use super::context::Global;
use super::{Found, Outcome};

/// `dream mcp [--allow-admin]`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Also offer the tools that undo a safety decision or destroy data (forget,
    /// confirm, apply). Off by default: an agent must not confirm its own memories.
    #[arg(long)]
    pub allow_admin: bool,
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
    server.serve_stdio().await?;
    Ok(Found::Nothing)
}
