//! The `dream` subcommands and what they share.
//!
//! Exit codes: 0 success; 1 the command ran and found something (scan findings,
//! a refused apply, doctor problems, nothing admitted by recall); 2 an error
//! (bad input, unreadable file, unreachable store, wrong key, …), printed as one
//! line on stderr — with its sources under `-v`.

pub mod config;
pub mod context;
pub mod demo;
pub mod doctor;
pub mod memory;
pub mod models;
pub mod output;
pub mod pass;
pub mod recall;
pub mod rekey;
pub mod scan;
pub mod seal;
pub mod stores;
pub mod transfer;

use std::fmt;
use std::process::ExitCode;

/// A command's failure: one line for people, and the exit code.
#[derive(Debug)]
pub struct CliError {
    message: String,
    sources: Vec<String>,
}

impl CliError {
    /// A usage or input error.
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            sources: Vec::new(),
        }
    }

    /// Prints the error (sources only with `verbose`) and returns exit code 2.
    pub fn report(&self, verbose: bool) -> ExitCode {
        eprintln!("error: {}", output::escape(&self.message));
        if verbose {
            for source in &self.sources {
                eprintln!("  caused by: {}", output::escape(source));
            }
        }
        ExitCode::from(2)
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
            message: error.to_string(),
            sources,
        }
    }
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

/// Prints a value as one line of JSON.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), CliError> {
    println!("{}", serde_json::to_string(value)?);
    Ok(())
}

/// Reads a named file, or standard input for `-` or no file.
pub fn read_input(file: Option<&std::path::Path>) -> Result<String, CliError> {
    use std::io::Read;
    match file {
        Some(path) if path.as_os_str() != "-" => std::fs::read_to_string(path).map_err(|e| {
            CliError::usage(format!(
                "cannot read {}: {e}",
                output::escape(&path.display().to_string())
            ))
        }),
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| CliError::usage(format!("cannot read standard input: {e}")))?;
            Ok(text)
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
