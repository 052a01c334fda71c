//! Dream: long-term memory for LLM agents that cannot be turned against its user.
//!
//! This facade re-exports the workspace crates behind Cargo features.

pub use dream_core as core;
pub use dream_core::*;

#[cfg(feature = "conformance")]
pub use dream_conformance as conformance;
#[cfg(feature = "fs")]
pub use dream_fs as fs;
