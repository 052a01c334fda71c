//! `import` and `export`: memories as JSONL, to move between backends
//! (`dream --store fs:.dream export | dream --store sqlite:dream.db import -`).

use std::io::Write as _;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use clap::{Args, ValueEnum};
use dream::core::{Memory, MemoryId};
use dream::engine::memory_file;
use dream::engine::{Existing, ImportSource};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::agent_memory;
use super::context::{Access, Global};
use super::memory::parse_kind;
use super::streams::{FormatArg, Style, count, escape, escape_body, read_input};
use super::{CliError, Found, Outcome, progress};

/// What `dream export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ExportFormat {
    /// Every memory of the scope as one JSON object per line (for `dream import`).
    #[default]
    Jsonl,
    /// Every memory of the scope as one JSON array.
    Json,
    /// The admitted memories as a Markdown section for AGENTS.md.
    AgentsMd,
    /// The admitted memories as a Markdown section for CLAUDE.md.
    ClaudeMd,
    /// The admitted memories as Claude Code's memory directory (needs --into DIR):
    /// one topic file each and Dream's section of MEMORY.md; only files Dream wrote
    /// are ever replaced or removed.
    ClaudeCodeMemory,
}

/// `dream export [FILE]` or `dream export --format agents-md [--into FILE]`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Where to write JSONL (stdout when absent or -).
    #[arg(conflicts_with = "into")]
    pub file: Option<PathBuf>,
    /// jsonl (every memory, for import), json (the same as one array), or agents-md / claude-md: only what recall
    /// admits (nothing quarantined, held or secret-bearing), fenced as recalled data,
    /// between `<!-- dream:begin -->` and `<!-- dream:end -->`.
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
    /// With agents-md or claude-md: the Markdown file to update. Only its Dream section
    /// is replaced (or appended when it has none); every other byte stays as it was.
    /// Without it, the section is printed. With claude-code-memory: the memory
    /// directory to write (created when missing).
    #[arg(long, value_name = "FILE")]
    pub into: Option<PathBuf>,
}

/// Writes the scope's memories: JSONL, or a memory file's Dream section.
pub async fn export(global: &Global, args: ExportArgs) -> Outcome {
    if args.format == ExportFormat::ClaudeCodeMemory {
        let Some(dir) = args.into.as_deref() else {
            return Err(CliError::usage(
                "--format claude-code-memory writes a directory: give it with --into DIR",
            ));
        };
        let here = global.locate()?;
        let (recall, scope) = super::recall::open_recall(global, &here).await?;
        let result = recall.brief(&scope, None).await?;
        let admitted: Vec<&Memory> = result.used().collect();
        let report = agent_memory::export_claude(dir, &admitted, &scope)?;
        return agent_memory::print_export(&report, admitted.len(), dir);
    }
    if !matches!(args.format, ExportFormat::Jsonl | ExportFormat::Json) {
        return export_section(global, args.into.as_deref()).await;
    }
    if args.into.is_some() {
        return Err(CliError::usage(
            "--into updates a Markdown file: use it with --format agents-md or claude-md",
        ));
    }
    let dream = global.open(Access::Read).await?;
    // Through the one verified read: a record without this store's seal is
    // exported held (`unconfirmed`, evidence `tool`, `"verified": false`).
    let memories = dream.export().await?;
    let (mut out, write_error): (Box<dyn std::io::Write>, fn(std::io::Error) -> CliError) =
        match &args.file {
            Some(path) if path.as_os_str() != "-" => (
                Box::new(std::io::BufWriter::new(
                    std::fs::File::create(path).map_err(|e| {
                        CliError::usage(format!(
                            "cannot write {}: {e}",
                            escape(&path.display().to_string())
                        ))
                    })?,
                )),
                CliError::from,
            ),
            _ => (
                Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
                CliError::stdout,
            ),
        };
    let bar = progress(memories.len() as u64, "export");
    if args.format == ExportFormat::Json {
        serde_json::to_writer(&mut out, &memories)
            .map_err(std::io::Error::from)
            .map_err(write_error)?;
        out.write_all(b"\n").map_err(write_error)?;
    }
    for memory in memories
        .iter()
        .filter(|_| args.format == ExportFormat::Jsonl)
    {
        serde_json::to_writer(&mut out, memory)
            .map_err(std::io::Error::from)
            .map_err(write_error)?;
        out.write_all(b"\n").map_err(write_error)?;
        bar.inc(1);
    }
    out.flush().map_err(write_error)?;
    bar.finish_and_clear();
    eprintln!("exported {}", count(memories.len(), "memory|memories"));
    Ok(Found::Nothing)
}

/// `dream import FILE|-`, or `dream import --from FORMAT DIR`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// JSONL of memories (- for stdin); with --from, the agent's memory directory.
    pub file: PathBuf,
    /// Read an agent's own memory files instead of JSONL: claude-code-memory (a
    /// MEMORY.md index and topic files with frontmatter) or codex-memories
    /// (MEMORY.md, memory_summary.md). The agent's model wrote them: they are its
    /// word, held until you confirm them (`dream review`). A re-import updates
    /// what the same file imported before.
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with_all = ["pin", "untrusted"])]
    pub from: Option<agent_memory::AgentFormat>,
    /// Replace memories whose id already exists: unchanged ones are left alone,
    /// changed ones updated with their prior version in history.
    #[arg(long)]
    pub replace: bool,
    /// Pin every imported memory (never pruned, never changed by a pass). A
    /// line's own `pinned` is not honoured: pinning is the person's act.
    #[arg(long)]
    pub pin: bool,
    /// The file is another system's export or otherwise unvetted: its memories
    /// are recorded as `tool` evidence and held at recall until `dream confirm`.
    #[arg(long)]
    pub untrusted: bool,
    #[command(flatten)]
    pub output: FormatArg,
}

/// One imported line: `name`, `kind` and `content` required, everything else
/// optional (a missing `description` is the content's first words). A
/// line's own `supersedes`, `sources`, `pinned` and `scope` are ignored, and its
/// `status`, `evidence` and `verified` (an export carries them) only ever lower
/// its trust: a record never grants itself trust.
#[derive(Debug, Deserialize)]
struct ImportLine {
    name: String,
    #[serde(default)]
    description: Option<String>,
    kind: String,
    content: String,
    id: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    expires_at: Option<DateTime<Utc>>,
    created_at: Option<DateTime<Utc>>,
    updated_at: Option<DateTime<Utc>>,
    confidence: Option<f64>,
    #[serde(default)]
    metadata: Map<String, Value>,
    status: Option<dream::core::MemoryStatus>,
    #[serde(default)]
    evidence: Vec<dream::core::Role>,
    verified: Option<bool>,
}

/// Parses JSONL into memories; any bad line fails the whole import, naming the line.
pub fn parse_import(text: &str, now: DateTime<Utc>) -> Result<Vec<Memory>, CliError> {
    let mut memories = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |e: String| CliError::usage(format!("line {}: {e}; nothing was imported", i + 1));
        let parsed: ImportLine = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        let id = match parsed.id {
            Some(id) => MemoryId::new(id).map_err(|e| at(e.to_string()))?,
            None => MemoryId::time_ordered(now),
        };
        let kind = parse_kind(&parsed.kind).map_err(|e| at(e.to_string()))?;
        let description = parsed
            .description
            .filter(|d| !d.trim().is_empty())
            .unwrap_or_else(|| super::memory::name_from_text(&parsed.content));
        let mut memory = Memory::new(id, kind, parsed.name, description, parsed.content, now);
        memory.tags = parsed.tags;
        memory.expires_at = parsed.expires_at;
        memory.created_at = parsed.created_at.unwrap_or(now);
        memory.updated_at = parsed.updated_at.unwrap_or(memory.created_at);
        memory.confidence = parsed.confidence.unwrap_or(1.0);
        memory.metadata = parsed.metadata;
        // Ceilings for the engine's import (see `Dream::import`): what the line
        // says of its own trust lowers it, never raises it.
        if let Some(status) = parsed.status {
            memory.status = status;
        }
        memory.evidence = parsed.evidence;
        if parsed.verified == Some(false) {
            if memory.status == dream::core::MemoryStatus::Active {
                memory.status = dream::core::MemoryStatus::Unconfirmed;
            }
            memory.evidence = vec![dream::core::Role::Tool];
        }
        memories.push(memory);
    }
    Ok(memories)
}

/// Imports memories through the write gate.
pub async fn import(global: &Global, args: ImportArgs) -> Outcome {
    if let Some(format) = args.from {
        return import_agent(global, format, args).await;
    }
    let memories = parse_import(&read_input(Some(&args.file))?, Utc::now())?;
    let dream = global.open(Access::Create).await?;
    let ids: Vec<MemoryId> = memories.iter().map(|m| m.id.clone()).collect();
    let existing = dream.existing(&ids).await?;
    if !existing.is_empty() && !args.replace {
        return Err(CliError::usage(format!(
            "{} memories already exist (first: {}); pass --replace to replace them; nothing was imported",
            existing.len(),
            existing[0]
        )));
    }
    let on_existing = if args.replace {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    let from = if args.untrusted {
        ImportSource::Untrusted
    } else {
        ImportSource::Person
    };
    let totals = import_memories(&dream, memories, args.pin, from, on_existing).await?;
    print_import(
        &totals,
        args.output,
        args.replace,
        &[],
        serde_json::Map::new(),
    )
}

/// `dream import --from FORMAT DIR`: an agent's own memory files, as the agent's word.
async fn import_agent(
    global: &Global,
    format: agent_memory::AgentFormat,
    args: ImportArgs,
) -> Outcome {
    let read = agent_memory::read_dir(&args.file, format)?;
    let dream = global.open(Access::Create).await?;
    let memories = agent_memory::as_memories(&dream, format, read.notes).await?;
    let totals = import_memories(
        &dream,
        memories,
        false,
        ImportSource::Agent,
        Existing::Replace,
    )
    .await?;
    let mut extra = serde_json::Map::new();
    extra.insert("skipped".into(), serde_json::to_value(&read.skipped)?);
    extra.insert("dreams_own".into(), read.dreams_own.into());
    let found = print_import(&totals, args.output, true, &read.skipped, extra)?;
    if args.output.is_text() {
        if read.dreams_own > 0 {
            outln!(
                "left out {} files Dream itself wrote (an earlier export)",
                read.dreams_own
            )?;
        }
        if totals.imported + totals.replaced > 0 {
            outln!(
                "these are the agent's notes, not your word: each is held until you confirm it \
                 (`dream review`)"
            )?;
        }
    }
    Ok(found)
}

/// What an import did, over all its batches.
#[derive(Debug, Default)]
struct ImportTotals {
    imported: usize,
    replaced: usize,
    unchanged: usize,
    quarantined: Vec<String>,
    held_beside: Vec<(MemoryId, MemoryId)>,
    rejected: Vec<(MemoryId, String)>,
}

/// Imports `memories` through the write gate in batches of at most `MAX_IMPORT`.
async fn import_memories(
    dream: &dream::engine::Dream,
    memories: Vec<Memory>,
    pin: bool,
    from: ImportSource,
    on_existing: Existing,
) -> Result<ImportTotals, CliError> {
    let bar = progress(memories.len() as u64, "import");
    let mut totals = ImportTotals::default();
    let mut batch = memories.into_iter().peekable();
    while batch.peek().is_some() {
        let chunk: Vec<Memory> = batch.by_ref().take(dream::engine::MAX_IMPORT).collect();
        let ids: Vec<MemoryId> = chunk.iter().map(|m| m.id.clone()).collect();
        let count = chunk.len() as u64;
        let report = dream.import_with(chunk, pin, from, on_existing).await?;
        totals.imported += report.imported.len();
        totals.replaced += report.replaced.len();
        totals.unchanged += report.unchanged.len();
        totals.quarantined.extend(report.quarantined);
        totals.held_beside.extend(report.held_beside);
        totals.rejected.extend(
            report
                .rejected
                .into_iter()
                .map(|(i, reason)| (ids[i].clone(), reason)),
        );
        bar.inc(count);
    }
    bar.finish_and_clear();
    Ok(totals)
}

/// Prints what an import did (with the files it skipped, and `extra` in JSON);
/// "found" (exit 1) when something was quarantined, rejected or skipped.
fn print_import(
    totals: &ImportTotals,
    output: FormatArg,
    replace: bool,
    skipped: &[agent_memory::Skipped],
    extra: serde_json::Map<String, Value>,
) -> Outcome {
    let style = Style::detect();
    let ImportTotals {
        imported,
        replaced,
        unchanged,
        quarantined,
        held_beside,
        rejected,
    } = totals;
    let mut json = serde_json::json!({
        "imported": imported, "replaced": replaced, "unchanged": unchanged,
        "quarantined": quarantined,
        "held_beside": held_beside.iter().map(|(theirs, kept)| serde_json::json!({ "id": theirs, "held_as": kept })).collect::<Vec<_>>(),
        "rejected": rejected.iter().map(|(id, reason)| serde_json::json!({ "id": id, "reason": reason })).collect::<Vec<_>>(),
    });
    if let Some(object) = json.as_object_mut() {
        object.extend(extra);
    }
    output.one(&json, || {
        outln!("imported {imported}")?;
        if replace {
            outln!("replaced {replaced} (prior versions in history), {unchanged} unchanged")?;
        }
        for entry in quarantined {
            outln!("{} {}", style.bad("quarantined"), escape(entry))?;
        }
        for (theirs, kept) in held_beside {
            outln!(
                "{} {theirs}: the person's memory stays; the imported version is kept beside it, held, as {kept}",
                style.bad("not replaced")
            )?;
        }
        for (id, reason) in rejected {
            outln!("{} {id}: {}", style.bad("rejected"), escape(reason))?;
        }
        for file in skipped {
            outln!("{} {}: {}", style.bad("skipped"), file.file, escape(&file.reason))?;
        }
        Ok(())
    })?;
    Ok(Found::when(
        !quarantined.is_empty() || !rejected.is_empty() || !skipped.is_empty(),
    ))
}

/// Prints the Dream section of a memory file, or splices it into `into`.
async fn export_section(global: &Global, into: Option<&std::path::Path>) -> Outcome {
    let (recall, scope) = super::recall::open_recall(global, &global.locate()?).await?;
    let result = recall.brief(&scope, None).await?;
    let admitted = result.used().count();
    let section = memory_file::section(&result);
    let Some(path) = into else {
        out!("{}", escape_body(&section))?;
        return Ok(Found::Nothing);
    };
    let shown = escape(&path.display().to_string()).into_owned();
    let (existing, permissions) = match read_regular(path) {
        Ok(Some((text, permissions))) => (text, Some(permissions)),
        Ok(None) => (String::new(), None),
        Err(e) => {
            return Err(CliError::usage(format!(
                "{shown}: {e}; nothing was written"
            )));
        }
    };
    let updated = memory_file::splice(&existing, &escape_body(&section))
        .map_err(|e| CliError::usage(format!("{shown}: {e}")))?;
    write_replacing(path, updated.as_bytes(), permissions)
        .map_err(|e| CliError::usage(format!("cannot write {shown}: {e}")))?;
    eprintln!("wrote {admitted} admitted memories into {shown}");
    Ok(Found::Nothing)
}

/// The text and permissions of the memory file at `path`, or `None` when there
/// is none. Agents read CLAUDE.md and AGENTS.md as binding instructions, so the
/// file must be the regular file it names (see [`read_regular_at`]).
fn read_regular(path: &std::path::Path) -> Result<Option<(String, std::fs::Permissions)>, String> {
    read_regular_at(rustix::fs::CWD, path, u64::MAX).map_err(|e| match e {
        NotRead::Link => "is a symbolic link: refusing to follow it (agents read this file as \
                          instructions; give the path of the regular file itself)"
            .to_owned(),
        other => other.to_string(),
    })
}

/// Why [`read_regular_at`] did not read a file.
#[derive(Debug, thiserror::Error)]
pub(super) enum NotRead {
    /// A symbolic link, dangling or not: never followed.
    #[error("it is a symbolic link: not followed")]
    Link,
    /// A directory, FIFO, socket or device.
    #[error("it is not a regular file")]
    NotRegular,
    /// Larger than the bound.
    #[error("it is {size} bytes, over the bound of {max}")]
    TooLarge { size: u64, max: u64 },
    /// Not UTF-8.
    #[error("it is not UTF-8 text")]
    NotText,
    /// It could not be opened or read.
    #[error("cannot read it: {0}")]
    Io(std::io::Error),
}

/// The text and permissions of the regular file `path` (relative to `dir`), or
/// `None` when there is none. Opened with `O_NOFOLLOW` (a symbolic link is
/// refused, never followed) and `O_NONBLOCK` (a FIFO never blocks), then checked
/// with `fstat`; at most `max` bytes are read.
pub(super) fn read_regular_at(
    dir: impl rustix::fd::AsFd,
    path: impl AsRef<std::path::Path>,
    max: u64,
) -> Result<Option<(String, std::fs::Permissions)>, NotRead> {
    use rustix::fs::{Mode, OFlags};
    use std::io::Read as _;
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, path.as_ref(), flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(NotRead::Link),
        Err(e) => return Err(NotRead::Io(e.into())),
    };
    let file = std::fs::File::from(fd);
    let meta = file.metadata().map_err(NotRead::Io)?;
    if !meta.is_file() {
        return Err(NotRead::NotRegular);
    }
    if meta.len() > max {
        return Err(NotRead::TooLarge {
            size: meta.len(),
            max,
        });
    }
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(NotRead::Io)?;
    if bytes.len() as u64 > max {
        return Err(NotRead::TooLarge {
            size: bytes.len() as u64,
            max,
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| NotRead::NotText)?;
    Ok(Some((text, meta.permissions())))
}

/// Writes `bytes` to `path` through a temporary file beside it (created
/// exclusively: a link planted at its name is never followed) and a rename, so
/// a reader sees the old file or the new one, never half of one; the rename
/// replaces whatever is at `path` itself, never what a link there points to.
/// The new file gets `permissions` (the old file's), if given.
pub(super) fn write_replacing(
    path: &std::path::Path,
    bytes: &[u8],
    permissions: Option<std::fs::Permissions>,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("not a file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".dream-{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    match &result {
        // The rename itself, made durable where the directory can be synced.
        Ok(()) => drop(std::fs::File::open(dir).and_then(|d| d.sync_all())),
        Err(_) => drop(std::fs::remove_file(&tmp)),
    }
    result
}
