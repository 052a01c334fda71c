//! Regressions found by fuzzing (`fuzz/` targets `scan` and `scan_time`), with the
//! fuzz targets' invariants: no panic; spans within the text on char boundaries;
//! the verdict its findings earn; `scan_secrets` finds the secrets `scan` finds;
//! `redact` leaves nothing a second scan flags as a secret. Secret-shaped inputs are
//! assembled at run time.

use std::borrow::Cow;

use dream_scan::{Category, Finding, MAX_FINDINGS, Mode, Scanner, Verdict};

fn secrets(f: &[Finding]) -> Vec<&Finding> {
    f.iter()
        .filter(|f| f.category == Category::Secret)
        .collect()
}

#[track_caller]
fn invariants(text: &str) {
    let scanner = Scanner::new(Mode::Transcript);
    let report = scanner.scan(text);
    for f in &report.findings {
        let s = f.span.clone().expect("a text finding has a span");
        assert!(s.start <= s.end && s.end <= text.len(), "{f:?}");
        assert!(
            text.is_char_boundary(s.start) && text.is_char_boundary(s.end),
            "{f:?}"
        );
    }
    if report.findings.len() < MAX_FINDINGS {
        assert_eq!(report.verdict, Verdict::of(&report.findings));
    }
    let only = scanner.scan_secrets(text);
    if report.findings.len() < MAX_FINDINGS {
        assert_eq!(
            secrets(&report.findings),
            secrets(&only.findings),
            "scan_secrets differs on {text:?}"
        );
    }
    let redacted = scanner.redact(text);
    if secrets(&only.findings).is_empty() {
        assert!(matches!(redacted, Cow::Borrowed(_)) && redacted == text);
        return;
    }
    let again = scanner.scan(&redacted);
    assert!(
        secrets(&again.findings).is_empty(),
        "redacted text still holds secrets: {redacted:?}"
    );
}

fn noise(n: usize, seed: u64) -> String {
    const A: &[u8] = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            A[(x % A.len() as u64) as usize] as char
        })
        .collect()
}

#[test]
fn pem_header_cut_inside_a_character() {
    // The 120-byte header window used to end inside a two-byte character.
    for n in [55, 56, 60, 80] {
        invariants(&format!("-----BEGIN {}", "é".repeat(n)));
        invariants(&format!(
            "-----BEGIN {} PRIVATE KEY-----\nQUJD",
            "é".repeat(n)
        ));
    }
}

#[test]
fn redaction_leaves_no_token_in_reach_of_a_key_word() {
    // Redacting the first token brought the second within reach of "token".
    invariants(&format!(
        "token {}{} for build {}",
        "ghp_",
        noise(36, 1),
        noise(32, 2)
    ));
    invariants(&format!(
        "KEY={}{}\0{}",
        "sk-ant-api03-",
        noise(45, 3),
        noise(34, 4)
    ));
    invariants(&format!(
        "API_KEY: {} and also {}",
        noise(30, 5),
        noise(30, 6)
    ));
}

#[test]
fn secret_hidden_behind_a_rejected_value() {
    // The outer `api_key=` value (a URL) is rejected; the inner one is a secret.
    let text = format!(
        "api_key=https://example.com/cb?api_key={}",
        "9f86".repeat(16)
    );
    invariants(&text);
    let r = Scanner::new(Mode::Transcript).scan(&text);
    assert_eq!(r.verdict, Verdict::Secret, "{:?}", r.findings);
}

#[test]
fn every_token_after_a_key_word_is_a_candidate() {
    let a = noise(32, 7);
    let b = noise(32, 8);
    let text = format!("token {a} {b}");
    let r = Scanner::new(Mode::Transcript).scan(&text);
    let spans: Vec<&str> = r
        .findings
        .iter()
        .filter_map(|f| f.span.clone())
        .map(|s| &text[s])
        .collect();
    assert!(
        spans.contains(&a.as_str()) && spans.contains(&b.as_str()),
        "{spans:?}"
    );
}

#[test]
fn url_credentials_mixed_with_noise() {
    let pw = format!(
        "{}&{}?{}#{}",
        noise(4, 9),
        noise(4, 10),
        noise(3, 11),
        noise(6, 12)
    );
    invariants(&format!(
        "redis://default:{pw}@cache.internal\u{8a}:2210/x redis://default:{pw}@cache.other:6379/0"
    ));
}
