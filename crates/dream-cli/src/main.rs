//! The `dream` command line. See `dream --help` and the README's CLI reference.
//!
//! Exit codes: the table in `cli::EXIT_CODES` (shown by `dream --help` and in the
//! README): 0 success; 1 the command ran and found something; 2 an error or a
//! refusal, one line on stderr (sources with `-v`); 141 stdout closed early.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod cli;

use cli::context::Global;
use cli::{Found, demo, doctor, memory, pass, recall, rekey, transfer};

/// Long-term memory for LLM agents that cannot be turned against its user.
#[derive(Debug, Parser)]
#[command(
    name = "dream",
    version,
    about,
    after_help = cli::EXIT_CODES
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Append a session: a JSON array of {role, content}, or JSONL of them.
    Log(pass::LogArgs),
    /// Run a dream pass (gated unless --force), or plan one with --dry-run (never gated).
    Dream(pass::DreamArgs),
    /// Apply a stored dry-run plan exactly, if nothing it read has changed.
    Apply(pass::ApplyArgs),
    /// Recall memories through the firewall, one verdict per record.
    Recall(recall::RecallArgs),
    /// Remember one memory (pinned), through the same write gate as a dream.
    Remember(memory::RememberArgs),
    /// List the scope's memories.
    List(cli::streams::FormatArg),
    /// Show one memory.
    Show(memory::ShowArgs),
    /// Forget a memory (to the trash), or purge it with --purge.
    Forget(memory::ForgetArgs),
    /// A memory's prior versions.
    History(memory::IdArgs),
    /// Restore a memory from the trash.
    Restore(memory::RestoreArgs),
    /// Confirm a held memory after review: it becomes the person's word (audited).
    Confirm(memory::ConfirmArgs),
    /// Review held and quarantined memories one at a time in a terminal: confirm,
    /// edit, forget or skip each (audited like `confirm`).
    Review,
    /// Purge for good: everything of a scope (--scope NAME), or a text wherever it is
    /// (--matching TEXT); --dry-run lists what would go.
    Purge(cli::purge::PurgeArgs),
    /// List the trash.
    Trash(cli::streams::FormatArg),
    /// List, release or drop quarantined proposals.
    Quarantine(memory::QuarantineArgs),
    /// Read the audit log.
    Audit(memory::AuditArgs),
    /// The store's change feed (every process's events), from a cursor; --follow waits for more.
    Events(cli::events::EventsArgs),
    /// Counts for the scope.
    Stats(cli::streams::FormatArg),
    /// Import memories from JSONL through the write gate.
    Import(transfer::ImportArgs),
    /// Export the scope's memories as JSONL.
    Export(transfer::ExportArgs),
    /// Re-encrypt every record under a new key (needs --encrypt); --from-plain encrypts a
    /// plaintext store in place, --to-plain decrypts one.
    Rekey(rekey::RekeyArgs),
    /// Make an encryption key: `dream key new --out FILE`.
    Key(rekey::KeyArgs),
    /// Run one command of Anthropic's memory tool (memory_20250818): the tool input as
    /// JSON on stdin, the tool result on stdout (exit 1 for the tool's error text).
    MemoryTool(cli::memory_tool::MemoryToolArgs),
    /// Scan text for instruction-shaped and secret-shaped content.
    Scan(cli::scan::ScanArgs),
    /// A self-contained, offline walk-through in a temporary store.
    Demo,
    /// Check the store, its persistence, the key and the model configuration.
    Doctor(doctor::DoctorArgs),
    /// Embedding models: `dream model fetch ORG/NAME` downloads one for `--embedder
    /// local`; `dream model embed` computes the memories' vectors now.
    Model(cli::models::ModelArgs),
    /// Serve Dream to an agent over MCP on stdio (stdout carries only the protocol).
    #[cfg(feature = "mcp")]
    Mcp(cli::mcp::McpArgs),
}

/// The global options `scan` and `demo` use; they open no store and call no
/// model, so every other global option of [`Cli`] is not offered in their help,
/// and refused when given ([`unused_by_scan_and_demo`]).
const USED_BY_SCAN_AND_DEMO: [&str; 3] = ["verbose", "help", "version"];

/// The ids of the global options of `root` (the [`Cli`] command) that `scan`
/// and `demo` do not use, read from the clap definitions (a new global option
/// is refused there until it is used).
fn unused_by_scan_and_demo(root: &clap::Command) -> Vec<String> {
    root.get_arguments()
        .filter(|arg| arg.is_global_set())
        .map(|arg| arg.get_id().to_string())
        .filter(|id| !USED_BY_SCAN_AND_DEMO.contains(&id.as_str()))
        .collect()
}

/// The command line, with the options a command does not use hidden from its help
/// (a subcommand's own hidden copy of a global option stops it being propagated).
fn command() -> clap::Command {
    let mut command = Cli::command();
    let ids = unused_by_scan_and_demo(&command);
    let unused: Vec<clap::Arg> = command
        .get_arguments()
        .filter(|arg| ids.iter().any(|id| id == arg.get_id()))
        .map(|arg| arg.clone().global(false).hide(true))
        .collect();
    for name in ["scan", "demo"] {
        command = command.mut_subcommand(name, |sub| sub.args(unused.clone()));
    }
    command
}

/// Refuses an option `scan` or `demo` does not use, given before or after the
/// command's name: it would do nothing.
fn refuse_unused(matches: &clap::ArgMatches) {
    let Some((name, sub)) = matches.subcommand() else {
        return;
    };
    if !matches!(name, "scan" | "demo") {
        return;
    }
    let given = |m: &clap::ArgMatches, id: &str| {
        m.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
    };
    if let Some(id) = unused_by_scan_and_demo(&Cli::command())
        .iter()
        .find(|id| given(matches, id) || given(sub, id))
    {
        command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "--{} does nothing for `dream {name}`: it opens no store and calls no model",
                    id.replace('_', "-")
                ),
            )
            .exit();
    }
}

/// An unknown option with a suggestion only where one is likely meant: clap
/// offers the most similar option of the command however unlike (`--limt` →
/// `--llm`). Here an option is suggested when it is a few edits away (one per
/// four characters), from this command first, else naming the command that has it.
fn with_sensible_suggestion(error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::UnknownArgument {
        return error;
    }
    let Some(ContextValue::String(given)) = error.get(ContextKind::InvalidArg) else {
        return error;
    };
    let Some(typed) = given.strip_prefix("--") else {
        return error;
    };
    let typed = typed.split('=').next().unwrap_or(typed);
    let mut root = command();
    root.build();
    let longs = |cmd: &clap::Command| -> Vec<String> {
        cmd.get_arguments()
            .filter(|arg| !arg.is_hide_set())
            .filter_map(|arg| arg.get_long().map(str::to_owned))
            .collect()
    };
    let near = |longs: Vec<String>| {
        longs
            .into_iter()
            .map(|long| (edits(typed, &long), long))
            .filter(|(edits, _)| *edits <= (typed.chars().count() / 4).max(1))
            .min()
            .map(|(_, long)| long)
    };
    let words: Vec<String> = std::env::args().skip(1).collect();
    let current = words
        .iter()
        .find_map(|word| root.find_subcommand(word))
        .unwrap_or(&root);
    let mut message = format!("unexpected argument '{given}' found");
    if let Some(long) = near(longs(current)) {
        message.push_str(&format!("; did you mean '--{long}'?"));
    } else if let Some((name, long)) = root
        .get_subcommands()
        .find_map(|sub| near(longs(sub)).map(|long| (sub.get_name(), long)))
    {
        message.push_str(&format!("; '--{long}' is an option of `dream {name}`"));
    }
    current.clone().error(ErrorKind::UnknownArgument, message)
}

/// The edits (insert, delete, substitute, swap two neighbours) from `a` to `b`.
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

fn main() -> ExitCode {
    let matches = match command().try_get_matches() {
        Ok(matches) => matches,
        Err(e) => with_sensible_suggestion(e).exit(),
    };
    refuse_unused(&matches);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let verbose = cli.global.verbose > 0;
    init_tracing(cli.global.verbose);
    if let Command::Scan(args) = cli.command {
        return cli::scan::run(args);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return cli::CliError::from(e).report(verbose),
    };
    let global = cli.global;
    let outcome = runtime.block_on(async move {
        match cli.command {
            Command::Log(args) => pass::log(&global, args).await,
            Command::Dream(args) => pass::dream(&global, args).await,
            Command::Apply(args) => pass::apply(&global, args).await,
            Command::Recall(args) => {
                let hook = args.hook;
                let recalled = recall::recall(&global, args).await;
                recalled.map_err(|e| if hook { e.non_blocking() } else { e })
            }
            Command::Remember(args) => memory::remember(&global, args).await,
            Command::List(args) => memory::list(&global, args).await,
            Command::Show(args) => memory::show(&global, args).await,
            Command::Forget(args) => memory::forget(&global, args).await,
            Command::History(args) => memory::history(&global, args).await,
            Command::Restore(args) => memory::restore(&global, args).await,
            Command::Confirm(args) => memory::confirm(&global, args).await,
            Command::Review => cli::review::review(&global).await,
            Command::Purge(args) => cli::purge::purge(&global, args).await,
            Command::Trash(args) => memory::trash(&global, args).await,
            Command::Quarantine(args) => memory::quarantine(&global, args).await,
            Command::Audit(args) => memory::audit(&global, args).await,
            Command::Events(args) => cli::events::events(&global, args).await,
            Command::Stats(args) => memory::stats(&global, args).await,
            Command::Import(args) => transfer::import(&global, args).await,
            Command::MemoryTool(args) => cli::memory_tool::memory_tool(&global, args).await,
            Command::Export(args) => transfer::export(&global, args).await,
            Command::Rekey(args) => rekey::rekey(&global, args).await,
            Command::Key(args) => rekey::key(args).await,
            Command::Demo => demo::demo().await,
            Command::Doctor(args) => doctor::doctor(&global, args).await,
            Command::Model(args) => cli::models::model(&global, args).await,
            #[cfg(feature = "mcp")]
            Command::Mcp(args) => cli::mcp::mcp(&global, args).await,
            Command::Scan(_) => unreachable!("handled before the runtime starts"),
        }
    });
    match outcome.and_then(|found| cli::streams::flush_stdout().map(|()| found)) {
        Ok(Found::Nothing) => ExitCode::SUCCESS,
        Ok(Found::Something) => ExitCode::from(cli::EXIT_FOUND),
        Err(e) => e.report(verbose),
    }
}

fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("DREAM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let colour = cli::streams::colour_allowed(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .try_init();
}
