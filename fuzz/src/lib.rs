//! Generators and oracles shared by Dream's fuzz targets (see `fuzz/README.md`).
//!
//! The targets live in `fuzz_targets/`; this library holds what more than one of
//! them needs: a string generator biased towards the characters the frontmatter
//! and tag rules care about, a bounded JSON generator, a [`Memory`] built from fuzz
//! input with validated ids, the frontmatter-line checks, and the switch that lets
//! a run go on past a bug already reported ([`known_bug`]).

use arbitrary::{Arbitrary, Result, Unstructured};
use chrono::{DateTime, Utc};
use dream_core::model::is_line_break;
use dream_core::{Memory, MemoryId, MemoryKind, MemoryStatus, Role, Scope, SessionId};
use serde_json::{Map, Number, Value};

/// Whether the check named `name` is switched off for this run because the bug it
/// finds is already reported: `DREAM_FUZZ_KNOWN_BUGS=name1,name2`. Off by default,
/// so every check fails a plain run.
pub fn known_bug(name: &str) -> bool {
    std::env::var("DREAM_FUZZ_KNOWN_BUGS")
        .map(|v| v.split(',').any(|n| n.trim() == name))
        .unwrap_or(false)
}

/// Fragments that stress the frontmatter rules, the tag escaper and JSON.
pub const TRICKY: &[&str] = &[
    "---",
    "---\n",
    "\n---\n",
    "\r\n---\r\n",
    "\n",
    "\r\n",
    "\r",
    ":",
    ": ",
    "\"",
    "'",
    "#",
    "-",
    " ",
    "\t",
    "\u{0B}",
    "\u{0C}",
    "\u{85}",
    "\u{A0}",
    "\u{200B}",
    "\u{2028}",
    "\u{2029}",
    "\u{3000}",
    "\u{FEFF}",
    "\0",
    "\u{1F}",
    "\u{7F}",
    "\\",
    "\\n",
    "\\u0000",
    "[",
    "]",
    "{",
    "}",
    "id: evil",
    "name: x",
    "<session_1>",
    "</session_1>",
    "<memory",
    "é",
    "日本",
    "🎉",
    "true",
    "1e5",
];

/// A string made of [`TRICKY`] fragments and arbitrary text.
#[derive(Clone, Debug)]
pub struct TrickyString(pub String);

impl<'a> Arbitrary<'a> for TrickyString {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let mut s = String::new();
        for _ in 0..16 {
            if u.is_empty() || !u.arbitrary::<bool>()? {
                break;
            }
            if u.arbitrary::<bool>()? {
                s.push_str(u.choose(TRICKY)?);
            } else {
                s.push_str(<&str>::arbitrary(u)?);
            }
        }
        Ok(TrickyString(s))
    }
}

/// An id that passes `^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`: the fuzz text itself when
/// the validator accepts it, else the text mapped into the id alphabet.
#[derive(Clone, Debug)]
pub struct IdText(pub String);

const ID_FIRST: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const ID_REST: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

impl<'a> Arbitrary<'a> for IdText {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let raw = <&str>::arbitrary(u)?;
        if dream_core::id::validate_id(raw, "fuzz id").is_ok() {
            return Ok(IdText(raw.to_owned()));
        }
        let bytes = raw.as_bytes();
        let len = bytes.len().clamp(1, dream_core::id::MAX_ID_LEN);
        let mut s = String::with_capacity(len);
        s.push(ID_FIRST[usize::from(*bytes.first().unwrap_or(&0)) % ID_FIRST.len()] as char);
        for b in bytes.iter().take(len).skip(1) {
            s.push(ID_REST[usize::from(*b) % ID_REST.len()] as char);
        }
        Ok(IdText(s))
    }
}

/// A timestamp: usually in this century, sometimes anywhere chrono can represent
/// (years −262 143 … +262 142), including leap-second nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct Time(pub DateTime<Utc>);

impl<'a> Arbitrary<'a> for Time {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let wide: u8 = u.arbitrary()?;
        let secs: i64 = u.arbitrary()?;
        let nanos: u32 = u.arbitrary()?;
        let secs = if wide < 224 {
            secs.rem_euclid(4_102_444_800) // 1970 … 2100
        } else {
            secs
        };
        let t = DateTime::from_timestamp(secs, nanos % 2_000_000_000)
            .or_else(|| DateTime::from_timestamp(secs, nanos % 1_000_000_000))
            .or_else(|| DateTime::from_timestamp(secs.rem_euclid(8_210_298_412_799), 0))
            .unwrap_or(DateTime::UNIX_EPOCH);
        Ok(Time(t))
    }
}

/// A confidence in `0.0 ..= 1.0`, with the edge values made likely.
#[derive(Clone, Copy, Debug)]
pub struct Confidence(pub f64);

impl<'a> Arbitrary<'a> for Confidence {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let c = match u.int_in_range(0u8..=7)? {
            0 => 0.0,
            1 => 1.0,
            2 => -0.0,
            3 => f64::MIN_POSITIVE,
            4 => 5e-324,
            5 => 1.0 - f64::EPSILON / 2.0,
            _ => u.arbitrary::<u64>()? as f64 / u64::MAX as f64,
        };
        Ok(Confidence(c))
    }
}

/// A JSON value at most `depth` containers deep, with finite floats, big integers
/// and tricky strings and keys.
pub fn json_value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    let top = if depth == 0 { 5 } else { 7 };
    Ok(match u.int_in_range(0u8..=top)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::from(u.arbitrary::<i64>()?),
        3 => match Number::from_f64(u.arbitrary::<f64>()?) {
            Some(n) => Value::Number(n),
            None => Value::from(u.arbitrary::<u64>()?),
        },
        4 | 5 => Value::String(TrickyString::arbitrary(u)?.0),
        6 => {
            let n = u.int_in_range(0u8..=4)?;
            let mut items = Vec::with_capacity(usize::from(n));
            for _ in 0..n {
                items.push(json_value(u, depth - 1)?);
            }
            Value::Array(items)
        }
        _ => Value::Object(json_map(u, depth - 1)?),
    })
}

/// A JSON object (see [`json_value`]).
pub fn json_map(u: &mut Unstructured<'_>, depth: u32) -> Result<Map<String, Value>> {
    let n = u.int_in_range(0u8..=4)?;
    let mut map = Map::new();
    for _ in 0..n {
        let key = TrickyString::arbitrary(u)?.0;
        map.insert(key, json_value(u, depth)?);
    }
    Ok(map)
}

/// Metadata for a memory: a JSON object nested at most four levels.
#[derive(Clone, Debug)]
pub struct Metadata(pub Map<String, Value>);

impl<'a> Arbitrary<'a> for Metadata {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(Metadata(json_map(u, 4)?))
    }
}

/// The fields of a [`Memory`], as fuzz input.
#[derive(Clone, Debug, Arbitrary)]
pub struct MemoryInput {
    id: IdText,
    name: TrickyString,
    description: TrickyString,
    kind: u8,
    content: TrickyString,
    tags: Vec<TrickyString>,
    scope: IdText,
    status: u8,
    supersedes: Vec<IdText>,
    sources: Vec<IdText>,
    evidence: Vec<u8>,
    created_at: Time,
    updated_at: Time,
    expires_at: Option<Time>,
    confidence: Confidence,
    pinned: bool,
    metadata: Metadata,
}

impl MemoryInput {
    /// The memory; every id goes through its validating constructor.
    pub fn build(self) -> Memory {
        let memory_id = |t: IdText| MemoryId::new(t.0).expect("IdText is a valid id");
        Memory {
            id: memory_id(self.id),
            name: self.name.0,
            description: self.description.0,
            kind: MemoryKind::ALL[usize::from(self.kind) % MemoryKind::ALL.len()],
            content: self.content.0,
            tags: self.tags.into_iter().take(6).map(|t| t.0).collect(),
            scope: Scope::new(self.scope.0).expect("IdText is a valid id"),
            status: MemoryStatus::ALL[usize::from(self.status) % MemoryStatus::ALL.len()],
            supersedes: self.supersedes.into_iter().take(4).map(memory_id).collect(),
            sources: self
                .sources
                .into_iter()
                .take(4)
                .map(|t| SessionId::new(t.0).expect("IdText is a valid id"))
                .collect(),
            evidence: self
                .evidence
                .into_iter()
                .take(4)
                .map(|r| Role::ALL[usize::from(r) % Role::ALL.len()])
                .collect(),
            created_at: self.created_at.0,
            updated_at: self.updated_at.0,
            expires_at: self.expires_at.map(|t| t.0),
            confidence: self.confidence.0,
            pinned: self.pinned,
            metadata: self.metadata.0,
        }
    }
}

/// The frontmatter lines of a rendered memory as Dream's parser reads them (split
/// on `\n`, a trailing `\r` dropped), between the opening fence and the first
/// closing one, and the body after it. `None` when there is no closing fence.
pub fn parser_lines(text: &str) -> Option<(Vec<&str>, &str)> {
    let rest = text.strip_prefix("---\n")?;
    let mut lines = Vec::new();
    let mut offset = 0;
    loop {
        let end = rest[offset..].find('\n').map(|i| offset + i);
        let line = &rest[offset..end.unwrap_or(rest.len())];
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line == "---" {
            return Some((lines, end.map_or("", |e| &rest[e + 1..])));
        }
        lines.push(line);
        offset = end? + 1;
    }
}

/// Checks the frontmatter of `text`, rendered from `memory`, line by line:
/// the first `---` line after the opening fence is the real closing fence (the
/// body after it is the memory's content byte for byte), no other line is `---`,
/// and exactly one line is an `id:` line. With `unicode_breaks`, lines are also
/// split at every character Dream itself calls a line break
/// (`dream_core::model::is_line_break`: U+0085, U+2028, U+2029, …), as a reader
/// other than Dream's own parser (a YAML 1.1 tool, an editor) may split them.
pub fn check_frontmatter(text: &str, memory: &Memory, unicode_breaks: bool) {
    let (lines, body) = parser_lines(text).expect("rendered memory has a closing fence");
    assert_eq!(
        body, memory.content,
        "the first `---` line after the opening fence is not the real closing fence"
    );
    let pieces: Vec<&str> = if unicode_breaks {
        lines.iter().flat_map(|l| l.split(is_line_break)).collect()
    } else {
        lines
    };
    let ids = pieces
        .iter()
        .filter(|l| l.trim_start().starts_with("id:"))
        .count();
    assert_eq!(ids, 1, "frontmatter has {ids} `id:` lines:\n{text}");
    assert!(
        !pieces.iter().any(|l| l.trim() == "---"),
        "a frontmatter line other than the fences is `---`:\n{text}"
    );
}

/// Whether `text` holds a live frame tag by a second, hand-written reading of the
/// rule (independent of the regex `sanitize` uses): `<`, white space, an optional
/// `/`, white space, then `session` or `memory` in any case. Case is compared both
/// by ASCII folding and by Unicode lower-casing of each character.
pub fn has_live_tag(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c != '<' {
            continue;
        }
        let mut j = i + 1;
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        if j < chars.len() && chars[j] == '/' {
            j += 1;
            while j < chars.len() && chars[j].is_whitespace() {
                j += 1;
            }
        }
        for word in ["session", "memory"] {
            let n = word.chars().count();
            if j + n > chars.len() {
                continue;
            }
            let same = chars[j..j + n].iter().zip(word.chars()).all(|(&a, w)| {
                a.eq_ignore_ascii_case(&w) || a.to_lowercase().eq(std::iter::once(w))
            });
            if same {
                return true;
            }
        }
    }
    false
}

/// The fuzz input as text: the bytes when they are UTF-8, else a lossy reading.
pub fn text_of(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// `unit` repeated until the text is at least `min_len` bytes (at char boundaries).
pub fn repeat_to(unit: &str, min_len: usize) -> String {
    if unit.is_empty() {
        return String::new();
    }
    unit.repeat(min_len.div_ceil(unit.len()))
}

thread_local! {
    static TOLERATING: std::cell::Cell<Option<(&'static str, &'static str)>> =
        const { std::cell::Cell::new(None) };
}

/// Runs `f`; when the bug `name` is listed in `DREAM_FUZZ_KNOWN_BUGS`, a panic
/// raised in a file ending with `file` whose message contains `needle` (that bug)
/// is swallowed and gives `None`, so a run can go on looking for other bugs. Any
/// other panic still aborts the run, as libFuzzer's hook makes it.
pub fn tolerating<R>(
    name: &str,
    file: &'static str,
    needle: &'static str,
    f: impl FnOnce() -> R,
) -> Option<R> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    if !known_bug(name) {
        return Some(f());
    }
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let known = TOLERATING.with(|t| t.get()).is_some_and(|(file, needle)| {
                let message = info
                    .payload()
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| info.payload().downcast_ref::<&str>().copied())
                    .unwrap_or("");
                info.location().is_some_and(|l| l.file().ends_with(file))
                    && message.contains(needle)
            });
            if !known {
                previous(info);
            }
        }));
    });
    TOLERATING.with(|t| t.set(Some((file, needle))));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    TOLERATING.with(|t| t.set(None));
    result.ok()
}
