//! Dream: long-term memory for LLM agents that cannot be turned against its user.
//!
//! This facade re-exports the workspace crates; storage backends, the HTTP models
//! and the conformance suite sit behind Cargo features. The `dream` command is the
//! `dream-cli` crate: a library dependency builds no command line and no MCP server
//! (an agent host embeds that from `dream-mcp`).
//!
//! # Features
//!
//! | feature | enables | default |
//! |---|---|---|
//! | `fs` | `dream::fs`: `FsStore`, a store in a directory (`dream-fs`) | yes |
//! | `sqlite` | `dream::sqlite`: `SqliteStore`, a store in one SQLite file, SQLite bundled (`dream-sqlite`) | no |
//! | `redis` | `dream::redis`: `RedisStore`, shared by many processes and hosts (`dream-redis`) | no |
//! | `postgres` | `dream::postgres`: `PostgresStore`, shared by many processes and hosts (`dream-postgres`) | no |
//! | `encryption` | `dream::encrypted`: `EncryptedStore`, AES-256-GCM over any store (`dream-encrypted`) | no |
//! | `llm` | `dream::llm`: OpenAI, Anthropic and OpenAI-compatible models and embedders, the only network client (`dream-llm`) | no |
//! | `local-embedder` | `dream::embed`: `LocalEmbedder`, a sentence-transformers model (all-MiniLM-L6-v2 and its BERT kin) run in process, no service and no network (`dream-embed`) | no |
//! | `conformance` | `dream::conformance`: the suite every store passes, for a store of your own (`dream-conformance`) | no |
//! | `testing` | `dream::testing`: an in-memory store, a scripted model and a deterministic embedder | no |
//! | `failpoints` | the crash points of the store and encryption layers: `failpoint::failpoint(name)` kills the process when `DREAM_FAILPOINT` is `name` (crash tests); otherwise they compile to nothing | no |
//!
//! Without features the facade is the engine, the scanner and the store contract
//! ([`core`], [`engine`], [`scan`]); bring a [`RecordStore`] of your own or enable a
//! backend.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use dream_core as core;
pub use dream_core::*;
pub use dream_engine as engine;
pub use dream_scan as scan;

#[cfg(feature = "conformance")]
#[cfg_attr(docsrs, doc(cfg(feature = "conformance")))]
pub use dream_conformance as conformance;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use dream_core::testing;
#[cfg(feature = "local-embedder")]
#[cfg_attr(docsrs, doc(cfg(feature = "local-embedder")))]
pub use dream_embed as embed;
#[cfg(feature = "encryption")]
#[cfg_attr(docsrs, doc(cfg(feature = "encryption")))]
pub use dream_encrypted as encrypted;
#[cfg(feature = "fs")]
#[cfg_attr(docsrs, doc(cfg(feature = "fs")))]
pub use dream_fs as fs;
#[cfg(feature = "llm")]
#[cfg_attr(docsrs, doc(cfg(feature = "llm")))]
pub use dream_llm as llm;
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use dream_postgres as postgres;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use dream_redis as redis;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use dream_sqlite as sqlite;
