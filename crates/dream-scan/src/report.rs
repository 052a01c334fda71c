//! What a scan reports: findings, their category and severity, and the verdict.

use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::MAX_FINDINGS;

/// The overall judgement of a text, ordered by severity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Nothing found.
    Clean,
    /// Weak signals or personal data only.
    Suspicious,
    /// Instruction-shaped content: quarantine, never follow.
    Instruction,
    /// A credential or key: redact, never store or send.
    Secret,
}

/// What a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// "Ignore previous instructions", "new instructions:", rule rewrites.
    InstructionOverride,
    /// Role or persona hijack, jailbreak personas (DAN, developer mode).
    PersonaHijack,
    /// Attempts to make the model reveal its system prompt or instructions.
    PromptExtraction,
    /// Sending data out: to URLs, addresses, markdown images or links.
    Exfiltration,
    /// Tool, shell or code execution directives.
    ToolExecution,
    /// Requests to persist instructions into memory.
    MemoryPersistence,
    /// Chat-template tokens, fake frame tags, fake end markers, fake system headers.
    DelimiterInjection,
    /// Script, event handlers and other HTML that executes when rendered; text that
    /// inline style hides from the reader.
    HtmlInjection,
    /// An encoded payload whose decoded text is itself a finding.
    EncodedPayload,
    /// Credentials, keys and tokens.
    Secret,
    /// E-mail addresses, phone numbers, payment cards (milder).
    PersonalData,
    /// JSON nested deeper than the scanner inspects (fails closed).
    DepthExceeded,
}

impl Category {
    /// Whether findings of this category can make a text an [`Verdict::Instruction`].
    pub fn is_instruction(self) -> bool {
        !matches!(self, Category::Secret | Category::PersonalData)
    }

    /// Whether its rules' phrases are the stock phrases that security writing quotes
    /// (a phrase quoted as an example is a mention, not an attack; see
    /// `rules::quoted_mention`).
    pub(crate) fn is_stock_phrase(self) -> bool {
        matches!(
            self,
            Category::InstructionOverride | Category::PersonaHijack | Category::PromptExtraction
        )
    }

    /// The serialised (snake_case) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::InstructionOverride => "instruction_override",
            Category::PersonaHijack => "persona_hijack",
            Category::PromptExtraction => "prompt_extraction",
            Category::Exfiltration => "exfiltration",
            Category::ToolExecution => "tool_execution",
            Category::MemoryPersistence => "memory_persistence",
            Category::DelimiterInjection => "delimiter_injection",
            Category::HtmlInjection => "html_injection",
            Category::EncodedPayload => "encoded_payload",
            Category::Secret => "secret",
            Category::PersonalData => "personal_data",
            Category::DepthExceeded => "depth_exceeded",
        }
    }
}

/// How strong a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth a note.
    Low,
    /// Suspicious on its own.
    Medium,
    /// Clear attack or secret.
    High,
}

impl Severity {
    /// The serialised (lowercase) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }
}

impl Verdict {
    /// The serialised (lowercase) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Clean => "clean",
            Verdict::Suspicious => "suspicious",
            Verdict::Instruction => "instruction",
            Verdict::Secret => "secret",
        }
    }

    /// The verdict a set of findings earns (see the crate documentation).
    pub fn of(findings: &[Finding]) -> Verdict {
        let mut v = Verdict::Clean;
        for f in findings {
            let this = if f.category == Category::Secret {
                Verdict::Secret
            } else if f.category.is_instruction() && f.severity == Severity::High {
                Verdict::Instruction
            } else {
                Verdict::Suspicious
            };
            v = v.max(this);
        }
        v
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing the scanner found.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Finding {
    /// What it is about.
    pub category: Category,
    /// Stable rule id, e.g. `override.en.ignore_prior` or `aws_access_key_id`.
    pub rule: &'static str,
    /// How strong it is.
    pub severity: Severity,
    /// Byte span in the original text (for [`Scanner::scan_json`](crate::Scanner::scan_json): in the string at
    /// `path`). `None` for a finding in a JSON object key (the key of the member at
    /// `path`) and for [`Category::DepthExceeded`].
    pub span: Option<Range<usize>>,
    /// JSON pointer of the string, member or container, for [`Scanner::scan_json`](crate::Scanner::scan_json).
    pub path: Option<String>,
}

/// The result of a scan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The overall judgement.
    pub verdict: Verdict,
    /// What was found: text scans in order of position, JSON scans in document order.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Whether nothing was found.
    pub fn is_clean(&self) -> bool {
        self.verdict == Verdict::Clean
    }

    /// The strongest finding's severity, if any.
    pub fn max_severity(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    pub(crate) fn from_findings(mut findings: Vec<Finding>) -> Report {
        let verdict = Verdict::of(&findings);
        if findings.len() > MAX_FINDINGS {
            // Keep the most severe, then restore document order.
            let mut indexed: Vec<(usize, Finding)> = findings.into_iter().enumerate().collect();
            indexed.sort_by_key(|(i, f)| {
                (
                    std::cmp::Reverse((Verdict::of(std::slice::from_ref(f)), f.severity)),
                    *i,
                )
            });
            indexed.truncate(MAX_FINDINGS);
            indexed.sort_by_key(|(i, _)| *i);
            findings = indexed.into_iter().map(|(_, f)| f).collect();
        }
        Report { verdict, findings }
    }
}
