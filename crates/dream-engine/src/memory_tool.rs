//! Anthropic's client-side memory tool (`memory_20250818`) over Dream: the
//! agent's `view`, `create`, `str_replace`, `insert`, `delete` and `rename`
//! commands on files under `/memories`, each file a memory whose metadata names
//! its path ([`PATH_KEY`]).
//!
//! Every write is the agent's: it enters the one write kernel as
//! [`ImportSource::Agent`] (evidence `assistant`), is scanned like any write
//! (instruction- or secret-shaped text goes to the quarantine, never to
//! `memories`), and is held at recall until the person confirms it. An agent's
//! edit never displaces the person's memory (it is kept beside it, held), and
//! the agent can neither delete nor move the person's memory. `view` reads
//! through the firewall ([`Recall::withheld`]): what recall would quarantine is
//! withheld, and a held memory is marked unconfirmed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use dream_core::{Memory, MemoryKind, MemoryStatus, Role};
use serde::Deserialize;
use serde_json::Value;

use crate::caller::Caller;
use crate::dream::Dream;
use crate::error::{DreamError, Result};
use crate::manage::{Existing, ImportSource, NewMemory, Remembered, persons_word};
use crate::recall::Recall;
use crate::records::Actor;

/// The tool's type in a Messages request's `tools`.
pub const TOOL_TYPE: &str = "memory_20250818";
/// The directory every path lives under.
pub const ROOT: &str = "/memories";
/// The metadata key that holds a memory's path.
pub const PATH_KEY: &str = "memory_tool_path";
/// Longest path, in characters (a memory's name is its path below the root).
pub const MAX_PATH_CHARS: usize = crate::options::limits::NAME_CHARS;
/// Deepest path, in components below the root.
pub const MAX_DEPTH: usize = 8;
/// Width of a line number in a file view.
const LINE_NUMBER_WIDTH: usize = 6;

/// One command of the memory tool, as the model sends it (`input` of its `tool_use` block).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Command {
    /// Lists a directory (two levels deep) or shows a file with line numbers.
    View {
        /// A directory or file path.
        path: String,
        /// `[first, last]` line (1-based; `last` -1 for the end).
        #[serde(default)]
        view_range: Option<Vec<i64>>,
    },
    /// Creates a file; refused when it exists.
    Create {
        /// The new file's path.
        path: String,
        /// Its text.
        file_text: String,
    },
    /// Replaces the one occurrence of `old_str`.
    StrReplace {
        /// The file.
        path: String,
        /// Text that occurs exactly once.
        old_str: String,
        /// What replaces it.
        #[serde(default)]
        new_str: String,
    },
    /// Inserts text after line `insert_line` (0: at the top).
    Insert {
        /// The file.
        path: String,
        /// The line after which to insert.
        insert_line: i64,
        /// The text.
        insert_text: String,
    },
    /// Deletes a file or a directory (to Dream's trash: the person can restore it).
    Delete {
        /// The file or directory.
        path: String,
    },
    /// Moves a file or a directory.
    Rename {
        /// Where it is.
        old_path: String,
        /// Where it goes.
        new_path: String,
    },
}

/// What the tool answers: the text of its `tool_result`, and whether it is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The result's text, for the model.
    pub text: String,
    /// Whether the command failed (the result's `is_error`).
    pub is_error: bool,
}

impl ToolResult {
    fn ok(text: impl Into<String>) -> Self {
        ToolResult {
            text: text.into(),
            is_error: false,
        }
    }

    fn error(text: impl Into<String>) -> Self {
        ToolResult {
            text: text.into(),
            is_error: true,
        }
    }
}

/// The memory tool over a store: `dream` writes, `recall` judges what `view` shows.
#[derive(Debug, Clone, Copy)]
pub struct MemoryTool<'a> {
    dream: &'a Dream,
    recall: &'a Recall,
}

/// A file: its path and the memory that holds it.
type Files = BTreeMap<String, Memory>;

impl<'a> MemoryTool<'a> {
    /// The tool over `dream`'s store, judging reads with `recall` (over the same store).
    pub fn new(dream: &'a Dream, recall: &'a Recall) -> Self {
        MemoryTool { dream, recall }
    }

    /// Parses one tool input (the `input` of a `tool_use` block) and runs it.
    /// Input that is not a memory-tool command is an error result, not an `Err`.
    pub async fn execute_json(&self, input: &Value) -> Result<ToolResult> {
        match Command::deserialize(input) {
            Ok(command) => self.execute(command).await,
            Err(e) => Ok(ToolResult::error(format!("Invalid memory tool input: {e}"))),
        }
    }

    /// Runs one command. A refusal the model should see (a bad path, a missing
    /// file, a quarantined write) is an error result; `Err` is a store failure.
    pub async fn execute(&self, command: Command) -> Result<ToolResult> {
        let outcome = match command {
            Command::View { path, view_range } => self.view(&path, view_range.as_deref()).await,
            Command::Create { path, file_text } => self.create(&path, file_text).await,
            Command::StrReplace {
                path,
                old_str,
                new_str,
            } => self.str_replace(&path, &old_str, &new_str).await,
            Command::Insert {
                path,
                insert_line,
                insert_text,
            } => self.insert(&path, insert_line, &insert_text).await,
            Command::Delete { path } => self.delete(&path).await,
            Command::Rename { old_path, new_path } => self.rename(&old_path, &new_path).await,
        };
        match outcome {
            Ok(text) => Ok(ToolResult::ok(text)),
            Err(Refusal::Tool(text)) => Ok(ToolResult::error(text)),
            Err(Refusal::Store(e)) => Err(e),
        }
    }

    /// The files of this scope: memories with a path, the newest one per path
    /// (an agent's edit kept beside the person's memory is the newer).
    async fn files(&self) -> Result<Files> {
        let mut files = Files::new();
        for memory in self.dream.list().await? {
            let Some(path) = memory.metadata.get(PATH_KEY).and_then(Value::as_str) else {
                continue;
            };
            let Ok(path) = normalize(path) else {
                continue;
            };
            let newer = files
                .get(&path)
                .is_none_or(|held| (memory.updated_at, &memory.id) > (held.updated_at, &held.id));
            if newer {
                files.insert(path, memory);
            }
        }
        Ok(files)
    }

    async fn view(&self, path: &str, range: Option<&[i64]>) -> Outcome {
        let canonical = normalize(path)?;
        let files = self.files().await?;
        if let Some(memory) = files.get(&canonical) {
            return self.view_file(path, memory, range);
        }
        if !is_dir(&files, &canonical) {
            return Err(missing(path));
        }
        let prefix = dir_prefix(&canonical);
        let mut entries: BTreeMap<String, (usize, &'static str)> = BTreeMap::new();
        for (file, memory) in files.range(prefix.clone()..) {
            let Some(below) = file.strip_prefix(&prefix) else {
                break;
            };
            let parts: Vec<&str> = below.split('/').collect();
            let size = memory.content.len();
            for depth in 1..parts.len().min(3) {
                let dir = format!("{}/", parts[..depth].join("/"));
                entries.entry(dir).or_insert((0, "")).0 += size;
            }
            if parts.len() <= 2 {
                entries.insert(below.to_owned(), (size, self.mark(memory)));
            }
        }
        let total: usize = under(&files, &canonical)
            .iter()
            .map(|(_, m)| m.content.len())
            .sum();
        let mut out = format!(
            "The files and directories up to 2 levels deep in {canonical} (sizes of the text \
             each holds):\n{}\t{canonical}",
            human_size(total)
        );
        for (name, (size, mark)) in &entries {
            let _ = write!(out, "\n{}\t{prefix}{name}{mark}", human_size(*size));
        }
        Ok(out)
    }

    fn view_file(&self, path: &str, memory: &Memory, range: Option<&[i64]>) -> Outcome {
        if let Some(withheld) = self.recall.withheld(memory) {
            return Err(Refusal::Tool(format!(
                "The content of {path} is withheld: Dream's firewall quarantines it ({}). \
                 The person can review it with `dream review`.",
                withheld.reason
            )));
        }
        let text = dream_core::display::visible_text(&memory.content);
        let lines: Vec<&str> = text.split('\n').collect();
        let (first, shown) = match range {
            None => (1, &lines[..]),
            Some([start, end]) => {
                let start = usize::try_from((*start).max(1)).unwrap_or(1);
                let end = if *end == -1 {
                    lines.len()
                } else {
                    usize::try_from(*end).unwrap_or(0).min(lines.len())
                };
                if start > lines.len() || end < start {
                    return Err(Refusal::Tool(format!(
                        "Invalid `view_range` parameter: [{start}, {end}]. {path} has {} lines.",
                        lines.len()
                    )));
                }
                (start, &lines[start - 1..end])
            }
            Some(_) => {
                return Err(Refusal::Tool(
                    "Invalid `view_range` parameter: give two numbers, [first, last].".into(),
                ));
            }
        };
        let mut out = String::new();
        if memory.status != MemoryStatus::Active {
            let _ = writeln!(
                out,
                "Note: {path} is unconfirmed ({}): an agent wrote it and the person has not \
                 confirmed it. It is a note, not the person's word.",
                memory.status.as_str()
            );
        }
        let _ = write!(out, "Here's the content of {path} with line numbers:");
        for (i, line) in shown.iter().enumerate() {
            let _ = write!(
                out,
                "\n{:>width$}\t{line}",
                first + i,
                width = LINE_NUMBER_WIDTH
            );
        }
        Ok(out)
    }

    /// A file's mark in a directory listing.
    fn mark(&self, memory: &Memory) -> &'static str {
        if self.recall.withheld(memory).is_some() {
            " (withheld by Dream's firewall)"
        } else if memory.status != MemoryStatus::Active {
            " (unconfirmed)"
        } else {
            ""
        }
    }

    async fn create(&self, path: &str, text: String) -> Outcome {
        let canonical = normalize(path)?;
        if canonical == ROOT {
            return Err(Refusal::Tool(format!(
                "Cannot create {path}: it is a directory"
            )));
        }
        let files = self.files().await?;
        if files.contains_key(&canonical) {
            return Err(Refusal::Tool(format!("File {path} already exists")));
        }
        if is_dir(&files, &canonical) {
            return Err(Refusal::Tool(format!(
                "Cannot create {path}: it is a directory"
            )));
        }
        if let Some(parent) = ancestors(&canonical).find(|a| files.contains_key(a)) {
            return Err(Refusal::Tool(format!(
                "Cannot create {path}: {parent} is a file"
            )));
        }
        let mut new = NewMemory::new(MemoryKind::Project, name_of(&canonical), text);
        new.metadata
            .insert(PATH_KEY.to_owned(), Value::String(canonical.clone()));
        match self
            .dream
            .remember_as(new, Caller::Agent.stored_role(Role::User))
            .await
        {
            Ok(Remembered::Stored(_)) => Ok(format!(
                "File created successfully at: {path} (Dream holds it as unconfirmed until the \
                 person confirms it)"
            )),
            Ok(Remembered::Quarantined { entry, rules }) => Err(quarantined(path, &entry, &rules)),
            Err(DreamError::InvalidInput { reason, .. }) => Err(Refusal::Tool(format!(
                "File {path} was not created: {reason}"
            ))),
            Err(e) => Err(e.into()),
        }
    }

    async fn str_replace(&self, path: &str, old: &str, new: &str) -> Outcome {
        let (canonical, memory) = self.readable_file(path).await?;
        let found: Vec<usize> = if old.is_empty() {
            Vec::new()
        } else {
            memory
                .content
                .match_indices(old)
                .map(|(at, _)| at)
                .collect()
        };
        match found.as_slice() {
            [] => Err(Refusal::Tool(format!(
                "No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
            ))),
            [at] => {
                let at = *at;
                let mut content = memory.content.clone();
                content.replace_range(at..at + old.len(), new);
                let line = memory.content[..at].matches('\n').count();
                let snippet = numbered_around(&content, line);
                self.store_edit(path, memory, canonical, content).await?;
                Ok(format!(
                    "The memory file has been edited. Here is the snippet showing the change \
                     (with line numbers):\n{snippet}"
                ))
            }
            many => {
                let lines: Vec<String> = many
                    .iter()
                    .map(|at| (memory.content[..*at].matches('\n').count() + 1).to_string())
                    .collect();
                Err(Refusal::Tool(format!(
                    "No replacement was performed. Multiple occurrences of old_str `{old}` in \
                     lines: {}. Please ensure it is unique",
                    lines.join(", ")
                )))
            }
        }
    }

    async fn insert(&self, path: &str, after: i64, text: &str) -> Outcome {
        let (canonical, memory) = self.readable_file(path).await?;
        let mut lines: Vec<&str> = memory.content.split('\n').collect();
        if lines.last() == Some(&"") {
            lines.pop();
        }
        let at = usize::try_from(after)
            .ok()
            .filter(|at| *at <= lines.len())
            .ok_or_else(|| {
                Refusal::Tool(format!(
                    "Invalid `insert_line` parameter: {after}. It should be within the range \
                     [0, {}].",
                    lines.len()
                ))
            })?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        lines.insert(at, text);
        let mut content = lines.join("\n");
        content.push('\n');
        self.store_edit(path, memory, canonical, content).await?;
        Ok(format!("The file {path} has been edited."))
    }

    async fn delete(&self, path: &str) -> Outcome {
        let canonical = normalize(path)?;
        if canonical == ROOT {
            return Err(Refusal::Tool(
                "Cannot delete the /memories directory itself".into(),
            ));
        }
        let files = self.files().await?;
        let doomed = under(&files, &canonical);
        if doomed.is_empty() {
            return Err(Refusal::Tool(format!("The path {path} does not exist")));
        }
        let all = self.all_at(&doomed).await?;
        refuse_persons(path, "delete", &all)?;
        for memory in all {
            self.dream
                .state()
                .upkeep()
                .forget_by(&memory.id, Actor::Agent)
                .await?;
        }
        Ok(format!(
            "Successfully deleted {path} (moved to Dream's trash, where the person can restore it)"
        ))
    }

    async fn rename(&self, old: &str, new: &str) -> Outcome {
        let from = normalize(old)?;
        let to = normalize(new)?;
        if from == ROOT {
            return Err(Refusal::Tool(
                "Cannot rename the /memories directory itself".into(),
            ));
        }
        let files = self.files().await?;
        if to == ROOT || !under(&files, &to).is_empty() {
            return Err(Refusal::Tool(format!(
                "The destination {new} already exists"
            )));
        }
        if to.starts_with(&dir_prefix(&from)) {
            return Err(Refusal::Tool(format!(
                "Cannot move {old} into itself ({new})"
            )));
        }
        let moving = under(&files, &from);
        if moving.is_empty() {
            return Err(Refusal::Tool(format!("The path {old} does not exist")));
        }
        if let Some(parent) = ancestors(&to).find(|a| files.contains_key(a)) {
            return Err(Refusal::Tool(format!(
                "Cannot move to {new}: {parent} is a file"
            )));
        }
        let all = self.all_at(&moving).await?;
        refuse_persons(old, "rename", &all)?;
        let mut moved = Vec::new();
        for mut memory in all {
            let Some(path) = memory.metadata.get(PATH_KEY).and_then(Value::as_str) else {
                continue;
            };
            let Ok(path) = normalize(path) else {
                continue;
            };
            let target = format!("{to}{}", &path[from.len()..]);
            if target.chars().count() > MAX_PATH_CHARS {
                return Err(Refusal::Tool(format!(
                    "Cannot move {old} to {new}: a path would be longer than {MAX_PATH_CHARS} \
                     characters"
                )));
            }
            memory.name = name_of(&target);
            memory
                .metadata
                .insert(PATH_KEY.to_owned(), Value::String(target));
            moved.push(memory);
        }
        self.write_agents(old, moved).await?;
        Ok(format!("Successfully renamed {old} to {new}"))
    }

    /// The file at `path` and its memory, when the firewall lets it be read.
    async fn readable_file(&self, path: &str) -> std::result::Result<(String, Memory), Refusal> {
        let canonical = normalize(path)?;
        let files = self.files().await?;
        let Some(memory) = files.get(&canonical) else {
            if is_dir(&files, &canonical) {
                return Err(Refusal::Tool(format!("The path {path} is not a file.")));
            }
            return Err(missing(path));
        };
        if self.recall.withheld(memory).is_some() {
            return Err(Refusal::Tool(format!(
                "{path} is withheld by Dream's firewall and cannot be edited"
            )));
        }
        Ok((canonical, memory.clone()))
    }

    /// Stores the agent's new text of a file.
    async fn store_edit(
        &self,
        path: &str,
        mut memory: Memory,
        canonical: String,
        content: String,
    ) -> std::result::Result<(), Refusal> {
        memory.content = content;
        memory
            .metadata
            .insert(PATH_KEY.to_owned(), Value::String(canonical));
        self.write_agents(path, vec![memory]).await
    }

    /// Writes memories as the agent's, replacing the versions with their ids
    /// (the person's memory stays, the agent's version kept beside it, held).
    async fn write_agents(
        &self,
        path: &str,
        memories: Vec<Memory>,
    ) -> std::result::Result<(), Refusal> {
        let report = self
            .dream
            .import_with(memories, false, ImportSource::Agent, Existing::Replace)
            .await?;
        if let Some((_, reason)) = report.rejected.first() {
            return Err(Refusal::Tool(format!("{path} was not changed: {reason}")));
        }
        if let Some(entry) = report.quarantined.first() {
            return Err(quarantined(path, entry, &[]));
        }
        Ok(())
    }

    /// Every memory (not only the newest) at the given files' paths.
    async fn all_at(&self, files: &[(String, Memory)]) -> Result<Vec<Memory>> {
        let paths: Vec<&String> = files.iter().map(|(p, _)| p).collect();
        Ok(self
            .dream
            .list()
            .await?
            .into_iter()
            .filter(|m| {
                m.metadata
                    .get(PATH_KEY)
                    .and_then(Value::as_str)
                    .and_then(|p| normalize(p).ok())
                    .is_some_and(|p| paths.contains(&&p))
            })
            .collect())
    }
}

/// Why a command did not run.
enum Refusal {
    /// An error result for the model.
    Tool(String),
    /// A store failure.
    Store(DreamError),
}

impl From<DreamError> for Refusal {
    fn from(e: DreamError) -> Self {
        Refusal::Store(e)
    }
}

/// A path refused by [`normalize`]: the tool's error text.
impl From<String> for Refusal {
    fn from(text: String) -> Self {
        Refusal::Tool(text)
    }
}

type Outcome = std::result::Result<String, Refusal>;

/// The canonical form of a tool path (`/memories` or `/memories/a/b`), or the
/// tool's error: outside `/memories`, a `..` (traversal), an empty or `.`
/// component, a backslash, a control or invisible character, too long or too deep.
pub fn normalize(path: &str) -> std::result::Result<String, String> {
    let rest = if path == ROOT {
        ""
    } else if let Some(rest) = path.strip_prefix("/memories/") {
        rest
    } else {
        return Err(format!(
            "Path must start with /memories, got: {}",
            crate::diff::escape_for_display(path, false)
        ));
    };
    let shown = crate::diff::escape_for_display(path, false);
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    if parts.contains(&"..") {
        return Err(format!("Path {shown} would escape /memories directory"));
    }
    if parts.contains(&".")
        || path.chars().any(|c| {
            c == '\\'
                || c == '\0'
                || dream_core::display::needs_escape(c, false)
                || dream_core::display::is_bidi_control(c)
        })
    {
        return Err(format!(
            "Path {shown} is not a valid memory path: use names without `.` components, \
             backslashes, control or invisible characters"
        ));
    }
    if parts.len() > MAX_DEPTH || path.chars().count() > MAX_PATH_CHARS {
        return Err(format!(
            "Path {shown} is too long: at most {MAX_DEPTH} levels and {MAX_PATH_CHARS} characters"
        ));
    }
    let mut out = ROOT.to_owned();
    for part in parts {
        out.push('/');
        out.push_str(part);
    }
    Ok(out)
}

/// A directory's prefix of its files' paths.
fn dir_prefix(dir: &str) -> String {
    format!("{dir}/")
}

/// Whether `path` is a directory: the root, or a prefix of a file's path.
fn is_dir(files: &Files, path: &str) -> bool {
    path == ROOT || files.keys().any(|f| f.starts_with(&dir_prefix(path)))
}

/// The file at `path` or every file below it.
fn under(files: &Files, path: &str) -> Vec<(String, Memory)> {
    let prefix = dir_prefix(path);
    files
        .iter()
        .filter(|(f, _)| *f == path || f.starts_with(&prefix))
        .map(|(f, m)| (f.clone(), m.clone()))
        .collect()
}

/// The directories above `path`, below the root, nearest first.
fn ancestors(path: &str) -> impl Iterator<Item = String> + '_ {
    let mut end = path.len();
    std::iter::from_fn(move || {
        let cut = path[..end].rfind('/')?;
        end = cut;
        (cut > ROOT.len()).then(|| path[..cut].to_owned())
    })
}

/// A memory's name: its path below the root.
fn name_of(path: &str) -> String {
    path.strip_prefix("/memories/").unwrap_or(path).to_owned()
}

fn missing(path: &str) -> Refusal {
    Refusal::Tool(format!(
        "The path {path} does not exist. Please provide a valid path."
    ))
}

fn quarantined(path: &str, entry: &str, rules: &[String]) -> Refusal {
    let rules = match rules {
        [] => String::new(),
        rules => format!(" (rules: {})", rules.join(", ")),
    };
    Refusal::Tool(format!(
        "{path} was not stored: Dream's scanner found instruction- or secret-shaped text and \
         quarantined it as entry {entry}{rules}. The person can review it with `dream review`."
    ))
}

/// Refuses to `verb` what holds the person's own memory: only they can.
fn refuse_persons(path: &str, verb: &str, memories: &[Memory]) -> std::result::Result<(), Refusal> {
    match memories.iter().find(|m| persons_word(m, true)) {
        Some(m) => Err(Refusal::Tool(format!(
            "Cannot {verb} {path}: it holds the person's confirmed memory {}; only the person \
             can change it",
            m.id
        ))),
        None => Ok(()),
    }
}

/// Lines around line `index` (0-based) of `text`, numbered.
fn numbered_around(text: &str, index: usize) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let first = index.saturating_sub(2);
    let last = (index + 3).min(lines.len());
    let shown = dream_core::display::visible_text(text);
    let shown: Vec<&str> = shown.split('\n').collect();
    (first..last)
        .filter_map(|i| {
            shown
                .get(i)
                .map(|l| format!("{:>width$}\t{l}", i + 1, width = LINE_NUMBER_WIDTH))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A size as the tool shows it: `512B`, `1.5K`, `2M`.
fn human_size(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["B", "K", "M", "G"];
    let mut size = bytes as f64;
    let mut unit = 0;
    while size >= 1024.0 && unit < UNITS.len() - 1 {
        size /= 1024.0;
        unit += 1;
    }
    if size.fract() == 0.0 {
        format!("{}{}", size as u64, UNITS[unit])
    } else {
        format!("{size:.1}{}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(path: &str) -> String {
        normalize(path).expect_err(path)
    }

    #[test]
    fn paths_outside_memories_and_traversal_are_refused_with_the_tools_text() {
        assert_eq!(normalize("/memories").ok(), Some("/memories".into()));
        assert_eq!(
            normalize("/memories//notes/a.md/").ok(),
            Some("/memories/notes/a.md".into())
        );
        assert_eq!(
            refused("/etc/passwd"),
            "Path must start with /memories, got: /etc/passwd"
        );
        assert!(refused("/memoriesx/a").starts_with("Path must start with /memories"));
        assert!(refused("memories/a").starts_with("Path must start with /memories"));
        assert_eq!(
            refused("/memories/../etc/passwd"),
            "Path /memories/../etc/passwd would escape /memories directory"
        );
        assert!(refused("/memories/a/./b").contains("not a valid memory path"));
        assert!(refused("/memories/a\\..\\b").contains("not a valid memory path"));
        assert!(refused("/memories/a\u{200b}b").contains("\\u{200b}"));
        assert!(refused("/memories/a\u{1b}[2Jb").contains("\\u{1b}"));
        assert!(refused(&format!("/memories/{}", "a/".repeat(9))).contains("too long"));
    }

    #[test]
    fn ancestors_stop_below_the_root() {
        let found: Vec<String> = ancestors("/memories/a/b/c.md").collect();
        assert_eq!(found, ["/memories/a/b", "/memories/a"]);
        assert_eq!(ancestors("/memories/c.md").count(), 0);
    }

    #[test]
    fn sizes_read_like_the_tools() {
        assert_eq!(human_size(0), "0B");
        assert_eq!(human_size(512), "512B");
        assert_eq!(human_size(1536), "1.5K");
        assert_eq!(human_size(2 * 1024 * 1024), "2M");
    }
}
