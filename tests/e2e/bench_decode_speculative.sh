#!/usr/bin/env bash
# gemmaserve bench-decode --num-speculative-tokens on cpu (the demo shapes, dummy weights): verify
# steps of 1 + K rows a sequence, and with --speculative-model the assistant's draft rounds timed
# apart, for several K and batches (issue 29's step table); the flag combinations it cannot time
# are refused with a message naming the flag.
# Usage (ctest): bash bench_decode_speculative.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
common=(bench-decode --model demo --load-format dummy --backend cpu --batch 1,2 --context 40 --steps 3 --warmup 1)

timeout 120 "$bin" "${common[@]}" --num-speculative-tokens 1,3 --json "$work/verify.json" > "$work/verify.log" 2>&1 ||
  { cat "$work/verify.log"; exit 1; }
timeout 120 "$bin" "${common[@]}" --num-speculative-tokens 2,4 --speculative-model demo-assistant \
  --json "$work/draft.json" > "$work/draft.log" 2>&1 || { cat "$work/draft.log"; exit 1; }
grep -q "draft round ms" "$work/draft.log" || { cat "$work/draft.log"; exit 1; }

python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
verify, draft = (json.load(open(f"{w}/{n}.json")) for n in ("verify", "draft"))
assert [(r["batch"], r["speculative_tokens"]) for r in verify] == [(1, 1), (1, 3), (2, 1), (2, 3)], verify
assert [(r["batch"], r["speculative_tokens"]) for r in draft] == [(1, 2), (1, 4), (2, 2), (2, 4)], draft
for r in verify:
    assert r["ms_per_step"] > 0 and r["draft_round_ms"] == 0 and r["eager_steps"] == 4, r
for r in draft:
    assert r["ms_per_step"] > 0 and r["draft_round_ms"] > 0 and r["eager_steps"] == 4, r
PY

refused() {  # expected message, flags...
  local want=$1
  shift
  if "$bin" "${common[@]}" "$@" > "$work/bad.log" 2>&1; then echo "accepted: $*"; exit 1; fi
  grep -q -- "$want" "$work/bad.log" || { echo "no '$want' for: $*"; cat "$work/bad.log"; exit 1; }
}
refused "needs --num-speculative-tokens" --speculative-model demo-assistant
refused "one at a time" --num-speculative-tokens 3 --overlap
refused "num-speculative-tokens '3,x'" --num-speculative-tokens 3,x
refused "values must be positive" --num-speculative-tokens 0

echo "bench-decode speculative steps on cpu: ok"
