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
//! The lists hold English and the other languages the scanner knows where a
//! word is unambiguous; a `?` is the question mark in every one of them.

/// Words that open a question.
const QUESTION_OPENERS: &[&str] = &[
    "what",
    "what's",
    "whats",
    "how",
    "how's",
    "why",
    "where",
    "where's",
    "when",
    "who",
    "who's",
    "which",
    "whose",
    "is",
    "are",
    "am",
    "was",
    "were",
    "do",
    "does",
    "did",
    "can",
    "could",
    "would",
    "should",
    "shall",
    "will",
    "may",
    "might",
    "have",
    "has",
    "any",
    "anyone",
    "wonder",
    "wondering",
    "isn't",
    "aren't",
    "don't you",
    "didn't",
    "doesn't",
    "qu'est-ce",
    "est-ce",
    "pourquoi",
    "comment",
    "quand",
    "quel",
    "quelle",
    "warum",
    "wieso",
    "weshalb",
    "wann",
    "welche",
    "welcher",
    "qué",
    "cómo",
    "dónde",
    "cuándo",
    "cuál",
    "porque",
    "onde",
    "quando",
    "qual",
    "perché",
    "dove",
    "quale",
    "waarom",
    "wanneer",
    "welke",
    "dlaczego",
    "gdzie",
    "kiedy",
    "czy",
    "wie",
    "hoe",
];

/// Interjections, greetings, thanks and acknowledgements.
const INTERJECTIONS: &[&str] = &[
    "hi",
    "hey",
    "hello",
    "yo",
    "hiya",
    "howdy",
    "ok",
    "okay",
    "k",
    "kk",
    "cool",
    "great",
    "nice",
    "perfect",
    "awesome",
    "amazing",
    "excellent",
    "thanks",
    "thank",
    "thx",
    "ty",
    "cheers",
    "yes",
    "yep",
    "yeah",
    "yup",
    "no",
    "nope",
    "nah",
    "sure",
    "lol",
    "lmao",
    "haha",
    "hah",
    "hehe",
    "wow",
    "ugh",
    "uff",
    "ufff",
    "oh",
    "ah",
    "ahh",
    "hmm",
    "hm",
    "oops",
    "damn",
    "argh",
    "meh",
    "yay",
    "omg",
    "welp",
    "right",
    "alright",
    "got",
    "gotcha",
    "makes",
    "sounds",
    "fine",
    "fingers",
    "good",
    "morning",
    "night",
    "bye",
    "later",
    "genial",
    "gracias",
    "danke",
    "merci",
    "bonjour",
    "salut",
    "hallo",
    "hola",
    "buenas",
    "ciao",
    "grazie",
    "obrigado",
    "obrigada",
    "olá",
    "oi",
    "dzięki",
    "dziękuję",
    "cześć",
    "dank",
    "bedankt",
    "mamma",
    "super",
    "prima",
    "parfait",
    "vale",
    "claro",
    "certo",
    "va",
    "bene",
    "tak",
    "ja",
    "oui",
    "sí",
    "si",
    "sim",
];

/// Imperative verbs of work on the task at hand.
const TASK_VERBS: &[&str] = &[
    "add",
    "fix",
    "run",
    "rerun",
    "rename",
    "write",
    "rewrite",
    "make",
    "create",
    "convert",
    "split",
    "translate",
    "explain",
    "show",
    "check",
    "look",
    "open",
    "update",
    "remove",
    "delete",
    "refactor",
    "try",
    "retry",
    "test",
    "build",
    "debug",
    "help",
    "give",
    "tell",
    "list",
    "find",
    "search",
    "revert",
    "undo",
    "redo",
    "merge",
    "commit",
    "review",
    "summarize",
    "summarise",
    "generate",
    "install",
    "upgrade",
    "bump",
    "clean",
    "move",
    "change",
    "implement",
    "format",
    "sort",
    "print",
    "send",
    "paste",
    "copy",
    "read",
    "edit",
    "replace",
    "simplify",
    "optimize",
    "optimise",
    "improve",
    "document",
    "describe",
    "compare",
    "draft",
    "continue",
    "proceed",
    "deploy",
    "push",
    "pull",
    "fetch",
    "start",
    "stop",
    "restart",
    "kill",
    "lets",
    "let's",
    "wrap",
    "finish",
    "do",
    "call",
    "ping",
    "email",
    "schedule",
    "book",
    "buy",
    "order",
    "share",
    "post",
    "upload",
    "download",
    "close",
    "resolve",
    "rebase",
    "squash",
    "cherry-pick",
    "tidy",
    "polish",
    "shorten",
    "expand",
    "drop",
    "mach",
    "kannst",
    "könntest",
    "bitte",
    "peux-tu",
    "pourrais-tu",
    "fais",
    "puedes",
    "podrías",
    "haz",
    "podes",
    "pode",
    "faz",
    "puoi",
    "potresti",
    "fai",
    "kun",
    "zrób",
    "możesz",
];

/// Words that make an imperative a standing rule rather than a request for now.
const HABIT: &[&str] = &[
    "always",
    "never",
    "every",
    "everywhere",
    "must",
    "should",
    "whenever",
    "default",
    "anymore",
    "nie",
    "immer",
    "jamais",
    "toujours",
    "siempre",
    "nunca",
    "sempre",
    "mai",
    "altijd",
    "nooit",
    "zawsze",
    "nigdy",
];

/// Words that open a hedge, a hypothesis or a thought not yet decided.
const HEDGES: &[&str] = &[
    "maybe",
    "perhaps",
    "probably",
    "possibly",
    "if",
    "unless",
    "hopefully",
    "ideally",
    "might",
    "vielleicht",
    "peut-être",
    "quizás",
    "quizá",
    "talvez",
    "forse",
    "misschien",
    "może",
];

/// Phrases that report someone else's words, or plans dropped.
const REPORTED: &[&str] = &[
    " said ",
    " says ",
    " wrote ",
    // Not " writes ": "reads outnumber writes 3:1" reports nobody.
    " writes that ",
    " told me ",
    " asked ",
    "here's what",
    "heres what",
    " were going to ",
    " was going to ",
    " i think we should ",
    " we should probably ",
    " like i said ",
    " as i said ",
    " let me ",
];

/// Words that point at the conversation itself.
const DEICTIC: &[&str] = &[
    "this", "that", "these", "those", "it", "here", "above", "below", "again", "there",
];

/// Phrases of ephemeral status: what is happening now, not what lasts.
const EPHEMERAL: &[&str] = &[
    "right now",
    "at the moment",
    "atm",
    "one sec",
    "a sec",
    "one moment",
    "brb",
    "be right back",
    "give me",
    "gimme",
    "in a minute",
    "in a bit",
    "still waiting",
    "waiting on",
    "waiting for",
    "currently on the",
    "on my way",
    "afk",
    "just now",
    "for a moment",
    "today i'm",
    "today i am",
    "tonight i'm",
];

/// Phrases of feeling and chatter.
const CHATTER: &[&str] = &[
    "can't believe",
    "cant believe",
    "i'm dying",
    "driving me",
    "what a day",
    "what a week",
    "so cursed",
    "makes sense",
    "sounds good",
    "got it",
    "my bad",
    "no worries",
    "never mind",
    "nevermind",
];

/// Passing states: "I'm tired" says how the person is now, not who they are.
const PASSING_STATES: &[&str] = &[
    "tired",
    "exhausted",
    "sleepy",
    "hungry",
    "bored",
    "stressed",
    "happy",
    "sad",
    "excited",
    "annoyed",
    "frustrated",
    "confused",
    "sick",
    "busy",
    "back",
    "here",
    "done",
    "late",
    "ready",
    "stuck",
    "lost",
    "sorry",
    "glad",
    "curious",
    "so",
    "really",
    "just",
    "still",
    "about",
    "going",
    "off",
    "away",
    "free",
    "around",
];

/// Words and phrases of a thought not yet decided, anywhere in a sentence: "we
/// could maybe drop staging", "thinking we might move to gitlab, not sure".
const UNDECIDED: &[&str] = &[
    " maybe ",
    " perhaps ",
    " probably ",
    " possibly ",
    " might ",
    " not sure ",
    " unsure ",
    " thinking about ",
    " thinking of ",
    " i wonder ",
    " wondering ",
    " considering ",
    " at some point ",
    " nothing decided ",
    " not decided ",
    " undecided ",
    " if i had ",
    " i don't care ",
    " i dont care ",
    " vielleicht ",
    " peut-être ",
    " quizás ",
    " quizá ",
    " tal vez ",
    " talvez ",
    " forse ",
    " misschien ",
    " może ",
];

/// Verbs that report what someone else thinks or says ("my coworker thinks …",
/// "the vendor claims …", "mi jefe dice que …", "die Kollegin meinte …").
const OTHERS_SAY: &[&str] = &[
    " thinks ",
    " mentioned ",
    " claims ",
    " claimed ",
    " swears by ",
    " keeps telling ",
    " kept telling ",
    " suggested ",
    " suggests ",
    " reckons ",
    " according to ",
    " dice que ",
    " dijo que ",
    " disse que ",
    " diz que ",
    " dit que ",
    " a dit ",
    " sagt ",
    " meinte ",
    " meint ",
    " zegt ",
    " zei ",
];

/// What is true only now: a time of today, a progress, an incident, where the
/// person is at the moment.
const NOW: &[&str] = &[
    " today ",
    " tonight ",
    " this morning ",
    " this afternoon ",
    " this evening ",
    " this week ",
    " again ",
    " almost done ",
    " half way ",
    " halfway ",
    " no luck ",
    " so far ",
    " not yet ",
    " failed ",
    " failing ",
    " crashed ",
    " went down ",
    " is down ",
    " outage ",
    " got wiped ",
    " came back up ",
    " i'm at the ",
    " im at the ",
    " i'm on my ",
    " im on my ",
    " battery ",
    " hoje ",
    " heute ",
    " aujourd'hui ",
    " hoy ",
    " vandaag ",
    " oggi ",
    " dzisiaj ",
    " cette semaine ",
    " esta semana ",
    " diese woche ",
    " deze week ",
    " gerade ",
];

/// Feelings and verdicts of the moment ("yaml is cursed lol", "this codebase is
/// a mess").
const MOOD: &[&str] = &[
    " lol ",
    " lmao ",
    " haha ",
    " hehe ",
    " ugh ",
    " wtf ",
    " is a mess ",
    " is terrible ",
    " is cursed ",
    " sucks ",
    " interesting ",
    " never thought ",
    " fingers crossed ",
];

/// What a request for now works on: "in this snippet", "for this example".
const AT_HAND: &[&str] = &[
    "snippet",
    "example",
    "file",
    "function",
    "module",
    "method",
    "class",
    "line",
    "loop",
    "query",
    "test",
    "branch",
    "pr",
    "commit",
    "error",
    "message",
    "page",
    "script",
    "cell",
    "component",
    "cafe",
    "one",
    "time",
    "case",
];

/// Verbs that report one piece of work done ("I merged the pr", "restarted the
/// pod", "rolled back to v3.2"): an event, not something that lasts.
const DONE: &[&str] = &[
    "merged",
    "pushed",
    "restarted",
    "rebooted",
    "rolled",
    "finished",
    "fixed",
    "ran",
    "reverted",
    "rebased",
    "committed",
    "installed",
    "reinstalled",
    "upgraded",
    "closed",
    "opened",
    "sent",
    "deleted",
    "tried",
    "tested",
    "checked",
    "pulled",
    "cloned",
    "built",
    "shipped",
    "reset",
    "killed",
    "bumped",
    "deployed",
];

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
    let lower = format!(" {} ", w.join(" "));
    let any = |list: &[&str]| list.iter().any(|p| lower.contains(p));
    if any(UNDECIDED) || any(OTHERS_SAY) || any(REPORTED) || any(MOOD) {
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
        " starting ",
        " since ",
        " settled ",
    ]
    .iter()
    .any(|p| lower.contains(p));
    if any(NOW) && !decided {
        return true;
    }
    // "Deploying to staging now", "installing node now": a progress.
    let first = w.first().map_or("", String::as_str);
    if first.len() > 5 && first.ends_with("ing") && lower.contains(" now ") {
        return true;
    }
    if matches!(first, "still" | "almost" | "finally" | "currently") {
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
        "write" | "create" | "generate" | "make" | "draft" | "give" | "show" | "build"
    ) && w
        .get(1)
        .is_some_and(|x| matches!(x.as_str(), "a" | "an" | "me" | "us"))
        && w.get(2).is_none_or(|x| x != "note")
}

/// Emoji that laugh, cheer or shrug.
const EMOTIVE: &[char] = &[
    '😂', '🤣', '😅', '🙃', '🤞', '👍', '🙏', '😭', '😩', '🥲', '😆', '😄', '🎉', '🙌', '😬', '🤦',
    '🤷',
];

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
        | ^(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP)\s.*\b(FROM|INTO|TABLE|SET|INDEX)\b
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
    if w.len() < 3 || (w.len() < 4 && !names_something && !has(HABIT)) {
        return false;
    }
    if QUESTION_OPENERS.contains(&first) || HEDGES.contains(&first) {
        return false;
    }
    if s.starts_with('(') {
        return false;
    }
    // "you keep adding dependencies": about the assistant now, unless a rule.
    if first == "you" && !has(HABIT) {
        return false;
    }
    // "we got burned by that": leans on the conversation for what it means.
    let last = w.last().map_or("", String::as_str);
    if DEICTIC.contains(&last) && !names_something {
        return false;
    }
    if INTERJECTIONS.contains(&first) && !names_something {
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
    if EPHEMERAL.iter().any(|p| lower.contains(&format!(" {p} "))) {
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
        if next.iter().any(|x| x.len() > 4 && x.ends_with("ing")) {
            return false;
        }
        if i == 0
            && next
                .first()
                .is_some_and(|x| PASSING_STATES.contains(&x.as_str()))
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
    if asks && !has(HABIT) {
        return false;
    }
    // A bare imperative about something in the conversation ("use the helper
    // above") is a request too.
    if matches!(first, "please" | "pls" | "plz") && has(DEICTIC) && !has(HABIT) {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_without_trigger_words_are_durable() {
        for s in [
            "Customer emails go out through Postmark",
            "Feature flags live in LaunchDarkly",
            "We deploy the billing service with Nomad, never Kubernetes",
            "deploy freeze every year from Dec 20 to Jan 3",
            "Test coverage must stay above 80% on the core package",
            "Go services use chi for routing, not gin",
            "No ORMs in the reporting service, raw SQL only",
            "Nie pijam alkoholu",
            "I'm allergic to peanuts",
            "certs are issued by Let's Encrypt through cert-manager",
        ] {
            assert!(is_durable(s, true), "{s}");
        }
    }

    #[test]
    fn questions_requests_status_and_chatter_are_not() {
        for s in [
            "what does set -euo pipefail actually do",
            "how do I revert the last commit?",
            "run the tests again",
            "Please convert this loop into a list comprehension",
            "can you rename this function to parse_config",
            "I'm looking at the logs now",
            "Running the migration on staging at the moment",
            "still waiting on CI",
            "ugh what a day",
            "this bug is driving me nuts",
            "honestly computers were a mistake 😂",
            "npm ERR! code ERESOLVE",
            "I'm so tired",
            "let's wrap this PR up",
        ] {
            assert!(!is_durable(s, false), "{s}");
        }
    }

    #[test]
    fn what_is_true_only_now_or_not_yet_decided_passes_whatever_its_shape() {
        for s in [
            "we should maybe switch the queue to NATS",
            "Priya thinks we should never use ORMs",
            "according to the wiki the API key rotates monthly",
            "meine Chefin meinte, wir sollten Svelte nehmen",
            "the nightly build failed on the arm runner",
            "I'm at the dentist so replies will be slow",
            "standup is cancelled today",
            "Rebuilding the docker image now",
            "Still chasing that flaky integration test",
            "I pushed the hotfix to staging",
            "Always use double quotes in this file please",
            "Write a regex that matches every ISO date",
            "ValueError: invalid literal for int() with base 10",
            "at Server.handle (/app/server.js:88:17)",
            "HTTP/2 403 Forbidden",
            "PID USER TIME COMMAND STATE",
            "terraform is so cursed lol",
            "I have a call in 10 minutes",
        ] {
            assert!(passing(s), "{s}");
        }
        for s in [
            "We deploy the billing service with Nomad, never Kubernetes",
            "from now on answer in German",
            "We moved from Jenkins to GitHub Actions last year",
            "we use pnpm now",
            "Error tracking goes to Sentry",
            "in this repo we indent with tabs",
            "Standup is at 9:30 CET every weekday",
            "My daughter is allergic to sesame",
        ] {
            assert!(!passing(s), "{s}");
        }
    }
}
