//! The Markdown codec: a `---` frontmatter block, then the body, readable by a person.
//!
//! Rules (the first seed's, with its gaps closed):
//! - each frontmatter line is `key: value`, split on the first colon only;
//! - blank lines and `#` comment lines are ignored; unknown keys are ignored;
//!   a key given twice is an error;
//! - a scalar is quoted (as a JSON string) when it is empty, contains `:` `"` `'`
//!   `#` or a control character, starts with `-`, or has surrounding white space;
//! - single-line fields (name, description, tags) have their line breaks collapsed
//!   into spaces, so no value can ever start a new line and inject a key;
//! - lists and metadata are one-line JSON;
//! - the body is everything after the closing `---` line, kept byte for byte, so a
//!   body holding `---` lines or a fake frontmatter block round-trips exactly.
//!
//! Malformed input is a [`CodecError`] naming the line, never a panic.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::id::{MemoryId, Scope, SessionId};
use crate::model::{Memory, MemoryKind, MemoryStatus, Role, single_line};

/// Why a Markdown memory could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The text does not open with a `---` line.
    #[error("line 1: expected the opening `---` of the frontmatter")]
    MissingOpeningFence,
    /// No closing `---` line was found.
    #[error("the frontmatter opened on line 1 is never closed by a `---` line")]
    Unterminated,
    /// A frontmatter line is not `key: value`.
    #[error("line {line}: {reason}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A key appears twice.
    #[error("line {line}: duplicate key `{key}`")]
    DuplicateKey {
        /// 1-based line number of the second occurrence.
        line: usize,
        /// The repeated key.
        key: String,
    },
    /// A value does not parse as its field's type.
    #[error("line {line}: invalid value for `{key}`: {reason}")]
    InvalidValue {
        /// 1-based line number.
        line: usize,
        /// The field.
        key: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A required key is missing.
    #[error("missing required key `{0}`")]
    MissingKey(&'static str),
}

/// Renders a memory as Markdown. Single-line fields are collapsed first.
pub fn render_memory(memory: &Memory) -> String {
    let mut out = String::with_capacity(memory.content.len() + 512);
    out.push_str("---\n");
    let mut line = |key: &str, value: &str| {
        out.push_str(key);
        out.push_str(": ");
        out.push_str(value);
        out.push('\n');
    };
    let time = |t: &DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::AutoSi, true);

    line("id", memory.id.as_str());
    line("name", &scalar(&single_line(&memory.name)));
    line("description", &scalar(&single_line(&memory.description)));
    line("kind", memory.kind.as_str());
    line("scope", memory.scope.as_str());
    line("status", memory.status.as_str());
    line("created_at", &time(&memory.created_at));
    line("updated_at", &time(&memory.updated_at));
    if let Some(expires) = &memory.expires_at {
        line("expires_at", &time(expires));
    }
    line("confidence", &memory.confidence.to_string());
    line("pinned", if memory.pinned { "true" } else { "false" });
    let tags: Vec<String> = memory.tags.iter().map(|t| single_line(t)).collect();
    line("tags", &json(&tags));
    line("supersedes", &json(&memory.supersedes));
    line("sources", &json(&memory.sources));
    line("evidence", &json(&memory.evidence));
    line("metadata", &json(&memory.metadata));
    out.push_str("---\n");
    out.push_str(&memory.content);
    out
}

/// One line of JSON. Strings, ids and JSON values always serialize. The Unicode
/// line breaks JSON allows raw inside strings (U+0085, U+2028, U+2029) are
/// escaped too, so no reader that honours them sees a new line.
fn json<T: serde::Serialize>(value: &T) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    if !text.contains(['\u{85}', '\u{2028}', '\u{2029}']) {
        return text;
    }
    text.replace('\u{85}', "\\u0085")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// A scalar as written in frontmatter: raw when unambiguous, else a JSON string.
fn scalar(value: &str) -> String {
    let needs_quotes = value.is_empty()
        || value.starts_with('-')
        || value.starts_with(char::is_whitespace)
        || value.ends_with(char::is_whitespace)
        || value
            .chars()
            .any(|c| matches!(c, ':' | '"' | '\'' | '#') || c.is_control());
    if needs_quotes {
        serde_json::to_string(value).unwrap_or_default()
    } else {
        value.to_owned()
    }
}

/// Parses a Markdown memory.
pub fn parse_memory(text: &str) -> Result<Memory, CodecError> {
    let (front, body) = split_frontmatter(text)?;
    let mut fields = Fields::default();
    for (index, raw) in front {
        let line = index + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed = raw.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((key, value)) = raw.split_once(':') else {
            return Err(CodecError::Malformed {
                line,
                reason: "expected `key: value`",
            });
        };
        let key = key.trim();
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
            return Err(CodecError::Malformed {
                line,
                reason: "keys are lowercase letters and `_`",
            });
        }
        fields.set(line, key, value.trim_matches([' ', '\t']))?;
    }
    fields.into_memory(body)
}

/// Frontmatter lines with their 1-based line numbers, and the body.
type Split<'a> = (Vec<(usize, &'a str)>, &'a str);

/// Splits off the frontmatter lines (numbered from 1 = the opening fence) and the body.
fn split_frontmatter(text: &str) -> Result<Split<'_>, CodecError> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(CodecError::MissingOpeningFence)?;
    let mut lines = Vec::new();
    let mut offset = 0;
    let mut index = 1;
    while offset < rest.len() || offset == rest.len() {
        let end = rest[offset..].find('\n').map(|i| offset + i);
        let line = &rest[offset..end.unwrap_or(rest.len())];
        if line.strip_suffix('\r').unwrap_or(line) == "---" {
            let body = match end {
                Some(end) => &rest[end + 1..],
                None => "",
            };
            return Ok((lines, body));
        }
        lines.push((index, line));
        index += 1;
        match end {
            Some(end) => offset = end + 1,
            None => break,
        }
    }
    Err(CodecError::Unterminated)
}

#[derive(Default)]
struct Fields {
    id: Option<MemoryId>,
    name: Option<String>,
    description: Option<String>,
    kind: Option<MemoryKind>,
    scope: Option<Scope>,
    status: Option<MemoryStatus>,
    created_at: Option<DateTime<Utc>>,
    updated_at: Option<DateTime<Utc>>,
    expires_at: Option<DateTime<Utc>>,
    confidence: Option<f64>,
    pinned: Option<bool>,
    tags: Option<Vec<String>>,
    supersedes: Option<Vec<MemoryId>>,
    sources: Option<Vec<SessionId>>,
    evidence: Option<Vec<Role>>,
    metadata: Option<Map<String, Value>>,
}

fn put<T>(slot: &mut Option<T>, line: usize, key: &str, value: T) -> Result<(), CodecError> {
    if slot.is_some() {
        return Err(CodecError::DuplicateKey {
            line,
            key: key.to_owned(),
        });
    }
    *slot = Some(value);
    Ok(())
}

fn invalid(line: usize, key: &'static str, reason: impl ToString) -> CodecError {
    CodecError::InvalidValue {
        line,
        key,
        reason: reason.to_string(),
    }
}

/// A scalar value: a JSON string when quoted, else the raw text.
fn unquote(line: usize, key: &'static str, value: &str) -> Result<String, CodecError> {
    if value.starts_with('"') {
        serde_json::from_str::<String>(value).map_err(|e| invalid(line, key, e))
    } else {
        Ok(value.to_owned())
    }
}

fn from_json<T: DeserializeOwned>(
    line: usize,
    key: &'static str,
    value: &str,
) -> Result<T, CodecError> {
    serde_json::from_str(value).map_err(|e| invalid(line, key, e))
}

fn time(line: usize, key: &'static str, value: &str) -> Result<DateTime<Utc>, CodecError> {
    // chrono's `FromStr` reads every year `to_rfc3339_opts` writes, including
    // years outside 0000–9999 (a fuzz finding: strict RFC 3339 refused them, so a
    // rendered memory could not be read back).
    unquote(line, key, value)?
        .parse::<DateTime<Utc>>()
        .map_err(|e| invalid(line, key, e))
}

impl Fields {
    fn set(&mut self, line: usize, key: &str, value: &str) -> Result<(), CodecError> {
        match key {
            "id" => {
                let id = MemoryId::new(unquote(line, "id", value)?)
                    .map_err(|e| invalid(line, "id", e))?;
                put(&mut self.id, line, key, id)
            }
            "name" => put(&mut self.name, line, key, unquote(line, "name", value)?),
            "description" => put(
                &mut self.description,
                line,
                key,
                unquote(line, "description", value)?,
            ),
            "kind" => {
                let kind = MemoryKind::parse(&unquote(line, "kind", value)?).ok_or_else(|| {
                    invalid(
                        line,
                        "kind",
                        "expected user, feedback, project or reference",
                    )
                })?;
                put(&mut self.kind, line, key, kind)
            }
            "scope" => {
                let scope = Scope::new(unquote(line, "scope", value)?)
                    .map_err(|e| invalid(line, "scope", e))?;
                put(&mut self.scope, line, key, scope)
            }
            "status" => {
                let status =
                    MemoryStatus::parse(&unquote(line, "status", value)?).ok_or_else(|| {
                        invalid(
                            line,
                            "status",
                            "expected active, superseded, revoked, expired or unconfirmed",
                        )
                    })?;
                put(&mut self.status, line, key, status)
            }
            "created_at" => put(
                &mut self.created_at,
                line,
                key,
                time(line, "created_at", value)?,
            ),
            "updated_at" => put(
                &mut self.updated_at,
                line,
                key,
                time(line, "updated_at", value)?,
            ),
            "expires_at" => put(
                &mut self.expires_at,
                line,
                key,
                time(line, "expires_at", value)?,
            ),
            "confidence" => {
                let c: f64 = unquote(line, "confidence", value)?
                    .parse()
                    .map_err(|e| invalid(line, "confidence", e))?;
                if !(0.0..=1.0).contains(&c) {
                    return Err(invalid(line, "confidence", "must be between 0 and 1"));
                }
                put(&mut self.confidence, line, key, c)
            }
            "pinned" => {
                let pinned = match unquote(line, "pinned", value)?.as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(invalid(line, "pinned", "expected true or false")),
                };
                put(&mut self.pinned, line, key, pinned)
            }
            "tags" => put(&mut self.tags, line, key, from_json(line, "tags", value)?),
            "supersedes" => put(
                &mut self.supersedes,
                line,
                key,
                from_json(line, "supersedes", value)?,
            ),
            "sources" => put(
                &mut self.sources,
                line,
                key,
                from_json(line, "sources", value)?,
            ),
            "evidence" => put(
                &mut self.evidence,
                line,
                key,
                from_json(line, "evidence", value)?,
            ),
            "metadata" => put(
                &mut self.metadata,
                line,
                key,
                from_json(line, "metadata", value)?,
            ),
            _ => Ok(()),
        }
    }

    fn into_memory(self, body: &str) -> Result<Memory, CodecError> {
        Ok(Memory {
            id: self.id.ok_or(CodecError::MissingKey("id"))?,
            // A hand-written quoted value may hold escaped line breaks: single-line
            // fields are collapsed on the way in as on the way out.
            name: single_line(&self.name.ok_or(CodecError::MissingKey("name"))?),
            description: single_line(
                &self
                    .description
                    .ok_or(CodecError::MissingKey("description"))?,
            ),
            kind: self.kind.ok_or(CodecError::MissingKey("kind"))?,
            content: body.to_owned(),
            tags: self
                .tags
                .unwrap_or_default()
                .iter()
                .map(|t| single_line(t))
                .collect(),
            scope: self.scope.unwrap_or_default(),
            status: self.status.unwrap_or_default(),
            supersedes: self.supersedes.unwrap_or_default(),
            expires_at: self.expires_at,
            created_at: self
                .created_at
                .ok_or(CodecError::MissingKey("created_at"))?,
            updated_at: self
                .updated_at
                .ok_or(CodecError::MissingKey("updated_at"))?,
            sources: self.sources.unwrap_or_default(),
            evidence: self.evidence.unwrap_or_default(),
            confidence: self
                .confidence
                .ok_or(CodecError::MissingKey("confidence"))?,
            pinned: self.pinned.unwrap_or(false),
            metadata: self.metadata.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Memory {
        let now = DateTime::from_timestamp(1_780_000_000, 123_000_000).unwrap();
        Memory::new(
            MemoryId::new("m1").unwrap(),
            MemoryKind::Project,
            "Vitest",
            "test runner",
            "We use Vitest.\n",
            now,
        )
    }

    #[test]
    fn renders_readable_markdown() {
        let text = render_memory(&sample());
        assert!(text.starts_with("---\nid: m1\nname: Vitest\n"), "{text}");
        assert!(text.ends_with("---\nWe use Vitest.\n"));
        assert_eq!(parse_memory(&text).unwrap(), sample());
    }

    #[test]
    fn colon_and_newline_in_name_cannot_inject_a_key() {
        let mut m = sample();
        m.name = "evil\nextraKey: injected\nid: other".into();
        m.description = "a: b # c".into();
        let text = render_memory(&m);
        let back = parse_memory(&text).unwrap();
        assert_eq!(back.id.as_str(), "m1");
        assert_eq!(back.name, "evil extraKey: injected id: other");
        assert_eq!(back.description, "a: b # c");
        assert_eq!(text.lines().filter(|l| l.starts_with("id:")).count(), 1);
    }

    #[test]
    fn body_with_fake_frontmatter_round_trips() {
        let mut m = sample();
        m.content = "---\nid: evil\nname: x\n---\nbody\n---\n".into();
        assert_eq!(parse_memory(&render_memory(&m)).unwrap(), m);
    }

    #[test]
    fn comments_blank_lines_and_unknown_keys_are_ignored() {
        let text = render_memory(&sample()).replacen(
            "name:",
            "# a comment: here\n\nfuture_key: 1\nname:",
            1,
        );
        assert_eq!(parse_memory(&text).unwrap(), sample());
    }

    #[test]
    fn first_colon_only() {
        let text = render_memory(&sample()).replacen("name: Vitest", "name: a:b:c", 1);
        assert_eq!(parse_memory(&text).unwrap().name, "a:b:c");
    }

    #[test]
    fn malformed_input_names_the_line() {
        assert_eq!(
            parse_memory("no fence"),
            Err(CodecError::MissingOpeningFence)
        );
        assert_eq!(parse_memory("---\nid: a\n"), Err(CodecError::Unterminated));
        assert_eq!(
            parse_memory("---\nid: a\nnonsense\n---\n"),
            Err(CodecError::Malformed {
                line: 3,
                reason: "expected `key: value`"
            })
        );
        let dup = render_memory(&sample()).replacen("name: Vitest", "name: Vitest\nid: m2", 1);
        assert!(matches!(
            parse_memory(&dup),
            Err(CodecError::DuplicateKey { line: 4, .. })
        ));
        let bad_id = render_memory(&sample()).replacen("id: m1", "id: ../../etc/passwd", 1);
        assert!(matches!(
            parse_memory(&bad_id),
            Err(CodecError::InvalidValue {
                line: 2,
                key: "id",
                ..
            })
        ));
        let bad_tags = render_memory(&sample()).replacen("tags: []", "tags: [a, b]", 1);
        assert!(matches!(
            parse_memory(&bad_tags),
            Err(CodecError::InvalidValue { key: "tags", .. })
        ));
        let no_kind = render_memory(&sample()).replacen("kind: project\n", "", 1);
        assert_eq!(parse_memory(&no_kind), Err(CodecError::MissingKey("kind")));
        let bad_quote =
            render_memory(&sample()).replacen("name: Vitest", "name: \"unterminated", 1);
        assert!(matches!(
            parse_memory(&bad_quote),
            Err(CodecError::InvalidValue {
                line: 3,
                key: "name",
                ..
            })
        ));
    }

    #[test]
    fn unicode_line_breaks_never_start_a_line() {
        let mut m = sample();
        m.metadata.insert(
            "note".into(),
            Value::String("a\u{2028}id: evil\u{85}kind: user\u{2029}".into()),
        );
        let text = render_memory(&m);
        assert!(
            !text.contains(['\u{85}', '\u{2028}', '\u{2029}']),
            "{text:?}"
        );
        assert_eq!(parse_memory(&text).unwrap(), m);
        let crafted = render_memory(&sample()).replacen(
            "name: Vitest",
            "name: \"x\\u0085id: evil\\u2028y\"",
            1,
        );
        let parsed = parse_memory(&crafted).unwrap();
        assert_eq!(parsed.name, "x id: evil y");
        assert_eq!(parse_memory(&render_memory(&parsed)).unwrap(), parsed);
    }

    #[test]
    fn years_outside_four_digits_round_trip() {
        for text in [
            "0000-01-01T00:00:00+01:00",
            "9999-12-31T23:00:00-02:00",
            "+36812-02-20T00:36:15Z",
        ] {
            let mut m = sample();
            m.created_at = text.parse().unwrap();
            assert_eq!(parse_memory(&render_memory(&m)).unwrap(), m, "{text}");
        }
        let line = render_memory(&sample())
            .lines()
            .find(|l| l.starts_with("created_at:"))
            .unwrap()
            .to_owned();
        let hand =
            render_memory(&sample()).replacen(&line, "created_at: 0000-01-01T00:00:00+01:00", 1);
        let parsed = parse_memory(&hand).unwrap();
        assert_eq!(parse_memory(&render_memory(&parsed)).unwrap(), parsed);
    }

    #[test]
    fn metadata_floats_round_trip_exactly() {
        let mut m = sample();
        for (i, f) in [
            -5.000000000000001e-6,
            0.1,
            1e300,
            2.2250738585072014e-308,
            123456.789e-3,
        ]
        .into_iter()
        .enumerate()
        {
            m.metadata.insert(format!("f{i}"), serde_json::json!(f));
        }
        let once = parse_memory(&render_memory(&m)).unwrap();
        assert_eq!(once, m);
        assert_eq!(render_memory(&once), render_memory(&m));
    }

    #[test]
    fn crlf_hand_edits_parse() {
        let text = render_memory(&sample()).replace('\n', "\r\n");
        let back = parse_memory(&text).unwrap();
        assert_eq!(back.name, "Vitest");
        assert_eq!(back.content, "We use Vitest.\r\n");
    }

    fn tricky_string() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "---",
            "\n",
            "\r\n",
            ":",
            "\"",
            "'",
            "#",
            "-",
            " ",
            "\t",
            "\u{200B}",
            "\u{FEFF}",
            "\u{2028}",
            "\u{85}",
            "<session_1>",
            "name: x",
            "\\",
            "[",
            "{",
            "é",
            "日本",
            "\0",
        ]);
        prop::collection::vec(
            prop_oneof![pieces.prop_map(String::from), any::<String>()],
            0..8,
        )
        .prop_map(|parts| parts.concat())
    }

    fn id_string() -> impl Strategy<Value = String> {
        "[A-Za-z0-9][A-Za-z0-9_-]{0,20}"
    }

    fn time_strategy() -> impl Strategy<Value = DateTime<Utc>> {
        (0i64..4_000_000_000, 0u32..1_000_000_000)
            .prop_map(|(s, n)| DateTime::from_timestamp(s, n).unwrap())
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            tricky_string().prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(tricky_string(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    prop_compose! {
        fn memory()(
            id in id_string(), name in tricky_string(), description in tricky_string(),
            kind in prop::sample::select(MemoryKind::ALL.to_vec()),
            status in prop::sample::select(MemoryStatus::ALL.to_vec()),
            content in tricky_string(), tags in prop::collection::vec(tricky_string(), 0..4),
            scope in id_string(), supersedes in prop::collection::vec(id_string(), 0..3),
            sources in prop::collection::vec(id_string(), 0..3),
            evidence in prop::sample::subsequence(Role::ALL.to_vec(), 0..=4),
            created in time_strategy(), updated in time_strategy(), expires in prop::option::of(time_strategy()),
            confidence in 0.0f64..=1.0, pinned in any::<bool>(),
            metadata in prop::collection::btree_map(tricky_string(), json_value(), 0..4),
        ) -> Memory {
            Memory {
                id: MemoryId::new(id).unwrap(), name, description, kind, content, tags,
                scope: Scope::new(scope).unwrap(), status,
                supersedes: supersedes.into_iter().map(|s| MemoryId::new(s).unwrap()).collect(),
                expires_at: expires, created_at: created, updated_at: updated,
                sources: sources.into_iter().map(|s| SessionId::new(s).unwrap()).collect(),
                evidence, confidence, pinned, metadata: metadata.into_iter().collect(),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn parse_render_round_trips(m in memory()) {
            let expected = m.clone().normalized();
            prop_assert_eq!(parse_memory(&render_memory(&m)).unwrap(), expected.clone());
            // Normalizing is idempotent: a normalized memory round-trips exactly.
            prop_assert_eq!(parse_memory(&render_memory(&expected)).unwrap(), expected);
        }

        #[test]
        fn parse_never_panics(text in tricky_string()) {
            let _ = parse_memory(&text);
            let _ = parse_memory(&format!("---\n{text}"));
            let _ = parse_memory(&format!("---\n{text}\n---\n{text}"));
        }
    }
}
