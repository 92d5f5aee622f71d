#!/usr/bin/env bash
# Runs every built fuzz target for N seconds from its seed corpus (fuzz/corpus/<name>/).
# Usage: fuzz/run-all.sh BUILD_DIR [SECONDS]
set -euo pipefail
build="$1"; secs="${2:-20}"
here="$(cd "$(dirname "$0")" && pwd)"
pass=0; fail=0
for bin in "$build"/fuzz/fuzz_*; do
  [ -x "$bin" ] || continue
  name="$(basename "$bin" | sed 's/^fuzz_//')"
  work="$(mktemp -d)"
  [ -d "$here/corpus/$name" ] && cp -r "$here/corpus/$name/." "$work/"
  echo "[fuzz] $name for ${secs}s"
  if "$bin" -max_total_time="$secs" -rss_limit_mb=4096 -print_final_stats=0 "$work" >"$work.log" 2>&1; then
    pass=$((pass+1))
  else
    fail=$((fail+1)); tail -40 "$work.log"
  fi
  rm -rf "$work" "$work.log"
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
