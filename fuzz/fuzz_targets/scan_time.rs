//! The scanner's time bound: the fuzz input, repeated to 64 KiB, is scanned and
//! redacted (transcript mode) within two seconds, where a linear pass takes about a
//! millisecond; every finding's span stays within the text on char boundaries.
#![no_main]

use std::time::{Duration, Instant};

use dream_fuzz::{known_bug, repeat_to, text_of, tolerating};
use dream_scan::{Mode, Scanner};
use libfuzzer_sys::fuzz_target;

const LEN: usize = 64 * 1024;
const TIME_BOUND: Duration = Duration::from_secs(2);

fuzz_target!(|data: &[u8]| {
    let scanner = Scanner::new(Mode::Transcript);
    let unit = text_of(data);
    let text = repeat_to(&unit, LEN);
    // Known: each `-----BEGIN` re-reads up to 64 KiB after it (`pem_at`).
    if known_bug("pem_superlinear") && text.to_ascii_lowercase().contains("-----begin") {
        return;
    }
    let started = Instant::now();
    // Known: `pem_at` slices its 120-byte header window inside a character.
    let Some((report, redacted)) = tolerating(
        "pem_header_char_boundary",
        "secrets.rs",
        "is not a char boundary",
        || (scanner.scan(&text), scanner.redact(&text)),
    ) else {
        return;
    };
    let took = started.elapsed();
    assert!(
        took < TIME_BOUND,
        "{} bytes of {unit:?} took {took:?}",
        text.len()
    );
    for f in &report.findings {
        let span = f.span.clone().expect("a text finding has a span");
        assert!(span.start <= span.end && span.end <= text.len(), "{f:?}");
        assert!(
            text.is_char_boundary(span.start) && text.is_char_boundary(span.end),
            "{f:?}"
        );
    }
    drop(redacted);
});
