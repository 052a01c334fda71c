//! The engine's use of `dream-scan`: one scanner per mode, built once per handle
//! on first use (a command that reads only — `list`, `show`, `stats` — never
//! pays for building one).

use std::borrow::Cow;
use std::sync::OnceLock;

use dream_scan::{Category, Finding, Mode, Report, Scanner, Verdict};
use serde_json::{Map, Value};

use crate::records::FindingInfo;

/// The scanners a [`crate::Dream`] uses, each built when first needed.
#[derive(Default)]
pub(crate) struct Scanners {
    transcript: OnceLock<Scanner>,
    memory: OnceLock<Scanner>,
}

impl std::fmt::Debug for Scanners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scanners")
    }
}

/// What the scanner said about one piece of text or JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scan {
    /// The worst verdict.
    pub verdict: Level,
    /// The findings, without flagged text.
    pub findings: Vec<FindingInfo>,
}

/// The scanner's verdict, ordered Clean < Suspicious < Instruction < Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    Clean,
    Suspicious,
    Instruction,
    Secret,
}

impl Scan {
    /// Whether the write gate must keep it out of `memories`.
    pub fn blocks(&self) -> bool {
        self.verdict >= Level::Instruction || self.findings.iter().any(|f| f.secret)
    }

    /// The rule ids that fired, deduplicated, in order.
    pub fn rules(&self) -> Vec<String> {
        let mut rules: Vec<String> = Vec::new();
        for f in &self.findings {
            if !rules.contains(&f.rule) {
                rules.push(f.rule.clone());
            }
        }
        rules
    }

    /// The rule ids of secret findings.
    pub fn secret_rules(&self) -> Vec<String> {
        let mut rules: Vec<String> = Vec::new();
        for f in self.findings.iter().filter(|f| f.secret) {
            if !rules.contains(&f.rule) {
                rules.push(f.rule.clone());
            }
        }
        rules
    }
}

fn level(verdict: &Verdict) -> Level {
    match verdict {
        Verdict::Clean => Level::Clean,
        Verdict::Suspicious => Level::Suspicious,
        Verdict::Instruction => Level::Instruction,
        Verdict::Secret => Level::Secret,
    }
}

fn is_secret(finding: &Finding) -> bool {
    matches!(finding.category, Category::Secret)
}

fn convert(report: Report) -> Scan {
    Scan {
        verdict: level(&report.verdict),
        findings: report
            .findings
            .iter()
            .map(|f| FindingInfo {
                category: f.category.as_str().to_owned(),
                rule: f.rule.to_owned(),
                severity: f.severity.as_str().to_owned(),
                secret: is_secret(f),
            })
            .collect(),
    }
}

impl Scanners {
    fn transcript_scanner(&self) -> &Scanner {
        self.transcript
            .get_or_init(|| Scanner::new(Mode::Transcript))
    }

    fn memory_scanner(&self) -> &Scanner {
        self.memory.get_or_init(|| Scanner::new(Mode::Memory))
    }

    /// Scans transcript text.
    pub fn transcript(&self, text: &str) -> Scan {
        convert(self.transcript_scanner().scan(text))
    }

    /// Redacts the secrets of transcript text.
    pub fn redact_transcript<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.transcript_scanner().redact(text)
    }

    /// Scans every string and key of a proposed memory's JSON, at every depth.
    pub fn memory_json(&self, value: &Value) -> Scan {
        convert(self.memory_scanner().scan_json(value))
    }

    /// Redacts the secrets of memory text.
    pub fn redact_memory<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.memory_scanner().redact(text)
    }

    /// Redacts every string and key of a JSON value, at every depth, including
    /// values the scanner judges secret by their key (`"password": "…"`).
    pub fn redact_json(&self, value: &Value) -> Value {
        let mut value = value.clone();
        let report = self.memory_scanner().scan_json(&value);
        for finding in report.findings.iter().filter(|f| is_secret(f)) {
            let Some(path) = finding.path.as_deref() else {
                continue;
            };
            if let Some(slot @ Value::String(_)) = value.pointer_mut(path) {
                *slot = Value::String(format!("[REDACTED:{}]", finding.rule));
            }
        }
        self.redact_strings(&value)
    }

    fn redact_strings(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.redact_memory(s).into_owned()),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.redact_strings(v)).collect())
            }
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    out.insert(self.redact_memory(k).into_owned(), self.redact_strings(v));
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }
}
