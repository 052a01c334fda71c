#!/usr/bin/env bash
# The one place the cargo-nextest version is pinned: scripts/test.sh and .ci/run both
# run this, and it installs that version when cargo-nextest is missing. An installed
# cargo-nextest of another version is used as it is, with a note on stderr.
set -euo pipefail
NEXTEST_VERSION=0.9.143
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install cargo-nextest --locked --version "$NEXTEST_VERSION"
fi
installed=$(cargo nextest --version 2>/dev/null | head -1 | awk '{print $2}')
if [ "$installed" != "$NEXTEST_VERSION" ]; then
  echo "note: cargo-nextest $installed is installed; this repository pins $NEXTEST_VERSION" \
    "(cargo install cargo-nextest --locked --version $NEXTEST_VERSION)" >&2
fi
