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
//! | any other lasting statement, in any words   | the sentence itself                   |
//!
//! What no rule names is kept as the person said it when [`durable`] judges it
//! a lasting statement ("Customer emails go out through Postmark"), so nothing
//! is lost for want of a trigger word; questions, greetings, requests about the
//! task, ephemeral status, chatter and quoted material are not. A "never X" or
//! "not Y" clause stays with its subject: a sentence becomes two memories only
//! when each part has a subject of its own.
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
use dream_core::{Memory, MemoryKind, Role, SessionId, TokenUsage};
use regex::Regex;
use serde_json::{Map, Value, json};

use super::{Batch, BatchSession, Consolidation, Consolidator, durable};
use crate::error::Result;
use crate::gate::assertion;
use crate::plan::{Citation, Plan, ProposedCreate, ProposedUpdate};
use crate::provenance::{identifying_in, identifying_in_sentence, own_words};

/// How the offline mode names itself in reports and audit records.
const LABEL: &str = "rule-based (offline mode)";
/// Word overlap (Jaccard) at which two statements are the same memory.
const NEAR_DUPLICATE: f64 = 0.6;
/// Word overlap (Jaccard) at which two statements in the person's own words
/// are one memory.
const SAME_STATEMENT: f64 = 0.75;
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

    async fn judges_lasting(&self, _statement: &str) -> (Option<bool>, TokenUsage) {
        // The statement is this consolidator's own reading.
        (Some(true), TokenUsage::default())
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
    Statement,
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
            Rule::Statement => "statement",
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
            Rule::Statement,
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
        r"(?i)^(?:(?:ok(?:ay)?|so|also|and|btw|by the way|actually|well|hey|fyi|note|correction|to be clear|just so you know|personally|oh|ah|cool|great|perfect|sure|yeah|yep|anyway|anyways|side note|quick note|heads up|psa|then|next|haha|lol|ugh|sorry|i mean|i meant|seriously)\b[,:!]?\s*|(?:no|nope)[,:!]\s*)+",
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
    Regex::new(r"(?i)^(?:i\s+(?:really\s+|strongly\s+)?(?P<verb>prefer|like|love|hate|dislike|don't like|do not like|can't stand)|i'd (?P<rather>rather))\s+(?P<value>.+)$")
        .expect("static regex")
});
/// "I'm a vim person", "I'm a Rust fan": what the person is, as a preference.
static KIND_OF_PERSON: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^i'?m an?\s+([\p{L}\p{N}+#.-]+(?:\s+[\p{L}\p{N}+#.-]+)?)\s+(person|fan|user)\b",
    )
    .expect("static regex")
});
/// A name given in passing: "It's Aiyana — that's what I'd like you to use for
/// me", "You can just use Femi, that's what my friends call me".
static NAME_IN_PASSING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[Ii]t's|[Ii]t is|(?:[Yy]ou can\s+)?(?:[Jj]ust\s+)?[Uu]se)\s+(\p{Lu}[\p{L}'-]+)\b.*\b(?:call me|(?:use|call) for me|go by)\b",
    )
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
        r"(?i)^(?:we|the team|team|everyone)(?:'ve| have)?\s+(?:\w+\s+)?(?:decided|agreed|chosen|chose|committed)(?:\s+\w+)?\s+(?:to|that|on)\s+(.+)$|^we(?:'re| are| will|'ll)\s+((?:dropping|deprecating|removing|sunsetting|retiring|freezing)\s+.+)$",
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
        r"(?i)^(?:the\s+|our\s+|my\s+)?([\p{L}\p{N}][\p{L}\p{N} ._/'’-]{0,60}?)\s+(owns|handles|runs (?:on|in)|listens on|lives (?:in|at|on)|(?:is|are) hosted (?:on|at|in)|deploys (?:to|on)|deploy (?:to|on)|(?:is|are) deployed to|(?:is|are) (?:generated|handled|owned|maintained|run|managed) by|signs? off on|must (?:stay|live|run) in|comes? from|goes? (?:in|to|into)|expires? after|takes|uses|targets|requires|depends on|stores|ships|is|are)\s+(.{1,200})$",
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
/// Where a sentence's comma or dash clauses part, to read each on its own when
/// one of them is of the moment.
static COMMA_CLAUSE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r",\s+|\s+[—–-]\s+").expect("static regex"));
/// Where a statement runs into a request or question of the moment ("the cron
/// runs at 2am UTC, can you check the logs?"): they are read as two sentences.
static REQUEST_CLAUSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:,|\s[—–-])\s+((?:and\s+)?(?:can|could|would|will) you\b|let's\b|lets\b|any idea\b|what\b|how\b|why\b|is there\b|do you\b|let me know\b)",
    )
    .expect("static regex")
});
/// A code name in backticks (`` `ledger-worker` ``).
static BACKTICKED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`[^`\s]{2,80}`").expect("static regex"));
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

/// `value` cut to about `chars` characters at a word boundary, so a name never
/// holds part of a word (a cut `ToolchainK…` would be a token nobody said).
fn short(value: &str, chars: usize) -> String {
    let Some((cut, _)) = value.char_indices().nth(chars) else {
        return value.to_owned();
    };
    let head = &value[..cut];
    let at_boundary = value[cut..].starts_with(char::is_whitespace);
    let kept = if at_boundary {
        head
    } else {
        match head.rfind(char::is_whitespace) {
            Some(space) => &head[..space],
            None => value.split_whitespace().next().unwrap_or(head),
        }
    };
    let kept = kept.trim_end_matches(|c: char| !c.is_alphanumeric() && c != ')');
    format!("{kept}…")
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
    let trimmed = PREAMBLE.replace(sentence.trim(), "");
    let trimmed = trimmed.trim();
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

/// The statement of one sentence (a request wrapper such as "remember that"
/// already removed): by a rule that names its shape, else as the person said
/// it when it states something lasting.
fn recognise_fact(sentence: &str, session: &BatchSession, message: usize) -> Option<Statement> {
    let sentence = PREAMBLE.replace(sentence.trim(), "");
    if durable::passing(&sentence) {
        return None;
    }
    by_rule(&sentence, session, message).or_else(|| statement(&sentence, session, message))
}

/// The statement of one sentence by the rule that names its shape, if any.
fn by_rule(sentence: &str, session: &BatchSession, message: usize) -> Option<Statement> {
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
        .or_else(|| NAME_IN_PASSING.captures(sentence))
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
        let value = clean(&absolute_days(&c["value"], session.created_at))?;
        // "I like that" says nothing lasting; "I'd rather you …" does.
        let rather = c.name("rather").is_some();
        if starts_with_any(&value, PRONOUNS) && !(rather && starts_with_any(&value, &["you"])) {
            return None;
        }
        let verb = match c.name("verb").map(|v| v.as_str().to_lowercase()) {
            None => "would rather".to_owned(),
            Some(v) if matches!(v.as_str(), "don't like" | "do not like" | "can't stand") => {
                "dislikes".to_owned()
            }
            Some(v) => format!("{v}s"),
        };
        return Some(make(
            Rule::Preference,
            (words(&value), ids_in(&value)),
            MemoryKind::User,
            format!("Preference: {}", short(&value, 60)),
            format!("The user {verb} {value}."),
        ));
    }
    if let Some(c) = KIND_OF_PERSON.captures(sentence) {
        let value = format!("{} {}", clean(&c[1])?, c[2].to_lowercase());
        return Some(make(
            Rule::Preference,
            (words(&value), ids_in(&value)),
            MemoryKind::User,
            format!("Preference: {}", short(&value, 60)),
            format!("The user is a {value}."),
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
        let uses = format!("Uses {}", short(&tool, 60));
        let (name, content) = match old.and_then(|m| clean(m.as_str())) {
            Some(old) => {
                subject.extend(words(&old));
                (
                    uses,
                    format!("The project uses {tool}, not {old} (since {date})."),
                )
            }
            // "Feature flags are managed in Unleash, self-hosted at …": what the
            // tool is for, and all the rest, in the person's own words, and so
            // is the name ("All docs go through Ines for review" is not "Uses
            // Ines for review").
            None if c
                .name("what")
                .is_some_and(|w| !w.as_str().trim().is_empty()) =>
            {
                let said = capitalized(&clean(sentence)?);
                (short(&said, 60), format!("{said}."))
            }
            None => (uses, format!("The project uses {tool}.")),
        };
        return Some(make(
            Rule::Uses,
            (subject, ids),
            MemoryKind::Project,
            name,
            content,
        ));
    }
    if let Some(c) = FROM_NOW_ON
        .captures(sentence)
        .or_else(|| DECIDED.captures(sentence))
    {
        let value = c.get(1).or_else(|| c.get(2))?.as_str();
        let value = clean(&absolute_days(value, session.created_at))?;
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

/// A lasting statement no rule names, kept in the person's own words: the
/// sentence is the content, and its first words the name.
fn statement(sentence: &str, session: &BatchSession, message: usize) -> Option<Statement> {
    let ids = identifying_in_sentence(sentence);
    if !durable::is_durable(sentence, !ids.is_empty() || BACKTICKED.is_match(sentence)) {
        return None;
    }
    let value = clean(sentence)?;
    let first = value.split_whitespace().next()?.to_lowercase();
    let kind = if ["i", "i'm", "im", "my", "me", "i've", "i'd", "mine"].contains(&first.as_str()) {
        MemoryKind::User
    } else {
        MemoryKind::Project
    };
    let mut all_ids = ids;
    all_ids.extend(hyphenated(&value));
    Some(Statement {
        rule: Rule::Statement,
        subject: words(&value),
        ids: all_ids,
        kind,
        name: short(&capitalized(&value), 60),
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
    if identifying_in(sentence).is_empty() && !BACKTICKED.is_match(sentence) {
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
        .flat_map(|(i, m)| message_statements(&m.content, session, i))
        .collect()
}

/// The statements of the person's message `message` of `session`, whose text
/// is `text`: each sentence of their own words (quoted and pasted material
/// left out), read by [`recognise_all`].
fn message_statements(text: &str, session: &BatchSession, message: usize) -> Vec<Statement> {
    let own: String = own_words(text)
        .lines()
        .filter(|line| !durable::looks_pasted(line))
        .collect::<Vec<_>>()
        .join("\n");
    let own = REQUEST_CLAUSE.replace_all(&own, ".\n$1");
    sentences(&own)
        .iter()
        .flat_map(|sentence| recognise_all(sentence, session, message))
        .collect()
}

/// Whether the person's message `text`, logged at `at`, states anything
/// lasting as the offline consolidator reads it: a sentence of their own
/// words that is not a question, a greeting or thanks, a request about the
/// task at hand, a status, a passing thought or pasted material. The write
/// gate asks it of a model's proposal that rests on the person's messages
/// alone, so both consolidators share one reading of what is memory.
pub(crate) fn states_something(text: &str, at: DateTime<Utc>) -> bool {
    !message_statements(text, &lone_session("judged", at), 0).is_empty()
}

/// A session of no messages, `S1` of its batch, to read a text as one of its
/// messages.
fn lone_session(id: &str, at: DateTime<Utc>) -> BatchSession {
    BatchSession {
        reference: "S1".to_owned(),
        id: SessionId::new(id).expect("a valid id"),
        created_at: at,
        messages: Vec::new(),
        flags: Vec::new(),
    }
}

/// Abbreviations whose dot ends no sentence.
const ABBREVIATIONS: &[&str] = &[
    "dr", "mr", "mrs", "ms", "st", "prof", "sr", "jr", "vs", "etc", "e.g", "i.e", "approx", "no",
    "inc", "ltd", "co", "mt", "ft", "av", "sra", "hr", "fr",
];

/// The sentences of a text: split at `.`, `!`, `?`, `;` and line breaks, but
/// not after an abbreviation ("Dr. Almeida").
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    for end in SENTENCE_END.find_iter(text) {
        let before = &text[start..end.start()];
        let last = before
            .rsplit(|c: char| c.is_whitespace() || c == '(')
            .next()
            .unwrap_or("")
            .to_lowercase();
        if end.as_str().starts_with('.')
            && end.as_str().trim() == "."
            && ABBREVIATIONS.contains(&last.as_str())
        {
            continue;
        }
        out.push(text[start..end.start()].to_owned());
        start = end.end();
    }
    out.push(text[start..].to_owned());
    out
}

/// Whether a clause that opens with `always`, `never`, `please` … says enough
/// to stand alone: "never push to main" does; "never Kubernetes", "never on
/// Fridays" and "always use it" lean on the clause before them and stay with it.
fn has_own_subject(clause: &str) -> bool {
    let mut words = clause.split_whitespace();
    let opener = words.next().unwrap_or("").to_lowercase();
    if !matches!(opener.as_str(), "always" | "never" | "please") {
        return true;
    }
    let rest: Vec<String> = words
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    const LEANING: &[&str] = &[
        "it", "that", "this", "them", "those", "so", "on", "in", "at", "for", "with", "before",
        "after", "during", "the", "a", "an", "as", "to", "by", "from", "under", "over", "into",
        "of", "via", "without", "within", "outside", "inside", "than", "again",
    ];
    rest.len() >= 3 && !LEANING.contains(&rest[0].as_str()) && !rest.iter().any(|w| w == "it")
}

/// The statements of one sentence: two or more when it joins clauses that are
/// each a statement ("Call me Sam, and I prefer dark mode"), else at most one.
fn recognise_all(sentence: &str, session: &BatchSession, message: usize) -> Vec<Statement> {
    // "Bob says we should never deploy on Fridays, but I'm not sure": not
    // decided, whichever clause says so. Beside a clause of the moment, a
    // clause that names a habit still stands ("our demo is every second
    // wednesday at 14:00, the one today went fine"); any other is read as
    // more of the moment ("the deploy failed today, backfill is at 62%").
    let whole = PREAMBLE.replace(sentence.trim(), "");
    if durable::passing(&whole) {
        if durable::passing_throughout(&whole) {
            return Vec::new();
        }
        return COMMA_CLAUSE
            .split(sentence)
            .filter_map(|clause| recognise(clause, session, message))
            .filter(|s| durable::habitual(&s.content))
            .collect();
    }
    // Each clause runs from its opener to where the next joiner begins.
    let mut spans = vec![(0, sentence.len())];
    for c in CLAUSE.captures_iter(sentence) {
        if let (Some(joiner), Some(opener)) = (c.get(0), c.get(1)) {
            if !has_own_subject(&sentence[opener.start()..]) {
                continue;
            }
            if let Some(last) = spans.last_mut() {
                last.1 = joiner.start();
            }
            spans.push((opener.start(), sentence.len()));
        }
    }
    let parts: Vec<Statement> = if spans.len() > 1 {
        spans
            .iter()
            .filter_map(|&(from, to)| recognise(&sentence[from..to], session, message))
            .collect()
    } else {
        Vec::new()
    };
    if parts.len() >= 2 {
        return parts;
    }
    // Two statements joined by a bare "and" ("Prod runs in eu-west-1 and DR is
    // in eu-central-1"): only when each half is one.
    for (at, joiner) in sentence.match_indices(" and ") {
        let (first, second) = (&sentence[..at], &sentence[at + joiner.len()..]);
        if let (Some(a), Some(b)) = (
            recognise(first, session, message),
            recognise(second, session, message),
        ) && a.rule != Rule::Statement
            && b.rule != Rule::Statement
        {
            return vec![a, b];
        }
    }
    // A clause that states something after one that does not ("When you write
    // SQL, always use parameterised queries"): the clause.
    match recognise(sentence, session, message) {
        Some(whole) => vec![whole],
        None => parts,
    }
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
        // Words said in any order: only a near-verbatim restatement is the same.
        Rule::Statement => jaccard(a, b) >= SAME_STATEMENT,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_states_something_when_a_sentence_of_the_persons_own_words_lasts() {
        let at = chrono::Utc::now();
        for lasting in [
            "Reads outnumber writes 3:1.",
            "Customer emails go out through Postmark.",
            "We format with black at line length 100",
            "Thanks! Also, standup is at 9:30 CET from now on.",
        ] {
            assert!(states_something(lasting, at), "{lasting}");
        }
        for passing in [
            "Thanks, that worked!",
            "What time is it in Lisbon?",
            "I'm looking at the logs now.",
            "> We deploy on Fridays.",
            "",
        ] {
            assert!(!states_something(passing, at), "{passing}");
        }
    }

    #[test]
    fn a_habit_beside_a_clause_of_the_moment_is_kept_and_the_moment_is_not() {
        let session = lone_session("clauses", chrono::Utc::now());
        let contents = |text: &str| -> Vec<String> {
            message_statements(text, &session, 0)
                .into_iter()
                .map(|s| s.content)
                .collect()
        };
        assert_eq!(
            contents(
                "fyi our sprint demo is every second wednesday at 14:00, the one today went fine"
            ),
            ["Our sprint demo is every second wednesday at 14:00."]
        );
        for passing in [
            // Only the moment, in every clause that is not a habit.
            "the deploy failed today, backfill is at 62%",
            "flight's delayed again, we land at 6",
            // Not decided, or not the person's, whichever clause says so.
            "we should always deploy on fridays, not sure today is the day",
            "Bob says we always deploy on fridays, the one today went fine",
        ] {
            assert!(contents(passing).is_empty(), "{passing}");
        }
    }

    #[test]
    fn a_tool_named_by_what_it_does_is_named_in_the_persons_words() {
        let session = lone_session("named", chrono::Utc::now());
        let named = |text: &str| {
            let found = message_statements(text, &session, 0);
            assert_eq!(found.len(), 1, "{text}");
            (found[0].name.clone(), found[0].content.clone())
        };
        assert_eq!(
            named("All customer-facing docs go through Ines for review."),
            (
                "All customer-facing docs go through Ines for review".to_owned(),
                "All customer-facing docs go through Ines for review.".to_owned()
            )
        );
        // A plain use keeps its short name.
        assert_eq!(
            named("We use pnpm for everything.").0,
            "Uses pnpm for everything"
        );
    }
}
