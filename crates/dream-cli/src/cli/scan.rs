//! `dream scan`: the injection and secret scanner on files or standard input.
//!
//! The contract (stable; other tools depend on it):
//!
//! - `dream scan [--format text|json|jsonl] [--mode transcript|memory] [--secrets-only] [FILE...]`;
//!   standard input when no file is given (or for `-`).
//! - `--format jsonl`: every input line is `{"id": …, "text": "…"}` (blank lines are
//!   skipped); every output line is
//!   `{"id": …, "verdict": "clean|suspicious|instruction|secret", "findings": [{"category": …, "rule": …, "severity": …, "start": …, "end": …}]}`
//!   with `start`/`end` byte offsets into the UTF-8 text and `id` echoed as given.
//! - `--format json`: each file is one text; one JSON array of the same objects, one
//!   per file, `id` the file's name (`<stdin>` for standard input).
//! - `--format text` (default): each file is one text; one line per finding
//!   (`FILE:LINE:COL: severity category rule "excerpt"`, control and invisible
//!   characters escaped, secrets never shown) and a verdict line per flagged file.
//! - Exit 0 when everything is clean, 1 when anything was found, 2 on an error (an
//!   unreadable file, a malformed JSONL line: one line on stderr each; the other
//!   inputs are still scanned), 141 when standard output was closed early (the scan
//!   stops quietly), as for every `dream` command.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use dream::scan::{Finding, Report, Scanner, Verdict};
use serde::Serialize;
use serde_json::Value;

/// Arguments of `dream scan`.
#[derive(Debug, Args)]
#[command(after_help = "\
Exit codes: 0 all clean, 1 something found, 2 error (unreadable file, malformed JSONL line),
141 standard output closed early (the scan stops quietly).

Repository hygiene (CI): scan tracked files for secrets only, test fixtures excluded:
  git ls-files -z | grep -zvE '(^|/)tests/fixtures/' | xargs -0 dream scan --secrets-only
With --secrets-only the exit code is 1 only when a secret is found.")]
pub struct ScanArgs {
    /// Output format: `text` for people; `json`, one JSON array of reports, one per
    /// file (its `id` the file's name); `jsonl` for programs (input lines are then
    /// {"id": …, "text": …} objects, one report a line).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// What the text is: `transcript` (untrusted ingest; LLM chat-template markers
    /// count) or `memory` (authored memory; they do not).
    #[arg(long, value_enum, default_value_t = ScanMode::Transcript)]
    pub mode: ScanMode,
    /// Look for secrets only (keys, tokens, passwords, private keys); exit 1 only
    /// when one is found. For scanning a repository's tracked files.
    #[arg(long)]
    pub secrets_only: bool,
    /// Files to scan; standard input when none is given (or for `-`).
    pub files: Vec<PathBuf>,
}

/// Output format of `dream scan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One line per finding, for people.
    Text,
    /// One JSON array: a report per file, each file one text.
    Json,
    /// One JSON object per input line, for programs.
    Jsonl,
}

/// Scanner mode of `dream scan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScanMode {
    /// Untrusted ingest (session transcripts, fetched content).
    Transcript,
    /// Authored memory (proposed or recalled memories).
    Memory,
}

/// Runs `dream scan`.
pub fn run(args: ScanArgs) -> ExitCode {
    // The engine's own scanners, so `dream scan` answers as the gate and
    // recall would (the same mode and JSON depth).
    let scanner = match args.mode {
        ScanMode::Transcript => dream::engine::transcript_scanner(),
        ScanMode::Memory => dream::engine::memory_scanner(),
    };
    let mut run = Run {
        scanner,
        secrets_only: args.secrets_only,
        found: false,
        errors: 0,
        flagged: 0,
        sources: 0,
        reports: Vec::new(),
    };
    let mut closed = false;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let sources: Vec<Option<PathBuf>> = if args.files.is_empty() {
        vec![None]
    } else {
        args.files
            .into_iter()
            .map(|p| (p.as_os_str() != "-").then_some(p))
            .collect()
    };
    for source in sources {
        let name = match &source {
            Some(p) => escape(&p.to_string_lossy()).into_owned(),
            None => "<stdin>".to_string(),
        };
        let reader: Box<dyn Read> = match &source {
            None => Box::new(io::stdin().lock()),
            Some(path) => match std::fs::File::open(path) {
                Ok(f) => Box::new(f),
                Err(e) => {
                    run.error(&format!("cannot read {name}: {e}"));
                    continue;
                }
            },
        };
        let result = match args.format {
            Format::Text => run.text(&name, reader, &mut out),
            Format::Json => run.whole(&name, reader),
            Format::Jsonl => run.jsonl(&name, reader, &mut out),
        };
        match result {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                closed = true;
                break;
            }
            Err(e) => run.error(&format!("cannot read {name}: {e}")),
        }
    }
    let written = if args.format == Format::Json && !closed {
        serde_json::to_writer(&mut out, &run.reports)
            .map_err(io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush())
    } else {
        out.flush()
    };
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => closed = true,
        Err(e) => run.error(&format!("cannot write output: {e}")),
    }
    if closed {
        return ExitCode::from(super::EXIT_CLOSED_STDOUT);
    }
    if args.format == Format::Text && run.sources > 1 {
        eprintln!(
            "dream scan: {} sources, {} flagged",
            run.sources, run.flagged
        );
    }
    if run.errors > 0 {
        ExitCode::from(super::EXIT_ERROR)
    } else if run.found {
        ExitCode::from(super::EXIT_FOUND)
    } else {
        ExitCode::SUCCESS
    }
}

struct Run {
    scanner: Scanner,
    secrets_only: bool,
    found: bool,
    errors: usize,
    flagged: usize,
    sources: usize,
    /// With `--format json`, the report of each file so far.
    reports: Vec<Value>,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    category: &'a str,
    rule: &'a str,
    severity: &'a str,
    start: Option<usize>,
    end: Option<usize>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    id: &'a Value,
    verdict: &'a str,
    findings: Vec<JsonFinding<'a>>,
}

impl<'a> JsonReport<'a> {
    fn new(id: &'a Value, report: &'a Report) -> Self {
        JsonReport {
            id,
            verdict: report.verdict.as_str(),
            findings: report
                .findings
                .iter()
                .map(|f| JsonFinding {
                    category: f.category.as_str(),
                    rule: f.rule,
                    severity: f.severity.as_str(),
                    start: f.span.as_ref().map(|s| s.start),
                    end: f.span.as_ref().map(|s| s.end),
                })
                .collect(),
        }
    }
}

impl Run {
    fn error(&mut self, message: &str) {
        self.errors += 1;
        eprintln!("error: {}", escape(message));
    }

    fn scan(&mut self, text: &str) -> Report {
        let report = if self.secrets_only {
            self.scanner.scan_secrets(text)
        } else {
            self.scanner.scan(text)
        };
        if report.verdict != Verdict::Clean {
            self.found = true;
        }
        report
    }

    fn text(
        &mut self,
        name: &str,
        mut reader: Box<dyn Read>,
        out: &mut impl Write,
    ) -> io::Result<()> {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes)?;
        // Invalid UTF-8 (binary files) is read with replacement characters.
        let text = String::from_utf8_lossy(&bytes);
        self.sources += 1;
        let report = self.scan(&text);
        if report.is_clean() {
            return Ok(());
        }
        self.flagged += 1;
        let lines = LineIndex::new(&text);
        for f in &report.findings {
            let (line, col) = f
                .span
                .as_ref()
                .map_or((1, 1), |s| lines.position(&text, s.start));
            writeln!(
                out,
                "{name}:{line}:{col}: {} {} {} {}",
                f.severity,
                f.category,
                f.rule,
                excerpt(&text, f)
            )?;
        }
        writeln!(out, "{name}: {}", report.verdict)
    }

    /// Scans a whole file as one text and keeps its report for the JSON array.
    fn whole(&mut self, name: &str, mut reader: Box<dyn Read>) -> io::Result<()> {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes)?;
        let text = String::from_utf8_lossy(&bytes);
        self.sources += 1;
        let report = self.scan(&text);
        if !report.is_clean() {
            self.flagged += 1;
        }
        let id = Value::String(name.to_owned());
        let row = serde_json::to_value(JsonReport::new(&id, &report)).map_err(io::Error::from)?;
        self.reports.push(row);
        Ok(())
    }

    fn jsonl(&mut self, name: &str, reader: Box<dyn Read>, out: &mut impl Write) -> io::Result<()> {
        self.sources += 1;
        let mut reader = BufReader::new(reader);
        let mut line = Vec::new();
        let mut number = 0usize;
        let mut flagged = false;
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            number += 1;
            let Ok(text) = std::str::from_utf8(&line) else {
                self.error(&format!("{name}:{number}: line is not UTF-8"));
                continue;
            };
            if text.trim().is_empty() {
                continue;
            }
            let value: Value = match serde_json::from_str(text) {
                Ok(v) => v,
                Err(e) => {
                    self.error(&format!(
                        "{name}:{number}: malformed JSON line ({:?} error at column {})",
                        e.classify(),
                        e.column()
                    ));
                    continue;
                }
            };
            let Some(body) = value.get("text").and_then(Value::as_str) else {
                self.error(&format!("{name}:{number}: the line has no \"text\" string"));
                continue;
            };
            let report = self.scan(body);
            flagged |= !report.is_clean();
            let row = JsonReport::new(value.get("id").unwrap_or(&Value::Null), &report);
            // `io::Error::from` keeps a write error's kind (a broken pipe stays one).
            serde_json::to_writer(&mut *out, &row).map_err(io::Error::from)?;
            out.write_all(b"\n")?;
        }
        if flagged {
            self.flagged += 1;
        }
        Ok(())
    }
}

/// Byte offsets of line starts, for `LINE:COL` positions.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(line_starts_after_newlines(text));
        LineIndex { starts }
    }

    /// 1-based line and column (in characters) of byte offset `at`.
    fn position(&self, text: &str, at: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|&s| s <= at);
        let start = self.starts[line - 1];
        let col = text.get(start..at).map_or(1, |s| s.chars().count() + 1);
        (line, col)
    }
}

fn line_starts_after_newlines(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.bytes()
        .enumerate()
        .filter(|&(_, b)| b == b'\n')
        .map(|(i, _)| i + 1)
}

/// The finding's text, escaped and shortened; never the text of a secret.
fn excerpt(text: &str, f: &Finding) -> String {
    if f.category == dream::scan::Category::Secret {
        return "[secret not shown]".to_string();
    }
    let Some(span) = &f.span else {
        return String::new();
    };
    let Some(s) = text.get(span.clone()) else {
        return String::new();
    };
    let mut short: String = s.chars().take(80).collect();
    if short.len() < s.len() {
        short.push('…');
    }
    format!("\"{}\"", escape(&short))
}

/// Escapes control characters, line breaks and invisible characters (the one
/// definition, [`dream::core::display::is_invisible`]), so scanned text can
/// neither drive the terminal nor hide in it.
fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    dream::core::display::escape_for_display(text, false)
}
