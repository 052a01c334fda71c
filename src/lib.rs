//! Dream: long-term memory for LLM agents that cannot be turned against its user.
//!
//! This facade re-exports the workspace crates; storage backends, the HTTP models
//! and the conformance suite sit behind Cargo features.

pub use dream_core as core;
pub use dream_core::*;
pub use dream_engine as engine;
pub use dream_scan as scan;

#[cfg(feature = "conformance")]
pub use dream_conformance as conformance;
#[cfg(feature = "encryption")]
pub use dream_encrypted as encrypted;
#[cfg(feature = "fs")]
pub use dream_fs as fs;
#[cfg(feature = "llm")]
pub use dream_llm as llm;
#[cfg(feature = "postgres")]
pub use dream_postgres as postgres;
#[cfg(feature = "redis")]
pub use dream_redis as redis;
#[cfg(feature = "sqlite")]
pub use dream_sqlite as sqlite;
