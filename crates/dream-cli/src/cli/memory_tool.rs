//! `dream memory-tool`: one command of Anthropic's client-side memory tool
//! (`memory_20250818`) against the store. The tool input (the `input` of the
//! model's `tool_use` block) is read as JSON on stdin; the tool result's text is
//! printed on stdout, exit 0, or — for a command the tool refuses (a path outside
//! `/memories`, a missing file, a quarantined write) — exit 1 with the error
//! text on stdout, for the caller's `is_error`. Every write is the agent's:
//! held until the person confirms it (`dream review`, `dream confirm`).

use clap::Args;
use dream::engine::Dream;
use dream::engine::memory_tool::MemoryTool;

use super::context::{Access, Global};
use super::streams::{FormatArg, escape_body, read_piped_stdin};
use super::{CliError, Found, Outcome};

/// Largest tool input read from stdin: a file's text is bounded by the memory
/// content limit, and the rest is a path or two.
const MAX_INPUT_BYTES: usize = 4 * dream::engine::limits::CONTENT_BYTES;

/// `dream memory-tool`.
#[derive(Debug, Args)]
pub struct MemoryToolArgs {
    /// text prints the result's text; json prints `{"content": TEXT, "is_error": BOOL}`.
    #[command(flatten)]
    pub output: FormatArg,
}

/// Runs one memory-tool command read from stdin.
pub async fn memory_tool(global: &Global, args: MemoryToolArgs) -> Outcome {
    let text = read_piped_stdin(
        "a memory tool input (JSON)",
        "pipe it: echo '{\"command\":\"view\",\"path\":\"/memories\"}' | dream memory-tool",
    )?;
    if text.len() > MAX_INPUT_BYTES {
        return Err(CliError::usage(format!(
            "the tool input is {} bytes, over the bound of {MAX_INPUT_BYTES}",
            text.len()
        )));
    }
    let input: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| CliError::usage(format!("the tool input is not JSON: {e}")))?;
    // One store handle for the writes and the firewall; no model is called.
    // A `view` reads: it never creates a store.
    let here = global.locate()?;
    let access = match input.get("command").and_then(serde_json::Value::as_str) {
        Some("view") => Access::Read,
        _ => Access::Create,
    };
    let store = global.open_store(&here, access).await?;
    let seal = global.seal_key(&here, access)?;
    let mut dream = Dream::open(store.clone(), global.options(&here.config)?)?;
    if let Some(seal) = &seal {
        dream = dream.with_seal(seal.key.clone());
    }
    let recall = super::recall::build_recall(store, seal, None, None);
    let result = MemoryTool::new(&dream, &recall)
        .execute_json(&input)
        .await?;
    let json = serde_json::json!({ "content": result.text, "is_error": result.is_error });
    args.output
        .one(&json, || outln!("{}", escape_body(&result.text)))?;
    Ok(Found::when(result.is_error))
}
