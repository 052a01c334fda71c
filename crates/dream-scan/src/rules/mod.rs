//! The instruction-shaped rules: phrase patterns (see [`crate::pattern`]) and a few
//! raw regexes, all matched against the normalised text.
//!
//! Rule ids are `<area>.<lang>.<name>` for language-specific rules and
//! `<area>.<name>` otherwise. Every rule has benign look-alikes in its tests and in
//! the corpora under `crates/dream-scan/tests/fixtures/`.
//!
//! - [`machinery`]: what a rule is, its modes, and how the table compiles to
//!   [`NormRule`]s;
//! - [`context`]: the post-match checks that tell a mention from an attack;
//! - [`authority`]: the authority-header, end-marker and header-directive regexes;
//! - `table/`: the rules themselves, one file per category.

mod authority;
mod context;
mod machinery;
mod table;

pub(crate) use authority::header_then_instruction;
pub(crate) use context::quoted_mention;
pub(crate) use machinery::{MEMORY, NormRule, TRANSCRIPT, norm_rules};
