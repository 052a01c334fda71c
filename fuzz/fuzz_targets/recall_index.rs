//! The persisted recall index's decoder (`recall::persist`, format 4: the
//! vocabulary, the record count, then each record's analysis with its packed
//! terms, `recall::terms`) on arbitrary bytes, cut into chunks of the size the
//! first byte names: never panics, and whatever it accepts encodes back to the
//! same bytes (every field is read as it was written, nothing is repaired).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&size, payload)) = data.split_first() else {
        return;
    };
    let chunks: Vec<&[u8]> = payload.chunks(usize::from(size).max(1)).collect();
    if let Ok(back) = dream_engine::recall::reencode_persisted_index(&chunks) {
        assert_eq!(back, payload, "an accepted payload encodes back differently");
    }
});
