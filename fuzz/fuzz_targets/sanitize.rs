//! `sanitize`: no live `<session`/`<memory` tag survives (checked by a hand-written
//! reading of the rule, independent of the sanitizer's regex), the only change is a
//! U+200B after a `<`, escaping is idempotent, and text without a tag comes back
//! byte for byte.
#![no_main]

use std::borrow::Cow;
use std::sync::LazyLock;

use dream_core::sanitize;
use dream_fuzz::{has_live_tag, text_of};
use libfuzzer_sys::fuzz_target;
use regex::Regex;

/// The rule as the brief states it: `<`, optional white space and `/`, then the
/// word, case-insensitively (Unicode simple case folding).
static LIVE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)<\s*/?\s*(?:session|memory)").expect("static regex"));

fuzz_target!(|data: &[u8]| {
    let text = text_of(data);
    let out = sanitize(&text);
    assert!(
        !has_live_tag(&out),
        "live tag left in {out:?} (from {text:?})"
    );
    assert!(
        !LIVE.is_match(&out),
        "live tag left in {out:?} (from {text:?})"
    );
    if !has_live_tag(&text) && !LIVE.is_match(&text) {
        assert!(matches!(out, Cow::Borrowed(_)), "benign text was copied");
        assert_eq!(out.as_bytes(), text.as_bytes(), "benign text changed");
    } else {
        assert_ne!(out.as_ref(), text.as_ref(), "a tag was not escaped");
    }
    // Only insertions of U+200B right after a `<`.
    let mut rest = out.as_ref();
    let mut original = String::with_capacity(text.len());
    while let Some(i) = rest.find("<\u{200B}") {
        original.push_str(&rest[..=i]);
        rest = &rest[i + "<\u{200B}".len()..];
        // An escape the input already had stays as it was.
        if text
            .get(original.len()..)
            .is_some_and(|t| t.starts_with('\u{200B}'))
        {
            original.push('\u{200B}');
        }
    }
    original.push_str(rest);
    assert_eq!(
        original,
        text.as_ref(),
        "sanitize changed more than tag escapes"
    );
    // Idempotent.
    assert_eq!(
        sanitize(&out).as_ref(),
        out.as_ref(),
        "escaping twice changes the text"
    );
});
