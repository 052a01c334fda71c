#!/usr/bin/env bash
# The whole test suite, every feature on: what README.md calls the test command.
# Doc tests first, then every unit, integration and process test under nextest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/nextest.sh # installs the pinned cargo-nextest when it is missing
cargo test --workspace --all-features --doc
cargo nextest run --workspace --all-features --profile ci --no-fail-fast
