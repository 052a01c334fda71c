//! The time bound of `recover_json_object`: the fuzz input, repeated up to the
//! largest answer it looks at (1 MiB), is recovered within a few seconds, never
//! panics, and an `Ok` is a JSON object. Hostile repetitions of broken fragments
//! are what the work budget is for.
#![no_main]

use std::time::{Duration, Instant};

use dream_core::llm::{MAX_RECOVERABLE_ANSWER, recover_json_object};
use dream_fuzz::{repeat_to, text_of};
use libfuzzer_sys::fuzz_target;

/// Time allowed for one call on a 1 MiB text (a linear pass takes milliseconds).
const TIME_BOUND: Duration = Duration::from_secs(3);

fuzz_target!(|data: &[u8]| {
    let unit = text_of(data);
    let mut text = repeat_to(&unit, MAX_RECOVERABLE_ANSWER - 8);
    let cut = (0..=MAX_RECOVERABLE_ANSWER.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    text.truncate(cut);
    let started = Instant::now();
    let result = recover_json_object(&text, false);
    let took = started.elapsed();
    assert!(
        took < TIME_BOUND,
        "{} bytes of {unit:?} took {took:?}",
        text.len()
    );
    if let Ok(v) = result {
        assert!(v.is_object(), "not an object: {v}");
    }
});
