//! Memories by hand: `remember`, `list`, `show`, `forget`, `history`, `restore`,
//! `trash`, `quarantine`, `audit` and `stats`.

use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};
use dream::core::{Memory, MemoryId, MemoryKind, Scope};
use dream::engine::{Confirmed, NewMemory, Remembered};
use serde::Deserialize;

use super::context::{Access, Global};
use super::streams::{FormatArg, Style, escape, escape_body, read_piped_stdin, table};
use super::{CliError, Found, Outcome};

/// `dream remember`: one memory from flags, or a JSON object on stdin.
#[derive(Debug, Args)]
pub struct RememberArgs {
    /// What to remember, as one argument (`dream remember "We deploy on Tuesdays"`);
    /// its name, unless --name gives one, is its first words.
    #[arg(conflicts_with = "content")]
    pub text: Option<String>,
    /// Its name (without it or TEXT, a JSON object with the same fields and defaults
    /// is read from stdin, which must not be a terminal).
    #[arg(long)]
    pub name: Option<String>,
    /// A one-line description.
    #[arg(long, default_value = "")]
    pub description: String,
    /// What it is about: user, feedback, project or reference.
    #[arg(long, default_value = DEFAULT_KIND)]
    pub kind: String,
    /// The body (needs --name; without it, the body is read from piped stdin).
    #[arg(long, requires = "name")]
    pub content: Option<String>,
    /// A tag (repeatable).
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    #[command(flatten)]
    pub output: FormatArg,
}

/// The kind a memory gets when none is named, on the command line or in JSON.
const DEFAULT_KIND: &str = "project";

fn default_kind() -> String {
    DEFAULT_KIND.to_owned()
}

/// The JSON `remember` reads on stdin: what the flags take, with their defaults.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberInput {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default = "default_kind")]
    kind: String,
    content: String,
    id: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    scope: Option<String>,
}

/// Parses a memory kind, with the accepted names in the error.
pub fn parse_kind(kind: &str) -> Result<MemoryKind, CliError> {
    MemoryKind::parse(kind).ok_or_else(|| {
        CliError::usage(format!(
            "unknown kind {}: expected user, feedback, project or reference",
            escape(kind)
        ))
    })
}

/// The longest name `remember` makes from a memory's text, in characters.
const NAME_FROM_TEXT_CHARS: usize = 60;

/// A name for a memory given only its text: its words on one line, cut after
/// [`NAME_FROM_TEXT_CHARS`] characters with an ellipsis.
pub fn name_from_text(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let line: String = words
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    match line.char_indices().nth(NAME_FROM_TEXT_CHARS) {
        Some((cut, _)) => format!("{}…", line[..cut].trim_end()),
        None => line,
    }
}

/// Remembers one memory through the write gate (pinned).
pub async fn remember(global: &Global, args: RememberArgs) -> Outcome {
    let (input, scope) = match (&args.text, &args.name) {
        (Some(text), name) => {
            if text.trim().is_empty() {
                return Err(CliError::usage("the text to remember is empty"));
            }
            let input = RememberInput {
                name: name.clone().unwrap_or_else(|| name_from_text(text)),
                description: args.description.clone(),
                kind: args.kind.clone(),
                content: text.trim().to_owned(),
                id: None,
                tags: args.tags.clone(),
                scope: None,
            };
            (input, None)
        }
        (None, Some(name)) => {
            let content = match &args.content {
                Some(content) => content.clone(),
                None => read_piped_stdin(
                    "the memory's body",
                    "pass --content TEXT, or pipe the body in (dream remember --name NAME < note.txt)",
                )?
                .trim_end()
                .to_owned(),
            };
            let input = RememberInput {
                name: name.clone(),
                description: args.description.clone(),
                kind: args.kind.clone(),
                content,
                id: None,
                tags: args.tags.clone(),
                scope: None,
            };
            (input, None)
        }
        (None, None) => {
            let text = read_piped_stdin(
                "a memory as a JSON object",
                "pass --name and --content (dream remember --name NAME --content TEXT), \
                 or pipe a JSON object in (dream remember < memory.json)",
            )?;
            let input: RememberInput = serde_json::from_str(&text)
                .map_err(|e| CliError::usage(format!("malformed memory JSON: {e}")))?;
            let scope = input.scope.clone().map(Scope::new).transpose()?;
            (input, scope)
        }
    };
    let kind = parse_kind(&input.kind)?;
    let id = input.id.clone().map(MemoryId::new).transpose()?;
    let mut global = global.clone();
    if let Some(scope) = scope {
        global.scope = Some(scope.to_string());
    }
    let dream = global.open(Access::Create).await?;
    let style = Style::detect();
    if let Some(id) = id {
        let now = Utc::now();
        let mut memory = Memory::new(id, kind, input.name, input.description, input.content, now);
        memory.tags = input.tags;
        let report = dream
            .import(vec![memory], true, dream::engine::ImportSource::Person)
            .await?;
        super::models::settle_vectors(&dream).await;
        let json = serde_json::json!({
            "imported": report.imported, "quarantined": report.quarantined,
            "rejected": report.rejected.iter().map(|(_, r)| r).collect::<Vec<_>>(),
        });
        args.output.one(&json, || {
            for id in &report.imported {
                outln!("remembered {id}")?;
            }
            for entry in &report.quarantined {
                outln!("{} as {}", style.bad("quarantined"), escape(entry))?;
            }
            for (_, reason) in &report.rejected {
                outln!("{}: {}", style.bad("refused"), escape(reason))?;
            }
            Ok(())
        })?;
        return Ok(Found::when(report.imported.is_empty()));
    }
    let mut new =
        NewMemory::new(kind, input.name, input.content).with_description(input.description);
    new.tags = input.tags;
    let remembered = dream.remember(new).await?;
    super::models::settle_vectors(&dream).await;
    match remembered {
        Remembered::Stored(memory) => {
            // Held even in the person's words (a standing order that sends data
            // out): say so, and why, in the engine's one wording.
            let held = (memory.status == dream::core::MemoryStatus::Unconfirmed)
                .then(|| dream::engine::recall::why_unconfirmed(&memory));
            let json = serde_json::json!({ "remembered": memory.id, "held": held });
            args.output.one(&json, || {
                outln!("remembered {}", memory.id)?;
                if let Some(why) = &held {
                    outln!(
                        "held: {}; `dream confirm {}` after review",
                        escape(why),
                        memory.id
                    )?;
                }
                Ok(())
            })?;
            Ok(Found::Nothing)
        }
        Remembered::Quarantined { entry, rules } => {
            let json = serde_json::json!({ "quarantined": entry, "rules": rules });
            args.output.one(&json, || {
                outln!(
                    "{} as {} (rules: {})",
                    style.bad("quarantined"),
                    escape(&entry),
                    escape(&rules.join(", "))
                )
            })?;
            Ok(Found::Something)
        }
    }
}

/// Lists the scope's memories.
pub async fn list(global: &Global, output: FormatArg) -> Outcome {
    let dream = global.open(Access::Read).await?;
    let memories = dream.list().await?;
    output.list(&memories, || {
        let mut rows = vec![vec![
            "ID".into(),
            "KIND".into(),
            "STATUS".into(),
            "NAME".into(),
            "DESCRIPTION".into(),
        ]];
        for m in &memories {
            rows.push(vec![
                m.id.to_string(),
                m.kind.as_str().into(),
                format!(
                    "{}{}",
                    m.status.as_str(),
                    if m.pinned { " pinned" } else { "" }
                ),
                escape(&m.name).into_owned(),
                escape(&m.description).into_owned(),
            ]);
        }
        out!("{}", table(&rows))?;
        outln!(
            "{} in scope {}",
            super::streams::count(memories.len(), "memory|memories"),
            dream.scope()
        )
    })?;
    Ok(Found::Nothing)
}

/// `dream show ID`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The memory's id.
    pub id: String,
    #[command(flatten)]
    pub output: FormatArg,
}

/// Shows one memory as Markdown (escaped) or JSON.
pub async fn show(global: &Global, args: ShowArgs) -> Outcome {
    let id = MemoryId::new(args.id)?;
    let dream = global.open(Access::Read).await?;
    let memory = dream
        .get(&id)
        .await?
        .ok_or_else(|| CliError::usage(format!("no memory with id {id}")))?;
    args.output.one(&memory, || {
        out!("{}", escape_body(&dream::core::render_memory(&memory)))?;
        outln!()
    })?;
    Ok(Found::Nothing)
}

/// `dream forget ID [--purge]`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// The memory's id.
    pub id: String,
    /// Remove it for good, with its history and trash copies.
    #[arg(long)]
    pub purge: bool,
    /// With --purge: also remove (or redact, where another memory rests on the
    /// same session) the messages of its source sessions that carry its names,
    /// numbers and addresses, and its copies in quarantine and plans.
    #[arg(long, requires = "purge")]
    pub with_sources: bool,
    #[command(flatten)]
    pub output: FormatArg,
}

/// Forgets a memory (to the trash) or purges it.
pub async fn forget(global: &Global, args: ForgetArgs) -> Outcome {
    let id = MemoryId::new(args.id)?;
    let dream = global.open(Access::Write).await?;
    if args.with_sources {
        let report = dream.forget_purge_with_sources(&id).await?;
        let count = |map: &std::collections::BTreeMap<String, Vec<String>>, ns: &str| {
            map.get(ns).map_or(0, Vec::len)
        };
        let json = serde_json::json!({ "purged": id, "with_sources": report });
        args.output.one(&json, || {
            outln!(
                "purged {id} with its sources: {} history versions, {} trash copies, \
             {} sessions removed, {} redacted ({} messages), {} quarantined, {} plans",
                count(&report.removed, "history"),
                count(&report.removed, "trash"),
                count(&report.removed, "sessions"),
                count(&report.redacted, "sessions"),
                report.messages,
                count(&report.removed, "quarantine"),
                count(&report.removed, "plans"),
            )
        })?;
    } else if args.purge {
        let purged = dream.forget_purge(&id).await?;
        let json = serde_json::json!({ "purged": id, "removed": purged });
        args.output.one(&json, || {
            outln!(
                "purged {id}: memory {}, {} history versions, {} trash copies",
                if purged.memory {
                    "removed"
                } else {
                    "was already gone"
                },
                purged.history,
                purged.trash
            )
        })?;
    } else {
        dream.forget(&id).await?;
        args.output.one(&serde_json::json!({ "forgot": id }), || {
            outln!("forgot {id} (restorable with: dream restore {id})")
        })?;
    }
    Ok(Found::Nothing)
}

/// `dream history ID`.
#[derive(Debug, Args)]
pub struct IdArgs {
    /// The memory's id.
    pub id: String,
    #[command(flatten)]
    pub output: FormatArg,
}

/// Lists a memory's prior versions.
pub async fn history(global: &Global, args: IdArgs) -> Outcome {
    let id = MemoryId::new(args.id)?;
    let dream = global.open(Access::Read).await?;
    let entries = dream.history(&id).await?;
    args.output.list(&entries, || {
        let mut rows = vec![vec![
            "ENTRY".into(),
            "WHEN".into(),
            "ACTION".into(),
            "PASS".into(),
            "NAME".into(),
        ]];
        for e in &entries {
            let held = if e.verified {
                ""
            } else {
                " (held: its copy does not carry this store's seal)"
            };
            rows.push(vec![
                e.id.clone(),
                e.at.to_rfc3339(),
                format!("{:?}", e.action).to_lowercase(),
                e.pass.clone().unwrap_or_else(|| "-".into()),
                format!("{}{held}", escape(&e.memory.name)),
            ]);
        }
        out!("{}", table(&rows))?;
        outln!(
            "{} of {id}",
            super::streams::count(entries.len(), "prior version")
        )
    })?;
    Ok(Found::Nothing)
}

/// What `restore` takes.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// The memory's id.
    pub id: String,
    /// Restore this trash entry (its ENTRY in `dream trash`) or prior version
    /// (its ENTRY in `dream history`) instead of the newest trash entry; if the
    /// memory exists, the entry replaces it (the current version goes to
    /// history). A copy without this store's seal comes back held.
    #[arg(long, value_name = "ENTRY")]
    pub entry: Option<String>,
    #[command(flatten)]
    pub output: FormatArg,
}

/// Restores a memory from the trash.
pub async fn restore(global: &Global, args: RestoreArgs) -> Outcome {
    let id = MemoryId::new(args.id)?;
    let dream = global.open(Access::Write).await?;
    let memory = match &args.entry {
        Some(entry) => dream.restore_entry(&id, entry).await?,
        None => dream.restore(&id).await?,
    };
    args.output
        .one(&serde_json::json!({ "restored": memory }), || {
            outln!("restored {} ({})", memory.id, escape(&memory.name))?;
            if memory.status == dream::core::MemoryStatus::Unconfirmed {
                outln!(
                    "held: it is not the person's word (its copy did not carry this store's \
                     seal, or it was held before); `dream confirm {}` after review",
                    memory.id
                )?;
            }
            Ok(())
        })?;
    Ok(Found::Nothing)
}

/// What `confirm` takes.
#[derive(Debug, Args)]
pub struct ConfirmArgs {
    /// The memory to confirm.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub id: Option<String>,
    /// Confirm every held memory of the scope: for a store you reviewed, or
    /// moved to another place on purpose.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub output: FormatArg,
}

/// Confirms held memories: a record that does not carry this store's seal (a hand
/// edit, a planted file, a moved store) is sealed; a memory resting only on tool,
/// assistant or system text becomes the person's word.
pub async fn confirm(global: &Global, args: ConfirmArgs) -> Outcome {
    let dream = global.open(Access::Write).await?;
    let confirmed: Vec<(MemoryId, Confirmed)> = match &args.id {
        Some(id) => {
            let id = MemoryId::new(id.as_str())?;
            let what = dream.confirm(&id).await?;
            vec![(id, what)]
        }
        None => dream.confirm_all().await?,
    };
    let rows: Vec<_> = confirmed
        .iter()
        .map(|(id, what)| serde_json::json!({ "id": id, "was": what }))
        .collect();
    args.output.list(&rows, || {
        if confirmed.is_empty() {
            outln!("nothing held: no memory needed confirming")?;
        }
        for (id, what) in &confirmed {
            let note = match what {
                Confirmed::AlreadyTrusted => "already trusted; nothing changed",
                Confirmed::WasUnverified => "confirmed (was unverified: sealed now)",
                Confirmed::WasUnconfirmed => "confirmed (was unconfirmed-source)",
                Confirmed::Edited => "edited and confirmed",
            };
            outln!("{id}: {note}")?;
        }
        Ok(())
    })?;
    Ok(Found::Nothing)
}

/// Lists the trash.
pub async fn trash(global: &Global, output: FormatArg) -> Outcome {
    let dream = global.open(Access::Read).await?;
    let entries = dream.trash().await?;
    output.list(&entries, || {
        let mut rows = vec![vec![
            "ENTRY".into(),
            "MEMORY".into(),
            "TRASHED".into(),
            "PURGED AFTER".into(),
            "REASON".into(),
            "NAME".into(),
            "SEAL".into(),
            "SHA-256".into(),
            "FIRST LINE".into(),
        ]];
        for e in &entries {
            rows.push(vec![
                e.id.clone(),
                e.memory.id.to_string(),
                e.at.to_rfc3339(),
                e.expires_at.to_rfc3339(),
                escape(&e.reason).into_owned(),
                escape(&e.memory.name).into_owned(),
                if e.verified {
                    "sealed".into()
                } else {
                    "UNVERIFIED (edited or planted)".into()
                },
                e.hash.chars().take(16).collect(),
                escape(&e.first_line.chars().take(60).collect::<String>()).into_owned(),
            ]);
        }
        out!("{}", table(&rows))?;
        outln!("{} in the trash", entries.len())
    })?;
    Ok(Found::Nothing)
}

/// `dream quarantine [list|release ID|drop ID]`.
#[derive(Debug, Args)]
pub struct QuarantineArgs {
    #[command(subcommand)]
    action: Option<QuarantineAction>,
    #[command(flatten)]
    output: FormatArg,
}

#[derive(Debug, Subcommand)]
enum QuarantineAction {
    /// List quarantined proposals (the default).
    List,
    /// Release an entry into memory: a person's decision, audited. Never for secrets.
    Release {
        /// The quarantine entry.
        id: String,
        /// Why (recorded in the audit log).
        #[arg(long, default_value = "released by a person")]
        note: String,
    },
    /// Drop an entry for good.
    Drop {
        /// The quarantine entry.
        id: String,
    },
}

/// Lists, releases or drops quarantine entries.
pub async fn quarantine(global: &Global, args: QuarantineArgs) -> Outcome {
    let dream = global.open(Access::Write).await?;
    match args.action.unwrap_or(QuarantineAction::List) {
        QuarantineAction::List => {
            let entries = dream.quarantine().await?;
            args.output.list(&entries, || {
                let mut rows = vec![vec![
                    "ENTRY".into(),
                    "WHEN".into(),
                    "RULES".into(),
                    "NAME".into(),
                ]];
                for e in &entries {
                    let rules: Vec<&str> = e.findings.iter().map(|f| f.rule.as_str()).collect();
                    rows.push(vec![
                        e.id.clone(),
                        e.at.to_rfc3339(),
                        rules.join(","),
                        escape(&e.memory.name).into_owned(),
                    ]);
                }
                out!("{}", table(&rows))?;
                outln!("{} quarantined", entries.len())
            })?;
        }
        QuarantineAction::Release { id, note } => {
            let memory = dream.release(&id, &note).await?;
            let json = serde_json::json!({ "released": id, "memory": memory });
            args.output
                .one(&json, || outln!("released {id} as memory {}", memory.id))?;
        }
        QuarantineAction::Drop { id } => {
            dream.drop_quarantined(&id).await?;
            args.output.one(&serde_json::json!({ "dropped": id }), || {
                outln!("dropped {id}")
            })?;
        }
    }
    Ok(Found::Nothing)
}

/// `dream audit [--since WHEN]`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Only records after this: an RFC 3339 time, or an age such as 30m, 24h, 7d.
    #[arg(long)]
    pub since: Option<String>,
    #[command(flatten)]
    pub output: FormatArg,
}

/// Parses `--since`: RFC 3339, or an age in minutes, hours or days.
pub fn parse_since(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, CliError> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    let bad = || {
        CliError::usage(format!(
            "--since {}: expected an RFC 3339 time or an age like 30m, 24h, 7d",
            escape(text)
        ))
    };
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?);
    let n: i64 = number.parse().map_err(|_| bad())?;
    let age = match unit {
        "m" => chrono::Duration::try_minutes(n),
        "h" => chrono::Duration::try_hours(n),
        "d" => chrono::Duration::try_days(n),
        _ => None,
    }
    .ok_or_else(bad)?;
    now.checked_sub_signed(age).ok_or_else(bad)
}

/// Prints the audit log.
pub async fn audit(global: &Global, args: AuditArgs) -> Outcome {
    let since = match &args.since {
        Some(text) => parse_since(text, Utc::now())?,
        None => DateTime::<Utc>::MIN_UTC,
    };
    let dream = global.open(Access::Read).await?;
    let records = dream.audit(since).await?;
    args.output.list(&records, || {
        let mut rows = vec![vec![
            "WHEN".into(),
            "ACTION".into(),
            "ACTOR".into(),
            "MEMORY".into(),
            "RULES".into(),
            "REASON".into(),
        ]];
        for r in &records {
            rows.push(vec![
                r.at.to_rfc3339(),
                serde_json::to_value(r.action)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                serde_json::to_value(r.actor)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                r.memory
                    .as_ref()
                    .map(|m| m.to_string())
                    .unwrap_or_else(|| "-".into()),
                r.rules.join(","),
                escape(&r.reason).into_owned(),
            ]);
        }
        out!("{}", table(&rows))
    })?;
    Ok(Found::Nothing)
}

/// Prints counts for the scope.
pub async fn stats(global: &Global, output: FormatArg) -> Outcome {
    let here = global.locate()?;
    let dream = global.open(Access::Read).await?;
    let stats = dream.stats().await?;
    let mut json = serde_json::to_value(&stats)
        .map_err(|e| CliError::usage(format!("cannot print the stats: {e}")))?;
    if let Some(map) = json.as_object_mut() {
        map.insert("location".into(), here.url.clone().into());
        map.insert("located_by".into(), here.why.to_string().into());
    }
    output.one(&json, || {
        let rows = vec![
            vec!["store".into(), escape(&stats.store).into_owned()],
            vec!["location".into(), escape(&here.url).into_owned()],
            vec!["because".into(), here.why.to_string()],
            vec!["scope".into(), stats.scope.to_string()],
            vec![
                "memories".into(),
                format!(
                    "{} ({} active, {} pinned)",
                    stats.memories, stats.active, stats.pinned
                ),
            ],
            vec![
                "sessions".into(),
                if stats.stuck_sessions == 0 {
                    format!(
                        "{} pending, {} in the log",
                        stats.pending_sessions, stats.logged_sessions
                    )
                } else {
                    format!(
                        "{} pending, {} held for you (`dream dream --force` retries them), {} in the log",
                        stats.pending_sessions, stats.stuck_sessions, stats.logged_sessions
                    )
                },
            ],
            vec!["quarantined".into(), stats.quarantined.to_string()],
            vec!["trash".into(), stats.trash.to_string()],
            vec!["generation".into(), stats.generation.to_string()],
            vec![
                "last dream".into(),
                stats
                    .last_success
                    .map(|t| t.to_rfc3339())
                    .unwrap_or_else(|| "never".into()),
            ],
            vec![
                "consolidator".into(),
                escape(&stats.consolidator).into_owned(),
            ],
        ];
        out!("{}", table(&rows))
    })?;
    Ok(Found::Nothing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_from_text_is_its_words_on_one_line_cut_with_an_ellipsis() {
        assert_eq!(
            name_from_text("  We deploy\n on\tTuesdays. "),
            "We deploy on Tuesdays."
        );
        let long = "word ".repeat(30);
        let name = name_from_text(&long);
        assert!(name.chars().count() <= NAME_FROM_TEXT_CHARS + 1, "{name}");
        assert!(name.ends_with("word…"), "{name}");
        assert_eq!(name_from_text("bell\u{7} here"), "bell here");
        assert_eq!(name_from_text("日本語のテキスト"), "日本語のテキスト");
    }
}
