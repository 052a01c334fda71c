//! `dream recall`: ranked memories through the firewall, one verdict each.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use dream_core::SystemClock;
use dream_engine::recall::{PickerOptions, Recall, RecallOptions, RecallResult, Verdict};
use serde::Deserialize;
use serde_json::{Value, json};

use super::context::Global;
use super::output::{Style, escape, escape_body, table};
use super::{CliError, Found, Outcome, print_json, progress, read_input};

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
    #[arg(required_unless_present_any = ["queries", "brief"], conflicts_with_all = ["queries", "brief"])]
    pub query: Option<String>,
    /// JSONL of {"id","query"} (or - for stdin); prints JSONL of {"id","results"}
    /// (with --format json, one array of them; text and context are refused).
    #[arg(long, value_name = "FILE")]
    pub queries: Option<PathBuf>,
    /// Candidates ranked before the firewall judges them (1 to 100).
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// Output format: text (the default), json, jsonl or context.
    #[arg(long, value_enum)]
    pub format: Option<RecallFormat>,
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
}

/// A `Recall` over the store with the seal key and the configured picker, and the scope.
pub async fn open_recall(global: &Global) -> Result<(Recall, dream_core::Scope), CliError> {
    let config = global.file_config()?;
    let store = global.open_store(&config, false).await?;
    let scope = global.scope(&config)?;
    // The persisted index: the CLI has a seal key, or an encrypted store, so it is
    // authenticated either way; recall reads every memory it shows again, so a
    // hand edit that keeps its version is judged on its own bytes.
    let mut options = RecallOptions {
        seal: global.seal_key(&config)?,
        persist: true,
        ..RecallOptions::default()
    };
    if let Some(model) = global.model(&config)? {
        options.picker = Some(PickerOptions::new(model));
    }
    Ok((Recall::new(store, Arc::new(SystemClock), options), scope))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryLine {
    id: Value,
    query: String,
}

/// Runs recall.
pub async fn recall(global: &Global, args: RecallArgs) -> Outcome {
    if args.query.as_deref().is_some_and(|q| q.trim().is_empty()) {
        return Err(CliError::usage(
            "the query is blank: say what to recall, or use --brief",
        ));
    }
    let (recall, scope) = open_recall(global).await?;
    if args.brief {
        let result = recall.brief(&scope, Some(args.budget)).await?;
        let admitted = result.records.iter().any(|r| r.verdict == Verdict::Used);
        match args.format.unwrap_or_default() {
            RecallFormat::Json | RecallFormat::Jsonl => print_json(&to_json(&result))?,
            RecallFormat::Text | RecallFormat::Context => {
                out!("{}", escape_body(&result.to_context()))?
            }
        }
        return Ok(Found::when(!admitted));
    }
    if let Some(file) = &args.queries {
        let format = args.format.unwrap_or(RecallFormat::Jsonl);
        if matches!(format, RecallFormat::Text | RecallFormat::Context) {
            return Err(CliError::usage(
                "--queries prints JSON: use --format jsonl (the default) or json",
            ));
        }
        let text = read_input(Some(file))?;
        let mut lines = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let parsed: QueryLine = serde_json::from_str(line).map_err(|e| {
                CliError::usage(format!(
                    "line {}: expected {{\"id\",\"query\"}}: {e}",
                    i + 1
                ))
            })?;
            lines.push(parsed);
        }
        let bar = progress(lines.len() as u64, "recall");
        let mut all = Vec::new();
        for line in lines {
            let result = recall.recall(&line.query, &scope, args.limit).await?;
            let results: Vec<Value> = result
                .records
                .iter()
                .map(|r| json!({ "id": r.id.as_str(), "score": r.score, "verdict": r.verdict.as_str() }))
                .collect();
            bar.inc(1);
            let row = json!({ "id": line.id, "results": results });
            match format {
                RecallFormat::Json => all.push(row),
                _ => bar.suspend(|| print_json(&row))?,
            }
        }
        bar.finish_and_clear();
        if format == RecallFormat::Json {
            print_json(&all)?;
        }
        return Ok(Found::Nothing);
    }
    let query = args.query.as_deref().unwrap_or_default();
    let result = recall.recall(query, &scope, args.limit).await?;
    let admitted = result.records.iter().any(|r| r.verdict == Verdict::Used);
    match args.format.unwrap_or_default() {
        RecallFormat::Context => out!("{}", escape_body(&result.to_context()))?,
        RecallFormat::Json | RecallFormat::Jsonl => print_json(&to_json(&result))?,
        RecallFormat::Text => print_text(&result)?,
    }
    Ok(Found::when(!admitted))
}

/// The result as JSON for programs.
pub fn to_json(result: &RecallResult) -> Value {
    json!({
        "policy": { "verdict": result.policy.verdict.as_str(), "reason": result.policy.reason.to_string(),
                    "diagnosis": result.policy.diagnosis },
        "retried": result.retried,
        "records": result.records.iter().map(|r| json!({
            "id": r.id.as_str(),
            "score": r.score,
            "verdict": r.verdict.as_str(),
            "reason": r.reason.to_string(),
            "name": r.memory.as_ref().map(|m| m.name.clone()),
            "kind": r.memory.as_ref().map(|m| m.kind.as_str()),
        })).collect::<Vec<_>>(),
    })
}

fn print_text(result: &RecallResult) -> Result<(), CliError> {
    let style = Style::detect();
    outln!("{}", escape(&result.policy.to_string()))?;
    let mut rows = Vec::new();
    for r in &result.records {
        let verdict = r.verdict.as_str();
        let painted = match r.verdict {
            Verdict::Used => style.good(verdict),
            Verdict::Quarantined | Verdict::Rejected => style.bad(verdict),
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
