#!/usr/bin/env bash
# Tensor parallelism behind the HTTP endpoint, on cpu ranks with the demo model (whose vocabulary,
# 2027, two ranks do not divide: the padded LM head): `serve --tensor-parallel-size 2` and
# `--data-parallel-size 2 --tensor-parallel-size 2` (two replicas, each a TP group) answer greedy
# requests (plain, with logprobs, n > 1, streamed chat) exactly as one engine does, and shut down
# cleanly.
# Usage (ctest): bash server_tensor_parallel.sh GEMMASERVE_BINARY SOURCE_DIR
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
    '{"prompt":"stone cloud tree wind fire salt glass","max_tokens":30,"temperature":0,"logprobs":2}' \
    '{"prompt":"Hello","max_tokens":20,"temperature":0,"n":2}' || fail "a request failed"
  gs_streamed_chat_line "$out" \
    '{"messages":[{"role":"user","content":"Tell me about the moon"}],"max_tokens":40,"temperature":0}' ||
    fail "streamed request"
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
