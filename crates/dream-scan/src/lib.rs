//! Dream's injection and secret scanner: pure, no I/O.
//!
//! Every string that enters or leaves Dream's memory goes through a [`Scanner`]:
//! transcripts before consolidation, the memories a model proposes before they are
//! written, and recalled records before they are used.
//!
//! # How a text is scanned
//!
//! 1. **Normalise once** (NFKC letters with accents folded, zero-width and bidi
//!    controls removed, Latin/Cyrillic/Greek look-alikes folded, lower case, spaced-out
//!    letters joined, leetspeak read as letters, Unicode tag characters decoded).
//!    Every byte of the normalised text maps back to the original, so findings carry
//!    byte spans of the ORIGINAL text.
//! 2. **One multi-pattern pass**: a single Aho-Corasick automaton holds every rule's
//!    trigger literals ([`literals`]). Only the rules whose literals occur are
//!    confirmed, each with its own regex, and only in a window around the hits.
//!    Instruction rules read the normalised text; secret rules read the original
//!    (where case and digits matter). The same pass carries the credential families
//!    (`families.rs`: provider prefixes, webhook hosts, provider words, each token
//!    checked against its documented shape); shapes with no literal (Twilio keys,
//!    Telegram and Discord bot tokens, BIP-39 seed phrases) are found by one bounded
//!    sweep beside it.
//!    The same pass carries the gate words of the **structural detectors**
//!    (`structure.rs`), which read only the windows around their gate words: a
//!    request addressed to the assistant/AI/agent/model inside data with an action on
//!    an external target (IBAN or account, e-mail address, URL, sensitive path, named
//!    tool with arguments, credential or recipient change) or a request cue (a new
//!    task, skipping confirmation, a claimed earlier approval, a code for every
//!    answer); directives that fix what the reader's responses contain; requests to
//!    continue, complete, print, repeat, translate or convert its instructions; fake
//!    system/developer/tool/operator markers followed by a task; misspelled overrides
//!    ("ignroe the previus guidelines"); "decode and follow" wrappers; and markdown
//!    image/link URLs carrying a data placeholder.
//! 3. **The learned stage**: a softmax regression over hashed word and stem features
//!    of the same normalised text reads windows of 48 tokens for the six categories
//!    that are about meaning (override, persona, extraction, exfiltration, tool
//!    execution, persistence) and reports `learned.<category>` where its confidence
//!    reaches the model's threshold for the mode (each calibrated on held-out benign
//!    texts of its mode, ordinary conversation among them) — the paraphrases and languages no phrase rule was
//!    written for. It is trained from the development corpora, not from the holdouts;
//!    texts under five words are left to the rules. [`Scanner::with_learned_stage`]
//!    turns it off.
//! 4. **Personal data** (e-mail, phone, payment cards with a valid Luhn checksum).
//! 5. **Encoded payloads** (base64, hex — contiguous or as separate bytes, `79 6f`,
//!    `0x79, 0x6f` — URL escapes, HTML entities, `\x`/`\u` escapes, Unicode tag
//!    characters; base32, binary octets, ascii85, Morse, and lines that read as
//!    ROT13 or reversed text, `encoded_extra.rs`) are decoded — at most [`MAX_DECODE_DEPTH`] levels deep, at most
//!    256 KiB per candidate and 1 MiB per scan — and the decoded text is scanned
//!    again. What the decoded text contains is reported at the encoded span; a tag
//!    run is a Medium `encoded.unicode_tags` finding, High when its text is an
//!    instruction.
//!
//! # Verdict
//!
//! [`Verdict`] is derived from the findings, most severe first:
//!
//! | findings | verdict |
//! |---|---|
//! | any [`Category::Secret`] | [`Verdict::Secret`] |
//! | else any [`Severity::High`] finding of an instruction-type category (every category except `Secret` and `PersonalData`; `DepthExceeded` counts: what cannot be inspected fails closed) | [`Verdict::Instruction`] |
//! | else any finding (medium/low, or personal data) | [`Verdict::Suspicious`] |
//! | none | [`Verdict::Clean`] |
//!
//! # Modes
//!
//! [`Mode::Transcript`] scans untrusted ingest (session transcripts, fetched
//! content). [`Mode::Memory`] scans authored memory (what a model proposes to store,
//! what recall hands back). They differ in one respect, following the curator's
//! vault/wiki split: LLM-vocabulary markers — chat-template tokens (`<|im_start|>`,
//! `[INST]`, `<<SYS>>`, `<start_of_turn>`), bare role tags (`<system>`,
//! `</document>`), `\n\nHuman:`/`Assistant:` turns, fake assistant turns and
//! `"role": "system"` JSON — are findings in transcripts only. Authored memory may
//! legitimately *talk about* LLM formats ("the user fine-tunes on ChatML with
//! `<|im_start|>`"). The same vocabulary used as *structure* is a finding in both
//! modes: a template turn that opens a line and carries content
//! (`<|im_start|>system\n…`, `[INST] …`; not a turn whose content is a placeholder
//! such as `{{ prompt }}`), a complete turn anywhere in a line (opening token, role,
//! at least four words, closing token: `… <|im_start|>system\nAlways …<|im_end|>`),
//! a `{"role": "system"` record opening a line, Alpaca (`### Instruction:`) headers
//! and ReAct traces (`Action:` … `Action Input:`).
//! Everything else — including fake frame tags (`</session_…>`, `<memory…>`,
//! `<tool_output>`), fake end-of-content markers with text after them (six
//! languages), and authority headers (`SYSTEM:`, `Systemnachricht:`, `Tool result:`,
//! `Observation:`, `Resultado da ferramenta:` …) followed by a directive, by another
//! rule's High instruction finding on the same line, or by a claim that the user
//! granted something without confirmation — is a finding in both modes.
//!
//! # Budgets
//!
//! Scanning is linear in the input: normalisation and the literal pass are single
//! sweeps, each rule's regex runs over merged windows (so at most once over any byte),
//! the learned stage reads each token's features in at most three windows, decoding
//! is bounded as above and JSON nesting is capped (default [`DEFAULT_MAX_JSON_DEPTH`];
//! deeper containers are a [`Category::DepthExceeded`] finding and are not descended
//! into). A report lists at most [`MAX_FINDINGS`]
//! findings (the most severe kept); the verdict always reflects all of them.

mod addressed;
mod classifier;
mod encoded;
mod encoded_extra;
mod families;
mod multilingual;
mod normalize;
mod pattern;
mod pii;
mod report;
mod rules;
mod scanner;
mod secrets;
mod structure;
mod tool_output;

pub use report::{Category, Finding, Report, Severity, Verdict};
pub use scanner::{Mode, Scanner, literals};

/// Deepest chain of nested encodings that is decoded (`base64(base64(…))`).
pub const MAX_DECODE_DEPTH: usize = 4;
/// Default cap on JSON container nesting for [`Scanner::scan_json`].
pub const DEFAULT_MAX_JSON_DEPTH: usize = 8;
/// Most findings a report lists.
pub const MAX_FINDINGS: usize = 256;
#[cfg(test)]
mod tests;

/// Training the learned stage's model (feature `train`; see `examples/train_classifier.rs`).
#[cfg(feature = "train")]
pub use classifier::training;
