//! `dream_scan::Scanner` in transcript mode on arbitrary text:
//! - `scan` never panics; every finding's span lies within the text, on char
//!   boundaries, start ≤ end; the verdict is the one its findings earn;
//! - `scan_secrets` finds the same secrets as a full `scan`;
//! - `redact` leaves nothing that a second scan flags as a secret, comes back
//!   borrowed and unchanged when there was no secret, and keeps no secret's text
//!   (each secret span is replaced).
//!
//! The time bound on large texts is the `scan_time` target.
#![no_main]

use std::borrow::Cow;

use dream_fuzz::{known_bug, text_of, tolerating};
use dream_scan::{Category, Finding, MAX_FINDINGS, Mode, Scanner, Verdict};
use libfuzzer_sys::fuzz_target;

fn secrets(findings: &[Finding]) -> Vec<&Finding> {
    findings
        .iter()
        .filter(|f| f.category == Category::Secret)
        .collect()
}

fn check_spans(text: &str, findings: &[Finding]) {
    for f in findings {
        assert!(f.path.is_none(), "a text finding has a JSON path: {f:?}");
        let Some(span) = &f.span else {
            panic!("a text finding has no span: {f:?}");
        };
        assert!(
            span.start <= span.end && span.end <= text.len(),
            "span {span:?} outside the text ({} bytes): {f:?}",
            text.len()
        );
        assert!(
            text.is_char_boundary(span.start) && text.is_char_boundary(span.end),
            "span {span:?} not on char boundaries: {f:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let scanner = Scanner::new(Mode::Transcript);
    let text = text_of(data);
    // Known: `pem_at` slices its 120-byte header window inside a character.
    let _ = tolerating(
        "pem_header_char_boundary",
        "secrets.rs",
        "is not a char boundary",
        || check(&scanner, &text),
    );
});

fn check(scanner: &Scanner, text: &str) {
    let report = scanner.scan(text);
    check_spans(text, &report.findings);
    if report.findings.len() < MAX_FINDINGS {
        assert_eq!(report.verdict, Verdict::of(&report.findings));
    }
    let found = secrets(&report.findings);

    let secrets_only = scanner.scan_secrets(text);
    check_spans(text, &secrets_only.findings);
    if report.findings.len() < MAX_FINDINGS && !known_bug("scan_secrets_differs") {
        assert_eq!(
            found,
            secrets(&secrets_only.findings),
            "scan_secrets finds other secrets than scan in {text:?}"
        );
    }

    let redacted = scanner.redact(text);
    if secrets(&secrets_only.findings).is_empty() {
        assert!(
            matches!(redacted, Cow::Borrowed(_)) && redacted == text,
            "a text without secrets was changed: {text:?} -> {redacted:?}"
        );
        return;
    }
    assert!(
        redacted.contains("[REDACTED:"),
        "secrets but no redaction in {text:?}"
    );
    let again = scanner.scan(&redacted);
    let mut left = secrets(&again.findings);
    if known_bug("redaction_leaves_secret") {
        // Known: which candidates a rule tries depends on the text around them
        // (a match its value check rejects, or a more specific rule shadows,
        // hides the candidates inside it; a marker's `]` adds a word boundary),
        // a shorter text brings more into `pem_at`'s 120-byte header window,
        // and the marker's rule id can itself be a key word), so a redaction
        // marker can uncover a secret the first scan missed.
        const CONTEXT_RULES: [&str; 8] = [
            "aws_secret_access_key",
            "high_entropy_token",
            "secret_assignment",
            "password_assignment",
            "password_phrase",
            "bearer_token",
            "url_credentials",
            "pem_private_key",
        ];
        left.retain(|f| !CONTEXT_RULES.contains(&f.rule));
    }
    {
        assert!(
            left.is_empty(),
            "redacted text still holds secrets:\ninput: {text:?}\nredacted: {redacted:?}\nleft: {left:?}"
        );
    }
}
