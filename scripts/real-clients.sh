#!/usr/bin/env bash
# The real agent clients against Dream (scripts/real-clients.py says what is
# checked): installs pinned OpenAI Codex CLI and Claude Code from npm into a
# cache outside the clone, then drives both against a scripted model on
# loopback, inside a network namespace with only loopback when one can be made.
#
# Usage: scripts/real-clients.sh PATH/TO/dream
# DREAM_NPM_DIR: the npm cache (default /var/tmp/dream-npm).
# Without npm or the registry the check is skipped (exit 0) and says so;
# DREAM_REQUIRE_CLIENTS=1 makes that a failure. Bounded: 5 minutes in all.
set -euo pipefail
cd "$(dirname "$0")/.."

CODEX_VERSION=0.171.0
CLAUDE_CODE_VERSION=2.1.332
npm_dir="${DREAM_NPM_DIR:-/var/tmp/dream-npm}"
dream=$(realpath "${1:?usage: scripts/real-clients.sh PATH/TO/dream}")
deadline=$((SECONDS + 300))

skip() {
  echo "real clients skipped: $*"
  if [ "${DREAM_REQUIRE_CLIENTS:-}" = 1 ]; then
    echo "DREAM_REQUIRE_CLIENTS=1: the real clients are required" >&2
    exit 1
  fi
  exit 0
}

installed() { # package version
  [ "$(node -p "require('$npm_dir/node_modules/$1/package.json').version" 2>/dev/null)" = "$2" ]
}

command -v npm >/dev/null && command -v node >/dev/null || skip "node and npm are not installed"
if ! installed @openai/codex "$CODEX_VERSION" || ! installed @anthropic-ai/claude-code "$CLAUDE_CODE_VERSION"; then
  # npm itself retries for minutes without a network (and answers `view` from
  # its cache), so ask the registry directly first.
  registry=$(npm config get registry)
  timeout 20 node -e 'fetch(process.argv[1]).then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))' \
    "${registry%/}/@openai%2fcodex/$CODEX_VERSION" || skip "the npm registry ($registry) is unreachable"
  mkdir -p "$npm_dir"
  timeout 180 npm install --prefix "$npm_dir" --no-audit --no-fund --no-update-notifier --loglevel=error \
    "@openai/codex@$CODEX_VERSION" "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" \
    || skip "npm could not install @openai/codex@$CODEX_VERSION and @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"
fi
for bin in codex claude; do
  [ -x "$npm_dir/node_modules/.bin/$bin" ] || skip "npm installed no $bin"
done
echo "codex $("$npm_dir/node_modules/.bin/codex" --version), claude $("$npm_dir/node_modules/.bin/claude" --version)"

left=$((deadline - SECONDS))
checks=(timeout "$left" python3 scripts/real-clients.py "$dream" "$npm_dir")
# Nothing may reach the network: with a namespace of its own only loopback exists.
if command -v ip >/dev/null && unshare --net sh -c 'ip link set lo up' 2>/dev/null; then
  echo "in a network namespace with only loopback"
  unshare --net sh -c 'ip link set lo up && exec "$@"' sh "${checks[@]}"
else
  echo "no network namespace here: relying on the clients' telemetry and update settings"
  "${checks[@]}"
fi
echo "real clients: ok in $SECONDS s"
