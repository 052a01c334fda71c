#!/usr/bin/env bash
# Runs one fuzz target on one core: ./run.sh <target> [seconds] [extra libFuzzer flags...]
# Needs cargo-fuzz (`cargo install cargo-fuzz`); works on stable through RUSTC_BOOTSTRAP.
set -euo pipefail
cd "$(dirname "$0")"
target="${1:?usage: ./run.sh <target> [seconds] [libFuzzer flags...]}"
seconds="${2:-300}"
shift $(( $# >= 2 ? 2 : 1 ))
extra=()
case "$target" in
  markdown_parse|markdown_roundtrip) dict=dicts/markdown.dict ;;
  sanitize) dict=dicts/sanitize.dict ;;
  recover_json) dict=dicts/json.dict ;;
  scan) dict=dicts/scan.dict ;;
  recall_index) dict=dicts/recall_index.dict ;;
  # The time targets repeat their input: let units grow at once (no slow ramp).
  recover_json_time) dict=dicts/json.dict; extra=(-len_control=0 -max_len=256) ;;
  scan_time) dict=dicts/scan.dict; extra=(-len_control=0 -max_len=256) ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac
mkdir -p "corpus/$target"
# Safe Rust: no AddressSanitizer (3x faster); debug assertions catch overflow.
RUSTC_BOOTSTRAP=1 exec cargo fuzz run --sanitizer none --debug-assertions "$target" -- \
  -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -dict="$dict" \
  -print_final_stats=1 "${extra[@]}" "$@"
