//! The `dream` subcommands and what they share.
//!
//! Exit codes: see [`EXIT_CODES`], the one table `dream --help` and the README
//! show. Everything a command prints on stdout goes through [`out!`] and
//! [`outln!`] (or [`streams::print_json`]), so a closed stdout (`dream … | head -1`)
//! ends the command quietly with [`EXIT_CLOSED_STDOUT`] instead of a panic.

/// Prints to standard output like `print!`, returning `Result<(), CliError>`:
/// a closed stdout is [`CliError::closed_stdout`], reported without a message.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::streams::write_stdout(format_args!($($arg)*))
    };
}

/// Prints a line to standard output like `println!`; see [`out!`].
macro_rules! outln {
    () => {
        $crate::cli::streams::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::streams::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub mod agent_memory;
pub mod config;
pub mod context;
pub mod demo;
pub mod doctor;
pub mod events;
#[cfg(feature = "mcp")]
pub mod lazy;
pub mod locate;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod memory;
pub mod memory_tool;
pub mod models;
pub mod pass;
pub mod purge;
pub mod recall;
pub mod rekey;
pub mod review;
pub mod scan;
pub mod seal;
pub mod stores;
pub mod streams;
pub mod transcripts;
pub mod transfer;

use std::fmt;
use std::process::ExitCode;

/// Exit code: the command ran and found something worth a look.
pub const EXIT_FOUND: u8 = 1;
/// Exit code: an error or a refusal; one line on stderr.
pub const EXIT_ERROR: u8 = 2;
/// Exit code: standard output was closed before everything was written (a reader
/// such as `head` stopped early); nothing is printed. 128 + SIGPIPE, what a shell
/// reports for a program a closed pipe ends.
pub const EXIT_CLOSED_STDOUT: u8 = 141;

/// The exit codes of every command: `dream --help` shows this table and the
/// README's "Exit codes" section repeats it.
pub const EXIT_CODES: &str = "\
Exit codes (every command):
  0    success
  1    the command ran and found something: scan findings, nothing admitted by
       recall, a quarantined remember or import, a failed doctor check, a
       transcript file `log --from` could not read; and any error of
       `recall --hook` (an agent shows it without refusing the prompt)
  2    an error or a refusal, one line on stderr (causes with -v): bad usage or
       input, an unreadable file, an unreachable store, a wrong key, a refused
       apply (an unknown, used or stale plan; nothing applied), a refused release
  130  `dream dream` was stopped by Ctrl-C (SIGINT; 143: SIGTERM): the pass
       stopped where it stood, its sessions stay pending, its claim is free
  141  standard output was closed early (e.g. `dream audit | head -1`); the
       command stops quietly";

/// A command's failure: one line for people, and the exit code.
#[derive(Debug)]
pub struct CliError {
    message: String,
    sources: Vec<String>,
    closed_stdout: bool,
    /// The exit code: [`EXIT_ERROR`], or 128 + the signal that stopped the command.
    code: u8,
}

impl CliError {
    /// A usage or input error.
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            sources: Vec::new(),
            closed_stdout: false,
            code: EXIT_ERROR,
        }
    }

    /// The command needs a cargo feature this `dream` was built without.
    #[cfg(any(
        not(feature = "fs"),
        not(feature = "sqlite"),
        not(feature = "redis"),
        not(feature = "postgres"),
        not(feature = "encryption"),
        not(feature = "llm"),
        not(feature = "local-embedder"),
        not(feature = "mcp-http")
    ))]
    pub fn not_built(feature: &str) -> Self {
        CliError::usage(format!(
            "this dream was built without feature `{feature}`; rebuild with --features {feature}"
        ))
    }

    /// The command was stopped by `signal` (its number): it exits with 128 + it,
    /// as a shell reports a program a signal ended, after saying what it left.
    pub fn stopped(signal: u8, message: impl Into<String>) -> Self {
        CliError {
            code: 128 + signal,
            ..CliError::usage(message)
        }
    }

    /// The same error, exiting 1 (a hook's failure its agent should show but
    /// not treat as a refusal).
    pub fn non_blocking(self) -> Self {
        CliError {
            code: EXIT_FOUND,
            ..self
        }
    }

    /// Standard output was closed: the command stops, quietly.
    pub fn closed_stdout() -> Self {
        CliError {
            closed_stdout: true,
            ..CliError::usage("standard output was closed")
        }
    }

    /// An error writing to standard output: [`CliError::closed_stdout`] for a
    /// broken pipe, else a plain error.
    pub fn stdout(error: std::io::Error) -> Self {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            CliError::closed_stdout()
        } else {
            CliError::usage(format!("cannot write output: {error}"))
        }
    }

    /// Prints the error (sources only with `verbose`) and returns exit code 2;
    /// a closed stdout prints nothing and returns [`EXIT_CLOSED_STDOUT`].
    pub fn report(&self, verbose: bool) -> ExitCode {
        if self.closed_stdout {
            return ExitCode::from(EXIT_CLOSED_STDOUT);
        }
        // An error may quote what it refuses (a bad argument, a line of input, a
        // provider's answer): never a secret in it.
        eprintln!("error: {}", streams::escape(&redact_secrets(&self.message)));
        if verbose {
            for source in &self.sources {
                eprintln!("  caused by: {}", streams::escape(&redact_secrets(source)));
            }
        }
        ExitCode::from(self.code)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for CliError {
    fn from(error: E) -> Self {
        let mut sources = Vec::new();
        let mut source = error.source();
        while let Some(cause) = source {
            sources.push(cause.to_string());
            source = cause.source();
        }
        CliError {
            sources,
            ..CliError::usage(error.to_string())
        }
    }
}

/// `text` with each secret the scanner finds replaced by its redaction marker, as
/// session text is: for text Dream shows that no store redacted (an error quoting
/// its input, a provider's error message).
pub fn redact_secrets(text: &str) -> String {
    dream::engine::transcript_scanner()
        .redact(text)
        .into_owned()
}

/// What a command returns: success, or "found something" (exit 1).
pub type Outcome = Result<Found, CliError>;

/// Whether a command that ran found something worth a non-zero exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Nothing to flag: exit 0.
    Nothing,
    /// Something to flag: exit 1.
    Something,
}

impl Found {
    /// `Something` when `flag` is true.
    pub fn when(flag: bool) -> Self {
        if flag {
            Found::Something
        } else {
            Found::Nothing
        }
    }
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn progress(len: u64, what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_owned());
    bar
}

/// A spinner on stderr for a step of unknown length, with what it is doing and
/// the time so far (hidden when stderr is not a terminal).
pub fn working(what: &str) -> indicatif::ProgressBar {
    let bar =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
        bar.set_style(style);
    }
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_pipe_on_stdout_is_a_quiet_exit_and_other_write_errors_are_not() {
        let closed = CliError::stdout(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert!(closed.closed_stdout);
        let full = CliError::stdout(std::io::Error::other("disk full"));
        assert!(!full.closed_stdout);
        assert_eq!(full.to_string(), "cannot write output: disk full");
    }
}
