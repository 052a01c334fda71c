//! `dream mcp` end to end (placeholder).
