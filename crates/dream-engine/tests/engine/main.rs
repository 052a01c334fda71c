//! The engine's integration tests: one binary, one module per area.

mod accounting;
mod attacks;
mod common;
mod kept;
mod kernel;
mod lifecycle;
mod llm;
mod multiprocess;
mod provenance;
mod purge;
mod rules;
mod secrets;
mod small;
mod verified;
