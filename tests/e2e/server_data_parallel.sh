#!/usr/bin/env bash
# Data parallelism: `serve --data-parallel-size 2` (two cpu engines of the demo model behind one
# endpoint) answers greedy and seeded requests exactly as one engine does, keeps a conversation's
# repeated prefix on the replica that holds it (prefix-cache hits), reports both replicas' pages in
# /metrics, drains and exits cleanly; with an MTP drafter per replica it answers the same.
# Usage (ctest): bash server_data_parallel.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; echo "---- server log (tail) ----"; tail -30 "$work/server.log" 2>/dev/null; exit 1; }

requests() {  # one output line per request
  local out="$1"; : >"$out"
  gs_completion_lines "$out" \
    '{"prompt":"The river","max_tokens":24,"temperature":0}' \
    '{"prompt":"stone cloud tree wind fire salt glass","max_tokens":30,"temperature":0}' \
    '{"prompt":"a b c d e f","max_tokens":32,"temperature":0.8,"seed":5}' \
    '{"prompt":"Hello","max_tokens":20,"temperature":0,"n":2}' || fail "a request failed"
}
metric() { curl -sf "$GS_BASE_URL/metrics" | awk -v m="$1" '$1 == m {print $2}' | head -1; }

gs_start_server "$bin" "$work/one.log" --backend cpu --max-model-len 512 || fail "one engine did not start"
requests "$work/one.txt"
gs_stop_server || fail "one engine did not stop cleanly"

gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 512 --data-parallel-size 2 || fail "two replicas did not start"
grep -q "data parallel: 2 replicas" "$work/server.log" || fail "no data-parallel line in the startup log"
requests "$work/two.txt"
diff "$work/one.txt" "$work/two.txt" || fail "two replicas answered differently from one engine"

# A conversation: the same long system prompt three times; later turns hit the prefix cache.
sys_prompt="$(python3 -c 'print(" ".join(["system"] + [f"rule{i}" for i in range(60)]))')"
hits_before="$(metric gemmaserve_prefix_cache_hits_total)"; hits_before="${hits_before:-0}"
for turn in 1 2 3; do
  curl -sf --max-time 60 "$GS_BASE_URL/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"prompt\":\"$sys_prompt question $turn\",\"max_tokens\":4,\"temperature\":0}" >/dev/null || fail "turn $turn"
done
hits_after="$(metric gemmaserve_prefix_cache_hits_total)"
python3 - "$hits_before" "${hits_after:-0}" <<'PY' || fail "the repeated prefix did not hit the cache across turns"
import sys
before, after = float(sys.argv[1]), float(sys.argv[2])
print(f"prefix-cache hit tokens: {before:.0f} -> {after:.0f}")
sys.exit(0 if after - before >= 64 else 1)
PY
# /metrics covers both replicas: the KV pool totals are twice one engine's.
total_two="$(curl -sf "$GS_BASE_URL/metrics" | awk '/^gemmaserve_kv_pages_total/ {s += $2} END {print s}')"
[ -n "$total_two" ] && [ "${total_two%.*}" -gt 0 ] || fail "no KV page totals in /metrics"
gs_stop_server || fail "two replicas did not stop cleanly"

# Each replica drafts with its own MTP assistant: the same answers (greedy exact on cpu, seeded as
# without drafts), and rounds counted over both replicas.
gs_start_server "$bin" "$work/spec.log" --backend cpu --max-model-len 512 --data-parallel-size 2 \
  --speculative-model demo-assistant || fail "two replicas with drafters did not start"
requests "$work/spec.txt"
diff "$work/one.txt" "$work/spec.txt" || fail "two replicas with drafters answered differently from one engine"
drafts="$(metric vllm:spec_decode_num_drafts_total)"
[ -n "$drafts" ] && [ "${drafts%.*}" -gt 0 ] || fail "no drafting rounds counted (vllm:spec_decode_num_drafts_total '$drafts')"
gs_stop_server || fail "two replicas with drafters did not stop cleanly"
echo "data parallel: OK (answers equal one engine's, prefix hits across turns, pages $total_two, $drafts drafting rounds with drafters)"
