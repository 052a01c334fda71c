//! `dream events`: the store's change feed, read from a cursor, once or following.

use std::time::Duration;

use clap::Args;
use dream::engine::FeedEntry;

use super::context::{Access, Global};
use super::streams::{FormatArg, escape, flush_stdout, print_json};
use super::{Found, Outcome};

/// `dream events [--since SEQ] [--follow] [--json]`.
#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Only events after this one (the `seq` of the last event you saw); without
    /// it, from the oldest event the store keeps.
    #[arg(long, value_name = "SEQ")]
    pub since: Option<u64>,
    /// Keep reading: print each new event as any process records it (woken at
    /// once by Redis pub/sub or PostgreSQL notifications, else by polling).
    #[arg(long)]
    pub follow: bool,
    /// How often --follow reads an idle feed, in milliseconds (also when woken
    /// by notifications, as a fallback).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
    pub poll_ms: u64,
    /// With json or jsonl: one JSON object a line (each with its `seq`, the cursor
    /// to resume after it); the feed is a stream, so json prints lines too.
    #[command(flatten)]
    pub output: FormatArg,
}

/// Prints the events after `--since`; with `--follow`, waits for more until stopped.
/// A cursor the store no longer holds is an error saying to resync.
pub async fn events(global: &Global, args: EventsArgs) -> Outcome {
    let dream = global.open(Access::Read).await?;
    let mut feed = dream
        .subscribe(args.since)
        .with_poll(Duration::from_millis(args.poll_ms));
    if args.follow
        && let Some(changes) = dream.watch_changes().await?
    {
        feed = feed.with_wakeups(changes);
    }
    loop {
        let batch = if args.follow {
            vec![feed.next().await?]
        } else {
            feed.poll().await?
        };
        if batch.is_empty() {
            return Ok(Found::Nothing);
        }
        for entry in &batch {
            print_entry(entry, !args.output.is_text())?;
        }
        flush_stdout()?;
    }
}

fn print_entry(entry: &FeedEntry, json: bool) -> Result<(), super::CliError> {
    if json {
        return print_json(entry);
    }
    let value = serde_json::to_value(&entry.event)?;
    let mut kind = String::new();
    let mut fields = Vec::new();
    if let serde_json::Value::Object(map) = value {
        for (name, value) in map {
            match (name.as_str(), value) {
                ("event", serde_json::Value::String(k)) => kind = k,
                (_, serde_json::Value::String(s)) => fields.push(format!("{name}={s}")),
                (_, other) => fields.push(format!("{name}={other}")),
            }
        }
    }
    outln!(
        "{}  {}  {}  {}",
        entry.seq,
        entry.at.to_rfc3339(),
        escape(&kind),
        escape(&fields.join(" "))
    )
}
