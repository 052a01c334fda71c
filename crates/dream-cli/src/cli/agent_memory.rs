//! The memory files agents write themselves: Claude Code's memory directory (a
//! `MEMORY.md` index and one topic file per memory, with `name`, `description`
//! and `type` frontmatter) and Codex's memories (`MEMORY.md`,
//! `memory_summary.md`).
//!
//! The agent's model wrote these files, so an import is the agent's word
//! ([`dream::engine::ImportSource::Agent`]): held at recall until the person confirms it
//! (`dream review`), scanned like every write. The directory is read without
//! following a symbolic link, and every file is bounded. An export writes
//! Dream's admitted memories back in Claude Code's layout and touches only
//! files Dream wrote: a manifest ([`MANIFEST`]) records the SHA-256 of each,
//! and a file whose bytes differ from what Dream wrote is never overwritten or
//! deleted.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use clap::ValueEnum;
use dream::core::{Memory, MemoryId, MemoryKind, Scope};
use dream::engine::memory_file;
use dream::engine::{Dream, MAX_IMPORT};
use rustix::fs::{Mode, OFlags};
use serde_json::{Map, Value, json};

use super::streams::escape;
use super::{CliError, Found, Outcome};

/// The metadata key naming where an imported memory came from:
/// `{"format": …, "file": …, "section": …}`.
pub const IMPORTED_FROM: &str = "imported_from";
/// The manifest of the files Dream wrote into a memory directory: file name to SHA-256.
pub const MANIFEST: &str = ".dream-export.json";
/// Claude Code's (and Codex's) index file.
pub const INDEX: &str = "MEMORY.md";
/// Codex's summary file.
pub const CODEX_SUMMARY: &str = "memory_summary.md";
/// Largest memory file read; a larger one is skipped, said why.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// The memory formats agents already write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentFormat {
    /// Claude Code's memory directory: MEMORY.md and topic files with frontmatter.
    ClaudeCodeMemory,
    /// Codex's memory files: MEMORY.md and memory_summary.md.
    CodexMemories,
}

impl AgentFormat {
    fn name(self) -> &'static str {
        match self {
            AgentFormat::ClaudeCodeMemory => "claude-code-memory",
            AgentFormat::CodexMemories => "codex-memories",
        }
    }
}

/// One memory read from an agent's file.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentNote {
    /// The file it came from.
    pub file: String,
    /// The section of the file, when a file holds several.
    pub section: Option<String>,
    /// What it is about.
    pub kind: MemoryKind,
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its text.
    pub content: String,
}

/// A file that was not imported, and why (in the person's terms).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Skipped {
    /// The file's name (escaped for display).
    pub file: String,
    /// Why.
    pub reason: String,
}

/// What a memory directory holds: the notes read, the files skipped.
#[derive(Debug, Default)]
pub struct Read {
    /// The notes.
    pub notes: Vec<AgentNote>,
    /// The files left out.
    pub skipped: Vec<Skipped>,
    /// Files left out because Dream wrote them (an earlier export).
    pub dreams_own: usize,
}

/// Reads the memory directory `dir` in `format`.
pub fn read_dir(dir: &Path, format: AgentFormat) -> Result<Read, CliError> {
    let shown = escape(&dir.display().to_string()).into_owned();
    let fd = open_dir(dir, false).map_err(|e| CliError::usage(format!("{shown}: {e}")))?;
    let manifest = read_manifest(&fd).map_err(|e| CliError::usage(format!("{shown}: {e}")))?;
    let mut read = Read::default();
    let mut texts = BTreeMap::new();
    for name in md_files(&fd).map_err(|e| CliError::usage(format!("{shown}: {e}")))? {
        let wanted = match format {
            AgentFormat::ClaudeCodeMemory => true,
            AgentFormat::CodexMemories => name == INDEX || name == CODEX_SUMMARY,
        };
        if !wanted {
            continue;
        }
        match read_file(&fd, &name) {
            Ok(Some(text)) => {
                if manifest.get(&name) == Some(&sha256(text.as_bytes())) {
                    read.dreams_own += 1;
                } else {
                    texts.insert(name, text);
                }
            }
            Ok(None) => {}
            Err(reason) => read.skipped.push(Skipped {
                file: escape(&name).into_owned(),
                reason,
            }),
        }
    }
    let topic_files: Vec<String> = texts.keys().filter(|n| *n != INDEX).cloned().collect();
    for (name, text) in &texts {
        let parsed = match (format, name.as_str()) {
            (AgentFormat::ClaudeCodeMemory, INDEX) => claude_index(text, &topic_files),
            (AgentFormat::ClaudeCodeMemory, _) => claude_topic(name, text).map(|n| vec![n]),
            (AgentFormat::CodexMemories, _) => codex_file(name, text),
        };
        match parsed {
            Ok(notes) => read.notes.extend(notes),
            Err(reason) => read.skipped.push(Skipped {
                file: escape(name).into_owned(),
                reason,
            }),
        }
    }
    if read.notes.len() > MAX_IMPORT {
        return Err(CliError::usage(format!(
            "{shown} holds {} memories, more than {MAX_IMPORT} in one import; nothing was imported",
            read.notes.len()
        )));
    }
    Ok(read)
}

/// The notes as memories: each keeps the id of the memory an earlier import of
/// the same file (and section) made, so a re-import updates it; a new one gets
/// a new id. `imported_from` in the metadata names the file.
pub async fn as_memories(
    dream: &Dream,
    format: AgentFormat,
    notes: Vec<AgentNote>,
) -> Result<Vec<Memory>, CliError> {
    let mut earlier: HashMap<Value, MemoryId> = HashMap::new();
    for memory in dream.list().await? {
        if let Some(from) = memory.metadata.get(IMPORTED_FROM) {
            earlier.insert(from.clone(), memory.id.clone());
        }
    }
    let now = chrono::Utc::now();
    Ok(notes
        .into_iter()
        .map(|note| {
            let mut from = Map::new();
            from.insert("format".into(), json!(format.name()));
            from.insert("file".into(), json!(note.file));
            if let Some(section) = &note.section {
                from.insert("section".into(), json!(section));
            }
            let from = Value::Object(from);
            let id = earlier
                .get(&from)
                .cloned()
                .unwrap_or_else(|| MemoryId::time_ordered(now));
            let mut memory = Memory::new(
                id,
                note.kind,
                note.name,
                note.description,
                note.content,
                now,
            );
            memory.metadata.insert(IMPORTED_FROM.into(), from);
            memory
        })
        .collect())
}

/// Claude Code's topic file: frontmatter with `name`, `description` and `type`
/// (top level, or under `metadata:`), then the body.
pub fn claude_topic(file: &str, text: &str) -> Result<AgentNote, String> {
    let (front, body) = split_frontmatter(text)?;
    let fields = parse_frontmatter(front)?;
    let name = fields
        .get("name")
        .filter(|n| !n.trim().is_empty())
        .ok_or("its frontmatter has no `name`")?;
    let kind_name = fields
        .get("type")
        .or_else(|| fields.get("metadata.type"))
        .ok_or("its frontmatter has no `type` (user, feedback, project or reference)")?;
    let kind = MemoryKind::parse(kind_name.trim()).ok_or_else(|| {
        format!(
            "its `type` is `{}`, not one of user, feedback, project, reference",
            escape(kind_name)
        )
    })?;
    let body = body.trim_matches('\n');
    if body.trim().is_empty() {
        return Err("it has no text after its frontmatter".into());
    }
    Ok(AgentNote {
        file: file.to_owned(),
        section: None,
        kind,
        name: dream::core::model::single_line(name.trim()),
        description: dream::core::model::single_line(
            fields.get("description").map(|d| d.trim()).unwrap_or(""),
        ),
        content: body.to_owned(),
    })
}

/// Claude Code's `MEMORY.md`: an index of the topic files. Lines that link to a
/// topic file present are the index; anything else written there (older
/// Claude Code kept notes in it) is one memory. Dream's own section is left out.
pub fn claude_index(text: &str, topic_files: &[String]) -> Result<Vec<AgentNote>, String> {
    let text = memory_file::splice(text, "").map_err(|e| e.to_string())?;
    let notes: Vec<&str> = text
        .lines()
        .filter(|line| {
            let line = line.trim();
            !line.is_empty()
                && !line.starts_with('#')
                && !topic_files
                    .iter()
                    .any(|file| line.contains(&format!("]({file})")))
        })
        .collect();
    if notes.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![AgentNote {
        file: INDEX.to_owned(),
        section: None,
        kind: MemoryKind::Project,
        name: "Notes in Claude Code's MEMORY.md".to_owned(),
        description: "what Claude Code kept in its memory index beside the topic files".into(),
        content: notes.join("\n"),
    }])
}

/// A Codex memory file: one memory per Markdown section (the heading is its
/// name); text before the first heading is one named after the file. A first
/// line that is only a version marker (`v1`) is left out.
pub fn codex_file(file: &str, text: &str) -> Result<Vec<AgentNote>, String> {
    let text = memory_file::splice(text, "").map_err(|e| e.to_string())?;
    let mut lines = text.lines().peekable();
    if lines.peek().is_some_and(|first| is_version_marker(first)) {
        lines.next();
    }
    let mut sections: Vec<(Option<String>, Vec<&str>)> = vec![(None, Vec::new())];
    let mut fence = false;
    for line in lines {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        }
        let heading = line.trim_start_matches('#');
        if !fence
            && line.starts_with('#')
            && heading.starts_with(' ')
            && line.len() - heading.len() <= 3
        {
            sections.push((Some(heading.trim().to_owned()), Vec::new()));
        } else if let Some(last) = sections.last_mut() {
            last.1.push(line);
        }
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut notes = Vec::new();
    for (heading, body) in sections {
        let content = body.join("\n").trim_matches('\n').to_owned();
        if content.trim().is_empty() {
            continue;
        }
        let title = heading.unwrap_or_else(|| file.to_owned());
        let count = seen.entry(title.clone()).or_insert(0);
        *count += 1;
        let section = if *count == 1 {
            title.clone()
        } else {
            format!("{title} ({count})")
        };
        let name: String = dream::core::model::single_line(&title)
            .chars()
            .take(dream::engine::limits::NAME_CHARS)
            .collect();
        notes.push(AgentNote {
            file: file.to_owned(),
            section: Some(section),
            kind: MemoryKind::Project,
            name,
            description: format!("from Codex's {file}"),
            content,
        });
    }
    Ok(notes)
}

fn is_version_marker(line: &str) -> bool {
    let line = line.trim();
    line.len() > 1 && line.starts_with('v') && line[1..].bytes().all(|b| b.is_ascii_digit())
}

/// The frontmatter (between a first `---` line and the next) and the body.
fn split_frontmatter(text: &str) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("it does not start with a `---` frontmatter block")?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\n', '\r']) == "---" {
            return Ok((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    Err("its frontmatter has no closing `---` line".into())
}

/// The frontmatter's fields: `key: value` lines (a value plain, quoted, or a
/// `|`/`>` block of indented lines), keys under `metadata:` as `metadata.key`.
/// A key given twice is refused: which one counts would be a guess.
fn parse_frontmatter(front: &str) -> Result<HashMap<String, String>, String> {
    let mut fields = HashMap::new();
    let lines: Vec<&str> = front.lines().collect();
    let mut parent: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let raw = lines[i].trim_end_matches('\r');
        i += 1;
        if raw.trim().is_empty() || raw.trim_start().starts_with('#') {
            continue;
        }
        let indented = raw.starts_with(' ') || raw.starts_with('\t');
        let Some((key, value)) = raw.trim().split_once(':') else {
            return Err(format!(
                "its frontmatter has a line that is not `key: value`: {}",
                escape(raw.trim())
            ));
        };
        let key = key.trim();
        let value = value.trim();
        let full = match (&parent, indented) {
            (Some(p), true) => format!("{p}.{key}"),
            _ => key.to_owned(),
        };
        if !indented {
            parent = None;
        }
        if value.is_empty() {
            if !indented {
                parent = Some(key.to_owned());
            }
            continue;
        }
        let value =
            if value == "|" || value == ">" || value.starts_with("|-") || value.starts_with(">-") {
                let mut block = Vec::new();
                while i < lines.len() && (lines[i].starts_with(' ') || lines[i].trim().is_empty()) {
                    block.push(lines[i].trim());
                    i += 1;
                }
                block.join(if value.starts_with('|') { "\n" } else { " " })
            } else {
                unquote(value)?
            };
        if fields.insert(full.clone(), value).is_some() {
            return Err(format!("its frontmatter gives `{}` twice", escape(&full)));
        }
    }
    Ok(fields)
}

/// A YAML scalar: `"…"` (JSON escapes), `'…'` (`''` for a quote) or plain.
fn unquote(value: &str) -> Result<String, String> {
    if value.starts_with('"') {
        return serde_json::from_str(value)
            .map_err(|_| "its frontmatter has a badly quoted value".to_owned());
    }
    if let Some(inner) = value.strip_prefix('\'') {
        return inner
            .strip_suffix('\'')
            .map(|s| s.replace("''", "'"))
            .ok_or_else(|| "its frontmatter has a badly quoted value".to_owned());
    }
    Ok(value.to_owned())
}

/// Opens directory `dir` without following a symbolic link at its last
/// component; `create` makes it (mode 0700) when missing.
fn open_dir(dir: &Path, create: bool) -> Result<rustix::fd::OwnedFd, String> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::open(dir, flags, Mode::empty()) {
        Ok(fd) => Ok(fd),
        Err(rustix::io::Errno::NOENT) if create => {
            std::fs::create_dir(dir).map_err(|e| format!("cannot create it: {e}"))?;
            std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .map_err(|e| format!("cannot set its permissions: {e}"))?;
            rustix::fs::open(dir, flags, Mode::empty()).map_err(|e| format!("cannot open it: {e}"))
        }
        Err(rustix::io::Errno::NOENT) => Err("no such directory".into()),
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
            Err("is a symbolic link or not a directory: give the memory directory itself".into())
        }
        Err(e) => Err(format!("cannot open it: {e}")),
    }
}

/// The names of the `.md` entries of the directory (hidden ones left out), sorted.
fn md_files(dir: &rustix::fd::OwnedFd) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let listing = rustix::fs::Dir::read_from(dir).map_err(|e| format!("cannot list it: {e}"))?;
    for entry in listing {
        let entry = entry.map_err(|e| format!("cannot list it: {e}"))?;
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name.ends_with(".md") && !name.starts_with('.') {
            names.push(name.to_owned());
        }
        if names.len() > MAX_IMPORT {
            return Err(format!("it holds more than {MAX_IMPORT} memory files"));
        }
    }
    names.sort();
    Ok(names)
}

/// A file of the directory: its text, `None` when absent, or why it is not
/// read — a symbolic link (never followed), not a regular file, larger than
/// [`MAX_FILE_BYTES`], or not UTF-8.
fn read_file(dir: &rustix::fd::OwnedFd, name: &str) -> Result<Option<String>, String> {
    super::transfer::read_regular_at(dir, name, MAX_FILE_BYTES)
        .map(|read| read.map(|(text, _)| text))
        .map_err(|e| e.to_string())
}

/// The manifest of the files Dream wrote into the directory (empty when none).
fn read_manifest(dir: &rustix::fd::OwnedFd) -> Result<BTreeMap<String, String>, String> {
    match read_file(dir, MANIFEST) {
        Ok(None) => Ok(BTreeMap::new()),
        Ok(Some(text)) => serde_json::from_str::<Manifest>(&text)
            .map(|m| m.files)
            .map_err(|e| format!("{MANIFEST} is not Dream's manifest ({e}); fix or remove it")),
        Err(reason) => Err(format!("{MANIFEST}: {reason}")),
    }
}

/// What [`MANIFEST`] holds.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    /// File name to the SHA-256 of the bytes Dream wrote.
    files: BTreeMap<String, String>,
}

fn sha256(bytes: &[u8]) -> String {
    dream::engine::layout::hash_bytes(bytes)
}

/// What an export did to the directory.
#[derive(Debug, Default, serde::Serialize)]
pub struct Exported {
    /// Files written (new or updated).
    pub written: Vec<String>,
    /// Files left as they were: unchanged.
    pub unchanged: usize,
    /// Files Dream wrote before whose memory is gone: removed.
    pub removed: Vec<String>,
    /// Files not Dream's to touch: someone else wrote or changed them.
    pub left_alone: Vec<Skipped>,
}

/// Writes the admitted memories of `scope` into `dir` in Claude Code's layout:
/// one topic file per memory and Dream's section of `MEMORY.md` indexing them.
/// Only files Dream wrote (their bytes unchanged since) are replaced or removed.
pub fn export_claude(
    dir: &Path,
    memories: &[&Memory],
    scope: &Scope,
) -> Result<Exported, CliError> {
    let shown = escape(&dir.display().to_string()).into_owned();
    let at = |e: String| CliError::usage(format!("{shown}: {e}; nothing was written"));
    let fd = open_dir(dir, true).map_err(at)?;
    let old = read_manifest(&fd).map_err(at)?;
    // The index is read (and a link in its place refused) before anything is written.
    let existing = match read_file(&fd, INDEX) {
        Ok(text) => text.unwrap_or_default(),
        Err(reason) => return Err(at(format!("{INDEX}: {reason}"))),
    };
    memory_file::splice(&existing, "").map_err(|e| at(format!("{INDEX}: {e}")))?;
    let mut report = Exported::default();
    let mut manifest = Manifest::default();
    let mut index = String::new();
    // A memory imported from a Claude Code file that is still there is already
    // in the directory: it is not written twice.
    let present: Vec<String> = md_files(&fd).map_err(at)?;
    for memory in memories {
        let from = memory.metadata.get(IMPORTED_FROM);
        let already = from.is_some_and(|f| {
            f.get("format").and_then(Value::as_str) == Some(AgentFormat::ClaudeCodeMemory.name())
                && f.get("file").and_then(Value::as_str).is_some_and(|file| {
                    present.iter().any(|p| p.as_str() == file) && !old.contains_key(file)
                })
        });
        if already {
            continue;
        }
        let file = format!("dream_{}_{}.md", memory.kind.as_str(), memory.id);
        let text = claude_topic_text(memory);
        match write_owned(dir, &fd, &file, text.as_bytes(), &old).map_err(at)? {
            Write::Written => report.written.push(file.clone()),
            Write::Unchanged => report.unchanged += 1,
            Write::NotOurs(reason) => {
                report.left_alone.push(Skipped {
                    file: file.clone(),
                    reason,
                });
                continue;
            }
        }
        index.push_str(&format!(
            "- [{}]({file}) — {}\n",
            markdown_text(&memory.name),
            markdown_text(&memory.description)
        ));
        manifest.files.insert(file, sha256(text.as_bytes()));
    }
    for (file, hash) in &old {
        if manifest.files.contains_key(file) || file == INDEX {
            continue;
        }
        match read_file(&fd, file) {
            Ok(None) => {}
            Ok(Some(text)) if sha256(text.as_bytes()) == *hash => {
                rustix::fs::unlinkat(&fd, file.as_str(), rustix::fs::AtFlags::empty())
                    .map_err(|e| at(format!("cannot remove {file}: {e}")))?;
                report.removed.push(file.clone());
            }
            Ok(Some(_)) | Err(_) => report.left_alone.push(Skipped {
                file: escape(file).into_owned(),
                reason: "changed since Dream wrote it; its memory is gone from Dream, so \
                         remove it yourself if you no longer want it"
                    .into(),
            }),
        }
    }
    let header = format!(
        "Memories from Dream (scope {scope}): files named dream_*.md are Dream's and are \
         rewritten by `dream export --format claude-code-memory`.\n"
    );
    let section = memory_file::wrap(&format!("{header}{index}"));
    let updated =
        memory_file::splice(&existing, &section).map_err(|e| at(format!("{INDEX}: {e}")))?;
    if updated != existing {
        super::transfer::write_replacing(&dir.join(INDEX), updated.as_bytes(), None)
            .map_err(|e| at(format!("cannot write {INDEX}: {e}")))?;
        report.written.push(INDEX.to_owned());
    }
    let manifest_text = serde_json::to_string_pretty(&manifest).map_err(CliError::from)? + "\n";
    super::transfer::write_replacing(&dir.join(MANIFEST), manifest_text.as_bytes(), None)
        .map_err(|e| at(format!("cannot write {MANIFEST}: {e}")))?;
    Ok(report)
}

/// What writing one file did.
enum Write {
    Written,
    Unchanged,
    /// Not Dream's file (or changed since): left alone, with why.
    NotOurs(String),
}

/// Writes `name` when it is absent or holds exactly what Dream last wrote.
fn write_owned(
    dir: &Path,
    fd: &rustix::fd::OwnedFd,
    name: &str,
    bytes: &[u8],
    manifest: &BTreeMap<String, String>,
) -> Result<Write, String> {
    match read_file(fd, name) {
        Ok(None) => {}
        Ok(Some(text)) if text.as_bytes() == bytes => return Ok(Write::Unchanged),
        Ok(Some(text)) if manifest.get(name) == Some(&sha256(text.as_bytes())) => {}
        Ok(Some(_)) => {
            return Ok(Write::NotOurs(
                "changed since Dream wrote it, or not written by Dream: left as it is".into(),
            ));
        }
        Err(reason) => return Ok(Write::NotOurs(format!("{reason}: left as it is"))),
    }
    super::transfer::write_replacing(&dir.join(name), bytes, None)
        .map_err(|e| format!("cannot write {name}: {e}"))?;
    Ok(Write::Written)
}

/// A Claude Code topic file for `memory`: frontmatter (values JSON-quoted,
/// which YAML reads as double-quoted strings) and the text, invisible
/// characters removed.
fn claude_topic_text(memory: &Memory) -> String {
    let quote = |s: &str| {
        serde_json::to_string(&*dream::core::display::visible_text(s)).unwrap_or_default()
    };
    let mut out = format!(
        "---\nname: {}\ndescription: {}\ntype: {}\n---\n",
        quote(&memory.name),
        quote(&memory.description),
        memory.kind.as_str()
    );
    out.push_str(&dream::core::display::visible_text(&memory.content));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// One line of Markdown link text: invisible characters removed, brackets escaped.
fn markdown_text(text: &str) -> String {
    dream::core::display::visible_text(text)
        .replace('\\', "\\\\")
        .replace('[', "\\[")
        .replace(']', "\\]")
        .replace('\n', " ")
}

/// Prints what an export did; exit 1 when a file was left alone.
pub fn print_export(report: &Exported, admitted: usize, dir: &Path) -> Outcome {
    let shown = escape(&dir.display().to_string()).into_owned();
    eprintln!(
        "wrote {} files for {admitted} admitted memories into {shown} ({} unchanged, {} removed)",
        report.written.len(),
        report.unchanged,
        report.removed.len()
    );
    for skipped in &report.left_alone {
        eprintln!("left alone {}: {}", skipped.file, skipped.reason);
    }
    Ok(Found::when(!report.left_alone.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_file_reads_its_frontmatter_and_body() {
        let note = claude_topic(
            "feedback_tests.md",
            "---\nname: \"Real DB in tests\"\ndescription: 'integration tests hit a real database'\n\
             type: feedback\n---\nNo mocks for the database.\n",
        )
        .unwrap();
        assert_eq!(note.name, "Real DB in tests");
        assert_eq!(note.description, "integration tests hit a real database");
        assert_eq!(note.kind, MemoryKind::Feedback);
        assert_eq!(note.content, "No mocks for the database.");
        let nested = claude_topic(
            "p.md",
            "---\nname: x\ndescription: >\n  folded\n  text\nmetadata:\n  type: project\n---\nbody",
        )
        .unwrap();
        assert_eq!(nested.kind, MemoryKind::Project);
        assert_eq!(nested.description, "folded text");
    }

    #[test]
    fn bad_frontmatter_is_refused_with_a_reason() {
        let refused = |text: &str| claude_topic("f.md", text).expect_err(text);
        assert!(refused("no frontmatter").contains("does not start"));
        assert!(refused("---\nname: x\ntype: user\nbody").contains("no closing"));
        assert!(refused("---\ntype: user\n---\nbody").contains("no `name`"));
        assert!(refused("---\nname: x\n---\nbody").contains("no `type`"));
        assert!(refused("---\nname: x\ntype: admin\n---\nbody").contains("not one of"));
        assert!(refused("---\nname: x\nname: y\ntype: user\n---\nbody").contains("twice"));
        assert!(refused("---\nname: \"x\ntype: user\n---\nbody").contains("badly quoted"));
        assert!(refused("---\nname: x\ntype: user\n---\n\n").contains("no text"));
        assert!(refused("---\njust words\n---\nbody").contains("not `key: value`"));
    }

    #[test]
    fn the_index_keeps_only_what_is_not_an_index_line() {
        let files = vec!["user_role.md".to_owned()];
        let text = "# Memory\n- [Role](user_role.md) — who\n<!-- dream:begin -->\n- [D](dream_x.md)\n<!-- dream:end -->\nThe CI runs on Fridays.\n";
        let notes = claude_index(text, &files).unwrap();
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].content, "The CI runs on Fridays.");
        assert!(
            claude_index("# Memory\n- [Role](user_role.md)\n", &files)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn codex_files_split_into_sections() {
        let notes = codex_file(
            "memory_summary.md",
            "v1\nIntro line.\n## Tooling\nUse pnpm.\n```\n# not a heading\n```\n## Empty\n\n## Tooling\nRust 1.90.\n",
        )
        .unwrap();
        let got: Vec<(Option<&str>, &str)> = notes
            .iter()
            .map(|n| (n.section.as_deref(), n.content.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (Some("memory_summary.md"), "Intro line."),
                (Some("Tooling"), "Use pnpm.\n```\n# not a heading\n```"),
                (Some("Tooling (2)"), "Rust 1.90."),
            ]
        );
    }
}
