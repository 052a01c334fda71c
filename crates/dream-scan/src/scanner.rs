//! The [`Scanner`]: the compiled rules and every stage of a scan (see the crate
//! documentation for the order).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, LazyLock, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex_automata::Input;
use regex_automata::meta::Regex;
use serde::{Deserialize, Serialize};

use crate::{Category, DEFAULT_MAX_JSON_DEPTH, Finding, MAX_DECODE_DEPTH, Report, Severity};
use crate::{
    classifier, encoded, families, multilingual, normalize, pattern, pii, rules, secrets, structure,
};

/// Most times one secret rule looks again inside a rejected value, per window.
const MAX_RETRIES: usize = 256;
/// Most rounds of redaction (see [`Scanner::redact`]).
const REDACT_ROUNDS: usize = 4;
/// Total bytes decoded from encoded payloads in one scan.
const DECODE_BUDGET: usize = 1024 * 1024;
/// Where the secret rules' keys start among the literal pass's windows: a phrase
/// rule's key is its index, a secret rule's this plus its index.
const SECRET_KEY: usize = 1 << 16;

/// What kind of text is scanned; see the crate documentation for the difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Untrusted ingest: session transcripts, fetched content (the curator's vault mode).
    Transcript,
    /// Authored memory: proposed and recalled memories (the curator's wiki mode).
    Memory,
}

// ---------------------------------------------------------------- compiled rules

#[derive(Clone, Copy, Debug)]
enum Target {
    /// A phrase rule; `true`: the literal must end a word.
    Norm(u16, bool),
    Secret(u16),
    /// A credential family's literal (`families::table`).
    Family(u16),
    Pem,
    /// A gate word of the structural detectors (`structure::gate_literals`).
    Gate(u16),
    /// A stem of the multilingual lexicon (`multilingual::lexicon_literals`).
    Lexicon(u16),
}

struct Compiled {
    ac: AhoCorasick,
    literals: Vec<String>,
    /// Per literal: a phrase-rule hit must start a word (or follow a join).
    word_start: Vec<bool>,
    targets: Vec<Vec<Target>>,
    norm: Vec<LazyRule<rules::NormRule>>,
    secret: Vec<LazyRule<secrets::SecretRule>>,
}

/// A rule and its regex, compiled the first time the rule is triggered: most texts
/// trigger a few of the rules, and compiling all of them up front cost every process
/// about half a second.
struct LazyRule<R> {
    rule: R,
    regex: OnceLock<Regex>,
}

impl<R> LazyRule<R> {
    fn new(rule: R) -> Self {
        LazyRule {
            rule,
            regex: OnceLock::new(),
        }
    }
}

impl LazyRule<rules::NormRule> {
    /// The rule's regex; panics on a malformed rule (a unit test compiles them all).
    fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| {
            let r = &self.rule;
            let hir =
                regex_syntax::parse(&r.regex).unwrap_or_else(|e| panic!("rule {}: {e}", r.id));
            let prefilter = pattern::prefix_is_selective(&hir);
            Regex::builder()
                .configure(Regex::config().auto_prefilter(prefilter))
                .build_from_hir(&hir)
                .unwrap_or_else(|e| panic!("rule {}: {e}", r.id))
        })
    }
}

impl LazyRule<secrets::SecretRule> {
    /// The rule's regex; panics on a malformed rule (a unit test compiles them all).
    fn regex(&self) -> &Regex {
        self.regex.get_or_init(|| {
            Regex::new(self.rule.regex).unwrap_or_else(|e| panic!("rule {}: {e}", self.rule.id))
        })
    }
}

/// The rules every [`Scanner::new`] of a process shares, compiled on first use.
static COMPILED: LazyLock<Arc<Compiled>> = LazyLock::new(|| Arc::new(Compiled::build()));

impl fmt::Debug for Compiled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compiled")
            .field("literals", &self.literals.len())
            .field("norm_rules", &self.norm.len())
            .field("secret_rules", &self.secret.len())
            .finish_non_exhaustive()
    }
}

impl Compiled {
    fn build() -> Compiled {
        let mut literals: Vec<String> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut targets: Vec<Vec<Target>> = Vec::new();
        let mut add = |lit: String, t: Target| {
            let i = *index.entry(lit.clone()).or_insert_with(|| {
                literals.push(lit);
                targets.push(Vec::new());
                literals.len() - 1
            });
            targets[i].push(t);
        };
        let norm: Vec<LazyRule<rules::NormRule>> =
            rules::norm_rules().into_iter().map(LazyRule::new).collect();
        for (i, r) in norm.iter().enumerate() {
            for a in &r.rule.anchors {
                add(a.0.clone(), Target::Norm(i as u16, a.1));
            }
        }
        let secret: Vec<LazyRule<secrets::SecretRule>> = secrets::secret_rules()
            .into_iter()
            .map(LazyRule::new)
            .collect();
        for (i, r) in secret.iter().enumerate() {
            for a in r.rule.anchors {
                add(normalize::normalize_literal(a), Target::Secret(i as u16));
            }
        }
        for (i, f) in families::FAMILIES.iter().enumerate() {
            for l in &f.lits {
                // Normalised as the text will be: its last word goes on into the
                // token's body (`KEY-1` + `EA6…` reads `key-iea6…`, leet inside a word
                // with letters), so it is normalised with a letter after it.
                let mut lit = normalize::normalize_literal(&format!("{l}x"));
                lit.pop();
                add(lit, Target::Family(i as u16));
            }
        }
        add(normalize::normalize_literal("-----BEGIN"), Target::Pem);
        for (lit, g) in structure::gate_literals() {
            add(lit, Target::Gate(g));
        }
        for (lit, stem) in multilingual::lexicon_literals() {
            add(lit, Target::Lexicon(stem));
        }
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&literals)
            .expect("the literal set builds");
        let word_start = literals
            .iter()
            .map(|l| l.as_bytes()[0].is_ascii_alphanumeric())
            .collect();
        Compiled {
            ac,
            literals,
            word_start,
            targets,
            norm,
            secret,
        }
    }
}

/// The scanner's trigger literals (normalised), as its single Aho-Corasick pass
/// uses them. Exposed for benchmarks that compare against a bare pass.
pub fn literals() -> &'static [String] {
    &COMPILED.literals
}

// ---------------------------------------------------------------- the scanner

/// The scanner. Cheap to create, clone and share: the rules are compiled once per
/// process.
#[derive(Clone, Debug)]
pub struct Scanner {
    rules: Arc<Compiled>,
    mode: Mode,
    max_json_depth: usize,
    learned: bool,
}

struct Ctx {
    mode_bit: u8,
    secrets_only: bool,
    budget: usize,
    limit_reported: bool,
    /// How many times the decoding budget was consulted: a scan of a decoded text
    /// that leaves it unchanged did not depend on the budget (nor change it).
    budget_checks: usize,
    /// Decoded texts already scanned and what was found in them, for the ones whose
    /// scan did not depend on the budget: a payload repeated on every line is scanned
    /// once. Its keys hold at most [`DECODE_BUDGET`] bytes.
    decoded: HashMap<String, Vec<Finding>>,
}

impl Scanner {
    /// A scanner for `mode`.
    pub fn new(mode: Mode) -> Self {
        Self::with_rules(Arc::clone(&COMPILED), mode)
    }

    /// A scanner for `mode` with its own rules, compiled from scratch as the first
    /// [`Scanner::new`] of a process compiles them. For the construction benchmark
    /// only: every other caller shares the process's rules through [`Scanner::new`].
    #[doc(hidden)]
    pub fn uncached(mode: Mode) -> Self {
        Self::with_rules(Arc::new(Compiled::build()), mode)
    }

    fn with_rules(rules: Arc<Compiled>, mode: Mode) -> Self {
        classifier::load();
        Scanner {
            rules,
            mode,
            max_json_depth: DEFAULT_MAX_JSON_DEPTH,
            learned: true,
        }
    }

    /// The same scanner with the learned stage on (the default) or off: off, only the
    /// phrase, structure, secret, personal-data and encoding rules report.
    pub fn with_learned_stage(mut self, on: bool) -> Self {
        self.learned = on;
        self
    }

    /// The same scanner with a different JSON nesting cap.
    pub fn with_max_json_depth(mut self, depth: usize) -> Self {
        self.max_json_depth = depth;
        self
    }

    /// The mode this scanner scans in.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    fn ctx(&self, secrets_only: bool) -> Ctx {
        Ctx {
            mode_bit: match self.mode {
                Mode::Transcript => rules::TRANSCRIPT,
                Mode::Memory => rules::MEMORY,
            },
            secrets_only,
            budget: DECODE_BUDGET,
            limit_reported: false,
            budget_checks: 0,
            decoded: HashMap::new(),
        }
    }

    /// Scans a text.
    pub fn scan(&self, text: &str) -> Report {
        let mut ctx = self.ctx(false);
        Report::from_findings(self.findings(text, &mut ctx))
    }

    /// Scans a text for secrets only (the other categories are not looked for).
    pub fn scan_secrets(&self, text: &str) -> Report {
        let mut ctx = self.ctx(true);
        Report::from_findings(self.findings(text, &mut ctx))
    }

    /// Scans every string and every object key of a JSON value, at every depth up to
    /// the nesting cap; findings carry the JSON pointer of where they are.
    pub fn scan_json(&self, value: &serde_json::Value) -> Report {
        use serde_json::Value;
        let mut ctx = self.ctx(false);
        let mut out: Vec<Finding> = Vec::new();
        // Paths are kept as a tree of segments and spelled out only for findings, so a
        // deep document costs no more than its size.
        let mut tree: Vec<(usize, Segment<'_>)> = vec![(usize::MAX, Segment::Root)];
        let mut stack: Vec<(&Value, usize, usize)> = vec![(value, 0, 0)];
        while let Some((v, node, depth)) = stack.pop() {
            match v {
                Value::String(s) => {
                    let found = self.findings(s, &mut ctx);
                    if !found.is_empty() {
                        let path = pointer(&tree, node);
                        out.extend(found.into_iter().map(|f| Finding {
                            path: Some(path.clone()),
                            ..f
                        }));
                    }
                }
                Value::Array(_) | Value::Object(_) if depth + 1 > self.max_json_depth => {
                    out.push(Finding {
                        category: Category::DepthExceeded,
                        rule: "json.depth_exceeded",
                        severity: Severity::High,
                        span: None,
                        path: Some(pointer(&tree, node)),
                    });
                }
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate().rev() {
                        tree.push((node, Segment::Index(i)));
                        stack.push((item, tree.len() - 1, depth + 1));
                    }
                }
                Value::Object(map) => {
                    if is_role_record(map) {
                        out.push(Finding {
                            category: Category::DelimiterInjection,
                            rule: "delim.role_record",
                            severity: Severity::High,
                            span: None,
                            path: Some(pointer(&tree, node)),
                        });
                    }
                    let first = stack.len();
                    for (k, item) in map {
                        tree.push((node, Segment::Key(k)));
                        let child = tree.len() - 1;
                        let mut found: Vec<Finding> = self
                            .findings(k, &mut ctx)
                            .into_iter()
                            .map(|f| Finding { span: None, ..f })
                            .collect();
                        if let (Value::String(s), Some((rule, check))) =
                            (item, secrets::key_context_rule(k))
                            && check(s.trim(), true)
                        {
                            found.push(Finding {
                                category: Category::Secret,
                                rule,
                                severity: Severity::High,
                                span: Some(0..s.len()),
                                path: None,
                            });
                        }
                        if !found.is_empty() {
                            let path = pointer(&tree, child);
                            out.extend(found.into_iter().map(|f| Finding {
                                path: Some(path.clone()),
                                ..f
                            }));
                        }
                        stack.push((item, child, depth + 1));
                    }
                    // Children were pushed in order; pop them in document order.
                    stack[first..].reverse();
                }
                _ => {}
            }
        }
        dedup(&mut out);
        Report::from_findings(out)
    }

    /// Replaces each secret span with `[REDACTED:<rule>]`; a text without secrets
    /// comes back borrowed, unchanged. Redaction repeats (a few rounds at most) until
    /// a scan of the result finds no secret: a shorter text can bring a token within
    /// reach of a key word that was too far from it before.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut current: Cow<'a, str> = Cow::Borrowed(text);
        for _ in 0..REDACT_ROUNDS {
            match self.redact_once(&current) {
                Some(next) => current = Cow::Owned(next),
                None => break,
            }
        }
        current
    }

    /// Redacts every string and key of a JSON value, at every depth: a string the
    /// scan judges secret (by its text, or by its key: `"password": "…"`) becomes
    /// `[REDACTED:<rule>]`, and every other string and key is redacted as text
    /// ([`Scanner::redact`]).
    pub fn redact_json(&self, value: &serde_json::Value) -> serde_json::Value {
        let mut value = value.clone();
        let report = self.scan_json(&value);
        for finding in report
            .findings
            .iter()
            .filter(|f| f.category == Category::Secret)
        {
            let Some(path) = finding.path.as_deref() else {
                continue;
            };
            if let Some(slot @ serde_json::Value::String(_)) = value.pointer_mut(path) {
                *slot = serde_json::Value::String(format!("[REDACTED:{}]", finding.rule));
            }
        }
        self.redact_strings(&value)
    }

    /// Every string and key of `value` redacted as text.
    fn redact_strings(&self, value: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            Value::String(s) => Value::String(self.redact(s).into_owned()),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.redact_strings(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (self.redact(k).into_owned(), self.redact_strings(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// One round of redaction; `None` when there is no secret.
    fn redact_once(&self, text: &str) -> Option<String> {
        let mut ctx = self.ctx(true);
        let mut spans: Vec<(Range<usize>, &'static str)> = self
            .findings(text, &mut ctx)
            .into_iter()
            .filter(|f| f.category == Category::Secret)
            .filter_map(|f| f.span.map(|s| (s, f.rule)))
            .collect();
        if spans.is_empty() {
            return None;
        }
        spans.sort_by_key(|(s, _)| (s.start, std::cmp::Reverse(s.end)));
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut i = 0;
        while i < spans.len() {
            let (span, rule) = spans[i].clone();
            let mut end = span.end;
            i += 1;
            while i < spans.len() && spans[i].0.start < end {
                end = end.max(spans[i].0.end);
                i += 1;
            }
            let start = span.start.max(at);
            out.push_str(&text[at..start]);
            out.push_str("[REDACTED:");
            out.push_str(rule);
            out.push(']');
            at = end.max(start);
        }
        out.push_str(&text[at..]);
        Some(out)
    }

    /// All findings of a text, in order of position.
    fn findings(&self, text: &str, ctx: &mut Ctx) -> Vec<Finding> {
        let mut out = Vec::new();
        let norm = normalize::normalize(text);
        self.collect(text, &norm, 0, ctx, &mut out);
        rules::header_then_instruction(text, &norm, &mut out);
        out.sort_by(|a, b| {
            let ka = a.span.as_ref().map(|s| (s.start, s.end));
            let kb = b.span.as_ref().map(|s| (s.start, s.end));
            ka.cmp(&kb).then(a.rule.cmp(b.rule))
        });
        // Sorted by span and rule (and none has a path yet), so a finding's
        // duplicates follow it.
        out.dedup_by(|b, a| a.rule == b.rule && a.span == b.span && a.path == b.path);
        out
    }

    /// Scans the text a run of tag characters carries on its own, reporting what it
    /// holds at the run; the run is High when that is an instruction, else Medium.
    fn tag_payload(
        &self,
        run: &str,
        span: &Range<usize>,
        depth: usize,
        ctx: &mut Ctx,
        out: &mut Vec<Finding>,
    ) -> Severity {
        ctx.budget_checks += 1;
        let hidden = encoded::decode_tags(run);
        if depth >= MAX_DECODE_DEPTH || hidden.len() > ctx.budget.min(encoded::MAX_CANDIDATE) {
            return Severity::Medium;
        }
        ctx.budget -= hidden.len();
        let mut inner = Vec::new();
        self.collect(
            &hidden,
            &normalize::normalize(&hidden),
            depth + 1,
            ctx,
            &mut inner,
        );
        let instruction = inner
            .iter()
            .any(|f| f.category.is_instruction() && f.severity == Severity::High);
        out.extend(inner.into_iter().map(|f| Finding {
            span: Some(span.clone()),
            ..f
        }));
        if instruction {
            Severity::High
        } else {
            Severity::Medium
        }
    }

    /// The one multi-pattern pass over a normalised view, then each triggered rule
    /// confirmed in its windows. Secrets are looked for when `with_secrets`.
    fn literal_pass(
        &self,
        text: &str,
        norm: &normalize::Normalized,
        ctx: &Ctx,
        with_secrets: bool,
        out: &mut Vec<Finding>,
        hits: &mut StructureHits,
    ) {
        let Triggered {
            windows,
            pems,
            prefixed,
            near,
        } = self.triggered(text, norm, ctx, with_secrets, hits);
        let mut secret_found: Vec<(Finding, usize)> = Vec::new();
        for (k, s, e) in windows {
            if k < SECRET_KEY {
                self.confirm_phrase(k, s, e, norm, out);
            } else {
                self.confirm_secret(k - SECRET_KEY, s, e, text, &mut secret_found);
            }
        }
        if with_secrets {
            self.family_findings(text, prefixed, near, &mut secret_found);
        }
        pem_findings(text, pems, &mut secret_found);
        keep_outermost_secrets(secret_found, out);
    }

    /// The one literal pass over a normalised view: which rules to confirm, and
    /// where. Gate and lexicon hits go to `hits`; the credential families'
    /// literals and the PEM headers come back for their own passes.
    fn triggered(
        &self,
        text: &str,
        norm: &normalize::Normalized,
        ctx: &Ctx,
        with_secrets: bool,
        hits: &mut StructureHits,
    ) -> Triggered {
        let c = &*self.rules;
        let ntext = norm.text.as_str();
        let mut jobs = Jobs::new(c.norm.len() + c.secret.len());
        let mut pems: Vec<usize> = Vec::new();
        // Credential families: literal hits of prefixed tokens, and windows around
        // provider words.
        let mut prefixed: Vec<(u16, Range<usize>)> = Vec::new();
        let mut near: Vec<(u16, usize, usize)> = Vec::new();
        let nbytes = ntext.as_bytes();
        for m in c.ac.find_overlapping_iter(ntext) {
            let pid = m.pattern().as_usize();
            // Phrase rules match whole words: "call" in "typically" triggers nothing.
            let mid_word = c.word_start[pid]
                && m.start() > 0
                && nbytes[m.start() - 1].is_ascii_alphanumeric()
                && !norm.is_join(m.start());
            for t in &c.targets[pid] {
                match *t {
                    Target::Norm(r, whole) => {
                        let rule = &c.norm[r as usize].rule;
                        if mid_word || ctx.secrets_only || rule.modes & ctx.mode_bit == 0 {
                            continue;
                        }
                        let runs_on = whole
                            && m.end() < nbytes.len()
                            && nbytes[m.end()].is_ascii_alphanumeric()
                            && !norm.is_join(m.end());
                        if runs_on {
                            continue;
                        }
                        let s = m.start().saturating_sub(rule.before);
                        let e = (m.end() + rule.after).min(ntext.len());
                        jobs.add(r as usize, r as usize, s, e);
                    }
                    Target::Secret(_) | Target::Pem | Target::Family(_) if !with_secrets => {}
                    Target::Family(f) => {
                        let fam = &families::FAMILIES[f as usize];
                        let o = norm.to_original(m.start()..m.end());
                        if fam.kind == families::Kind::Near {
                            // A provider word starts a word ("lob" in "global" is none).
                            let inside = m.start() > 0
                                && nbytes[m.start() - 1].is_ascii_alphanumeric()
                                && !norm.is_join(m.start());
                            if !inside {
                                let s = o.start.saturating_sub(families::NEAR);
                                let e = (o.end + families::NEAR).min(text.len());
                                match near.last_mut() {
                                    Some((lf, _, le)) if *lf == f && s <= *le => *le = e,
                                    _ => near.push((f, s, e)),
                                }
                            }
                        } else {
                            prefixed.push((f, o));
                        }
                    }
                    Target::Secret(r) => {
                        let o = norm.to_original(m.start()..m.end());
                        let radius = c.secret[r as usize].rule.radius;
                        jobs.add(
                            c.norm.len() + r as usize,
                            SECRET_KEY + r as usize,
                            o.start.saturating_sub(radius),
                            (o.end + radius).min(text.len()),
                        );
                    }
                    Target::Pem => pems.push(norm.start_of(m.start())),
                    Target::Gate(g) => {
                        // Gate words start a word ("ai" in "again" gates nothing).
                        let inside = m.start() > 0
                            && nbytes[m.start() - 1].is_ascii_alphanumeric()
                            && !norm.is_join(m.start());
                        if !ctx.secrets_only && !inside {
                            hits.gates.push(structure::GateHit {
                                start: m.start(),
                                end: m.end(),
                                gate: g,
                            });
                        }
                    }
                    Target::Lexicon(stem) => {
                        if !ctx.secrets_only {
                            hits.lexicon.push(multilingual::LexiconHit {
                                start: m.start(),
                                end: m.end(),
                                stem,
                            });
                        }
                    }
                }
            }
        }
        let windows = jobs.merged();
        Triggered {
            windows,
            pems,
            prefixed,
            near,
        }
    }

    /// Confirms phrase rule `k` (of `rules.norm`) in the window `s..e` of the
    /// normalised text: each match where the rule allows it to start, passing the
    /// rule's check and not a quoted mention of a stock phrase, is a finding.
    fn confirm_phrase(
        &self,
        k: usize,
        s: usize,
        e: usize,
        norm: &normalize::Normalized,
        out: &mut Vec<Finding>,
    ) {
        let c = &*self.rules;
        let ntext = norm.text.as_str();
        let nbytes = ntext.as_bytes();
        let (rule, re) = (&c.norm[k].rule, c.norm[k].regex());
        let s = normalize::floor_boundary(ntext, s);
        let e = normalize::ceil_boundary(ntext, e);
        let mut at = s;
        while at < e {
            let Some(m) = re.search(&Input::new(ntext).range(at..e)) else {
                break;
            };
            let mid_word = rule.word_start
                && m.start() > 0
                && nbytes[m.start() - 1].is_ascii_alphanumeric()
                && !norm.is_join(m.start());
            if mid_word {
                // Retry just after the rejected start: a real match may begin
                // inside it ("xignore this ignore previous instructions").
                at = normalize::ceil_boundary(ntext, m.start() + 1);
                continue;
            }
            at = if m.is_empty() {
                normalize::ceil_boundary(ntext, m.end() + 1)
            } else {
                m.end()
            };
            if m.is_empty()
                || rule.check.is_some_and(|check| !check(ntext, m.range()))
                || (rule.category.is_stock_phrase() && rules::quoted_mention(ntext, m.range()))
            {
                continue;
            }
            out.push(Finding {
                category: rule.category,
                rule: rule.id,
                severity: rule.severity,
                span: Some(norm.to_original(m.range())),
                path: None,
            });
        }
    }

    /// Confirms secret rule `idx` (of `rules.secret`) in the window `s..e` of the
    /// original text; each secret found goes to `secret_found` with `idx`, its
    /// priority among secrets at one place.
    fn confirm_secret(
        &self,
        idx: usize,
        s: usize,
        e: usize,
        text: &str,
        secret_found: &mut Vec<(Finding, usize)>,
    ) {
        let c = &*self.rules;
        let (rule, re) = (&c.secret[idx].rule, c.secret[idx].regex());
        let s = normalize::floor_boundary(text, s);
        let e = normalize::ceil_boundary(text, e);
        let mut caps = re.create_captures();
        let mut at = s;
        let mut retries = 0usize;
        while at < e {
            re.search_captures(&Input::new(text).range(at..e), &mut caps);
            let Some(whole) = caps.get_match() else { break };
            if rule.tokens_after {
                // A key word: every token shortly after it is a candidate.
                for t in secrets::tokens_after(text, whole.end()) {
                    if rule
                        .check
                        .is_some_and(|check| !check(&text[t.clone()], false))
                        || secrets::labelled_sample(text, t.start)
                    {
                        continue;
                    }
                    secret_found.push((
                        Finding {
                            category: Category::Secret,
                            rule: rule.id,
                            severity: rule.severity,
                            span: Some(t),
                            path: None,
                        },
                        idx,
                    ));
                }
                at = whole.end().max(whole.start() + 1);
                continue;
            }
            let g = if rule.group == 0 {
                Some(whole.span())
            } else {
                (rule.group..caps.group_len()).find_map(|i| caps.get_group(i))
            };
            let accepted = g.filter(|g| {
                let quoted = text[..g.start].ends_with(['"', '\''])
                    && text[g.end..].starts_with(['"', '\'']);
                !g.is_empty()
                    && rule
                        .check
                        .is_none_or(|check| check(&text[g.range()], quoted))
                    // A value labelled as a sample ("example key: …") is
                    // documentation.
                    && !secrets::labelled_sample(text, g.start)
            });
            let Some(g) = accepted else {
                // A key word whose value is rejected: look again just after
                // its start, so the rejected value hides no secret inside it
                // (`api_key=https://…?api_key=<secret>`). A rejected provider
                // format is passed over whole.
                // Retries are bounded so a text of nothing but rejected
                // values stays linear.
                at = if rule.group > 0 && retries < MAX_RETRIES {
                    retries += 1;
                    normalize::ceil_boundary(text, whole.start() + 1)
                } else {
                    whole.end().max(whole.start() + 1)
                };
                continue;
            };
            at = whole.end().max(whole.start() + 1);
            secret_found.push((
                Finding {
                    category: Category::Secret,
                    rule: rule.id,
                    severity: rule.severity,
                    span: Some(g.range()),
                    path: None,
                },
                idx,
            ));
        }
    }

    /// The credential families' findings: each prefixed token at its literal, each
    /// provider's shape in the merged windows around its name, and the shapes without
    /// a literal (`families::sweep`). A token labelled as a sample is documentation.
    fn family_findings(
        &self,
        text: &str,
        prefixed: Vec<(u16, Range<usize>)>,
        mut near: Vec<(u16, usize, usize)>,
        out: &mut Vec<(Finding, usize)>,
    ) {
        let base = self.rules.secret.len();
        let mut push = |rule: &'static str, span: Range<usize>, prio: usize| {
            if !secrets::labelled_sample(text, span.start) {
                out.push((
                    Finding {
                        category: Category::Secret,
                        rule,
                        severity: Severity::High,
                        span: Some(span),
                        path: None,
                    },
                    prio,
                ));
            }
        };
        for (f, hit) in prefixed {
            let fam = &families::FAMILIES[f as usize];
            if let Some(span) = fam.at(text, hit) {
                push(fam.id, span, base + f as usize);
            }
        }
        near.sort_unstable();
        let mut merged: Vec<(u16, usize, usize)> = Vec::with_capacity(near.len());
        for (f, s, e) in near {
            match merged.last_mut() {
                Some((lf, _, le)) if *lf == f && s <= *le => *le = (*le).max(e),
                _ => merged.push((f, s, e)),
            }
        }
        let mut spans = Vec::new();
        for (f, s, e) in merged {
            let fam = &families::FAMILIES[f as usize];
            let s = normalize::floor_boundary(text, s);
            let e = normalize::ceil_boundary(text, e);
            spans.clear();
            fam.near(text, s..e, &mut spans);
            for span in spans.drain(..) {
                push(fam.id, span, base + f as usize);
            }
        }
        let mut swept = Vec::new();
        families::sweep(text, &mut swept);
        for (rule, span) in swept {
            push(rule, span, base + families::FAMILIES.len());
        }
    }

    /// Every finding of `text`, normalised as `norm`, at decoding depth `depth`.
    fn collect(
        &self,
        text: &str,
        norm: &normalize::Normalized,
        depth: usize,
        ctx: &mut Ctx,
        out: &mut Vec<Finding>,
    ) {
        let mut hits = StructureHits::default();
        self.literal_pass(text, norm, ctx, true, out, &mut hits);
        if !ctx.secrets_only {
            structure::scan(text, norm, &hits.gates, &hits.lexicon, out);
        }
        // 3. The learned stage, for the wordings no rule was written for.
        let learned = self.learned && !ctx.secrets_only;
        if learned {
            learned_pass(norm, self.mode, out);
        }
        if norm.invisible && !ctx.secrets_only {
            // Invisible characters read a second way, as spaces between words: only
            // the lines that hold them are read again, by the rules and the learned
            // stage.
            for line in invisible_lines(text) {
                let part = &text[line.clone()];
                let spaced = normalize::normalize_spaced(part);
                let mut found = Vec::new();
                self.literal_pass(
                    part,
                    &spaced,
                    ctx,
                    false,
                    &mut found,
                    &mut StructureHits::default(),
                );
                if learned {
                    learned_pass(&spaced, self.mode, &mut found);
                }
                out.extend(found.into_iter().map(|f| Finding {
                    span: f.span.map(|r| r.start + line.start..r.end + line.start),
                    ..f
                }));
            }
        }

        // 4. Personal data and smuggled tag characters.
        if !ctx.secrets_only {
            let mut hits = Vec::new();
            pii::scan(text, &mut hits);
            for (rule, severity, span) in hits {
                out.push(Finding {
                    category: Category::PersonalData,
                    rule,
                    severity,
                    span: Some(span),
                    path: None,
                });
            }
            for run in &norm.tag_runs {
                let severity = self.tag_payload(&text[run.clone()], run, depth, ctx, out);
                out.push(Finding {
                    category: Category::EncodedPayload,
                    rule: "encoded.unicode_tags",
                    severity,
                    span: Some(run.clone()),
                    path: None,
                });
            }
        }

        // 5. Encoded payloads, decoded and scanned again.
        let mut cands = encoded::candidates(text);
        if !ctx.secrets_only {
            structure::cipher_lines(text, norm, &hits.gates, &mut cands);
        }
        for cand in cands {
            ctx.budget_checks += 1;
            if ctx.budget == 0 {
                if !ctx.limit_reported && !ctx.secrets_only {
                    ctx.limit_reported = true;
                    out.push(Finding {
                        category: Category::EncodedPayload,
                        rule: "encoded.budget_exceeded",
                        severity: Severity::Medium,
                        span: Some(cand.range.clone()),
                        path: None,
                    });
                }
                break;
            }
            let Some(decoded) = encoded::decode(text, &cand) else {
                continue;
            };
            ctx.budget = ctx.budget.saturating_sub(decoded.len().max(1));
            if depth >= MAX_DECODE_DEPTH {
                // Still encoded text at the depth limit: fail closed.
                out.push(Finding {
                    category: Category::EncodedPayload,
                    rule: "encoded.too_deep",
                    severity: Severity::High,
                    span: Some(cand.range.clone()),
                    path: None,
                });
                continue;
            }
            let inner = match ctx.decoded.get(&decoded) {
                Some(found) => found.clone(),
                None => {
                    let checks = ctx.budget_checks;
                    let mut inner = Vec::new();
                    self.collect(
                        &decoded,
                        &normalize::normalize(&decoded),
                        depth + 1,
                        ctx,
                        &mut inner,
                    );
                    if ctx.budget_checks == checks {
                        ctx.decoded.insert(decoded, inner.clone());
                    }
                    inner
                }
            };
            if inner.is_empty() {
                continue;
            }
            let wrap = inner
                .iter()
                .filter(|f| f.category.is_instruction() || f.category == Category::Secret)
                .map(|f| f.severity)
                .max();
            for f in inner {
                out.push(Finding {
                    span: Some(cand.range.clone()),
                    path: None,
                    ..f
                });
            }
            if let Some(severity) = wrap
                && !ctx.secrets_only
            {
                out.push(Finding {
                    category: Category::EncodedPayload,
                    rule: cand.kind.rule(),
                    severity,
                    span: Some(cand.range.clone()),
                    path: None,
                });
            }
        }
    }
}

/// What the literal pass finds for the detectors after it: gate words and the
/// multilingual lexicon's stems, in the order the pass reports them.
#[derive(Default)]
struct StructureHits {
    gates: Vec<structure::GateHit>,
    lexicon: Vec<multilingual::LexiconHit>,
}

/// What the literal pass found to look at.
struct Triggered {
    /// `(rule key, start, end)`, sorted, each rule's windows merged: a phrase
    /// rule's in the normalised text, a secret rule's (key [`SECRET_KEY`] + its
    /// index) in the original.
    windows: Vec<(usize, usize, usize)>,
    /// Where PEM headers start, in the original text.
    pems: Vec<usize>,
    /// The credential families' prefixed tokens, at their literals.
    prefixed: Vec<(u16, Range<usize>)>,
    /// The windows around the credential families' provider words, merged.
    near: Vec<(u16, usize, usize)>,
}

/// The windows to confirm rules in, per rule. A window that overlaps its rule's
/// previous one is folded into it as it comes (a text of nothing but trigger words
/// gives a rule a hit every few bytes); that leaves each rule's union of windows, and
/// so the merged windows, as they were.
struct Jobs {
    /// Per rule slot: where its windows are in `rules`, if it has any.
    at: Vec<u32>,
    /// Each triggered rule's key and windows `(start, end)`, in the order of the
    /// hits (nearly sorted: hits come in the order of their ends).
    rules: Vec<(usize, Vec<(usize, usize)>)>,
}

impl Jobs {
    fn new(slots: usize) -> Self {
        Jobs {
            at: vec![u32::MAX; slots],
            rules: Vec::new(),
        }
    }

    /// Adds the window `s..e` of the rule in `slot`, whose key is `key`.
    fn add(&mut self, slot: usize, key: usize, s: usize, e: usize) {
        if self.at[slot] == u32::MAX {
            self.at[slot] = self.rules.len() as u32;
            self.rules.push((key, Vec::new()));
        }
        let windows = &mut self.rules[self.at[slot] as usize].1;
        if let Some((ls, le)) = windows.last_mut()
            && s <= *le
            && *ls <= e
        {
            *ls = (*ls).min(s);
            *le = (*le).max(e);
            return;
        }
        windows.push((s, e));
    }

    /// Every rule's windows merged, as `(rule key, start, end)` sorted: the rules by
    /// key, then each rule's own windows (a sort that finds them nearly in order).
    fn merged(mut self) -> Vec<(usize, usize, usize)> {
        self.rules.sort_unstable_by_key(|(k, _)| *k);
        let mut out: Vec<(usize, usize, usize)> = Vec::new();
        for (k, mut windows) in self.rules {
            windows.sort();
            for (s, e) in windows {
                match out.last_mut() {
                    Some((lk, _, le)) if *lk == k && s <= *le => *le = (*le).max(e),
                    _ => out.push((k, s, e)),
                }
            }
        }
        out
    }
}

/// The PEM private keys whose headers start at `pems`, into `secret_found`.
fn pem_findings(text: &str, mut pems: Vec<usize>, secret_found: &mut Vec<(Finding, usize)>) {
    pems.sort_unstable();
    pems.dedup();
    let mut no_footer_before = 0;
    for at in pems {
        if let Some(span) = secrets::pem_at(text, at, &mut no_footer_before) {
            secret_found.push((
                Finding {
                    category: Category::Secret,
                    rule: secrets::PEM_RULE,
                    severity: Severity::High,
                    span: Some(span),
                    path: None,
                },
                0,
            ));
        }
    }
}

/// The secrets found, in order, each dropped when inside an earlier (more
/// specific) secret's span.
fn keep_outermost_secrets(mut secret_found: Vec<(Finding, usize)>, out: &mut Vec<Finding>) {
    // A secret inside an earlier (more specific) secret's span is the same secret.
    secret_found.sort_by_key(|(f, prio)| {
        let s = f.span.clone().unwrap_or(0..0);
        (s.start, std::cmp::Reverse(s.end), *prio)
    });
    let mut kept_end = 0;
    let mut first = true;
    for (f, _) in secret_found {
        let s = f.span.clone().unwrap_or(0..0);
        if !first && s.end <= kept_end {
            continue;
        }
        first = false;
        kept_end = kept_end.max(s.end);
        out.push(f);
    }
}

/// The learned stage's findings in a normalised view, as spans of its original.
fn learned_pass(norm: &normalize::Normalized, mode: Mode, out: &mut Vec<Finding>) {
    for (category, span) in classifier::classify(&norm.text, mode) {
        out.push(Finding {
            category,
            rule: classifier::rule_id(category),
            severity: Severity::High,
            span: Some(norm.to_original(span)),
            path: None,
        });
    }
}

/// The lines of `text` (merged when adjacent) that hold an invisible character or
/// a terminal escape.
fn invisible_lines(text: &str) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let b = text.as_bytes();
    let mut start = 0;
    while start < b.len() {
        let end = memchr::memchr(b'\n', &b[start..]).map_or(b.len(), |p| start + p + 1);
        let line = &text[start..end];
        let has = line.bytes().any(|c| c >= 0x80 || c == 0x1b)
            && line
                .chars()
                .any(|c| c == '\x1b' || normalize::is_invisible(c));
        if has {
            match out.last_mut() {
                Some(last) if last.end == start => last.end = end,
                _ => out.push(start..end),
            }
        }
        start = end;
    }
    out
}

/// One step of a JSON pointer.
enum Segment<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

/// A chat message as structure: an object with `content` whose `role` is `system` or
/// `developer` (after normalisation, so look-alike letters count). The JSON form of
/// the text rule `delim.role_record`: a record claiming system authority inside data
/// the model reads later. Other roles, and a `role` without `content` (a team
/// roster's `"role": "developer"`), are ordinary data.
fn is_role_record(map: &serde_json::Map<String, serde_json::Value>) -> bool {
    // Only short words can normalise to these names; longer strings are skipped unread.
    let is = |text: &str, names: &[&str]| {
        text.len() <= 64 && names.contains(&normalize::normalize(text).text.trim())
    };
    map.keys().any(|k| is(k, &["content"]))
        && map.iter().any(|(k, v)| {
            is(k, &["roie"])
                && v.as_str()
                    .is_some_and(|role| is(role, &["system", "deveioper"]))
        })
}

/// The JSON pointer (RFC 6901) of `node` in the segment tree.
fn pointer(tree: &[(usize, Segment<'_>)], mut node: usize) -> String {
    let mut parts = Vec::new();
    while node != usize::MAX {
        let (parent, seg) = &tree[node];
        match seg {
            Segment::Root => {}
            Segment::Key(k) => parts.push(k.replace('~', "~0").replace('/', "~1")),
            Segment::Index(i) => parts.push(i.to_string()),
        }
        node = *parent;
    }
    parts.reverse();
    parts.iter().map(|p| format!("/{p}")).collect()
}

fn dedup(findings: &mut Vec<Finding>) {
    let mut seen = std::collections::HashSet::new();
    findings.retain(|f| seen.insert((f.rule, f.span.clone(), f.path.clone())));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rules compile on their first trigger; each one's regex must compile then (a
    /// malformed rule would otherwise panic in the middle of some later scan).
    #[test]
    fn every_lazily_compiled_rule_regex_compiles() {
        let c = Compiled::build();
        assert!(c.norm.iter().all(|r| r.regex.get().is_none()));
        for r in &c.norm {
            r.regex();
        }
        for r in &c.secret {
            r.regex();
        }
        assert!(!c.norm.is_empty() && !c.secret.is_empty());
    }
}
