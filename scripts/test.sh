#!/usr/bin/env bash
# The whole test suite, every feature on: what README.md calls the test command.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo nextest run --workspace --all-features --profile ci --no-fail-fast
cargo test --workspace --all-features --doc
