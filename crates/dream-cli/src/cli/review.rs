//! `dream review`: the person reviews held and quarantined memories one at a
//! time in a terminal. Each shows its text, where it came from and, for an
//! edit, the diff to its prior version; the person confirms, edits, forgets or
//! skips it. Every decision goes through the engine's own `confirm`,
//! `confirm_edited`, `forget`, `release` and `drop_quarantined`, so it is
//! audited exactly as the non-interactive commands are.

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use dream::core::{Memory, MemoryStatus, Role};
use dream::engine::{
    Dream, DreamError, Exported, NewMemory, QuarantineRecord, QuarantineSource, Remembered,
    memory_changes, memory_tool,
};

use super::context::{Access, Global};
use super::streams::{escape, escape_body, flush_stdout};
use super::{CliError, Found, Outcome};

/// What the person decided for one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Confirm,
    Edit,
    Forget,
    Skip,
    Quit,
}

/// Runs the review; refused without a terminal on stdin and stdout.
pub async fn review(global: &Global) -> Outcome {
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        return Err(CliError::usage(
            "`dream review` is interactive and needs a terminal; without one, review with \
             `dream list --json` and `dream quarantine list`, then use `dream confirm ID`, \
             `dream forget ID`, or `dream quarantine release|drop ENTRY`",
        ));
    }
    let dream = global.open(Access::Write).await?;
    let held: Vec<Exported> = dream
        .export()
        .await?
        .into_iter()
        .filter(|e| !e.verified || e.memory.status == MemoryStatus::Unconfirmed)
        .collect();
    let quarantined = dream.quarantine().await?;
    let total = held.len() + quarantined.len();
    if total == 0 {
        outln!("nothing to review: no held or quarantined memory")?;
        return Ok(Found::Nothing);
    }
    let items = held
        .iter()
        .map(Item::Held)
        .chain(quarantined.iter().map(Item::Quarantined));
    let mut tally = Tally::default();
    for (i, item) in items.enumerate() {
        match item {
            Item::Held(held) => show_memory(&dream, held, i + 1, total).await?,
            Item::Quarantined(entry) => show_quarantined(&dream, entry, i + 1, total).await?,
        };
        loop {
            let choice = ask()?;
            let done = match (choice, item) {
                (Choice::Quit, _) => return tally.finish(total),
                (Choice::Skip, _) => true,
                (_, Item::Held(held)) => act_on_memory(&dream, &held.memory, choice).await?,
                (_, Item::Quarantined(entry)) => act_on_quarantined(&dream, entry, choice).await?,
            };
            if done {
                tally.count(choice);
                break;
            }
        }
    }
    tally.finish(total)
}

/// One item under review.
#[derive(Debug, Clone, Copy)]
enum Item<'a> {
    Held(&'a Exported),
    Quarantined(&'a QuarantineRecord),
}

/// What the review did, for its last line.
#[derive(Debug, Default)]
struct Tally {
    confirmed: usize,
    edited: usize,
    forgotten: usize,
    skipped: usize,
}

impl Tally {
    fn count(&mut self, choice: Choice) {
        match choice {
            Choice::Confirm => self.confirmed += 1,
            Choice::Edit => self.edited += 1,
            Choice::Forget => self.forgotten += 1,
            Choice::Skip | Choice::Quit => self.skipped += 1,
        }
    }

    fn finish(&self, total: usize) -> Outcome {
        let decided = self.confirmed + self.edited + self.forgotten + self.skipped;
        outln!(
            "reviewed {decided} of {total}: {} confirmed, {} edited, {} forgotten, {} skipped",
            self.confirmed,
            self.edited,
            self.forgotten,
            self.skipped
        )?;
        Ok(Found::Nothing)
    }
}

async fn show_memory(dream: &Dream, item: &Exported, position: usize, total: usize) -> Outcome {
    let m = &item.memory;
    outln!()?;
    outln!(
        "[{position}/{total}] held memory {} ({}) \"{}\"",
        m.id,
        m.kind.as_str(),
        escape(&m.name)
    )?;
    if !m.description.is_empty() {
        outln!("  description: {}", escape(&m.description))?;
    }
    let why = if item.verified {
        format!("{}: not yet confirmed by you", m.status.as_str())
    } else {
        "it does not carry this store's seal (edited on disk, planted, or moved)".to_owned()
    };
    outln!("  held: {why}")?;
    outln!("  from: {}", origin(m))?;
    outln!(
        "  created {}, updated {}",
        m.created_at.format("%Y-%m-%d %H:%M"),
        m.updated_at.format("%Y-%m-%d %H:%M")
    )?;
    outln!("  text:")?;
    for line in escape_body(&m.content).lines() {
        outln!("  | {line}")?;
    }
    if let Some(prior) = dream.history(&m.id).await?.into_iter().next() {
        outln!(
            "  changed from the prior version (replaced {}):",
            prior.at.format("%Y-%m-%d %H:%M")
        )?;
        out!("{}", memory_changes(&prior.memory, m))?;
    }
    Ok(Found::Nothing)
}

/// Where a memory came from, in the person's terms: whose word it rests on, the
/// sessions it was learned from, the import or the memory-tool file it was.
fn origin(m: &Memory) -> String {
    let mut parts = Vec::new();
    let whose: Vec<&str> = m
        .evidence
        .iter()
        .map(|role| match role {
            Role::User => "your own words",
            Role::Assistant => "an agent's report",
            Role::Tool => "tool output or a foreign import",
            Role::System => "system text",
        })
        .collect();
    if !whose.is_empty() {
        parts.push(whose.join(" and "));
    }
    if let Some(path) = m
        .metadata
        .get(memory_tool::PATH_KEY)
        .and_then(|p| p.as_str())
    {
        parts.push(format!(
            "written by an agent with the memory tool as {}",
            escape(path)
        ));
    }
    if let Some(from) = m.metadata.get(super::agent_memory::IMPORTED_FROM) {
        let field = |key: &str| from.get(key).and_then(|v| v.as_str()).unwrap_or("?");
        parts.push(format!(
            "imported from {} file {}",
            escape(field("format")),
            escape(field("file"))
        ));
    }
    if !m.sources.is_empty() {
        let ids: Vec<&str> = m.sources.iter().map(|s| s.as_str()).collect();
        parts.push(format!("sessions {}", ids.join(", ")));
    }
    if parts.is_empty() {
        "unknown (written before provenance was recorded)".to_owned()
    } else {
        parts.join("; ")
    }
}

async fn show_quarantined(
    dream: &Dream,
    q: &QuarantineRecord,
    position: usize,
    total: usize,
) -> Outcome {
    let m = &q.memory;
    outln!()?;
    outln!(
        "[{position}/{total}] quarantined proposal {} ({} of memory {}, {}) \"{}\"",
        q.id,
        match q.kind {
            dream::engine::ProposalKind::Create => "create",
            dream::engine::ProposalKind::Update => "update",
        },
        m.id,
        m.kind.as_str(),
        escape(&m.name)
    )?;
    let rules: Vec<&str> = q.findings.iter().map(|f| f.rule.as_str()).collect();
    outln!(
        "  quarantined {}: the scanner's rules {}{}",
        q.at.format("%Y-%m-%d %H:%M"),
        rules.join(", "),
        if q.has_secret() {
            " (a secret: it can only be forgotten)"
        } else {
            ""
        }
    )?;
    let source = match &q.source {
        QuarantineSource::Dream { pass } => format!("a dream pass ({pass})"),
        QuarantineSource::Remember => "remember (yours, or an agent's over MCP)".to_owned(),
        QuarantineSource::Import => "an import".to_owned(),
    };
    outln!("  from: {source}; {}", origin(m))?;
    if !q.sessions.is_empty() {
        let ids: Vec<&str> = q.sessions.iter().map(|s| s.as_str()).collect();
        outln!("  sessions: {}", ids.join(", "))?;
    }
    outln!("  text (secrets redacted):")?;
    for line in escape_body(&m.content).lines() {
        outln!("  | {line}")?;
    }
    if q.kind == dream::engine::ProposalKind::Update
        && let Some(current) = dream.get(&m.id).await?
    {
        outln!("  changed from the current version:")?;
        out!("{}", memory_changes(&current, m))?;
    }
    Ok(Found::Nothing)
}

/// Confirms, edits or forgets a held memory; `false` when the engine refused
/// (said why) or the edit changed nothing, so the person chooses again.
async fn act_on_memory(dream: &Dream, m: &Memory, choice: Choice) -> Result<bool, CliError> {
    match choice {
        Choice::Confirm => match dream.confirm(&m.id).await {
            Ok(_) => outln!("confirmed {}: it is your word now", m.id)?,
            Err(e) => return refused(e),
        },
        Choice::Forget => {
            dream.forget(&m.id).await?;
            outln!(
                "forgotten {} (to the trash: `dream restore {}` brings it back)",
                m.id,
                m.id
            )?;
        }
        Choice::Edit => {
            let Some(text) = edited(&m.content)? else {
                return Ok(false);
            };
            match dream.confirm_edited(&m.id, text).await {
                Ok(_) => outln!("edited and confirmed {}: your text is your word now", m.id)?,
                Err(e) => return refused(e),
            }
        }
        Choice::Skip | Choice::Quit => {}
    }
    Ok(true)
}

/// [`act_on_memory`] for a quarantined proposal: confirm releases it, forget
/// drops it, edit remembers the person's corrected text and drops the proposal.
async fn act_on_quarantined(
    dream: &Dream,
    q: &QuarantineRecord,
    choice: Choice,
) -> Result<bool, CliError> {
    match choice {
        Choice::Confirm => match dream.release(&q.id, "released in dream review").await {
            Ok(memory) => outln!("released {} as memory {}", q.id, memory.id)?,
            Err(e) => return refused(e),
        },
        Choice::Forget => {
            dream.drop_quarantined(&q.id).await?;
            outln!("dropped {}", q.id)?;
        }
        Choice::Edit => {
            let Some(text) = edited(&q.memory.content)? else {
                return Ok(false);
            };
            let mut new = NewMemory::new(q.memory.kind, q.memory.name.clone(), text)
                .with_description(q.memory.description.clone());
            new.tags = q.memory.tags.clone();
            match dream.remember(new).await {
                Ok(Remembered::Stored(memory)) => {
                    dream.drop_quarantined(&q.id).await?;
                    outln!("remembered your text as {} and dropped {}", memory.id, q.id)?;
                }
                Ok(Remembered::Quarantined { entry, rules }) => {
                    outln!(
                        "your text is flagged too (rules: {}) and was quarantined as {entry}; \
                         {} stays",
                        rules.join(", "),
                        q.id
                    )?;
                    return Ok(false);
                }
                Err(e) => return refused(e),
            }
        }
        Choice::Skip | Choice::Quit => {}
    }
    Ok(true)
}

/// Says why the engine refused a decision (`false`: the person chooses again);
/// any other error ends the review.
fn refused(e: DreamError) -> Result<bool, CliError> {
    match e {
        DreamError::Refused { .. } | DreamError::InvalidInput { .. } => {
            outln!("refused: {}", escape(&e.to_string()))?;
            Ok(false)
        }
        other => Err(other.into()),
    }
}

/// Prompts for a choice; end of input is [`Choice::Quit`].
fn ask() -> Result<Choice, CliError> {
    loop {
        out!("[c]onfirm, [e]dit, [f]orget, [s]kip, [q]uit? ")?;
        flush_stdout()?;
        let mut line = String::new();
        let read = tokio::task::block_in_place(|| std::io::stdin().lock().read_line(&mut line))
            .map_err(|e| CliError::usage(format!("cannot read the terminal: {e}")))?;
        if read == 0 {
            outln!()?;
            return Ok(Choice::Quit);
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "c" | "confirm" => return Ok(Choice::Confirm),
            "e" | "edit" => return Ok(Choice::Edit),
            "f" | "forget" => return Ok(Choice::Forget),
            "s" | "skip" | "" => return Ok(Choice::Skip),
            "q" | "quit" => return Ok(Choice::Quit),
            _ => outln!("answer c, e, f, s or q")?,
        }
    }
}

/// Opens `text` in the person's editor (`$VISUAL`, `$EDITOR`, else `vi`) and
/// returns what they saved, or `None` (said why) when it is unchanged or empty.
fn edited(text: &str) -> Result<Option<String>, CliError> {
    let mut file = tempfile::Builder::new()
        .prefix("dream-review-")
        .suffix(".md")
        .tempfile()
        .map_err(|e| CliError::usage(format!("cannot make a file to edit: {e}")))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| CliError::usage(format!("cannot write the file to edit: {e}")))?;
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".to_owned());
    // The editor is the person's own setting and may carry arguments
    // (`code --wait`): the shell splits it; the file is passed as `$1`.
    let status = tokio::task::block_in_place(|| {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("sh")
            .arg(file.path())
            .status()
    })
    .map_err(|e| CliError::usage(format!("cannot run the editor: {e}")))?;
    if !status.success() {
        outln!("the editor exited with {status}: nothing changed")?;
        return Ok(None);
    }
    let mut new = std::fs::read_to_string(file.path())
        .map_err(|e| CliError::usage(format!("cannot read the edited file: {e}")))?;
    if new.ends_with('\n') && !text.ends_with('\n') {
        new.pop();
    }
    if new.trim().is_empty() {
        outln!("the edited text is empty: nothing changed (forget it instead)")?;
        return Ok(None);
    }
    if new == text {
        outln!("unchanged")?;
        return Ok(None);
    }
    Ok(Some(new))
}
