//! Whether a sentence the person typed states something lasting.
//!
//! The offline consolidator's rules recognise statements by their shape ("call
//! me …", "we use …", "from now on …"); people mostly say lasting things with
//! no such cue: "Customer emails go out through Postmark", "Feature flags live
//! in LaunchDarkly", "Standup is at 9:30 CET". So a declarative sentence of the
//! person's own words is a statement unless it is one of what is not memory:
//!
//! | not memory                | told by                                            |
//! |---------------------------|----------------------------------------------------|
//! | a question                | `?` / `¿`, or a question word or auxiliary first   |
//! | a greeting, thanks, an ok | an interjection first, with nothing it names       |
//! | a request about the task  | an imperative task verb first, or "can you …", "let's …", with no word of habit (always, every, must …) |
//! | ephemeral status          | "right now", "at the moment", "brb", "I'm …ing", "still waiting" |
//! | chatter and feelings      | an interjection, a laughing emoji or "this/that …" with nothing it names, "I'm tired" |
//! | pasted material           | log and error lines, "from the docs: …" (fences, block quotes and harness blocks never get here: see `provenance::own_words`) |
//! | someone else's words      | "Tom said …", "here's what Priya wrote: …", "the error says: …" |
//! | a hedge or a hypothesis   | "maybe we should …", "if we used …", "we were going to …" |
//! | talk about the exchange   | "you keep …", "let me …", "like I said …", an aside in parentheses, "… by that" |
//!
//! Some of these are not memory whatever the sentence's shape, so every rule of
//! the consolidator asks `passing` first: a thought not yet decided anywhere
//! in the sentence ("we could maybe …", "…, not sure"), someone else's opinion
//! ("my coworker thinks …", "according to the readme …"), what is true only
//! today (progress, an incident, where the person is), a passing mood ("… lol"),
//! a request about what is at hand ("in this snippet"), work reported done
//! ("I merged the pr"), and pasted output (stack frames, status lines, SQL).
//!
//! Some shapes look like those and are statements: "no" before a word negates
//! it ("no emojis in commit messages"); three words can state a choice ("tabs
//! not spaces"); "I'm …ing" with a horizon past the moment is a pursuit ("I'm
//! training for the marathon in September"); a condition about every such time
//! makes a rule of what follows ("when reviewing my code, focus on bugs first");
//! and laughter ("lol", "haha") is a tone, not a mood.
//!
//! The lists hold English and the other languages the scanner knows where a
//! word is unambiguous; a `?` is the question mark in every one of them.

mod lexicon;
#[cfg(test)]
mod tests;

use lexicon::*;

/// Whether no clause of a sentence is the person's own decision: a thought
/// not yet decided, someone else's opinion or words, or pasted output ("Bob
/// says we should never deploy on Fridays, but I'm not sure"). The rest of
/// what makes a sentence [`passing`] (news of today, a mood) may sit in one
/// clause beside a lasting one ("our demo is every second wednesday at 14:00,
/// the one today went fine").
pub(super) fn passing_throughout(sentence: &str) -> bool {
    let s = sentence.trim();
    looks_pasted(s) || not_decided_or_not_theirs(&spaced(&words(s)))
}

/// [`passing_throughout`]'s word lists, on a sentence's [`spaced`] words.
fn not_decided_or_not_theirs(lower: &str) -> bool {
    [UNDECIDED, OTHERS_SAY, REPORTED]
        .iter()
        .any(|list| list.iter().any(|p| lower.contains(p)))
}

/// Words joined by single spaces, with a space at each end, so a phrase of
/// the lists (" decided ") matches whole words only.
fn spaced(w: &[String]) -> String {
    format!(" {} ", w.join(" "))
}

/// Whether a sentence names a habit or a standing rule ("every", "always",
/// "never", "must" and their likes in the lists' languages).
pub(super) fn habitual(sentence: &str) -> bool {
    words(sentence).iter().any(|w| HABIT.contains(&w.as_str()))
}

/// Whether a sentence is true only now or is not the person's own decision,
/// whatever its shape: a thought not yet decided, someone else's opinion,
/// progress and incidents, a passing mood, a request about what is at hand, a
/// piece of work reported done, or pasted output. Every rule of the offline
/// consolidator asks this first: "Bob says we should never deploy on Fridays"
/// has a rule's shape and is still not the person's rule.
pub(super) fn passing(sentence: &str) -> bool {
    let s = sentence.trim();
    if looks_pasted(s) {
        return true;
    }
    let w = words(s);
    let lower = spaced(&w);
    let any = |list: &[&str]| list.iter().any(|p| lower.contains(p));
    // "right now", "at the moment", "brb": whatever rule's shape it has ("the
    // deploy uses X at the moment").
    if not_decided_or_not_theirs(&lower)
        || any(MOOD)
        || EPHEMERAL.iter().any(|p| lower.contains(&format!(" {p} ")))
    {
        return true;
    }
    // "We decided to drop IE11 this week" is a decision, whenever it is made.
    let decided = [
        " from now on ",
        " decided ",
        " agreed ",
        " decision ",
        " as of ",
        " from today ",
        " from tomorrow ",
        " starting ",
        " settled ",
    ]
    .iter()
    .any(|p| lower.contains(p))
        || w.windows(2).any(|p| p[0] == "since" && since_a_date(&p[1]));
    if any(NOW) && !decided {
        return true;
    }
    // "Deploying to staging now", "installing node now": a progress.
    let first = w.first().map_or("", String::as_str);
    if first.len() > 5 && first.ends_with("ing") && lower.contains(" now ") {
        return true;
    }
    if matches!(
        first,
        "still" | "almost" | "finally" | "currently" | "feeling"
    ) {
        return true;
    }
    // "Frustrated with myself, …": a feeling first.
    if passing_feeling(first) && !matches!(first, "done" | "glad") {
        return true;
    }
    // "Sto ancora debuggando …", "estoy migrando …": a progressive of the
    // other languages, like "I'm …ing" in `is_durable`.
    let gerund = |x: &String| ["ando", "endo", "iendo"].iter().any(|e| x.ends_with(e));
    if w.iter().enumerate().any(|(i, x)| {
        PROGRESSIVE_AUX.contains(&x.as_str()) && w[i + 1..w.len().min(i + 3)].iter().any(gerund)
    }) && !has_horizon(&w)
    {
        return true;
    }
    // "it's been raining for 3 days": a state of the moment, however long.
    if w.windows(3).any(|p| {
        matches!(p[0].as_str(), "it's" | "its")
            && p[1] == "been"
            && p[2].len() > 4
            && p[2].ends_with("ing")
    }) {
        return true;
    }
    // "so tired of this bug", "tão feliz": a feeling, intensified.
    if w.windows(2)
        .any(|p| INTENSIFIERS.contains(&p[0].as_str()) && FEELINGS.contains(&p[1].as_str()))
    {
        return true;
    }
    // "the cat just walked across my keyboard": an event; "we just moved to
    // Berlin" is a change that lasts.
    if w.windows(2).any(|p| {
        p[0] == "just"
            && (p[1].ends_with("ed") || IRREGULAR_PAST.contains(&p[1].as_str()))
            && !CHANGES.iter().any(|c| p[1].starts_with(c))
    }) {
        return true;
    }
    // "it's failing on another line", "it's 2am here".
    let clock = |x: &str| {
        x.starts_with(|c: char| c.is_ascii_digit()) && (x.ends_with("am") || x.ends_with("pm"))
    };
    if w.windows(2)
        .any(|p| p[0] == "it's" && ((p[1].len() > 5 && p[1].ends_with("ing")) || clock(&p[1])))
    {
        return true;
    }
    // "in this snippet", "for this example", "at this cafe".
    if w.windows(2).any(|p| {
        matches!(p[0].as_str(), "this" | "that" | "these" | "those")
            && AT_HAND.contains(&p[1].trim_end_matches('s'))
    }) {
        return true;
    }
    // "in 5 minutes", "in 2 hours".
    if w.windows(3).any(|p| {
        p[0] == "in"
            && p[1].chars().all(|c| c.is_ascii_digit())
            && (p[2].starts_with("min") || p[2].starts_with("hour") || p[2].starts_with("sec"))
    }) {
        return true;
    }
    // "I merged the pr", "restarted the pod": work reported done.
    let verb = if matches!(first, "i" | "we" | "just") {
        w.get(1).map_or("", String::as_str)
    } else {
        first
    };
    if DONE.contains(&verb) {
        return true;
    }
    // "write a cron expression for every weekday": something to make now, not
    // a habit, whatever its "every".
    matches!(
        first,
        "write"
            | "create"
            | "generate"
            | "make"
            | "draft"
            | "give"
            | "show"
            | "build"
            | "plan"
            | "suggest"
            | "recommend"
            | "find"
    ) && w
        .get(1)
        .is_some_and(|x| matches!(x.as_str(), "a" | "an" | "me" | "us"))
        && w.get(2).is_none_or(|x| x != "note")
}

/// Whether `word` names a feeling of the moment ("tired", "anxious"); "good",
/// "great" and "bad" also judge lasting things ("I'm good at SQL").
fn passing_feeling(word: &str) -> bool {
    FEELINGS.contains(&word) && !matches!(word, "good" | "great" | "bad")
}

/// Whether `word` is a month's name or its short form ("may", another word
/// too, is not taken for one).
fn is_month(word: &str) -> bool {
    (word != "may" && crate::recall::dates::MONTHS.contains(&word)) || OTHER_MONTHS.contains(&word)
}

/// Whether the word after "since" is a date ("since March", "since 2024",
/// "since last year", "since v2"): a decision made then. "Since 14:05", "since
/// the internet is down" are a time of today or a reason.
fn since_a_date(next: &str) -> bool {
    is_month(next)
        || (next.len() == 4
            && next.starts_with(['1', '2'])
            && next.chars().all(|c| c.is_ascii_digit()))
        || matches!(next, "last" | "then" | "forever" | "ever")
        || (next.starts_with('v') && next[1..].starts_with(|c: char| c.is_ascii_digit()))
}

/// Whether a sentence's words name a horizon longer than the moment: a month,
/// a year, or one of `HORIZONS`.
fn has_horizon(w: &[String]) -> bool {
    let lower = format!(" {} ", w.join(" "));
    HORIZONS.iter().any(|h| lower.contains(h))
        || w.iter().any(|x| {
            is_month(x)
                || (x.len() == 4 && x.starts_with("20") && x.chars().all(|c| c.is_ascii_digit()))
        })
}

/// Whether a sentence opens with a condition about every such time, then says
/// what to do: a condition, a comma, and no question mark. A condition about
/// one moment ("when you're done, run the tests", "when it finishes, …") is a
/// request about now.
fn conditional_rule(sentence: &str, w: &[String]) -> bool {
    let Some(first) = w.first() else {
        return false;
    };
    if !CONDITIONS.contains(&first.as_str()) || sentence.contains(['?', '¿']) {
        return false;
    }
    let Some((condition, _)) = sentence.split_once(',') else {
        // "when reviewing my code focus on bugs first": a participle says
        // "every time" without a comma.
        return w.get(1).is_some_and(|x| x.len() > 4 && x.ends_with("ing"));
    };
    let condition = words(condition);
    !condition.iter().any(|x| {
        DEICTIC.contains(&x.as_str())
            || matches!(
                x.as_str(),
                "done"
                    | "finished"
                    | "finishes"
                    | "back"
                    | "ready"
                    | "over"
                    | "it's"
                    | "gets"
                    | "get"
            )
    })
}

/// The words of a sentence, lowercased, with the punctuation around each removed.
fn words(sentence: &str) -> Vec<String> {
    sentence
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '’')
                .replace('’', "'")
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// Shapes of pasted output: an error or exception named in the line, a stack
/// frame, an HTTP status line, SQL, a table's header, a tool's summary, a code
/// comment.
static PASTED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r#"(?x)
        \b[A-Z][A-Za-z]*(Error|Exception)\b | \bFATAL\b | ^E\s+[A-Z]
        | ^at\s+\S.*\(.*:\d+ | ^File\s+".*",\s+line\s+\d | \bHTTP/\d
        | \b(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP)\s.*\b(FROM|INTO|TABLE|SET|INDEX)\b
        | ^\d{4}-\d\d-\d\d[T\s]\d\d:\d\d | ^\[[a-z][a-z\ -]*\]\s | \)\s*=>\s
        | ^(Erreur|Fehler|Errore|Erro|Error|Błąd|Fout)\s*: | ^[\w\ ]{0,40}\b(error|exception)\s*:
        | \b\d+\s+errors?\b.*\b\d+\s+warnings?\b | \b[a-z_]\w*\.[a-z_]\w*\(
        | ^\w+(\.\w+){2,}:\s | ^(Author|Date|From|To|Subject|Sent|Cc|Commit):\s
        | \b[A-Z]{2,}(\s+[A-Z]{2,}){4}\b | ^Plan:\s+\d | ^(\#|//)\s
        | ^[\w.-]+:\s+(Error|error|ERROR)\b | ^(Error|ERROR):
        "#,
    )
    .expect("the pasted-output pattern")
});

/// Whether a line is pasted output: a log, an error or a quoted page (the whole
/// line is left out before it is split into sentences).
pub(super) fn looks_pasted(sentence: &str) -> bool {
    let s = sentence.trim_start();
    // "api-7d9f8c6b5-x2lqp 0/1 CrashLoopBackOff 14 32m": mostly numbers.
    let tokens: Vec<&str> = s.split_whitespace().collect();
    if tokens.len() >= 3
        && 2 * tokens
            .iter()
            .filter(|t| t.contains(|c: char| c.is_ascii_digit()))
            .count()
            >= tokens.len()
    {
        return true;
    }
    let lower = s.to_lowercase();
    s.contains("ERR!")
        || s.starts_with("$ ")
        || s.starts_with("Traceback")
        || s.starts_with("error[")
        || s.starts_with("error:")
        || s.starts_with("warning:")
        || s.starts_with("Exception")
        || s.contains("panicked at")
        || PASTED.is_match(s)
        || [
            "from the docs",
            "the docs say",
            "according to the docs",
            "quote:",
        ]
        .iter()
        .any(|p| lower.starts_with(p))
}

/// Whether `sentence` (the person's own words, one sentence, its preamble such
/// as "btw" or "ok" already removed, and not `passing`) states something lasting. `names_something`
/// says whether it holds an identifying token (a name, number, file, address).
pub(super) fn is_durable(sentence: &str, names_something: bool) -> bool {
    let s = sentence.trim();
    if s.contains(['?', '¿']) || looks_pasted(s) {
        return false;
    }
    let w = words(s);
    let Some(first) = w.first().map(String::as_str) else {
        return false;
    };
    let lower = format!(" {} ", w.join(" "));
    let has = |list: &[&str]| {
        w.iter().any(|x| list.contains(&x.as_str()))
            || (list == HABIT && lower.contains(" going forward "))
    };
    // "tabs not spaces", "vim over emacs": a choice said in three words.
    let contrast = w.len() == 3
        && (matches!(w[1].as_str(), "not" | "over" | "never" | "before") || w[2] == "only")
        && !DEICTIC.contains(&first);
    if w.len() < 3 || (w.len() < 4 && !names_something && !has(HABIT) && !contrast) {
        return false;
    }
    // "When reviewing my code, focus on bugs first", "quand je te parle de
    // cuisine, donne-moi …": a rule for every such time, not a question.
    let conditional = conditional_rule(s, &w);
    let habit = has(HABIT) || conditional;
    if (QUESTION_OPENERS.contains(&first) && !conditional) || HEDGES.contains(&first) {
        return false;
    }
    if s.starts_with('(') {
        return false;
    }
    // "you keep adding dependencies", "your last answer was too long": about
    // the assistant now (or a notification pasted: "your order has shipped"),
    // unless a rule.
    if matches!(first, "you" | "your") && !habit {
        return false;
    }
    // "we got burned by that": leans on the conversation for what it means.
    let last = w.last().map_or("", String::as_str);
    if DEICTIC.contains(&last) && !names_something {
        return false;
    }
    // "no emojis in commit messages", "no tomo café": "no" before a word
    // negates it; "no worries", "no i meant the other one" are a reply.
    let negation = first == "no"
        && w.get(1).is_some_and(|next| {
            !NO_IDIOMS.contains(&next.as_str()) && !DEICTIC.contains(&next.as_str())
        });
    if INTERJECTIONS.contains(&first) && !names_something && !negation {
        return false;
    }
    // "thanks a ton for the 3-hour session", "obrigado pela ajuda com o DAG":
    // a thank-you, whatever it names.
    if THANKS.contains(&first)
        && w.get(1)
            .is_some_and(|x| THANKS_FOR.contains(&x.as_str()) || THANKS.contains(&x.as_str()))
    {
        return false;
    }
    if CHATTER.iter().any(|p| lower.contains(&format!(" {p} "))) {
        return false;
    }
    if s.contains(EMOTIVE) && !names_something {
        return false;
    }
    if DEICTIC.contains(&first) && !names_something {
        return false;
    }
    // "I'm looking at the logs", "I'm mostly debugging": what the person is
    // doing now.
    let im = w
        .iter()
        .position(|x| matches!(x.as_str(), "i'm" | "im" | "i" | "we're"))
        .filter(|&i| w[i] != "i" || w.get(i + 1).is_some_and(|n| n == "am"));
    if let Some(i) = im {
        let next = &w[i + 1..w.len().min(i + 4)];
        // "I'm training for the marathon in september" lasts to its horizon.
        if next.iter().any(|x| x.len() > 4 && x.ends_with("ing")) && !has_horizon(&w) {
            return false;
        }
        if i == 0
            && next
                .first()
                .is_some_and(|x| PASSING_STATES.contains(&x.as_str()) || passing_feeling(x))
            && !has_horizon(&w)
        {
            return false;
        }
    }
    // A request about the task at hand: "let's …", "please convert this loop",
    // "run the tests again", "I need you to …"; a standing rule ("always run
    // the linter", "deploy freeze every year …") is not one.
    let opener = if matches!(first, "please" | "pls" | "plz" | "just") {
        w.get(1).map_or("", String::as_str)
    } else {
        first
    };
    let asks = TASK_VERBS.contains(&opener)
        || [
            " i need you to ",
            " i want you to ",
            " i'd like you to ",
            " let me know ",
        ]
        .iter()
        .any(|p| lower.contains(p));
    // "I need a regex for …", "need a Terraform snippet": something wanted now.
    let wants = {
        let at = usize::from(first == "i");
        w.get(at).is_some_and(|x| x == "need")
            && w.get(at + 1)
                .is_some_and(|x| matches!(x.as_str(), "a" | "an" | "some"))
    };
    // "the function below needs type hints": about what is on the screen.
    let on_screen = w
        .windows(3)
        .any(|p| p[0] == "the" && matches!(p[2].as_str(), "below" | "above"));
    if (asks || wants || on_screen) && !habit {
        return false;
    }
    // A bare imperative about something in the conversation ("use the helper
    // above") is a request too.
    if matches!(first, "please" | "pls" | "plz") && has(DEICTIC) && !habit {
        return false;
    }
    true
}
