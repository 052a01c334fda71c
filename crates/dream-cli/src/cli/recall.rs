//! `dream recall`: ranked memories through the firewall, one verdict each.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use dream::core::{MemoryId, SystemClock};
use dream::engine::recall::eval::{self, Metrics};
use dream::engine::recall::{
    FirewallVerdict, MAX_QUERY_BYTES, PickerOptions, Ranker, Recall, RecallOptions, RecallResult,
    VectorOptions,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::context::{Access, Global, Seal};
use super::locate::Located;
use super::streams::{Style, escape, escape_body, print_json, read_input, read_piped_stdin, table};
use super::{CliError, Found, Outcome, progress};

/// How `recall` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum RecallFormat {
    /// The POLICY line and a verdict per record, for people.
    #[default]
    Text,
    /// One JSON object (with --queries, one JSON array of the per-query objects).
    Json,
    /// One JSON object a line: the default with --queries.
    Jsonl,
    /// Only admitted memories, framed as recalled data for the next session.
    Context,
}

/// `dream recall QUERY` or `dream recall --queries FILE`.
#[derive(Debug, Args)]
pub struct RecallArgs {
    /// What to recall.
    #[arg(required_unless_present_any = ["queries", "brief", "hook"], conflicts_with_all = ["queries", "brief", "hook"])]
    pub query: Option<String>,
    /// JSONL of {"id","query"} (or - for stdin); prints JSONL of {"id","results"}
    /// (with --format json, one array of them; text and context are refused).
    #[arg(long, value_name = "FILE")]
    pub queries: Option<PathBuf>,
    /// With --queries: JSONL of {"id","gold":[memory ids],"kind"} naming the
    /// memories each query should find; prints recall@1/5/10 and MRR per kind
    /// (the ranked records, whatever their verdict; --limit below 10 caps them).
    #[arg(long, value_name = "FILE")]
    pub gold: Option<PathBuf>,
    /// Candidates ranked before the firewall judges them (1 to 100).
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Output format: text (the default), json, jsonl or context; with --gold, the
    /// metrics as text or json.
    #[arg(long, value_enum)]
    pub format: Option<RecallFormat>,
    /// The same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// No query: the admitted memories that matter most (pinned, then confident and
    /// recent) within --budget, for a session's start. Prints the context block
    /// (with --format json, the verdicts).
    #[arg(long, conflicts_with = "queries")]
    pub brief: bool,
    /// With --brief: the most tokens (estimated, about four bytes each) to fill.
    #[arg(
        long,
        default_value_t = 1000,
        requires = "brief",
        value_name = "TOKENS"
    )]
    pub budget: usize,
    /// The query is the `prompt` of a hook's JSON on stdin (Claude Code's
    /// UserPromptSubmit): prints the context block of what is admitted, or nothing.
    #[arg(long, conflicts_with_all = ["queries", "brief"])]
    pub hook: bool,
}

/// What a hook or an MCP tool says where no store has been made yet.
pub const NO_MEMORIES_YET: &str = "no memories yet";

/// What a prompt hook passes on standard input (Claude Code's UserPromptSubmit).
#[derive(Debug, Deserialize)]
struct PromptHook {
    prompt: String,
}

/// The query a prompt hook's JSON on stdin asks: its `prompt`, trimmed, cut to
/// [`MAX_QUERY_BYTES`] at a character boundary (a long prompt is still a question).
fn hook_query() -> Result<String, CliError> {
    let text = read_piped_stdin(
        "a hook's JSON",
        "--hook reads {\"prompt\": …} from standard input, as agent hooks pass it",
    )?;
    let input: PromptHook = serde_json::from_str(&text)
        .map_err(|e| CliError::usage(format!("--hook: expected {{\"prompt\": …}}: {e}")))?;
    let mut query = input.prompt.trim();
    if query.len() > MAX_QUERY_BYTES {
        let mut end = MAX_QUERY_BYTES;
        while !query.is_char_boundary(end) {
            end -= 1;
        }
        query = &query[..end];
    }
    Ok(query.to_owned())
}

/// A `Recall` over the store `here` names (which must exist; nothing is
/// created) with its seal key and the configured picker, and the scope.
pub async fn open_recall(
    global: &Global,
    here: &Located,
) -> Result<(Recall, dream::core::Scope), CliError> {
    let store = global.open_store(here, Access::Read).await?;
    let scope = global.scope(&here.config)?;
    let recall = build_recall(
        store,
        global.seal_key(here, Access::Read)?,
        global.model(&here.config)?,
        global.embedder(&here.config)?,
    );
    Ok((recall, scope))
}

/// The one place the CLI builds a `Recall` (`recall`, `export`, `dream mcp`, the
/// demo): over `store` with its seal key, the persisted index, and the
/// configured picker model and embedder. The persisted index is authenticated
/// by the seal key or the encrypted store either way; recall reads every memory
/// it shows again, so a hand edit that keeps its version is judged on its own
/// bytes.
pub fn build_recall(
    store: Arc<dyn dream::core::RecordStore>,
    seal: Option<Seal>,
    model: Option<Arc<dyn dream::core::LanguageModel>>,
    embedder: Option<Arc<dyn dream::core::Embedder>>,
) -> Recall {
    // An index tagged with a throwaway key would never be reused: not written.
    let persist = seal.as_ref().is_none_or(|seal| seal.kept);
    let options = RecallOptions {
        seal: seal.map(|seal| seal.key),
        persist,
        picker: model.map(PickerOptions::new),
        vectors: embedder.map(VectorOptions::new),
        ..RecallOptions::default()
    };
    Recall::new(store, Arc::new(SystemClock), options)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryLine {
    id: Value,
    query: String,
}

/// One line of a `--gold` file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GoldLine {
    id: Value,
    gold: Vec<String>,
    #[serde(default)]
    kind: Option<String>,
}

/// Reads a JSONL file of `T`, naming the first malformed line.
fn read_lines<T: serde::de::DeserializeOwned>(
    file: &std::path::Path,
    expected: &str,
) -> Result<Vec<T>, CliError> {
    let text = read_input(Some(file))?;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: T = serde_json::from_str(line)
            .map_err(|e| CliError::usage(format!("line {}: expected {expected}: {e}", i + 1)))?;
        lines.push(parsed);
    }
    Ok(lines)
}

/// The gold memories and kind of each query, checked against the queries: every
/// query has exactly one gold line and every gold line a query.
fn gold_of(
    queries: &[QueryLine],
    file: &std::path::Path,
) -> Result<Vec<(Vec<String>, String)>, CliError> {
    let lines: Vec<GoldLine> = read_lines(file, "{\"id\",\"gold\":[ids],\"kind\"}")?;
    for (i, line) in lines.iter().enumerate() {
        if lines[..i].iter().any(|l| l.id == line.id) {
            return Err(CliError::usage(format!(
                "gold: id {} appears twice",
                line.id
            )));
        }
        if !queries.iter().any(|q| q.id == line.id) {
            return Err(CliError::usage(format!(
                "gold: id {} names no query",
                line.id
            )));
        }
        if let Some(bad) = line
            .gold
            .iter()
            .find(|g| MemoryId::new(g.as_str()).is_err())
        {
            return Err(CliError::usage(format!(
                "gold: id {}: {} is not a memory id",
                line.id,
                escape(bad)
            )));
        }
    }
    queries
        .iter()
        .map(|q| {
            let line = lines
                .iter()
                .find(|l| l.id == q.id)
                .ok_or_else(|| CliError::usage(format!("gold: query {} has no gold line", q.id)))?;
            let kind = line.kind.clone().unwrap_or_else(|| Metrics::ALL.to_owned());
            Ok((line.gold.clone(), kind))
        })
        .collect()
}

/// The metrics as JSON: each group's queries, recall@1/5/10 (percent) and MRR.
fn metrics_json(metrics: &Metrics, limit: usize) -> Value {
    let groups: serde_json::Map<String, Value> = metrics
        .groups
        .iter()
        .map(|(group, s)| {
            (
                group.clone(),
                json!({
                    "queries": s.queries,
                    "recall_at_1": s.recall_at(1),
                    "recall_at_5": s.recall_at(5),
                    "recall_at_10": s.recall_at(10),
                    "mrr": s.mrr(),
                }),
            )
        })
        .collect();
    json!({ "limit": limit, "groups": groups })
}

/// Runs recall.
pub async fn recall(global: &Global, mut args: RecallArgs) -> Outcome {
    if args.json {
        args.format = Some(RecallFormat::Json);
    }
    if args.query.as_deref().is_some_and(|q| q.trim().is_empty()) {
        return Err(CliError::usage(
            "the query is blank: say what to recall, or use --brief",
        ));
    }
    // Input errors are said before any store is opened.
    if args.gold.is_some() && args.queries.is_none() {
        return Err(CliError::usage(
            "--gold scores a batch: give the queries with --queries FILE",
        ));
    }
    let batch = match &args.queries {
        Some(file) => {
            let gold_format = matches!(
                args.format,
                None | Some(RecallFormat::Text | RecallFormat::Json)
            );
            let lines_format = matches!(
                args.format,
                None | Some(RecallFormat::Json | RecallFormat::Jsonl)
            );
            if args.gold.is_none() && !lines_format {
                return Err(CliError::usage(
                    "--queries prints JSON: use --format jsonl (the default) or json",
                ));
            }
            let lines: Vec<QueryLine> = read_lines(file, "{\"id\",\"query\"}")?;
            let gold = match &args.gold {
                Some(_) if !gold_format => {
                    return Err(CliError::usage(
                        "--gold prints metrics: use --format text or json",
                    ));
                }
                Some(gold) => Some(gold_of(&lines, gold)?),
                None => None,
            };
            Some((lines, gold))
        }
        None => None,
    };
    let hook = if args.hook { Some(hook_query()?) } else { None };
    let here = global.locate()?;
    if (args.hook || args.brief) && !here.exists() {
        // A hook in a project with nothing stored yet: nothing to recall, and
        // nothing created.
        outln!("{NO_MEMORIES_YET}")?;
        return Ok(Found::Nothing);
    }
    let (recall, scope) = open_recall(global, &here).await?;
    if let Some(query) = hook {
        // What the agent injects before the prompt: admitted memories, or nothing.
        if !query.is_empty() {
            let result = recall.recall(&query, &scope, args.limit).await?;
            if result
                .records
                .iter()
                .any(|r| r.verdict == FirewallVerdict::Used)
            {
                out!("{}", escape_body(&result.to_context()))?;
            }
        }
        return Ok(Found::Nothing);
    }
    if args.brief {
        let result = recall.brief(&scope, Some(args.budget)).await?;
        match args.format.unwrap_or_default() {
            RecallFormat::Json | RecallFormat::Jsonl => print_json(&result.to_json())?,
            RecallFormat::Text | RecallFormat::Context => {
                out!("{}", escape_body(&result.to_context()))?
            }
        }
        // A session-start hook: nothing admitted is no failure of the hook.
        return Ok(Found::Nothing);
    }
    if let Some((lines, gold)) = batch {
        if let Some(gold) = gold {
            let bar = progress(lines.len() as u64, "recall");
            let mut metrics = Metrics::default();
            for (line, (gold, kind)) in lines.iter().zip(&gold) {
                let result = recall.recall(&line.query, &scope, args.limit).await?;
                metrics.add(kind, &eval::ranked_ids(&result, args.limit), gold);
                bar.inc(1);
            }
            bar.finish_and_clear();
            match args.format {
                Some(RecallFormat::Json) => print_json(&metrics_json(&metrics, args.limit))?,
                _ => out!(
                    "recall of {} queries (limit {}):\n{}",
                    lines.len(),
                    args.limit,
                    escape_body(&metrics.to_markdown())
                )?,
            }
            return Ok(Found::Nothing);
        }
        let bar = progress(lines.len() as u64, "recall");
        let mut all = Vec::new();
        for line in lines {
            let result = recall.recall(&line.query, &scope, args.limit).await?;
            // The engine's one serialiser of a result: its records.
            let results = result.to_json()["records"].take();
            bar.inc(1);
            let row = json!({ "id": line.id, "results": results });
            match args.format {
                Some(RecallFormat::Json) => all.push(row),
                _ => bar.suspend(|| print_json(&row))?,
            }
        }
        bar.finish_and_clear();
        if args.format == Some(RecallFormat::Json) {
            print_json(&all)?;
        }
        return Ok(Found::Nothing);
    }
    let query = args.query.as_deref().unwrap_or_default();
    let result = recall.recall(query, &scope, args.limit).await?;
    let admitted = result
        .records
        .iter()
        .any(|r| r.verdict == FirewallVerdict::Used);
    match args.format.unwrap_or_default() {
        RecallFormat::Context => out!("{}", escape_body(&result.to_context()))?,
        RecallFormat::Json | RecallFormat::Jsonl => print_json(&result.to_json())?,
        RecallFormat::Text => print_text(&result)?,
    }
    Ok(Found::when(!admitted))
}

fn print_text(result: &RecallResult) -> Result<(), CliError> {
    let style = Style::detect();
    if let Ranker::LexicalFallback { reason } = &result.ranker {
        eprintln!("note: ranked by words only: {}", escape(reason));
    }
    outln!("{}", escape(&result.policy.to_string()))?;
    let mut rows = Vec::new();
    for r in &result.records {
        let verdict = r.verdict.as_str();
        let painted = match r.verdict {
            FirewallVerdict::Used => style.good(verdict),
            FirewallVerdict::Quarantined | FirewallVerdict::Rejected => style.bad(verdict),
            _ => style.warn(verdict),
        };
        let name = r
            .memory
            .as_ref()
            .map(|m| escape(&m.name).into_owned())
            .unwrap_or_default();
        rows.push(vec![
            painted,
            r.id.to_string(),
            format!("{:.3}", r.score),
            escape(&r.reason.to_string()).into_owned(),
            name,
        ]);
    }
    out!("{}", table(&rows))
}
