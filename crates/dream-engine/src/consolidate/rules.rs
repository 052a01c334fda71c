//! The rule-based consolidator: the offline mode. Deterministic, no model, no key.
//!
//! It reads the user's own messages sentence by sentence and turns statements of
//! lasting facts, preferences, decisions and corrections into memories:
//!
//! | statement                                   | memory                                |
//! |---------------------------------------------|---------------------------------------|
//! | "call me Sam", "my name is Sam"             | user: preferred name                  |
//! | "I prefer tabs", "I don't like emojis"      | user: preference                      |
//! | "we use Vitest here, not Jest"              | project: tool in use                  |
//! | "from now on we deploy on Fridays"          | project: decision, with its date      |
//! | "we decided to drop IE11"                   | project: decision, with its date      |
//! | "always run the tests", "never use tabs"    | feedback                              |
//!
//! A statement about a subject an existing memory (or an earlier statement of the
//! batch) already covers becomes an update of that memory instead of a new one:
//! "call me Samuel" after "call me Sam", "we use Vitest, not Jest" after "we use
//! Jest", near-duplicates by word overlap. Relative dates (today, tomorrow,
//! yesterday) become absolute ones from the session's date.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use dream_core::{Memory, MemoryKind, Role, TokenUsage};
use regex::Regex;
use serde_json::{Map, Value, json};

use super::{Batch, BatchSession, Consolidation, Consolidator};
use crate::error::Result;
use crate::plan::{Citation, Plan, ProposedCreate, ProposedUpdate};
use crate::provenance::{identifying_in, identifying_in_sentence};

/// How the offline mode names itself in reports and audit records.
const LABEL: &str = "rule-based (offline mode)";
/// Word overlap (Jaccard) at which two statements are the same memory.
const NEAR_DUPLICATE: f64 = 0.6;
/// Longest captured value, in characters.
const MAX_VALUE_CHARS: usize = 300;

/// The deterministic consolidator used when no model is configured.
#[derive(Debug, Clone, Copy, Default)]
pub struct RuleBasedConsolidator;

impl RuleBasedConsolidator {
    /// The offline consolidator.
    pub fn new() -> Self {
        RuleBasedConsolidator
    }

    /// The plan for a batch (what [`Consolidator::consolidate`] returns).
    pub fn plan(&self, batch: &Batch) -> Plan {
        let mut state = Builder {
            memories: &batch.memories,
            creates: Vec::new(),
            updates: Vec::new(),
        };
        for session in &batch.sessions {
            for statement in statements(session) {
                state.add(statement);
            }
        }
        state.finish()
    }
}

#[async_trait]
impl Consolidator for RuleBasedConsolidator {
    fn describe(&self) -> String {
        LABEL.to_owned()
    }

    async fn consolidate(&self, batch: &Batch) -> Result<Consolidation> {
        Ok(Consolidation {
            plan: self.plan(batch),
            usage: TokenUsage::default(),
            model: LABEL.to_owned(),
        })
    }
}

/// Which rule recognised a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    Name,
    Preference,
    Uses,
    Decision,
    Feedback,
    Note,
    Fact,
}

impl Rule {
    fn as_str(self) -> &'static str {
        match self {
            Rule::Name => "name",
            Rule::Preference => "preference",
            Rule::Uses => "uses",
            Rule::Decision => "decision",
            Rule::Feedback => "feedback",
            Rule::Note => "note",
            Rule::Fact => "fact",
        }
    }

    fn parse(s: &str) -> Option<Rule> {
        [
            Rule::Name,
            Rule::Preference,
            Rule::Uses,
            Rule::Decision,
            Rule::Feedback,
            Rule::Note,
            Rule::Fact,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

/// One recognised statement.
#[derive(Debug, Clone)]
struct Statement {
    rule: Rule,
    /// What it is about; statements with the same rule and subject are one memory.
    subject: BTreeSet<String>,
    /// The identifiers of its subject (numbers, versions, proper nouns, code
    /// names): statements whose identifiers differ are about different things,
    /// however many words they share.
    ids: BTreeSet<String>,
    kind: MemoryKind,
    name: String,
    description: String,
    content: String,
    /// The message it was read from.
    cited: Citation,
}

static PREAMBLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:(?:ok(?:ay)?|so|also|and|btw|by the way|actually|no|nope|well|hey|fyi|note|correction|to be clear|just so you know)\b[,:!]?\s*)+",
    )
    .expect("static regex")
});
static CALL_ME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:please\s+)?(?:you can\s+)?(?:just\s+)?(?:call me|i go by|i prefer to be called|(?:please\s+)?address me as|everyone calls me)\s+(.+)$",
    )
    .expect("static regex")
});
/// A name given as "I'm Ingrid" or "name's Dmitri": only a capitalised word.
static NAME_IS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[Hh]i|[Hh]ey|[Hh]ello)?[ ,!]*(?:I'm|I am|[Nn]ame's|[Mm]y names)\s+(\p{Lu}[\p{L}'-]+)(?:\s*$|\s*[,.;!(—-])")
        .expect("static regex")
});
/// Where a captured name ends: before a clause, a courtesy or an aside.
static NAME_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\s+(?:from now on|please|pls|not|but|btw|instead|if|because|thanks|that's|rather|going forward|\(with)\b.*$|\s*[,;(—–].*$")
        .expect("static regex")
});
static MY_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^(?:my name is|my name's)\s+(.+)$").expect("static regex"));
static PREFER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^i\s+(?:really\s+|strongly\s+)?(prefer|like|love|hate|dislike|don't like|do not like|can't stand)\s+(.+)$")
        .expect("static regex")
});
static USES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^we(?:'re| are|'ve| have)?\s+(?:now\s+|only\s+|all\s+)?(?:use|using|switched to|moved to|migrated to|standardi[sz]ed on|on|rely on|relying on|settled on)\s+(?P<tool>.+?)(?:\s+(?:here|now|in prod|in production))?(?:,?\s+(?:and\s+)?(?:not|instead of|rather than|no longer|over)\s+(?P<old>.+?))?(?:\s+now)?$",
    )
    .expect("static regex")
});
/// A tool named by what it does for the project: "the frontend is built with
/// SvelteKit", "logging goes through pino", "we're going with Stripe".
static USES_FOR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:(?:the|our|all|everything(?:'s| is)?)\s+)?(?P<what>[\p{L}\p{N} .'-]{0,40}?)\s*(?:(?:is|are|'s)\s+(?:built with|written in|managed (?:in|with|by)|handled (?:by|in)|done (?:with|in)|powered by|built on|containeri[sz]ed with|tracked in|hosted on)|(?:goes|go|run|runs) through|containeri[sz]ed with)\s+(?P<tool>.+?)(?:,.*)?$",
    )
    .expect("static regex")
});
/// "we're going with Stripe", "we dropped moment.js and use date-fns now".
static GOING_WITH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^we(?:'re| are)\s+going with\s+(?P<tool>.+?)(?:\s+(?:for|—|-).*)?$|^we(?:'ve| have)?\s+dropped\s+(?P<old>.+?)\s+and\s+(?:now\s+)?use\s+(?P<tool2>.+?)(?:\s+now)?$",
    )
    .expect("static regex")
});
static SWITCHED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^we(?:'ve| have)?\s+(?:switched|moved|migrated|changed)\s+(?:from\s+(?P<old>.+?)\s+to\s+(?P<tool>.+?)|to\s+(?P<tool2>.+?)\s+from\s+(?P<old2>.+?))(?:\s+(?:here|last \w+|this \w+|in \w+))?$",
    )
    .expect("static regex")
});
static FROM_NOW_ON: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:from now on|going forward|from (?:today|tomorrow|now|next \w+|this \w+|\w+day) on|starting (?:today|now|tomorrow|next \w+|this \w+|\w+day)|as of (?:today|now|this \w+|next \w+)|effective (?:today|immediately)|decision|(?:ok\s+)?it's (?:settled|decided)|final decision),?\s*[:,—-]?\s+(.+)$",
    )
    .expect("static regex")
});
static DECIDED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:we|the team|team|everyone)(?:'ve| have)?\s+(?:\w+\s+)?(?:decided|agreed|chosen|chose|committed)(?:\s+\w+)?\s+(?:to|that|on)\s+(.+)$",
    )
    .expect("static regex")
});
static FEEDBACK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:please\s+)?(always|never|don't|do not|stop)\s+(.+)$")
        .expect("static regex")
});
static REMEMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:(?:please|pls|plz|can you|could you|just so you)\s+)?(?:remember|remeber|rember|memori[sz]e|keep in mind|don't forget|dont forget|do not forget|never forget|worth remembering|(?:make a )?note (?:for later|to self|that|this)|note to self(?: \(and you\))?|for later|for the record|merk dir|bitte merk dir|vergiss nicht|notiz für später|retiens|n'oublie pas|souviens-toi|note pour plus tard|recuerda|acuérdate de|no olvides|ten en cuenta)(?:\s+this)?(?:\s+(?:that|dass|que))?\s*[,:—-]?\s+(.+)$",
    )
    .expect("static regex")
});
static FACT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:the\s+|our\s+|my\s+)?([\p{L}\p{N}][\p{L}\p{N} ._/-]{0,60}?)\s+(owns|handles|runs on|listens on|lives (?:in|at|on)|(?:is|are) hosted (?:on|at|in)|deploys to|(?:is|are) deployed to|uses|targets|requires|depends on|stores|ships|is|are)\s+(.{1,200})$",
    )
    .expect("static regex")
});
/// Question words: "remember what …" asks instead of telling.
const WH_WORDS: &[&str] = &[
    "what", "when", "where", "which", "who", "why", "how", "whether", "if",
];
/// Values that point back at the conversation instead of naming something.
const PRONOUNS: &[&str] = &["that", "this", "it", "those", "these", "them", "you"];
/// Turns of phrase that look like feedback.
const IDIOMS: &[&str] = &["mind", "worry", "bother", "panic", "know", "wait"];
/// Words after "call me" that are not names.
const NOT_A_NAME: &[&str] = &[
    "crazy",
    "back",
    "later",
    "anytime",
    "maybe",
    "old-fashioned",
    "when",
    "if",
    "tomorrow",
    "tonight",
    "now",
    "soon",
    "again",
    "paranoid",
    "biased",
    "skeptical",
    "sceptical",
];

/// Whether `text`'s first word (case-folded) is one of `words`.
fn starts_with_any(text: &str, words: &[&str]) -> bool {
    let first = text
        .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-')
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .to_lowercase();
    words.contains(&first.as_str())
}

/// First words of a sentence that is not a statement of fact about the project.
const NOT_A_FACT: &[&str] = &[
    "i", "you", "we", "it", "this", "that", "there", "what", "how", "why", "who", "when", "where",
    "which", "can", "could", "would", "should", "do", "does", "did", "is", "are", "was", "were",
    "thanks", "thank", "ok", "okay", "yes", "no", "he", "she", "they", "if", "maybe", "perhaps",
    "let", "lets", "let's", "so", "but", "and", "or", "hi", "hello", "hey", "sorry", "please",
];
/// Where a sentence joins another clause that opens like a statement.
static CLAUSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:,\s*(?:and\s+|but\s+)?|\s+(?:and|but)\s+)(?:also\s+)?(i\b|i'm\b|my\b|we\b|we're\b|our\b|call me\b|please\b|always\b|never\b|from now on\b|going forward\b|remember\b)",
    )
    .expect("static regex")
});
static ISO_DATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\d{4}-\d{2}-\d{2}").expect("static regex"));
static SENTENCE_END: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[.!?;]+(?:\s+|$)|\n+").expect("static regex"));
static RELATIVE_DAY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(today|tomorrow|yesterday)\b").expect("static regex"));

const STOPWORDS: &[&str] = &[
    "a", "an", "the", "we", "i", "you", "our", "my", "your", "here", "now", "is", "are", "be",
    "to", "of", "and", "or", "on", "in", "at", "for", "with", "not", "instead", "rather", "than",
    "use", "using", "from", "it", "this", "that", "will", "should", "please", "me", "all", "its",
    "as", "by", "do", "does", "no", "longer", "only", "every", "each", "so",
];

fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect()
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let common = a.intersection(b).count() as f64;
    common / a.union(b).count() as f64
}

/// Cleans a captured value: one line, no surrounding quotes or punctuation, capped.
fn clean(value: &str) -> Option<String> {
    let collapsed = value.split_whitespace().collect::<Vec<_>>().join(" ");
    let trimmed = collapsed
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | ',' | ':' | '.' | '!' | '?' | ';'))
        .trim();
    if trimmed.is_empty() {
        return None;
    }
    Some(match trimmed.char_indices().nth(MAX_VALUE_CHARS) {
        Some((cut, _)) => trimmed[..cut].to_owned(),
        None => trimmed.to_owned(),
    })
}

fn short(value: &str, chars: usize) -> String {
    match value.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &value[..cut]),
        None => value.to_owned(),
    }
}

fn capitalized(value: &str) -> String {
    let mut chars = value.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn absolute_days(text: &str, at: DateTime<Utc>) -> String {
    RELATIVE_DAY
        .replace_all(text, |caps: &regex::Captures<'_>| {
            let day = match caps[1].to_ascii_lowercase().as_str() {
                "tomorrow" => at + Duration::days(1),
                "yesterday" => at - Duration::days(1),
                _ => at,
            };
            format!("on {}", day.format("%Y-%m-%d"))
        })
        .into_owned()
}

/// The words of a decision up to its first preposition or number (its subject),
/// and the identifiers among them.
fn decision_subject(text: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    const BREAKS: &[&str] = &[
        "on", "at", "in", "every", "by", "with", "to", "for", "from", "after", "before", "until",
        "each", "via", "using",
    ];
    let mut head = Vec::new();
    let mut previous_is_word = false;
    // Whole words, so that `2.4.0` and `auth-api` stay one identifier each.
    for w in text
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty())
    {
        let lw = w.to_lowercase();
        let number = lw.starts_with(|c: char| c.is_ascii_digit());
        // A number right after a word names something ("team 7", "node 18");
        // one that opens a clause is a value ("3 times a week").
        if BREAKS.contains(&lw.as_str()) || (number && !previous_is_word) {
            break;
        }
        previous_is_word = !number;
        head.push(w);
    }
    let head = head.join(" ");
    let subject: BTreeSet<String> = words(&head);
    if subject.is_empty() {
        (words(text), ids_in(text))
    } else {
        (subject, ids_in(&head))
    }
}

/// The identifiers of a fragment that tell subjects apart: its identifying
/// tokens (numbers, versions, proper nouns, file and code names) and the
/// hyphenated names of services and packages (`auth-api`, `billing-v2`).
fn ids_in(text: &str) -> BTreeSet<String> {
    let mut ids = identifying_in(text);
    ids.extend(hyphenated(text));
    ids
}

/// The words of `text` joined by an inner hyphen, case-folded.
fn hyphenated(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '-')
        .map(|w| w.trim_matches('-'))
        .filter(|w| w.contains('-'))
        .map(str::to_lowercase)
}

/// A statement read from one sentence of the person's message `message`. A
/// request to keep something ("remember that …", "note for later: …") is read
/// without its wrapper; what no other rule recognises becomes a note.
fn recognise(sentence: &str, session: &BatchSession, message: usize) -> Option<Statement> {
    let trimmed = sentence.trim();
    if let Some(c) = REMEMBER.captures(trimmed) {
        let fact = c[1].to_owned();
        // "Remember what the error was?" asks; it keeps nothing.
        if starts_with_any(&fact, WH_WORDS) {
            return None;
        }
        return recognise_fact(&fact, session, message).or_else(|| {
            let value = clean(&absolute_days(&fact, session.created_at))?;
            Some(Statement {
                rule: Rule::Note,
                subject: words(&value),
                ids: ids_in(&value),
                kind: MemoryKind::Project,
                name: format!("Note: {}", short(&value, 60)),
                description: format!(
                    "Stated by the user on {}",
                    session.created_at.format("%Y-%m-%d")
                ),
                content: format!("{}.", capitalized(&value)),
                cited: Citation {
                    session: session.reference.clone(),
                    message,
                },
            })
        });
    }
    recognise_fact(trimmed, session, message)
}

fn recognise_fact(sentence: &str, session: &BatchSession, message: usize) -> Option<Statement> {
    let sentence = PREAMBLE.replace(sentence.trim(), "");
    let sentence = sentence.trim();
    let date = session.created_at.format("%Y-%m-%d").to_string();
    let stated = format!("Stated by the user on {date}");
    let make = |rule, (subject, ids), kind, name: String, content: String| Statement {
        rule,
        subject,
        ids,
        kind,
        name,
        description: stated.clone(),
        content,
        cited: Citation {
            session: session.reference.clone(),
            message,
        },
    };
    if let Some(c) = CALL_ME
        .captures(sentence)
        .or_else(|| MY_NAME.captures(sentence))
        .or_else(|| NAME_IS.captures(sentence))
    {
        let value = clean(&NAME_END.replace(&c[1], ""))?;
        if value.split_whitespace().count() > 3 || starts_with_any(&value, NOT_A_NAME) {
            return None;
        }
        let subject = BTreeSet::from(["user-name".to_owned()]);
        return Some(make(
            Rule::Name,
            (subject, BTreeSet::new()),
            MemoryKind::User,
            "Preferred name".into(),
            format!("Call the user {value}."),
        ));
    }
    if let Some(c) = PREFER.captures(sentence) {
        let verb = c[1].to_lowercase();
        let value = clean(&absolute_days(&c[2], session.created_at))?;
        // "I like that" says nothing lasting.
        if starts_with_any(&value, PRONOUNS) {
            return None;
        }
        let verb = match verb.as_str() {
            "don't like" | "do not like" | "can't stand" => "dislikes".to_owned(),
            v => format!("{v}s"),
        };
        return Some(make(
            Rule::Preference,
            (words(&value), ids_in(&value)),
            MemoryKind::User,
            format!("Preference: {}", short(&value, 60)),
            format!("The user {verb} {value}."),
        ));
    }
    if let Some(c) = SWITCHED
        .captures(sentence)
        .or_else(|| GOING_WITH.captures(sentence))
        .or_else(|| USES.captures(sentence))
        // A decision that names a tool is still a decision.
        .or_else(|| {
            USES_FOR
                .captures(sentence)
                .filter(|_| !FROM_NOW_ON.is_match(sentence) && !DECIDED.is_match(sentence))
        })
    {
        let tool = clean(c.name("tool").or_else(|| c.name("tool2"))?.as_str())?;
        // A switch shares a tool name with what it replaces; a version tells
        // two uses of the same tool apart.
        let ids: BTreeSet<String> = identifying_in(&tool)
            .into_iter()
            .filter(|t| t.chars().any(|c| c.is_ascii_digit()))
            .collect();
        let mut subject = words(&tool);
        let old = c.name("old").or_else(|| c.name("old2"));
        let content = match old.and_then(|m| clean(m.as_str())) {
            Some(old) => {
                subject.extend(words(&old));
                format!("The project uses {tool}, not {old} (since {date}).")
            }
            None => format!("The project uses {tool}."),
        };
        return Some(make(
            Rule::Uses,
            (subject, ids),
            MemoryKind::Project,
            format!("Uses {}", short(&tool, 60)),
            content,
        ));
    }
    if let Some(c) = FROM_NOW_ON
        .captures(sentence)
        .or_else(|| DECIDED.captures(sentence))
    {
        let value = clean(&absolute_days(&c[1], session.created_at))?;
        return Some(make(
            Rule::Decision,
            decision_subject(&value),
            MemoryKind::Project,
            format!("Decision: {}", short(&value, 60)),
            format!("Since {date}: {value}."),
        ));
    }
    if let Some(c) = FEEDBACK.captures(sentence) {
        // "Never mind", "don't worry about it": a turn of phrase, not feedback.
        if starts_with_any(&c[2], IDIOMS) {
            return None;
        }
        let verb = match c[1].to_lowercase().as_str() {
            "always" => "Always",
            "stop" => "Stop",
            _ => "Never",
        };
        let value = clean(&absolute_days(&c[2], session.created_at))?;
        return Some(make(
            Rule::Feedback,
            (words(&value), ids_in(&value)),
            MemoryKind::Feedback,
            format!("Feedback: {} {}", verb.to_lowercase(), short(&value, 50)),
            format!("{verb} {value}."),
        ));
    }
    fact(sentence, session, message)
}

/// A statement of fact about the project with no trigger word ("The staging
/// database listens on port 5433", "Team Falcon owns billing"): a declarative
/// sentence that names something (a number, a proper noun, a file or code name);
/// with `is`/`are`, only when its value holds a number or a code-like name.
fn fact(sentence: &str, session: &BatchSession, message: usize) -> Option<Statement> {
    if sentence.contains('?') {
        return None;
    }
    let first = sentence.split_whitespace().next()?.to_lowercase();
    let count = sentence.split_whitespace().count();
    if NOT_A_FACT.contains(&first.as_str()) || !(3..=40).contains(&count) {
        return None;
    }
    let c = FACT.captures(sentence)?;
    let (head, verb, value) = (&c[1], c[2].to_lowercase(), &c[3]);
    // A sentence that names something ("Falcon owns billing" counts its first
    // word) ...
    if identifying_in(sentence).is_empty() {
        return None;
    }
    // ... told apart from others by what it names past its first word's capital
    // ("Service auth-api …" and "The service auth-api …" are one subject).
    let mut ids = identifying_in_sentence(sentence);
    ids.extend(hyphenated(sentence));
    // With `is`/`are`, only a value that names something: a number, a code-like
    // name, or a proper noun right at its start ("Our ORM is Prisma").
    if matches!(verb.as_str(), "is" | "are")
        && !identifying_in(value)
            .iter()
            .any(|t| t.contains(|c: char| c.is_ascii_digit() || "._/@:".contains(c)))
        && !(value.starts_with(char::is_uppercase) && value.split_whitespace().count() <= 3)
    {
        return None;
    }
    let value = clean(value)?;
    // One word per element: the subject is stored as words joined by spaces.
    let mut subject = words(head);
    subject.extend(verb.split_whitespace().map(str::to_owned));
    let text = format!("{} {verb} {value}", head.trim());
    Some(Statement {
        rule: Rule::Fact,
        subject,
        // Every identifier of the statement: "runs on node 18" and "runs on node
        // 20" are two facts unless the person says one replaced the other.
        ids,
        kind: MemoryKind::Project,
        name: format!("Fact: {}", short(&text, 60)),
        description: format!(
            "Stated by the user on {}",
            session.created_at.format("%Y-%m-%d")
        ),
        content: format!("{}.", capitalized(&clean(sentence)?)),
        cited: Citation {
            session: session.reference.clone(),
            message,
        },
    })
}

fn statements(session: &BatchSession) -> Vec<Statement> {
    session
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
        .flat_map(|(i, m)| {
            SENTENCE_END
                .split(&m.content)
                .map(move |sentence| (i, sentence.to_owned()))
                .collect::<Vec<_>>()
        })
        .flat_map(|(i, sentence)| recognise_all(&sentence, session, i))
        .collect()
}

/// The statements of one sentence: two or more when it joins clauses that are
/// each a statement ("Call me Sam, and I prefer dark mode"), else at most one.
fn recognise_all(sentence: &str, session: &BatchSession, message: usize) -> Vec<Statement> {
    // Each clause runs from its opener to where the next joiner begins.
    let mut spans = vec![(0, sentence.len())];
    for c in CLAUSE.captures_iter(sentence) {
        if let (Some(joiner), Some(opener)) = (c.get(0), c.get(1)) {
            if let Some(last) = spans.last_mut() {
                last.1 = joiner.start();
            }
            spans.push((opener.start(), sentence.len()));
        }
    }
    if spans.len() > 1 {
        let parts: Vec<Statement> = spans
            .iter()
            .filter_map(|&(from, to)| recognise(&sentence[from..to], session, message))
            .collect();
        if parts.len() >= 2 {
            return parts;
        }
    }
    recognise(sentence, session, message).into_iter().collect()
}

/// A subject: its words and its identifiers.
type Subject<'s> = (&'s BTreeSet<String>, &'s BTreeSet<String>);

/// Whether two statements of `rule` are about the same thing: their
/// identifiers agree, and their words overlap (a switch of tools shares one).
fn same_subject(rule: Rule, (a, a_ids): Subject<'_>, (b, b_ids): Subject<'_>) -> bool {
    if a_ids != b_ids {
        return false;
    }
    match rule {
        Rule::Uses => !a.is_disjoint(b),
        // The same thing (its head and verb), whatever it now says.
        Rule::Name | Rule::Fact => a == b,
        _ => a == b || jaccard(a, b) >= NEAR_DUPLICATE,
    }
}

/// The words of a subject that hold a digit: the identifiers of a memory written
/// before identifiers were recorded.
fn numbers(subject: &BTreeSet<String>) -> BTreeSet<String> {
    subject
        .iter()
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .cloned()
        .collect()
}

/// What an existing memory is about, when the offline mode wrote it: its rule,
/// subject words and identifiers.
fn memory_subject(m: &Memory) -> Option<(Rule, BTreeSet<String>, BTreeSet<String>)> {
    let rule = Rule::parse(m.metadata.get("rule")?.as_str()?)?;
    // The subject key is one string (recall's conflict rule compares it): the
    // subject's words, sorted, joined by spaces.
    let subject: BTreeSet<String> = m
        .metadata
        .get("subject")?
        .as_str()?
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let ids = match m.metadata.get("ids").and_then(Value::as_str) {
        Some(ids) => ids.split_whitespace().map(str::to_owned).collect(),
        None => numbers(&subject),
    };
    Some((rule, subject, ids))
}

fn covers(m: &Memory, s: &Statement) -> bool {
    if !m.status.is_current() || m.pinned {
        return false;
    }
    match memory_subject(m) {
        Some((rule, subject, ids)) => {
            rule == s.rule && same_subject(rule, (&subject, &ids), (&s.subject, &s.ids))
        }
        None => jaccard(&words(&m.content), &words(&s.content)) >= NEAR_DUPLICATE,
    }
}

/// The sessions that evidence cites, in order.
fn sessions_of(evidence: &[Citation]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in evidence {
        if !out.contains(&c.session) {
            out.push(c.session.clone());
        }
    }
    out
}

fn metadata(s: &Statement) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("rule".into(), json!(s.rule.as_str()));
    let subject: Vec<&str> = s.subject.iter().map(String::as_str).collect();
    map.insert("subject".into(), json!(subject.join(" ")));
    let ids: Vec<&str> = s.ids.iter().map(String::as_str).collect();
    map.insert("ids".into(), json!(ids.join(" ")));
    map
}

struct Builder<'a> {
    memories: &'a [Memory],
    /// New memories: the statement, its evidence, and the earlier create of the
    /// same subject in this batch that it supersedes.
    creates: Vec<(Statement, Vec<Citation>, Option<usize>)>,
    updates: Vec<(String, Statement, Vec<Citation>)>,
}

/// What a statement asserts, its dates aside (a restatement on another day
/// asserts the same thing).
fn assertion(content: &str) -> String {
    ISO_DATE.replace_all(content, "").to_lowercase()
}

/// Adds `s`'s evidence to a statement that asserts the same.
fn cite_too(evidence: &mut Vec<Citation>, s: &Statement) {
    if !evidence.contains(&s.cited) {
        evidence.push(s.cited.clone());
    }
}

/// Folds a change of an existing memory's subject into the batch's update of
/// it: the update carries the latest statement (the memory's prior version goes
/// to history when it is applied).
fn absorb(into: &mut Statement, evidence: &mut Vec<Citation>, s: Statement) {
    if into.rule == Rule::Uses {
        let mut subject = into.subject.clone();
        subject.extend(s.subject.iter().cloned());
        into.subject = subject;
    }
    cite_too(evidence, &s);
    into.content = s.content;
    into.name = s.name;
    into.description = s.description;
}

impl Builder<'_> {
    fn add(&mut self, s: Statement) {
        let same = |t: &Statement| {
            t.rule == s.rule && same_subject(s.rule, (&t.subject, &t.ids), (&s.subject, &s.ids))
        };
        // The latest create of the same subject in this batch: a restatement adds
        // evidence; a change is a new memory that supersedes it, so no statement
        // silently replaces another.
        if let Some(index) = self.creates.iter().rposition(|(t, _, _)| same(t)) {
            let (t, evidence, _) = &mut self.creates[index];
            if assertion(&t.content) == assertion(&s.content) {
                return cite_too(evidence, &s);
            }
            let cited = s.cited.clone();
            self.creates.push((s, vec![cited], Some(index)));
            return;
        }
        if let Some((_, t, evidence)) = self.updates.iter_mut().find(|(_, t, _)| same(t)) {
            return absorb(t, evidence, s);
        }
        if let Some(m) = self.memories.iter().find(|m| covers(m, &s)) {
            if assertion(&m.content) == assertion(&s.content) {
                return;
            }
            let mut s = s;
            if let Some((_, subject, _)) = memory_subject(m).filter(|(r, _, _)| *r == Rule::Uses) {
                s.subject.extend(subject);
            }
            let cited = s.cited.clone();
            self.updates.push((m.id.to_string(), s, vec![cited]));
            return;
        }
        let cited = s.cited.clone();
        self.creates.push((s, vec![cited], None));
    }

    fn finish(self) -> Plan {
        let mut plan = Plan::default();
        let handle = |i: usize| format!("rule-{}", i + 1);
        for (i, (s, evidence, supersedes)) in self.creates.into_iter().enumerate() {
            plan.creates.push(ProposedCreate {
                handle: handle(i),
                metadata: metadata(&s),
                name: capitalized(&s.name),
                description: s.description,
                kind: s.kind,
                content: s.content,
                tags: vec![s.rule.as_str().to_owned()],
                sources: sessions_of(&evidence),
                evidence,
                supersedes: supersedes.map(handle).into_iter().collect(),
                confidence: Some(0.8),
                expires_at: None,
            });
        }
        for (id, s, evidence) in self.updates {
            plan.updates.push(ProposedUpdate {
                target: id,
                metadata: Some(metadata(&s)),
                name: Some(capitalized(&s.name)),
                description: Some(s.description),
                kind: None,
                content: Some(s.content),
                tags: None,
                sources: sessions_of(&evidence),
                evidence,
                confidence: None,
            });
        }
        plan
    }
}
