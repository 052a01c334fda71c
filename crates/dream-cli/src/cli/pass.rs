//! `log`, `dream` and `apply`: sessions in, dream passes out.

use std::path::PathBuf;

use clap::Args;
use dream::core::Message;
use dream::engine::transcripts::Format;
use dream::engine::{DreamReport, PassStage, SkipReason};

use super::context::{Access, Global};
use super::models::LlmChoice;
use super::streams::{FormatArg, Style, count, escape, read_input, read_piped_stdin};
use super::{CliError, Found, Outcome};

/// `dream log [FILE|-]`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// A session: a JSON array of {"role","content"} messages, or JSONL of them (stdin when
    /// absent or -; without a file, stdin must not be a terminal). With --from, the agent's
    /// transcript: a file, or for claude-code and codex a directory of session files.
    pub file: Option<PathBuf>,
    /// Read an agent's own transcript format: claude-code (a session .jsonl or a project
    /// directory), codex (a rollout .jsonl or a directory), openai-chat (a Chat Completions
    /// `messages` array), anthropic (a Messages API `messages` array). Tool output, hook and
    /// command output and injected context are logged as tool text, never as the person's;
    /// thinking is dropped; long sessions are split; a transcript already logged is skipped.
    #[arg(long, value_name = "FORMAT", value_parser = parse_format)]
    pub from: Option<Format>,
    /// With --from: take the transcript's path from a hook's JSON on stdin
    /// (`{"transcript_path": …}`, as Claude Code's SessionEnd hook passes it).
    #[arg(long, requires = "from", conflicts_with = "file")]
    pub hook: bool,
    #[command(flatten)]
    pub output: FormatArg,
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse()
        .map_err(|e: dream::engine::transcripts::TranscriptError| e.to_string())
}

/// Parses a session: a JSON array of messages, or one message per line.
pub fn parse_session(text: &str) -> Result<Vec<Message>, CliError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        return serde_json::from_str(trimmed)
            .map_err(|e| CliError::usage(format!("malformed session JSON: {e}")));
    }
    let mut messages = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let message = serde_json::from_str(line)
            .map_err(|e| CliError::usage(format!("line {}: malformed message: {e}", i + 1)))?;
        messages.push(message);
    }
    if messages.is_empty() {
        return Err(CliError::usage("the session has no messages"));
    }
    Ok(messages)
}

/// Whether a `log` argument is no file but reads like a sentence (a new user's
/// `dream log "We deploy on Fridays"`).
fn looks_like_a_sentence(file: &std::path::Path) -> bool {
    file.as_os_str() != "-" && !file.exists() && file.to_string_lossy().contains(' ')
}

/// Logs one session.
pub async fn log(global: &Global, args: LogArgs) -> Outcome {
    if let Some(format) = args.from {
        let path = match (&args.file, args.hook) {
            (_, true) => super::transcripts::hook_path()?,
            (Some(file), false) => file.clone(),
            (None, false) => PathBuf::from("-"),
        };
        return super::transcripts::log_from(global, format, &path, args.output).await;
    }
    let text = match &args.file {
        Some(file) if looks_like_a_sentence(file) => {
            return Err(CliError::usage(format!(
                "there is no file named \"{}\": `dream log` takes a file of messages (a JSON array \
                 or JSON lines of {{role, content}}) or reads them from standard input; \
                 to remember one sentence, use `dream remember \"TEXT\"`",
                escape(&file.display().to_string())
            )));
        }
        Some(file) => read_input(Some(file))?,
        None => read_piped_stdin(
            "a session",
            "give a file (dream log FILE), or pipe the session in (dream log < FILE); \
             `dream log -` reads a terminal until end of input (Ctrl-D)",
        )?,
    };
    let messages = parse_session(&text)?;
    // A session over the limits is split as a transcript is: an over-long
    // message of the person's or the assistant's into consecutive messages, an
    // over-long tool output cut with a marker, a long session into several.
    let parts: Vec<Vec<Message>> = if within_limits(&messages) {
        vec![messages]
    } else {
        dream::engine::transcripts::split(messages)
            .into_iter()
            .map(|part| part.messages)
            .collect()
    };
    let dream = global.open(Access::Create).await?;
    let mut logged = Vec::new();
    for part in parts {
        let messages = part.len();
        let id = dream.log_session(part).await?;
        let session = dream.session(&id).await?;
        let (redactions, flags) = session.map(|s| (s.redactions, s.flags)).unwrap_or_default();
        logged.push(serde_json::json!({
            "session": id, "messages": messages, "redactions": redactions, "flags": flags,
        }));
    }
    let json = match logged.as_slice() {
        [one] => one.clone(),
        _ => serde_json::json!({ "sessions": logged }),
    };
    args.output.one(&json, || {
        if logged.len() > 1 {
            outln!(
                "the session was over one session's limits: logged as {}",
                count(logged.len(), "session")
            )?;
        }
        for session in &logged {
            print_logged(session)?;
        }
        Ok(())
    })?;
    Ok(Found::Nothing)
}

/// Whether a session fits the engine's limits as it is.
fn within_limits(messages: &[Message]) -> bool {
    use dream::engine::{MAX_MESSAGE_BYTES, MAX_MESSAGES_PER_SESSION, MAX_SESSION_BYTES};
    messages.len() <= MAX_MESSAGES_PER_SESSION
        && messages
            .iter()
            .all(|m| m.content.len() <= MAX_MESSAGE_BYTES)
        && messages.iter().map(|m| m.content.len()).sum::<usize>() <= MAX_SESSION_BYTES
}

/// One logged session for people: its id, size, and what was redacted or flagged.
fn print_logged(session: &serde_json::Value) -> Result<(), CliError> {
    let list = |field: &str| -> Vec<String> {
        session[field]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let messages = session["messages"].as_u64().unwrap_or_default() as usize;
    outln!(
        "logged session {}: {}",
        escape(session["session"].as_str().unwrap_or_default()),
        count(messages, "message")
    )?;
    let (redactions, flags) = (list("redactions"), list("flags"));
    if !redactions.is_empty() {
        outln!(
            "  redacted   {} of secret before storing ({})",
            count(redactions.len(), "kind"),
            escape(&redactions.join(", "))
        )?;
    }
    if !flags.is_empty() {
        outln!(
            "  flagged    {} ({}); a dream pass treats such text as data",
            flags.len(),
            escape(&flags.join(", "))
        )?;
    }
    Ok(())
}

/// `dream dream [--force] [--dry-run]`.
#[derive(Debug, Args)]
pub struct DreamArgs {
    /// Skip the gates (hours since the last pass, pending sessions).
    #[arg(long)]
    pub force: bool,
    /// Plan a pass without applying it: store the plan and print its diff (apply it
    /// with `dream apply`). A dry run always plans, ignoring the gates, as --force does.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub output: FormatArg,
}

/// Runs a pass, or a dry run.
pub async fn dream(global: &Global, args: DreamArgs) -> Outcome {
    // On a terminal (stderr), a line for each stage as it starts and a spinner
    // while it runs; elsewhere nothing is drawn.
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    let verb = if args.dry_run { "planning" } else { "dreaming" };
    let remote = global
        .llm
        .is_some_and(|choice| choice != LlmChoice::Offline);
    let shown = spinner.clone();
    let dream = global
        .open(Access::Write)
        .await?
        .with_progress(std::sync::Arc::new(move |stage| {
            let line = match stage {
                PassStage::SessionsRead { sessions } => {
                    format!("{verb}: read {}", count(sessions, "pending session"))
                }
                PassStage::Consolidating if remote => format!(
                    "{verb}: waiting for the model (retries are reported; --deadline caps the wait)"
                ),
                PassStage::Consolidating => format!("{verb}: consolidating (offline)"),
                PassStage::Writing { records } => {
                    format!("{verb}: writing {}", count(records, "record"))
                }
            };
            shown.println(&line);
            shown.set_message(line);
        }));
    spinner.set_message(format!("{verb}: reading the store"));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    if args.dry_run {
        let gates = dream.check_gates(None).await;
        let dry = until_stopped(dream.dry_run()).await;
        spinner.finish_and_clear();
        let (gates, dry) = (gates?, dry??);
        if dry.report.skipped == Some(SkipReason::AnotherPassRunning) {
            claim_left_by_a_stopped_process(&dream).await?;
        }
        args.output.one(&dry, || {
            if let Some(reason) = &gates {
                outln!(
                    "note: a dry run always plans, ignoring the gates; a pass now would be \
                     skipped: {}",
                    escape(&reason.to_string())
                )?;
            }
            match &dry.plan {
                Some(plan) => outln!("plan {plan} (apply with: dream apply {plan})")?,
                None => outln!("nothing to plan")?,
            }
            out!("{}", dry.diff)?;
            if !dry.diff.ends_with('\n') && !dry.diff.is_empty() {
                outln!()?;
            }
            Ok(())
        })?;
        return Ok(Found::Nothing);
    }
    let report = until_stopped(dream.dream(args.force)).await;
    spinner.finish_and_clear();
    let report = report??;
    super::models::settle_vectors(&dream).await;
    if report.skipped == Some(SkipReason::AnotherPassRunning) {
        claim_left_by_a_stopped_process(&dream).await?;
    }
    print_report(&report, args.output)
}

/// Runs a pass until it ends or the process is asked to stop (SIGINT, SIGTERM).
/// Stopped, the pass is dropped where it stands (its sessions stay pending;
/// a write in flight is refused by its fence), its claim and leases are given
/// up before the process exits, and the command fails saying so.
async fn until_stopped<T>(pass: impl std::future::Future<Output = T>) -> Result<T, CliError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let (name, number) = tokio::select! {
        done = pass => return Ok(done),
        _ = interrupt.recv() => ("SIGINT", 2),
        _ = terminate.recv() => ("SIGTERM", 15),
    };
    // The pass's future is gone: its leases are being released.
    let settled = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        dream::engine::releases_settled(),
    )
    .await
    .is_ok();
    let claim = if settled {
        "its claim is released"
    } else {
        "its claim could not be released and frees itself within 30 s"
    };
    Err(CliError::stopped(
        number,
        format!(
            "stopped by {name}: the pass ended where it stood; its sessions stay pending and {claim}"
        ),
    ))
}

/// A pass skipped because the scope's claim is held: an error when the holder
/// is a process on this host that stopped (killed before it could release it),
/// saying when the claim frees itself.
async fn claim_left_by_a_stopped_process(dream: &dream::engine::Dream) -> Result<(), CliError> {
    match stopped_holder(dream).await? {
        Some(free_at) => Err(CliError::usage(format!(
            "the scope's claim is held by a process that stopped; free at {free_at} \
             (then `dream dream` runs)"
        ))),
        None => Ok(()),
    }
}

/// When the scope's claim frees itself (local time, HH:MM:SS), if its holder is a
/// process on this host that no longer runs.
pub async fn stopped_holder(dream: &dream::engine::Dream) -> Result<Option<String>, CliError> {
    let Some(holder) = dream.claim_holder().await? else {
        return Ok(None);
    };
    let stopped = holder.is_on_this_host()
        && i32::try_from(holder.pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .is_some_and(|pid| {
                rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
            });
    Ok(stopped.then(|| {
        holder
            .expires_at
            .with_timezone(&chrono::Local)
            .format("%H:%M:%S")
            .to_string()
    }))
}

/// `dream apply PLAN_ID`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The plan a dry run stored.
    pub plan: String,
    #[command(flatten)]
    pub output: FormatArg,
}

/// Applies a stored plan exactly, if nothing it read has changed.
pub async fn apply(global: &Global, args: ApplyArgs) -> Outcome {
    let dream = global.open(Access::Write).await?;
    let report = dream.apply(&args.plan).await?;
    print_report(&report, args.output)
}

fn ids<T: std::fmt::Display>(ids: &[T]) -> String {
    ids.iter()
        .map(|id| escape(&id.to_string()).into_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Prints a pass report for people or as JSON.
pub fn print_report(report: &DreamReport, output: FormatArg) -> Outcome {
    output.one(report, || print_report_text(report))?;
    Ok(Found::Nothing)
}

fn print_report_text(report: &DreamReport) -> Result<(), CliError> {
    let style = Style::detect();
    if let Some(reason) = &report.skipped {
        outln!("skipped: {}", escape(&reason.to_string()))?;
        let hint = match reason {
            SkipReason::TooSoon { .. } | SkipReason::NotEnoughSessions { .. } => {
                "the gates open by themselves; `dream dream --force` dreams now"
            }
            SkipReason::NothingPending => {
                "log a session first (`dream log`, or a hook); `dream stats` lists sessions held for you"
            }
            SkipReason::AnotherPassRunning | SkipReason::Disabled => "",
        };
        if !hint.is_empty() {
            outln!("  {hint}")?;
        }
        return Ok(());
    }
    outln!(
        "{} {} ({})",
        style.bold("dream pass"),
        report.pass.as_deref().unwrap_or("-"),
        escape(&report.consolidator)
    )?;
    if let Some(journal) = &report.rolled_forward {
        outln!("  rolled forward an interrupted pass: {}", escape(journal))?;
    }
    let lines: [(&str, String, usize); 6] = [
        ("created", ids(&report.created), report.created.len()),
        ("updated", ids(&report.updated), report.updated.len()),
        (
            "superseded",
            ids(&report.superseded),
            report.superseded.len(),
        ),
        ("deleted", ids(&report.deleted), report.deleted.len()),
        ("pruned", ids(&report.pruned), report.pruned.len()),
        (
            "quarantined",
            ids(&report.quarantined),
            report.quarantined.len(),
        ),
    ];
    for (what, list, count) in lines {
        let label = format!("{what:<12}{count:>4}");
        let label = if what == "quarantined" && count > 0 {
            style.bad(&label)
        } else {
            label
        };
        if count == 0 {
            outln!("  {label}")?;
        } else {
            outln!("  {label}  {list}")?;
        }
    }
    for refusal in &report.refused {
        let target = refusal.target.as_deref().unwrap_or("-");
        let line = format!("{} {}: {}", refusal.action, target, refusal.reason);
        outln!("  {} {}", style.warn("refused"), escape(&line))?;
    }
    outln!("  sessions consumed {}", report.sessions_consumed.len())?;
    for y in &report.yields {
        if report.held_back.iter().any(|h| h.session == y.session) {
            continue;
        }
        if y.is_empty() {
            let reason = y.reason.as_deref().unwrap_or_default();
            // Something was proposed from it and refused: never "nothing durable".
            let what = if y.reason.is_some() && !reason.contains("no new lasting statement") {
                "nothing kept"
            } else {
                "nothing durable"
            };
            outln!("    {}  {what}: {}", y.session, escape(reason))?;
        } else {
            let mut what: Vec<String> = y.memories.iter().map(|m| m.to_string()).collect();
            what.extend(y.quarantined.iter().map(|q| format!("quarantined {q}")));
            outln!("    {}  {}", y.session, what.join(", "))?;
        }
    }
    if !report.held_back.is_empty() {
        outln!(
            "  {} {}",
            style.warn("sessions left pending"),
            report.held_back.len()
        )?;
    }
    for h in &report.held_back {
        let when = if h.stuck {
            format!(
                "held for you after {}: `dream dream --force` retries it",
                count(h.attempts as usize, "attempt")
            )
        } else if h.attempt {
            format!("attempt {}: retried by the next pass", h.attempts)
        } else {
            "waits for the next pass".to_owned()
        };
        outln!("    {}  {} ({when})", h.session, escape(&h.reason))?;
    }
    outln!("  sessions pending  {}", report.pending)?;
    outln!(
        "  tokens            {} in, {} out",
        report.usage.input,
        report.usage.output
    )
}
