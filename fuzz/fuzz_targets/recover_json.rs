//! `recover_json_object(text, false)`: never panics, finishes in bounded time, and
//! its answer agrees with an independent, hand-written JSON recogniser:
//! - `Ok(v)`: `v` is an object, and it is the one top-level object of the text (a
//!   slice of the text that parses to `v`);
//! - `AmbiguousJson { n }`: the text holds exactly `n ≥ 2` top-level objects;
//! - `NoJsonObject`: on a short text (where the work budget cannot run out) the
//!   text holds no top-level object, or only one that serde_json cannot build
//!   (a number out of range, a lone surrogate, nesting over 128).
//!
//! The time bound on large texts is the `recover_json_time` target.
#![no_main]

use dream_core::llm::{MAX_RECOVERABLE_ANSWER, ModelError, recover_json_object};
use dream_fuzz::text_of;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Longest text on which the budget (`4n + 64 KiB` examined bytes) cannot run out:
/// all probes together examine at most `n (n + 1) / 2` bytes.
const EXACT_UP_TO: usize = 360;

fuzz_target!(|data: &[u8]| {
    let text = text_of(data);
    assert_eq!(recover_json_object(&text, true), Err(ModelError::Truncated));
    let got = recover_json_object(&text, false);
    let objects = top_level_objects(&text);
    match got {
        Ok(value) => {
            assert!(value.is_object(), "not an object: {value}");
            assert_eq!(objects.len(), 1, "Ok although the text holds {objects:?}");
            let slice: Value = serde_json::from_str(objects[0]).expect("recovered slice parses");
            assert_eq!(value, slice, "the value is not the text's object");
        }
        Err(ModelError::AmbiguousJson { candidates }) => {
            assert!(candidates >= 2);
            assert_eq!(candidates, objects.len(), "objects: {objects:?}");
        }
        Err(ModelError::NoJsonObject) => {
            if text.len() <= EXACT_UP_TO {
                let buildable =
                    objects.len() == 1 && serde_json::from_str::<Value>(objects[0]).is_ok();
                assert!(
                    objects.len() <= 1 && !buildable,
                    "NoJsonObject although the text holds {objects:?}"
                );
            }
        }
        Err(ModelError::TooLarge { .. }) => assert!(text.len() > MAX_RECOVERABLE_ANSWER),
        Err(other) => panic!("unexpected error {other:?}"),
    }
});

/// The top-level objects of `text`, left to right: at each `{` or `[` that is not
/// inside an earlier complete value, the longest prefix that is one JSON value
/// (RFC 8259 grammar, unlimited nesting, any number magnitude and any `\u`
/// escape) is skipped; objects among them are returned.
fn top_level_objects(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if matches!(bytes[at], b'{' | b'[')
            && let Some(len) = value_len(&bytes[at..])
        {
            if bytes[at] == b'{' {
                out.push(&text[at..at + len]);
            }
            at += len;
            continue;
        }
        at += 1;
    }
    out
}

/// Length of the JSON array or object that starts `b`, if one does. Iterative.
fn value_len(b: &[u8]) -> Option<usize> {
    #[derive(Clone, Copy, PartialEq)]
    enum Want {
        /// A value (or, right after `[`, a `]`).
        Value {
            first_in_array: bool,
        },
        /// A key string (or, right after `{`, a `}`).
        Key {
            first: bool,
        },
        Colon,
        /// `,` or the closing bracket of the innermost container.
        After,
    }
    let mut stack: Vec<u8> = Vec::new();
    let mut i = 0;
    let mut want = Want::Value {
        first_in_array: false,
    };
    let ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\n' | b'\r') {
            *i += 1;
        }
    };
    loop {
        // Leading white space is only skipped inside containers: the text
        // starts with the bracket.
        if !stack.is_empty() {
            ws(&mut i);
        }
        let c = *b.get(i)?;
        match want {
            Want::Value { first_in_array } => {
                if first_in_array && c == b']' {
                    stack.pop();
                    i += 1;
                    if stack.is_empty() {
                        return Some(i);
                    }
                    want = Want::After;
                    continue;
                }
                match c {
                    b'{' => {
                        stack.push(b'{');
                        i += 1;
                        want = Want::Key { first: true };
                    }
                    b'[' => {
                        stack.push(b'[');
                        i += 1;
                        want = Want::Value {
                            first_in_array: true,
                        };
                    }
                    b'"' => {
                        i = string_end(b, i)?;
                        want = Want::After;
                    }
                    b't' | b'f' | b'n' => {
                        let word: &[u8] = match c {
                            b't' => b"true",
                            b'f' => b"false",
                            _ => b"null",
                        };
                        if !b[i..].starts_with(word) {
                            return None;
                        }
                        i += word.len();
                        want = Want::After;
                    }
                    b'-' | b'0'..=b'9' => {
                        i = number_end(b, i)?;
                        want = Want::After;
                    }
                    _ => return None,
                }
            }
            Want::Key { first } => {
                if first && c == b'}' {
                    stack.pop();
                    i += 1;
                    if stack.is_empty() {
                        return Some(i);
                    }
                    want = Want::After;
                    continue;
                }
                if c != b'"' {
                    return None;
                }
                i = string_end(b, i)?;
                want = Want::Colon;
            }
            Want::Colon => {
                if c != b':' {
                    return None;
                }
                i += 1;
                want = Want::Value {
                    first_in_array: false,
                };
            }
            Want::After => {
                let top = *stack.last()?;
                match (c, top) {
                    (b',', b'[') => {
                        i += 1;
                        want = Want::Value {
                            first_in_array: false,
                        };
                    }
                    (b',', b'{') => {
                        i += 1;
                        want = Want::Key { first: false };
                    }
                    (b']', b'[') | (b'}', b'{') => {
                        stack.pop();
                        i += 1;
                        if stack.is_empty() {
                            return Some(i);
                        }
                    }
                    _ => return None,
                }
            }
        }
    }
}

/// End (exclusive) of the string literal whose quote is at `b[start]`.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        match *b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => match *b.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    let hex = b.get(i + 2..i + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    i += 6;
                }
                _ => return None,
            },
            0x00..=0x1F => return None,
            _ => i += 1,
        }
    }
}

/// End (exclusive) of the number starting at `b[start]`.
fn number_end(b: &[u8], start: usize) -> Option<usize> {
    let digits = |i: &mut usize| {
        let s = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i > s
    };
    let mut i = start;
    if b[i] == b'-' {
        i += 1;
    }
    match *b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => {
            digits(&mut i);
        }
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return None;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return None;
        }
    }
    Some(i)
}
