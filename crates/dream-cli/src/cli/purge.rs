//! `dream purge`: everything of a scope (`--scope NAME`), or a text wherever it
//! is (`--matching TEXT`), for good. `--dry-run` lists what would go first. A
//! scope purge needs a confirmation that names the scope: `--yes-purge-scope
//! NAME`, or typing the name at the prompt on a terminal; without either it is
//! refused.

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use clap::Args;
use dream::core::Scope;
use dream::engine::PurgeReport;

use super::context::{Access, Global};
use super::streams::FormatArg;
use super::{CliError, Found, Outcome};

/// `dream purge (--scope NAME | --matching TEXT) [--dry-run] [--yes-purge-scope NAME]`.
///
/// With the global `--scope NAME` (given on the command line, never taken from
/// `dream.toml`), everything of that scope goes: memories, sessions, history,
/// trash, quarantine, plans and derived state; other scopes are not touched.
#[derive(Debug, Args)]
pub struct PurgeArgs {
    /// Remove this text wherever it is, in every scope (`-`: read it from the
    /// first line of standard input, so it stays out of the process list).
    #[arg(long, value_name = "TEXT")]
    pub matching: Option<String>,
    /// List what would be removed or redacted; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Confirms a scope purge without a prompt; must repeat the scope's name.
    #[arg(long, value_name = "NAME")]
    pub yes_purge_scope: Option<String>,
    #[command(flatten)]
    pub output: FormatArg,
}

/// Runs `dream purge`.
pub async fn purge(global: &Global, args: PurgeArgs) -> Outcome {
    let dream = global.open(Access::Write).await?;
    if args.matching.is_none() {
        let Some(name) = &global.scope else {
            return Err(CliError::usage(
                "give --scope NAME (the scope to purge) or --matching TEXT",
            ));
        };
        let scope = Scope::new(name.clone())?;
        let preview = dream.purge_scope_dry_run(&scope).await?;
        if args.dry_run {
            return show(&format!("scope {scope}"), &preview, args.output, false);
        }
        confirm(&scope, args.yes_purge_scope.as_deref(), &preview)?;
        let bar = super::working(&format!("purging scope {scope}"));
        let report = dream.purge_scope(&scope).await;
        bar.finish_and_clear();
        let report = report?;
        return show(&format!("scope {scope}"), &report, args.output, false);
    }
    if global.scope.is_some() || args.yes_purge_scope.is_some() {
        return Err(CliError::usage(
            "--matching purges the text in every scope: leave out --scope and --yes-purge-scope",
        ));
    }
    let text = match args.matching.as_deref() {
        Some("-") => {
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| CliError::usage(format!("cannot read standard input: {e}")))?;
            line.trim_end_matches(['\r', '\n']).to_owned()
        }
        Some(text) => text.to_owned(),
        None => unreachable!("checked above"),
    };
    let bar = super::working(if args.dry_run {
        "finding the text in every scope"
    } else {
        "purging the text from every scope"
    });
    let report = if args.dry_run {
        dream.purge_matching_dry_run(&text).await
    } else {
        dream.purge_matching(&text).await
    };
    bar.finish_and_clear();
    let report = report?;
    show("the text", &report, args.output, true)
}

/// Refuses a scope purge unless the person named the scope: by flag, or by
/// typing it at the prompt when standard input is a terminal.
fn confirm(scope: &Scope, flag: Option<&str>, preview: &PurgeReport) -> Result<(), CliError> {
    match flag {
        Some(name) if name == scope.as_str() => return Ok(()),
        Some(_) => {
            return Err(CliError::usage(format!(
                "--yes-purge-scope does not name the scope {scope}; nothing was purged"
            )));
        }
        None => {}
    }
    if !std::io::stdin().is_terminal() {
        return Err(CliError::usage(format!(
            "purging scope {scope} needs a confirmation: add --yes-purge-scope {scope} \
             (see what goes first with --dry-run); nothing was purged"
        )));
    }
    eprint!(
        "This removes {} records of scope {scope} for good. Type the scope's name to confirm: ",
        preview.total()
    );
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| CliError::usage(format!("cannot read the confirmation: {e}")))?;
    if line.trim() == scope.as_str() {
        Ok(())
    } else {
        Err(CliError::usage(
            "the confirmation did not name the scope; nothing was purged",
        ))
    }
}

/// Prints a purge report: counts per namespace, and with `ids` the ids too.
fn show(what: &str, report: &PurgeReport, output: FormatArg, ids: bool) -> Outcome {
    output.one(report, || show_text(what, report, ids))?;
    Ok(Found::Nothing)
}

fn show_text(what: &str, report: &PurgeReport, ids: bool) -> Result<(), CliError> {
    let verb = if report.applied { "purged" } else { "dry run:" };
    if report.is_empty() {
        return outln!("{verb} nothing of {what} found");
    }
    outln!(
        "{verb} {what}: {} records{}, {} session messages",
        report.total(),
        if report.applied { "" } else { " would change" },
        report.messages
    )?;
    for (change, map) in [("removed", &report.removed), ("redacted", &report.redacted)] {
        for (ns, list) in map {
            if ids {
                outln!("  {ns} {change}: {}", list.join(" "))?;
            } else {
                outln!("  {ns} {change}: {}", list.len())?;
            }
        }
    }
    Ok(())
}
