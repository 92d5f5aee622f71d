#!/usr/bin/env bash
# Tensor parallelism behind the HTTP endpoint, on cpu ranks with the demo model (whose vocabulary,
# 2027, two ranks do not divide: the padded LM head): `serve --tensor-parallel-size 2` and
# `--data-parallel-size 2 --tensor-parallel-size 2` (two replicas, each a TP group) answer greedy
# requests (plain, n > 1, streamed) exactly as one engine does, and shut down cleanly.
# Usage (ctest): bash server_tensor_parallel.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; echo "---- server log (tail) ----"; tail -30 "$work/server.log" 2>/dev/null; exit 1; }

requests() {  # one output line per request
  local out="$1"; : >"$out"
  local bodies=(
    '{"prompt":"The river","max_tokens":24,"temperature":0}'
    '{"prompt":"stone cloud tree wind fire salt glass","max_tokens":30,"temperature":0}'
    '{"prompt":"Hello","max_tokens":20,"temperature":0,"n":2}'
  )
  for b in "${bodies[@]}"; do
    curl -sf --max-time 120 "$GS_BASE_URL/v1/completions" -H 'Content-Type: application/json' -d "$b" |
      python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps([[c["text"], c["finish_reason"]] for c in d["choices"]]))' >>"$out" ||
      fail "request $b"
  done
  curl -sfN --max-time 120 "$GS_BASE_URL/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt":"Tell me about the moon","max_tokens":40,"temperature":0,"stream":true}' |
    python3 -c '
import json, sys
text = ""
for line in sys.stdin:
    line = line.strip()
    if line.startswith("data: ") and line != "data: [DONE]":
        text += "".join(c.get("text", "") for c in json.loads(line[6:])["choices"])
print(json.dumps(text))' >>"$out" || fail "streamed request"
}

gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 512 || fail "one engine did not start"
requests "$work/one.txt"
gs_stop_server || fail "one engine did not stop cleanly"

gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 512 --tensor-parallel-size 2 ||
  fail "TP2 did not start"
grep -q "tensor parallel: 2 ranks" "$work/server.log" || fail "no tensor-parallel line in the startup log"
requests "$work/tp2.txt"
diff "$work/one.txt" "$work/tp2.txt" || fail "TP2 answered differently from one engine"
gs_stop_server || fail "TP2 did not stop cleanly"

gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 512 --tensor-parallel-size 2 \
  --data-parallel-size 2 || fail "DP2 x TP2 did not start"
grep -q "data parallel: 2 replicas" "$work/server.log" || fail "no data-parallel line in the startup log"
[ "$(grep -c "tensor parallel: 2 ranks" "$work/server.log")" -ge 2 ] || fail "expected two TP groups in the log"
requests "$work/dp2tp2.txt"
diff "$work/one.txt" "$work/dp2tp2.txt" || fail "DP2 x TP2 answered differently from one engine"
gs_stop_server || fail "DP2 x TP2 did not stop cleanly"
echo "tensor parallel serving: OK ($(wc -l < "$work/one.txt") requests equal at TP2 and DP2 x TP2)"
