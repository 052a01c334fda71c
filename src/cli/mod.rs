//! The `dream` subcommands, one module each.

pub mod scan;
