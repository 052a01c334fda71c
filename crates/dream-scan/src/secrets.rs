//! Secret rules: matched against the ORIGINAL text (case and digits matter), each
//! triggered by literals found in the normalised text's single multi-pattern pass.
//!
//! Provider formats are recognised by shape: a known prefix followed by a body of
//! the provider's length (or, for providers whose length varies, a generous minimum)
//! is a key whatever its entropy — `sk-proj-AAAA…` and `ghp_abc…xyz0123456789` are
//! keys a user pasted, however tidy. A body that stands for a key is not one
//! ([`stands_for_a_key`]): a mask (`ghp_xxxx…`, `AKIA****…`), a placeholder
//! (`sk-<your-key>`, `AKIA…EXAMPLE`), or words (`sk-proj-your-project-key-goes-here`).
//! Neither is a provider-format token labelled on its line as a sample
//! (`example key: sk_test_…`, `dummy token: ghp_…`; see [`labelled_sample`]).
//! Stripe test-mode keys (`sk_test_`, `rk_test_`) ARE secrets: they authenticate
//! against a real account's test mode, and "test key" is what a user calls their own.
//!
//! Cloud connection strings carry their key as a field: Azure Storage and Cosmos DB
//! `AccountKey=`, Service Bus and Event Hubs `SharedAccessKey=`, SAS tokens' `sig=`;
//! Google service-account files their `"private_key_id"` (the key itself is a PEM
//! block, also when its newlines are JSON `\n` escapes). Only the value is the
//! finding, so redaction keeps the rest of the string readable.
//!
//! Assignments (`password=…`,
//! `api_key: …`), natural-language disclosures ("my password is …"), bearer tokens
//! and generic tokens near a key-like word must also pass a value check: not a
//! placeholder (`<…>`, `${…}`, `YOUR_API_KEY`), not a code reference
//! (`settings.SECRET_KEY`, `os.getenv(…)`), and random enough.

use std::ops::Range;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use crate::Severity;

/// One automaton for a list of substrings, built on first use: a short value holds
/// one of them when the automaton matches it (one pass instead of a `contains` per
/// word; secret-dense text asks this of every rejected value). Long lines are left
/// to `contains`, whose first-byte search is faster there.
fn any_of(words: &[&str]) -> AhoCorasick {
    AhoCorasick::new(words).expect("a word list builds")
}

/// A post-match check on the reported value; the flag says whether the value was
/// quoted (a quoted value may contain `(`, `[`, `$` without being code).
pub(crate) type ValueCheck = fn(&str, bool) -> bool;

/// A rule over the original text.
pub(crate) struct SecretRule {
    pub id: &'static str,
    pub severity: Severity,
    /// Regex over the original text.
    pub regex: &'static str,
    /// Capture group that is the secret: 0 for the whole match, else the first
    /// participating group from this index on (alternative value shapes).
    pub group: usize,
    /// Trigger literals as they appear in text (normalised when the scanner is built).
    pub anchors: &'static [&'static str],
    /// Bytes searched on each side of a trigger.
    pub radius: usize,
    pub check: Option<ValueCheck>,
    /// The regex matches only a key word; every token that starts within
    /// [`TOKEN_REACH`] bytes after it (same line) is a candidate value.
    pub tokens_after: bool,
}

/// How far after a key word a token may start to be read as its value.
pub(crate) const TOKEN_REACH: usize = 40;

const fn rule(
    id: &'static str,
    regex: &'static str,
    group: usize,
    anchors: &'static [&'static str],
) -> SecretRule {
    SecretRule {
        id,
        severity: Severity::High,
        regex,
        group,
        anchors,
        radius: 320,
        check: None,
        tokens_after: false,
    }
}

const fn checked(
    id: &'static str,
    regex: &'static str,
    group: usize,
    anchors: &'static [&'static str],
    check: ValueCheck,
) -> SecretRule {
    SecretRule {
        id,
        severity: Severity::High,
        regex,
        group,
        anchors,
        radius: 320,
        check: Some(check),
        tokens_after: false,
    }
}

/// Rule id of the PEM private-key detector (custom code, not a regex rule).
pub(crate) const PEM_RULE: &str = "pem_private_key";

/// The regex rules, most specific first (a later rule's finding inside an earlier
/// one's span is dropped).
pub(crate) fn secret_rules() -> Vec<SecretRule> {
    vec![
        checked(
            "anthropic_api_key",
            r"(?-u:\b)sk-ant-(?:[a-z]{3,10}\d{2}-)?[A-Za-z0-9_\-]{32,300}",
            0,
            &["sk-ant-"],
            anthropic_body,
        ),
        checked(
            "openai_api_key",
            r"(?-u:\b)sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{32,300}",
            0,
            &["sk-"],
            openai_like,
        ),
        checked(
            "aws_access_key_id",
            r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}(?-u:\b)",
            0,
            &[
                "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "APKA",
                "AROA", "ASCA",
            ],
            |s, _| provider_body(&s[4..]),
        ),
        checked(
            "aws_secret_access_key",
            r#"(?i:aws.{0,20}secret|secret.?access.?key|aws_?secret)[^\n]{0,30}?[=:"'\s]\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
            1,
            &["secret"],
            random_40,
        ),
        checked(
            "github_token",
            r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{36,255}(?-u:\b)",
            0,
            &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
            |s, _| provider_body(&s[4..]),
        ),
        checked(
            "github_pat",
            r"(?-u:\b)github_pat_[A-Za-z0-9_]{50,255}",
            0,
            &["github_pat_"],
            |s, _| provider_body(&s[11..]),
        ),
        checked(
            "gitlab_token",
            r"(?-u:\b)gl(?:pat|dt|rt|ptt|soat|cbt|ft|imt|oas|agent)-[A-Za-z0-9_\-]{20,255}",
            0,
            &[
                "glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "glft-", "glimt-",
                "gloas-", "glagent-",
            ],
            gitlab_body,
        ),
        checked(
            "slack_token",
            r"(?-u:\b)(?:xox[abposr]-[A-Za-z0-9\-]{10,255}|xapp-\d-[A-Z0-9]{1,64}-\d{1,32}-[A-Za-z0-9]{1,128})",
            0,
            &[
                "xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xapp-",
            ],
            slack_body,
        ),
        rule(
            "slack_webhook",
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{20,400}",
            0,
            &["hooks.slack.com"],
        ),
        // Test-mode keys included: see the module documentation.
        checked(
            "stripe_secret_key",
            r"(?-u:\b)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,255}",
            0,
            &["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
            |s, _| provider_body(&s[8..]),
        ),
        checked(
            "stripe_webhook_secret",
            r"(?-u:\b)whsec_[A-Za-z0-9+/]{24,255}",
            0,
            &["whsec_"],
            |s, _| provider_body(&s[6..]),
        ),
        checked(
            "google_api_key",
            r"(?-u:\b)AIza[0-9A-Za-z_\-]{35}",
            0,
            &["AIza"],
            |s, _| provider_body(&s[4..]),
        ),
        checked(
            "google_oauth_secret",
            r"(?-u:\b)GOCSPX-[A-Za-z0-9_\-]{20,255}",
            0,
            &["GOCSPX-"],
            |s, _| provider_body(&s[7..]),
        ),
        checked(
            "google_oauth_token",
            r"(?-u:\b)ya29\.[0-9A-Za-z_\-]{30,400}",
            0,
            &["ya29."],
            |s, _| provider_body(&s[5..]),
        ),
        // A service-account file's key id (its key is a PEM block, found as such).
        checked(
            "gcp_private_key_id",
            r#"(?-u:\b)private_key_id\\?["']?\s*[:=]\s*\\?["']?([0-9a-f]{40})(?-u:\b)"#,
            1,
            &["private_key_id"],
            |s, _| provider_body(s),
        ),
        // Azure Storage / Cosmos DB `AccountKey=`, Service Bus / Event Hubs / IoT Hub
        // `SharedAccessKey=` (the base64 key; `SharedAccessKeyName=` is a name).
        checked(
            "azure_account_key",
            r"(?i)(?-u:\b)AccountKey\s*=\s*([A-Za-z0-9+/]{20,200}={0,2})",
            1,
            &["accountkey"],
            base64_key,
        ),
        checked(
            "azure_shared_access_key",
            r"(?i)(?-u:\b)(?:SharedAccessKey|SharedSecretValue|PrimaryKey|SecondaryKey)\s*=\s*([A-Za-z0-9+/]{20,200}={0,2})",
            1,
            &[
                "sharedaccesskey",
                "sharedsecretvalue",
                "primarykey",
                "secondarykey",
            ],
            base64_key,
        ),
        // A SAS token's signature: `sig=` in a query or `SharedAccessSignature=` with a
        // version (`sv=2022-11-02`) or as a Service Bus token (`SharedAccessSignature
        // sr=…&sig=…`). The signature is the secret; the rest of the URL stays.
        checked(
            "azure_sas_signature",
            r#"(?i)(?:(?:[?&;=]sv=\d{4}-\d{2}-\d{2}|SharedAccessSignature[ =])[^\s"'<>]{0,300}?[?&;]sig=([A-Za-z0-9%+/]{20,200}={0,2})|[?&;]sig=([A-Za-z0-9%+/]{20,200}={0,2})[^\s"'<>]{0,300}?[&;]sv=\d{4}-)"#,
            1,
            &["sig="],
            sas_signature,
        ),
        checked(
            "jwt",
            r"(?-u:\b)eyJ[A-Za-z0-9_\-]{8,2000}\.eyJ[A-Za-z0-9_\-]{8,4000}\.[A-Za-z0-9_\-]{0,2000}",
            0,
            &["eyJ"],
            jwt_header,
        ),
        checked(
            "url_credentials",
            r#"(?-u:\b)(?:(?i:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|cockroachdb|clickhouse)://[^\s:/?#@"'<>\[\]]{0,64}:([^\s@"'<>]{1,128})@|[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/?#@"'<>\[\]]{0,64}:([^\s/@"'<>]{1,128})@)[A-Za-z0-9.\-\[\]]{1,255}"#,
            1,
            &["://"],
            url_password,
        ),
        checked(
            "password_assignment",
            r#"(?i)(?:^|[^A-Za-z0-9])(?:[A-Za-z0-9]*[_\-.])?(?:pass(?:word|wd|phrase)?|pwd|passwort|kennwort|senha|contrase(?:ñ|n)a)["']?\s*(?:=|:=|:|=>|->)\s*(?:"([^"\n]{4,200})"|'([^'\n]{4,200})'|([^\s"'`,;)}\]]{4,200}))"#,
            1,
            &["pass", "pwd", "passwort", "kennwort", "senha", "contrase"],
            password_value,
        ),
        checked(
            "secret_assignment",
            r#"(?i)(?:^|[^A-Za-z0-9])(?:[A-Za-z0-9]*[_\-.])*?(?:api[_\-.]?key|apikey|x-api-key|api[_\-.]?token|access[_\-.]?token|auth[_\-.]?token|refresh[_\-.]?token|bearer[_\-.]?token|client[_\-.]?secret|app[_\-.]?secret|secret[_\-.]?key|private[_\-.]?key|signing[_\-.]?key|encryption[_\-.]?key|master[_\-.]?key|secret|token|credentials?)["']?\s*(?:=|:=|:|=>|->)\s*(?:"([^"\n]{8,400})"|'([^'\n]{8,400})'|([^\s"'`,;)}\]]{8,400}))"#,
            1,
            &["key", "token", "secret", "credential"],
            secret_value,
        ),
        checked(
            "password_phrase",
            r#"(?i)(?:password|passphrase|passcode|passwort|kennwort|mot de passe|contraseña|contrasena|clave|senha)(?:\s+(?:for|of|to|de|del|da|do|della|dello|du|de la|des|für|fur|vom|zum|zur|der)\s+[^\n]{1,40}?)?\s+(?:is|was|=|:|ist|lautet|war|est|était|es|era|é|è|e)\s*:?\s*["'«“]?([^\s"'»”]{6,64})"#,
            1,
            &[
                "password",
                "passphrase",
                "passcode",
                "passwort",
                "kennwort",
                "mot de passe",
                "contrase",
                "clave",
                "senha",
            ],
            password_value,
        ),
        checked(
            "password_flag",
            r#"(?i)(?-u:\b)(?:(?:(?:docker|podman)\s+login|redis-cli|sshpass|smbclient|net\s+use|htpasswd|mongo|mongosh)\b[^\n]{0,100}?\s(?:-p|--password[= ]|-a|--pass[= ])\s*['"]?([^\s'"]{6,128})|(?:mysql|mysqldump|mariadb)\b[^\n]{0,100}?\s(?:-p([^\s'"]{6,128})|--password=['"]?([^\s'"]{6,128})))"#,
            1,
            &[
                "docker",
                "podman",
                "mysql",
                "mariadb",
                "mongo",
                "redis-cli",
                "sshpass",
                "htpasswd",
                "smbclient",
                "net use",
            ],
            password_value,
        ),
        checked(
            "basic_auth_flag",
            r#"(?-u:\b)(?:curl|wget|http)\b[^\n]{0,100}?\s(?:-u|--user)\s*['"]?[^\s:'"]{1,64}:([^\s'"]{4,128})"#,
            1,
            &["curl", "wget", "http"],
            password_value,
        ),
        checked(
            "bearer_token",
            r"(?i)(?-u:\b)bearer\s+([A-Za-z0-9._~+/\-]{16,2000}={0,2})",
            1,
            &["bearer"],
            secret_value,
        ),
        SecretRule {
            tokens_after: true,
            ..checked(
                "high_entropy_token",
                r"(?i)(?-u:\b)(?:key|token|secret|password|passwd|credential|credentials|api[ _\-]?key|access[ _\-]?key|auth)(?-u:\b)",
                0,
                &[
                    "key",
                    "token",
                    "secret",
                    "password",
                    "passwd",
                    "credential",
                    "auth",
                ],
                generic_value,
            )
        },
    ]
}

// ---------------------------------------------------------------- value checks

fn classes(s: &str) -> (bool, bool, bool, bool) {
    let mut lower = false;
    let mut upper = false;
    let mut digit = false;
    let mut other = false;
    for c in s.chars() {
        if c.is_ascii_lowercase() {
            lower = true;
        } else if c.is_ascii_uppercase() {
            upper = true;
        } else if c.is_ascii_digit() {
            digit = true;
        } else if !c.is_whitespace() {
            other = true;
        }
    }
    (lower, upper, digit, other)
}

/// Shannon entropy in bits per character.
pub(crate) fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    let mut n = 0u32;
    for b in s.bytes() {
        counts[b as usize] += 1;
        n += 1;
    }
    if n == 0 {
        return 0.0;
    }
    let n = f64::from(n);
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

fn mixed_alnum(s: &str, _quoted: bool) -> bool {
    let (lower, upper, digit, _) = classes(s);
    digit && (lower || upper)
}

/// The body of a provider-format token (what follows its prefix): a key whatever its
/// entropy, unless it stands for one.
pub(crate) fn provider_body(body: &str) -> bool {
    !body.is_empty() && !stands_for_a_key(body)
}

/// A token body that stands for a key rather than being one: a mask (`xxxx…`,
/// `****`, `0000…`), a placeholder (`<…>`, `${…}`, `your_key_here`, `…EXAMPLE`), or
/// words (`ThisIsNotARealToken`, `my-project-key-goes-here`). A run of one letter
/// (`AAAA…`) or the alphabet in order is none of these: tidy, but pasted as a key.
pub(crate) fn stands_for_a_key(body: &str) -> bool {
    masked_or_placeholder(body) || reads_as_words(body)
}

/// A mask (`xxxx…`, `****`, `0000…`) or a placeholder (`<…>`, `${…}`,
/// `your_key_here`, `…EXAMPLE`): [`stands_for_a_key`] without the words test.
pub(crate) fn masked_or_placeholder(body: &str) -> bool {
    static MASKS: LazyLock<AhoCorasick> = LazyLock::new(|| {
        any_of(&[
            "xxxx", "****", "...", "…", "${", "$(", "{{", "}}", "%s", "<", ">",
        ])
    });
    static PLACEHOLDERS: LazyLock<AhoCorasick> = LazyLock::new(|| {
        any_of(&[
            "your_",
            "your-",
            "yourkey",
            "yourtoken",
            "yourapikey",
            "_here",
            "-here",
            "example",
            "placeholder",
            "redacted",
            "changeme",
            "replace_me",
            "replace-me",
            "replaceme",
            "insert_",
            "insert-",
        ])
    });
    let lower = body.to_ascii_lowercase();
    body.chars()
        .all(|c| matches!(c, 'x' | 'X' | '*' | '.' | '#' | '0' | '-' | '_' | '='))
        || MASKS.is_match(&lower)
        || PLACEHOLDERS.is_match(&lower)
}

/// Three or more words (letter runs split at separators, digits and lower-to-upper
/// case changes), each at most sixteen letters with a vowel, and vowels a word's share
/// of the letters: `ThisIsNotARealToken`, `my-openai-project-key`. Random bodies split
/// into runs without vowels (`Zq`, `Lr`, `Tn`); a run of one letter is one word.
pub(crate) fn reads_as_words(body: &str) -> bool {
    let is_vowel = |c: char| "aeiouyAEIOUY".contains(c);
    let mut words = 0usize;
    let mut letters = 0usize;
    let mut vowels = 0usize;
    let mut word = String::new();
    let mut prev_lower = false;
    let mut flush = |word: &mut String| -> bool {
        if word.is_empty() {
            return true;
        }
        let ok = word.len() <= 16 && word.chars().any(is_vowel);
        words += 1;
        word.clear();
        ok
    };
    for c in body.chars() {
        if c.is_ascii_alphabetic() {
            if c.is_ascii_uppercase() && prev_lower && !flush(&mut word) {
                return false;
            }
            letters += 1;
            vowels += usize::from(is_vowel(c));
            prev_lower = c.is_ascii_lowercase();
            word.push(c);
        } else {
            prev_lower = false;
            if !flush(&mut word) {
                return false;
            }
        }
    }
    if !flush(&mut word) {
        return false;
    }
    words >= 3 && 100 * vowels >= 30 * letters
}

fn anthropic_body(s: &str, _quoted: bool) -> bool {
    let body = s.trim_start_matches("sk-ant-");
    // The key kind and version (`api03-`, `admin01-`) are not part of the key.
    let body = match body.split_once('-') {
        Some((kind, rest))
            if kind.len() <= 12
                && kind.ends_with(|c: char| c.is_ascii_digit())
                && kind.starts_with(|c: char| c.is_ascii_lowercase()) =>
        {
            rest
        }
        _ => body,
    };
    provider_body(body)
}

/// GitLab: the classic 20-character body is a key whatever its entropy; other
/// lengths (other token kinds and formats) must look random.
fn gitlab_body(s: &str, quoted: bool) -> bool {
    let body = s.split_once('-').map_or(s, |(_, b)| b);
    random_body(s, quoted) || (body.len() == 20 && provider_body(body))
}

/// Slack: `xoxb-<team>-<bot>-<secret>` holds digits; a body of twenty or more token
/// characters is a token whatever it holds.
fn slack_body(s: &str, _quoted: bool) -> bool {
    let body = s.split_once('-').map_or(s, |(_, b)| b);
    !stands_for_a_key(body) && (body.bytes().any(|b| b.is_ascii_digit()) || body.len() >= 20)
}

/// A base64 key in a connection string (`AccountKey=…`, `SharedAccessKey=…`).
fn base64_key(s: &str, _quoted: bool) -> bool {
    s.trim_end_matches('=').len() >= 20 && provider_body(s.trim_end_matches('='))
}

/// A SAS signature (base64, usually URL-escaped: `%2B`, `%2F`, `%3D`).
fn sas_signature(s: &str, _quoted: bool) -> bool {
    let unescaped = s
        .replace("%2B", "+")
        .replace("%2b", "+")
        .replace("%2F", "/")
        .replace("%2f", "/")
        .replace("%3D", "")
        .replace("%3d", "");
    let body = unescaped.trim_end_matches('=');
    body.len() >= 20 && !body.contains('%') && provider_body(body)
}

/// Whether the value at `start` (a provider-format token, or any token a key word
/// frames) is labelled, just before it on its
/// line, as a sample: `example key: …`, `sample token …`, `a dummy AWS key …`,
/// `for example …`. The label must reach the token through key words only (`api`,
/// `key`, `token`, a provider's name): "for example, my key is …" is no label. "Test"
/// is no label either: a user calls their own test-mode key a test key.
pub(crate) fn labelled_sample(text: &str, start: usize) -> bool {
    const LABELS: &[&str] = &[
        "example",
        "sample",
        "dummy",
        "fake",
        "placeholder",
        "mock",
        "illustrative",
        "made-up",
    ];
    const FILLERS: &[&str] = &[
        "key",
        "keys",
        "token",
        "tokens",
        "secret",
        "secrets",
        "api",
        "access",
        "value",
        "values",
        "credential",
        "credentials",
        "string",
        "id",
        "test",
        "live",
        "stripe",
        "openai",
        "anthropic",
        "github",
        "gitlab",
        "slack",
        "aws",
        "google",
        "azure",
        "a",
        "an",
        "the",
        "of",
        "like",
        "such",
        "as",
        "is",
    ];
    if declared_sample(text, start) {
        return true;
    }
    let from = crate::normalize::floor_boundary(text, start.saturating_sub(80));
    let before = &text[from..start];
    let line = before
        .rsplit('\n')
        .next()
        .unwrap_or(before)
        .to_ascii_lowercase();
    let mut words: Vec<&str> = line
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    // What closes the label: nothing but spaces and `:`, `=`, quotes, brackets.
    let tail = line.trim_end_matches(|c: char| c.is_whitespace() || ":=\"'`([".contains(c));
    if tail.ends_with(|c: char| !c.is_ascii_alphanumeric() && c != '-') {
        return false;
    }
    while let Some(w) = words.pop() {
        if LABELS.contains(&w) {
            return true;
        }
        if !FILLERS.contains(&w) {
            return false;
        }
    }
    false
}

/// Whether the line around `start` (120 bytes before, 80 after) declares its
/// token a sample in so many words: "test value", "dummy value", "not a real key",
/// "for illustration only" — documentation's way of labelling a value in an aside
/// (`Sample key for the tutorial (test value, not for production): sk-…`). "Test
/// key" alone is not such a declaration (see [`labelled_sample`]).
fn declared_sample(text: &str, start: usize) -> bool {
    const DECLARATIONS: &[&str] = &[
        "test value",
        "dummy value",
        "sample value",
        "example value",
        "fake value",
        "placeholder value",
        "not a real key",
        "not a real token",
        "not a real secret",
        "not a real credential",
        "not a real api key",
        "for illustration",
        "illustrative value",
        "documentation only",
        "for the docs only",
    ];
    let from = crate::normalize::floor_boundary(text, start.saturating_sub(120));
    let to = crate::normalize::floor_boundary(text, (start + 80).min(text.len()));
    let before = text[from..start].rsplit('\n').next().unwrap_or_default();
    let after = text[start..to].split('\n').next().unwrap_or_default();
    let line = format!("{before}{after}").to_ascii_lowercase();
    DECLARATIONS.iter().any(|d| line.contains(d)) || declared_beside(text, start)
}

/// Whether the line just before or just after the token's line declares it a
/// documentation sample ("This is a sample key from our documentation; replace it
/// with your own"): a sample word and a word of documentation or replacement, in
/// one line beside the token.
fn declared_beside(text: &str, start: usize) -> bool {
    const SAMPLE: &[&str] = &["sample", "example", "dummy", "placeholder", "fake"];
    const DOCS: &[&str] = &[
        "documentation",
        "the docs",
        "our docs",
        "tutorial",
        "replace it with your own",
        "replace this with your own",
        "replace them with your own",
        "use your own",
    ];
    let bytes = text.as_bytes();
    let line_start = memchr::memrchr(b'\n', &bytes[..start]).map_or(0, |p| p + 1);
    let line_end = memchr::memchr(b'\n', &bytes[start..]).map_or(text.len(), |p| start + p);
    // The nearest non-blank line on each side.
    let before = text[..line_start].trim_end();
    let before = before.rsplit('\n').next().unwrap_or_default();
    let after = text[line_end..].trim_start();
    let after = after.split('\n').next().unwrap_or_default();
    [before, after].iter().any(|l| {
        let l = l.to_ascii_lowercase();
        l.len() <= 400 && SAMPLE.iter().any(|w| l.contains(w)) && DOCS.iter().any(|w| l.contains(w))
    })
}

/// The random part of a prefixed token (after its first `-`): letters with digits,
/// or letters of both cases that read like no words (about one random 20-character
/// body in thirty holds no digit); never a placeholder (`glpat-your_token_here`).
fn random_body(s: &str, _quoted: bool) -> bool {
    let body = s.split_once('-').map_or(s, |(_, b)| b);
    if is_placeholder(body, true) {
        return false;
    }
    let (lower, upper, digit, _) = classes(body);
    let letters = body.chars().filter(char::is_ascii_alphabetic).count();
    let uppers = body.chars().filter(char::is_ascii_uppercase).count();
    let vowels = body.chars().filter(|c| "aeiouAEIOU".contains(*c)).count();
    // Random letters: about half upper case, about one in five a vowel.
    let random_case = lower && upper && (letters..=3 * letters).contains(&(4 * uppers));
    (digit && (lower || upper)) || (random_case && 100 * vowels < 35 * letters)
}

/// OpenAI: `sk-` (or `sk-proj-`, `sk-svcacct-`, `sk-admin-`) and 32 or more body
/// characters, whatever their entropy; not words (`sk-learn-…`, a kebab-case name).
fn openai_like(s: &str, _quoted: bool) -> bool {
    let body = s.trim_start_matches("sk-");
    let body = ["proj-", "svcacct-", "admin-", "None-"]
        .iter()
        .fold(body, |b, p| b.strip_prefix(p).unwrap_or(b));
    body.len() >= 32 && provider_body(body)
}

fn random_40(s: &str, _quoted: bool) -> bool {
    mixed_alnum(s, false) && entropy(s) >= 3.5
}

fn jwt_header(s: &str, _quoted: bool) -> bool {
    let header = s.split('.').next().unwrap_or("");
    match crate::encoded::decode_base64(header.as_bytes()) {
        Some(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            text.trim_start().starts_with('{')
                && (text.contains("\"alg\"") || text.contains("\"typ\""))
        }
        None => false,
    }
}

/// A value that stands for a secret rather than being one: a template or variable
/// (`${X}`, `{{x}}`, `<your token>`, `%s`), a mask (`********`), a placeholder word,
/// or — when unquoted — a call or index (`getenv(…)`, `environ[…]`).
pub(crate) fn is_placeholder(v: &str, quoted: bool) -> bool {
    static TEMPLATES: LazyLock<AhoCorasick> = LazyLock::new(|| {
        any_of(&[
            "${", "$(", "{{", "}}", "%s", "%d", "%(", "...", "…", "***", "xxxx",
        ])
    });
    static PLACEHOLDERS: LazyLock<AhoCorasick> = LazyLock::new(|| {
        any_of(&[
            "your_",
            "your-",
            "_here",
            "-here",
            "replace_me",
            "replace-me",
            "insert_",
            "example",
            "placeholder",
            "redacted",
            "changeme",
        ])
    });
    let lower = v.to_ascii_lowercase();
    if v.starts_with('$')
        || TEMPLATES.is_match(&lower)
        || (v.contains('<') && v.contains('>'))
        || v.starts_with('<')
        || (!quoted && v.contains(['(', '[', '{']))
    {
        return true;
    }
    let first = lower.chars().next().unwrap_or('x');
    if lower.chars().all(|c| c == first) {
        return true; // "xxxxxxxx", "********"
    }
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "pass",
        "pwd",
        "secret",
        "changeme",
        "change_me",
        "example",
        "placeholder",
        "redacted",
        "your",
        "yourpassword",
        "mypassword",
        "token",
        "required",
        "optional",
        "string",
        "null",
        "none",
        "nil",
        "true",
        "false",
        "undefined",
        "hidden",
        "todo",
        "tbd",
        "dummy",
        "sample",
        "test123",
        // The internet's stock example password (and this repository's test one).
        "hunter2",
        "here",
        "value",
        "replace",
        "insert",
        "enter",
    ];
    WORDS.contains(&lower.trim_matches(|c: char| !c.is_ascii_alphanumeric()))
        || PLACEHOLDERS.is_match(&lower)
}

/// A reference to a value held elsewhere: `settings.SECRET_KEY`, `DB_PASSWORD`.
fn is_code_reference(v: &str) -> bool {
    let ident = |s: &str| {
        !s.is_empty()
            && s.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if v.contains('.') && v.split('.').all(ident) && !v.chars().any(|c| c.is_ascii_digit()) {
        return true;
    }
    // An upper-case environment variable name.
    v.contains('_')
        && v.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn password_value(v: &str, quoted: bool) -> bool {
    // `pass::Args`, `password == x`, `pwd => …`: code, not an assignment. A URL is
    // where a password gets reset ("reset your password: https://…"), not the secret
    // itself; credentials inside a URL are for `url_credentials`.
    if v.starts_with([':', '=', '>']) || v.contains("://") {
        return false;
    }
    let v = v.trim_end_matches(['.', ',', ';', ':', '!', '?']);
    if v.chars().count() < 6 || is_placeholder(v, quoted) || (!quoted && is_code_reference(v)) {
        return false;
    }
    let (lower, upper, digit, other) = classes(v);
    let letters = lower || upper;
    (letters && (digit || other)) || (digit && other) || (v.len() >= 16 && entropy(v) >= 3.5)
}

fn url_password(v: &str, _quoted: bool) -> bool {
    // Not a port ("host:8080@…" cannot be, but "localhost:3000?x=a@b" can look so,
    // and "postgres://localhost:5432/db_admin@corp" too).
    let port = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    v.len() >= 4
        && !is_placeholder(v, false)
        && !port(v)
        && !v.split_once('/').is_some_and(|(p, _)| port(p))
        && !v.contains('=')
}

fn secret_value(v: &str, quoted: bool) -> bool {
    if v.starts_with([':', '=', '>']) {
        return false;
    }
    let v = v.trim_end_matches(['.', ',', ';', ':', '!', '?']);
    if v.len() < 16
        || is_placeholder(v, quoted)
        || (!quoted && is_code_reference(v))
        || v.contains("://")
    {
        return false;
    }
    let (lower, upper, digit, other) = classes(v);
    let hex = v.len() >= 32 && v.bytes().all(|b| b.is_ascii_hexdigit());
    // A quoted value of random letters, digits and symbols (Django's SECRET_KEY).
    let symbols = quoted && other && (lower || upper) && entropy(v) >= 4.0;
    hex || symbols || ((lower || upper) && digit && entropy(v) >= 3.0)
}

fn generic_value(v: &str, _quoted: bool) -> bool {
    if v.len() < 20 || is_placeholder(v, false) || is_code_reference(v) {
        return false;
    }
    let (lower, upper, digit, _) = classes(v);
    lower && upper && digit && entropy(v) >= 4.0 && v.matches('/').count() <= 2
}

/// How a JSON member's key frames its string value (`{"password": "…"}`).
pub(crate) fn key_context_rule(key: &str) -> Option<(&'static str, ValueCheck)> {
    const PASSWORD: &[&str] = &[
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "passwort",
        "kennwort",
        "senha",
        "contrasena",
        "contraseña",
    ];
    const SECRETISH: &[&str] = &[
        "apikey",
        "api_key",
        "x_api_key",
        "access_token",
        "auth_token",
        "refresh_token",
        "client_secret",
        "secret_key",
        "private_key",
        "secret",
        "token",
        "credential",
        "credentials",
        "bearer",
        "signing_key",
        "encryption_key",
        "master_key",
        "app_secret",
        "api_token",
    ];
    // Cheap exit: most keys name nothing secret.
    let lower = key.to_ascii_lowercase();
    if ![
        "pass",
        "pwd",
        "senha",
        "contrase",
        "kennwort",
        "key",
        "token",
        "secret",
        "credential",
        "bearer",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        return None;
    }
    // camelCase → snake_case, one separator.
    let mut k = String::with_capacity(key.len() + 4);
    let mut prev_lower = false;
    for c in key.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            k.push('_');
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        k.push(if matches!(c, '-' | '.' | ' ') {
            '_'
        } else {
            c.to_ascii_lowercase()
        });
    }
    let ends_with_word =
        |w: &str| k == w || (k.ends_with(w) && k[..k.len() - w.len()].ends_with('_'));
    if PASSWORD.iter().any(|p| ends_with_word(p)) {
        return Some(("password_assignment", password_value));
    }
    if SECRETISH.iter().any(|s| ends_with_word(s)) {
        return Some(("secret_assignment", secret_value));
    }
    None
}

/// Token-shaped runs (`[A-Za-z0-9+/_-]` plus up to two `=`) that start within
/// [`TOKEN_REACH`] bytes after `from`, on the same line.
pub(crate) fn tokens_after(text: &str, from: usize) -> Vec<Range<usize>> {
    let b = text.as_bytes();
    let is_tok = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'_' | b'-');
    let mut out = Vec::new();
    let mut i = from;
    // A run already under way at `from` is the key word's own tail, not a value.
    while i < b.len() && is_tok(b[i]) {
        i += 1;
    }
    while i < b.len() && i <= from + TOKEN_REACH && b[i] != b'\n' {
        if !is_tok(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_tok(b[i]) {
            i += 1;
        }
        let mut end = i;
        while end < b.len() && end - i < 2 && b[end] == b'=' {
            end += 1;
        }
        if (20..=202).contains(&(end - start)) {
            out.push(start..end);
        }
        i = end;
    }
    out
}

// ---------------------------------------------------------------- PEM private keys

/// Finds a PEM private key starting at `at` (where `-----BEGIN` was seen); returns
/// its span. A header without a key body (documentation) is not a finding. The header
/// and footer end at their closing `-----`, so a key whose line breaks are JSON `\n`
/// escapes (a service-account file's `"private_key"`) is found too, and its span ends
/// with the footer, not with the rest of the JSON line.
/// `no_footer_before` remembers how far a previous search found no `-----END`, so a
/// text of many headers is searched once, not once per header.
pub(crate) fn pem_at(text: &str, at: usize, no_footer_before: &mut usize) -> Option<Range<usize>> {
    const MAX: usize = 64 * 1024;
    let rest = &text[at..];
    let line_end =
        crate::normalize::floor_boundary(rest, rest.find('\n').unwrap_or(rest.len()).min(120));
    let line = &rest[..line_end];
    // The header ends its line, or a JSON string's line (a `\n` escape follows).
    let header = match line.get(10..).and_then(|l| l.find("-----")) {
        Some(close) if escaped_newline(&line[10 + close + 5..]) => &line[..10 + close + 5],
        _ => line.trim_end(),
    };
    if !header.starts_with("-----BEGIN")
        || !header.ends_with("-----")
        || !header.contains("PRIVATE KEY")
    {
        return None;
    }
    let limit = crate::normalize::floor_boundary(text, (at + MAX).min(text.len()));
    let body_start = at + header.len();
    let search_from = body_start.max(*no_footer_before).min(limit);
    let footer = memchr::memmem::find(&text.as_bytes()[search_from..limit], b"-----END")
        .map(|e| search_from + e);
    if footer.is_none() {
        *no_footer_before = limit;
    }
    let window = &text[body_start..limit];
    let (body, end) = match footer {
        Some(e) => {
            let end_line = &text[e..limit];
            let line_len = end_line.find('\n').unwrap_or(end_line.len());
            // The footer ends at its closing dashes when they are on its line.
            let footer_len = end_line[..line_len]
                .get(8..)
                .and_then(|l| l.find("-----"))
                .map_or(line_len, |close| 8 + close + 5);
            (&text[body_start..e], e + footer_len)
        }
        None => {
            // No footer: the key runs over the following base64-looking lines.
            let mut len = 0;
            for line in window.split_inclusive('\n') {
                let t = line.trim();
                let b64_line = t
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b));
                if len > 0 && (t.is_empty() || t.starts_with("-----") || !b64_line) {
                    break;
                }
                len += line.len();
                if len > 16 * 1024 {
                    break;
                }
            }
            (&window[..len], body_start + len)
        }
    };
    let b64 = body
        .bytes()
        .filter(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
        .count();
    if b64 < 40 {
        return header_alone(text, at, header);
    }
    Some(at..end.min(text.len()))
}

/// A private-key header alone on its line (`-----BEGIN OPENSSH PRIVATE KEY-----`) is
/// the start of a pasted key even when its body is cut off; the header is the span.
/// Documentation that shows an empty key (the footer on the next line) is not.
fn header_alone(text: &str, at: usize, header: &str) -> Option<Range<usize>> {
    let line_start = memchr::memrchr(b'\n', &text.as_bytes()[..at]).map_or(0, |p| p + 1);
    let end = at + header.len();
    let after = &text[end..];
    let rest_of_line = after.split('\n').next().unwrap_or_default();
    if !text[line_start..at].trim().is_empty() || !rest_of_line.trim().is_empty() {
        return None;
    }
    if after.trim_start().starts_with("-----END") {
        return None;
    }
    Some(at..end)
}

/// Whether `s` starts with an escaped line break (`\n`, `\r`, `\\n` in a string
/// escaped twice).
fn escaped_newline(s: &str) -> bool {
    let rest = s.trim_start_matches('\\');
    rest.len() < s.len() && rest.starts_with(['n', 'r'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_references_are_not_secrets() {
        for v in [
            "${DB_PASSWORD}",
            "<your token here>",
            "YOUR_API_KEY_HERE",
            "xxxxxxxxxxxx",
            "changeme",
            "os.getenv('X')",
            "settings.SECRET_KEY",
            "DB_PASSWORD",
            "required",
            "string",
        ] {
            assert!(!password_value(v, false), "{v}");
            assert!(!secret_value(v, false), "{v}");
        }
    }

    #[test]
    fn values_with_mixed_classes_pass() {
        assert!(password_value("hunter22x", false));
        assert!(password_value("Qw7!zLp9#e", false));
        assert!(!password_value("stored", false));
        assert!(!password_value("weak", false));
        let random = "Zq4Lr8Tn2Vx6Bk0Mw3Hp7Yd5Jc1Fg9Se";
        assert!(secret_value(random, false));
        assert!(generic_value(random, false));
        assert!(!generic_value("ThisIsJustAVeryLongIdentifierName", false));
        assert!(secret_value(&"9f".repeat(20), false));
        assert!(!generic_value(&"9f".repeat(20), false));
        // Quoted, a value may hold brackets and dollars; unquoted they mean code.
        assert!(secret_value("c(ymd@xz#-2+xxwpx@&_p-%bq$ypo&$h1", true));
        assert!(!secret_value("c(ymd@xz#-2+xxwpx@&_p-%bq$ypo&$h1", false));
        assert!(!secret_value("${DJANGO_SECRET_KEY_VALUE}", true));
    }

    #[test]
    fn entropy_orders_as_expected() {
        assert!(entropy("aaaaaaaaaaaaaaaaaaaa") < 0.01);
        assert!(entropy("Zq4Lr8Tn2Vx6Bk0Mw3Hp7Yd5Jc1Fg9Se") > 4.5);
    }

    #[test]
    fn json_key_context() {
        assert_eq!(
            key_context_rule("password").map(|r| r.0),
            Some("password_assignment")
        );
        assert_eq!(
            key_context_rule("DB_PASSWORD").map(|r| r.0),
            Some("password_assignment")
        );
        assert_eq!(
            key_context_rule("x-api-key").map(|r| r.0),
            Some("secret_assignment")
        );
        assert_eq!(
            key_context_rule("accessToken").map(|r| r.0),
            Some("secret_assignment")
        );
        assert_eq!(
            key_context_rule("apiKey").map(|r| r.0),
            Some("secret_assignment")
        );
        assert_eq!(
            key_context_rule("access_token").map(|r| r.0),
            Some("secret_assignment")
        );
        assert_eq!(key_context_rule("title"), None);
        assert_eq!(key_context_rule("keyboard"), None);
    }

    #[test]
    fn pem_needs_a_body() {
        let begin = format!("-----BEGIN {}-----", "RSA PRIVATE KEY");
        let end = format!("-----END {}-----", "RSA PRIVATE KEY");
        let body = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2";
        let key = format!("x {begin}\n{body}\n{body}\n{end}\ny");
        let span = pem_at(&key, 2, &mut 0).expect("key found");
        assert_eq!(&key[span], format!("{begin}\n{body}\n{body}\n{end}"));
        assert!(pem_at(&format!("{begin}\n{end}"), 0, &mut 0).is_none());
        // A header alone on its line is a key cut off; beside other words it is prose.
        let openssh = format!("-----BEGIN {}-----", "OPENSSH PRIVATE KEY");
        let pasted = format!("my key:\n{openssh}\nb3Blbn\n");
        assert_eq!(pem_at(&pasted, 8, &mut 0), Some(8..8 + openssh.len()));
        assert_eq!(
            pem_at(&format!("{openssh}\n"), 0, &mut 0),
            Some(0..openssh.len())
        );
        let prose = format!("the file starts with {openssh} and so on");
        assert!(pem_at(&prose, 21, &mut 0).is_none());
        let public = format!("-----BEGIN {}-----\n{body}\n", "PUBLIC KEY");
        assert!(pem_at(&public, 0, &mut 0).is_none());
    }
}
