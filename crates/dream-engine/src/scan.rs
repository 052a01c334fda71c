//! The engine's use of `dream-scan`: one scanner per mode, built once per handle
//! on first use (a command that reads only — `list`, `show`, `stats` — never
//! pays for building one).

use std::borrow::Cow;
use std::sync::OnceLock;

use dream_core::ModelError;
use dream_scan::{Category, Finding, Mode, Report, Scanner, Verdict};
use serde_json::Value;

use crate::records::FindingInfo;

/// How deep the memory scanner follows a memory's JSON: the metadata limit the gate
/// enforces ([`crate::limits::METADATA_DEPTH`]), plus the one object (name,
/// content, tags, metadata…) that holds it, so metadata the gate accepts is never
/// refused by the scanner's depth cap. The one scan depth: the write gate,
/// recall's firewall and the MCP server all scan with [`memory_scanner`].
pub const MEMORY_JSON_DEPTH: usize = crate::options::limits::METADATA_DEPTH + 1;

/// The scanner every reader and writer of memories uses: [`Mode::Memory`] to
/// [`MEMORY_JSON_DEPTH`]. Building one compiles the rule tables: build it once
/// and keep it.
pub fn memory_scanner() -> Scanner {
    Scanner::new(Mode::Memory).with_max_json_depth(MEMORY_JSON_DEPTH)
}

/// The scanner of untrusted ingest — session transcripts, a model's or a
/// provider's text — whose secrets are redacted before anything is stored,
/// logged or sent: [`Mode::Transcript`]. The one definition every front end
/// redacts such text with.
pub fn transcript_scanner() -> Scanner {
    Scanner::new(Mode::Transcript)
}

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
    /// The worst verdict (ordered Clean < Suspicious < Instruction < Secret).
    pub verdict: Verdict,
    /// The findings, without flagged text.
    pub findings: Vec<FindingInfo>,
}

impl Scan {
    /// Whether the write gate must keep it out of `memories`.
    pub fn blocks(&self) -> bool {
        self.verdict >= Verdict::Instruction || self.findings.iter().any(|f| f.secret)
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

fn is_secret(finding: &Finding) -> bool {
    matches!(finding.category, Category::Secret)
}

fn convert(report: Report) -> Scan {
    Scan {
        verdict: report.verdict,
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
        self.transcript.get_or_init(transcript_scanner)
    }

    fn memory_scanner(&self) -> &Scanner {
        self.memory.get_or_init(memory_scanner)
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
        self.memory_scanner().redact_json(value)
    }
}

/// A model's error with the secret-shaped parts of its messages redacted as session
/// text is (a provider's error body may echo a key): what the engine logs, audits,
/// emits and returns. Applies to every model, whatever redaction it does itself.
pub(crate) fn redact_model_error(error: ModelError) -> ModelError {
    let redact = |text: String| match transcript_scanner().redact(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(redacted) => redacted,
    };
    match error {
        ModelError::Provider { status, message } => ModelError::Provider {
            status,
            message: redact(message),
        },
        ModelError::Transport(message) => ModelError::Transport(redact(message)),
        ModelError::InvalidResponse(message) => ModelError::InvalidResponse(redact(message)),
        ModelError::InvalidRequest(message) => ModelError::InvalidRequest(redact(message)),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake GitHub token, assembled at run time so this source holds no secret shape.
    fn token() -> String {
        ["ghp", "_", "R8xK2mQ9vL4tN7wB3", "cY6hJ1dF5gS0pZ8aE2u"].concat()
    }

    #[test]
    fn a_provider_error_echoing_a_secret_is_redacted() {
        let echoed = ModelError::Provider {
            status: 400,
            message: format!("credential {} is not valid here", token()),
        };
        let shown = redact_model_error(echoed).to_string();
        assert!(!shown.contains(&token()[4..]), "{shown}");
        assert!(shown.contains("HTTP 400: credential [REDACTED:"), "{shown}");
        let transport = redact_model_error(ModelError::Transport(format!("reset ({})", token())));
        assert!(!transport.to_string().contains(&token()[4..]));
        // Nothing secret-shaped: the message is kept as it was.
        let plain = ModelError::Provider {
            status: 400,
            message: "unknown field `temperature`".to_owned(),
        };
        assert_eq!(redact_model_error(plain.clone()), plain);
    }
}
