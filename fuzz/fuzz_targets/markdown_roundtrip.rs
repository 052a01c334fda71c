//! Any memory built from fuzz input (validated ids, tricky strings, nested JSON
//! metadata, edge timestamps and confidences) renders to Markdown that parses back
//! to the same memory, normalised, with exactly one `id:` line and no `---` line
//! inside the frontmatter.
#![no_main]

use dream_core::{parse_memory, render_memory};
use dream_fuzz::{MemoryInput, check_frontmatter, known_bug};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: MemoryInput| {
    let memory = input.build();
    let skip_years = known_bug("years_outside_0000_9999");
    if skip_years {
        use chrono::Datelike;
        let odd = |t: &chrono::DateTime<chrono::Utc>| !(0..=9999).contains(&t.year());
        if odd(&memory.created_at)
            || odd(&memory.updated_at)
            || memory.expires_at.as_ref().is_some_and(odd)
        {
            return;
        }
    }
    let text = render_memory(&memory);
    let expected = memory.clone().normalized();
    match parse_memory(&text) {
        Ok(back) => {
            if known_bug("metadata_float_roundtrip") && back.metadata != expected.metadata {
                return;
            }
            assert_eq!(back, expected, "render + parse changed the memory:\n{text}");
        }
        Err(e) => panic!("a rendered memory does not parse: {e}\n{text}"),
    }
    check_frontmatter(&text, &memory, !known_bug("unicode_line_breaks"));
    // Normalising is idempotent: the normalised memory renders to the same text.
    assert_eq!(render_memory(&expected), text);
});
