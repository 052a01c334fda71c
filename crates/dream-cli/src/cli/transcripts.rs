//! `dream log --from FORMAT PATH`: agents' transcripts (a file, or a directory of
//! session files) into sessions. The parsing is `dream::engine::transcripts`;
//! this walks files, reports skipped lines, and shows progress.

use std::path::{Path, PathBuf};

use dream::engine::transcripts::{self, Format, MAX_TRANSCRIPT_BYTES};
use dream::engine::{Dream, Logged};
use serde::Deserialize;

use super::context::{Access, Global};
use super::streams::{FormatArg, count, escape, read_input, read_piped_stdin};
use super::{CliError, Found, Outcome, progress};

/// The most session files one directory import reads.
pub const MAX_FILES: usize = 100_000;

/// What a hook passes on standard input (Claude Code's SessionEnd and Stop hooks).
#[derive(Debug, Deserialize)]
struct HookInput {
    transcript_path: PathBuf,
}

/// Where the transcript is: PATH, or the `transcript_path` of a hook's JSON on stdin.
pub fn hook_path() -> Result<PathBuf, CliError> {
    let text = read_piped_stdin(
        "a hook's JSON",
        "--hook reads {\"transcript_path\": …} from standard input, as agent hooks pass it",
    )?;
    let input: HookInput = serde_json::from_str(&text).map_err(|e| {
        CliError::usage(format!("--hook: expected {{\"transcript_path\": …}}: {e}"))
    })?;
    Ok(input.transcript_path)
}

/// Counts over one import.
#[derive(Debug, Default, serde::Serialize)]
struct Tally {
    files: usize,
    logged: usize,
    already: usize,
    skipped_lines: usize,
    failed_files: usize,
}

/// Imports `path` (a file, `-` for stdin, or for the JSONL formats a directory
/// of `.jsonl` files, read recursively in name order) as `format`.
pub async fn log_from(global: &Global, format: Format, path: &Path, output: FormatArg) -> Outcome {
    let is_dir = path.as_os_str() != "-"
        && std::fs::symlink_metadata(path)
            .map(|m| m.is_dir())
            .unwrap_or(false);
    let files = if is_dir {
        if !format.is_jsonl() {
            return Err(CliError::usage(format!(
                "--from {format} takes one file (a `messages` array), not a directory"
            )));
        }
        session_files(path)?
    } else {
        vec![path.to_path_buf()]
    };
    let dream = global.open(Access::Create).await?;
    let mut tally = Tally::default();
    let bar = progress(files.len() as u64, "import");
    if files.len() < 2 {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    for (done, file) in files.iter().enumerate() {
        let shown = escape(&file.display().to_string()).into_owned();
        let result = import_file(&dream, format, file, &shown, &bar, &mut tally).await;
        bar.inc(1);
        match result {
            Ok(()) => tally.files += 1,
            Err(FileError::Unreadable(e)) if is_dir => {
                tally.failed_files += 1;
                bar.suspend(|| eprintln!("warning: {shown}: {e}"));
            }
            Err(FileError::Unreadable(e)) => return Err(e),
            Err(FileError::Store(e)) => {
                bar.finish_and_clear();
                return Err(CliError::usage(format!(
                    "stopped at {shown} ({done} of {} done, {} logged): {e}; \
                     run the same command again to resume (parts already logged are skipped)",
                    count(files.len(), "file"),
                    count(tally.logged, "session")
                )));
            }
        }
    }
    bar.finish_and_clear();
    output.one(&tally, || {
        outln!(
            "logged {} from {} ({} already logged, {} skipped{})",
            count(tally.logged, "session"),
            count(tally.files, "file"),
            tally.already,
            count(tally.skipped_lines, "line"),
            if tally.failed_files > 0 {
                format!(", {} unreadable", count(tally.failed_files, "file"))
            } else {
                String::new()
            }
        )
    })?;
    Ok(Found::when(tally.failed_files > 0))
}

enum FileError {
    /// The file could not be read or parsed (in a directory: reported, the rest go on).
    Unreadable(CliError),
    /// The store refused a part (e.g. too many pending sessions): the import stops.
    Store(dream::engine::DreamError),
}

async fn import_file(
    dream: &Dream,
    format: Format,
    file: &Path,
    shown: &str,
    bar: &indicatif::ProgressBar,
    tally: &mut Tally,
) -> Result<(), FileError> {
    let unreadable = |e: String| FileError::Unreadable(CliError::usage(e));
    if file.as_os_str() != "-" {
        let len = std::fs::metadata(file)
            .map_err(|e| unreadable(format!("cannot read {shown}: {e}")))?
            .len();
        if len > MAX_TRANSCRIPT_BYTES as u64 {
            return Err(unreadable(format!(
                "{shown} is larger than {MAX_TRANSCRIPT_BYTES} bytes"
            )));
        }
    }
    let text = read_input(Some(file)).map_err(FileError::Unreadable)?;
    let transcript =
        transcripts::parse(format, &text).map_err(|e| unreadable(format!("{shown}: {e}")))?;
    let unit = if format.is_jsonl() { "line" } else { "message" };
    for skipped in &transcript.skipped {
        bar.suspend(|| {
            eprintln!(
                "warning: {shown}: {unit} {} skipped: {}",
                skipped.at,
                escape(&skipped.reason)
            )
        });
    }
    tally.skipped_lines += transcript.skipped.len();
    if transcript.messages.is_empty() && !transcript.skipped.is_empty() {
        return Err(unreadable(format!(
            "{shown}: no {unit} reads as a {format} transcript ({} skipped): is it another \
             format? (--from claude-code, codex, openai-chat or anthropic); nothing was logged",
            count(transcript.skipped.len(), unit)
        )));
    }
    for part in transcripts::split(transcript.messages) {
        match dream.log_transcript(part).await.map_err(FileError::Store)? {
            Logged::New(_) => tally.logged += 1,
            Logged::Already(_) => tally.already += 1,
        }
    }
    Ok(())
}

/// Every `.jsonl` file under `dir`, in path order, without following symbolic links.
fn session_files(dir: &Path) -> Result<Vec<PathBuf>, CliError> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let entries = std::fs::read_dir(&next).map_err(|e| {
            CliError::usage(format!(
                "cannot read {}: {e}",
                escape(&next.display().to_string())
            ))
        })?;
        for entry in entries {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = entry.path();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() && path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
                if files.len() > MAX_FILES {
                    return Err(CliError::usage(format!(
                        "more than {MAX_FILES} session files under {}",
                        escape(&dir.display().to_string())
                    )));
                }
            }
        }
    }
    files.sort();
    Ok(files)
}
