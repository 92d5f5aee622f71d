#!/usr/bin/env bash
# Runs built fuzz targets for N seconds each from their seed corpus (fuzz/corpus/<name>/): every
# target under BUILD_DIR/fuzz, or only the NAMEs given (fuzz_<NAME>). An input that fails is kept
# under BUILD_DIR/fuzz-findings/ to reproduce with: BUILD_DIR/fuzz/fuzz_<NAME> <that file>.
# Usage: fuzz/run-all.sh BUILD_DIR [SECONDS [NAME...]]
set -euo pipefail
build="$1"; secs="${2:-20}"
shift $(( $# < 2 ? $# : 2 ))
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -gt 0 ]; then
  bins=(); for n in "$@"; do bins+=("$build/fuzz/fuzz_$n"); done
else
  bins=("$build"/fuzz/fuzz_*)
fi
findings="$build/fuzz-findings"
mkdir -p "$findings"
pass=0; fail=0
for bin in "${bins[@]}"; do
  [ -x "$bin" ] || { echo "[fuzz] $bin: not built"; fail=$((fail+1)); continue; }
  name="$(basename "$bin" | sed 's/^fuzz_//')"
  work="$(mktemp -d)"
  [ -d "$here/corpus/$name" ] && cp -r "$here/corpus/$name/." "$work/"
  echo "[fuzz] $name for ${secs}s"
  if "$bin" -max_total_time="$secs" -rss_limit_mb=4096 -print_final_stats=0 \
       -artifact_prefix="$findings/$name-" "$work" >"$work.log" 2>&1; then
    pass=$((pass+1))
  else
    fail=$((fail+1)); tail -40 "$work.log"
  fi
  rm -rf "$work" "$work.log"
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
