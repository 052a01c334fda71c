//! The `dream` command line. See `dream --help` and the README's CLI reference.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

/// Long-term memory for LLM agents that cannot be turned against its user.
#[derive(Debug, Parser)]
#[command(name = "dream", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Scan text for instruction-shaped and secret-shaped content.
    Scan(cli::scan::ScanArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Scan(args) => cli::scan::run(args),
    }
}
