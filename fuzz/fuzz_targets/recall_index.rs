//! The persisted recall index's decoder (`recall::persist`, format 5: the
//! vocabulary, then the records and tables read in place, `recall::mapped`:
//! each record's analysis with its packed terms, the posting lists, the
//! scope, supersession and subject tables) on arbitrary bytes, cut into chunks
//! of the size the first byte names: never panics, and whatever it accepts
//! (every record decoded) encodes back to the same bytes (every field is read
//! as it was written, nothing is repaired, no table disagrees with the records).
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
