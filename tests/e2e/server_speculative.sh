#!/usr/bin/env bash
# Serving with an MTP drafter: `serve --speculative-model demo-assistant` answers greedy requests
# (plain, streamed, n > 1, with stop and logprobs) exactly as the same server without the drafter,
# exports vLLM's spec_decode counters, and ends with no KV page held.
# Usage (ctest): bash server_speculative.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; echo "---- server log (tail) ----"; tail -30 "$work/server.log" 2>/dev/null; exit 1; }

requests() {  # the same requests against whichever server runs; one output line per request
  local out="$1"; : >"$out"
  gs_completion_lines "$out" \
    '{"prompt":"The river","max_tokens":24,"temperature":0}' \
    '{"prompt":"stone cloud tree wind fire salt glass","max_tokens":40,"temperature":0,"logprobs":2}' \
    '{"prompt":"Hello","max_tokens":30,"temperature":0,"n":2}' \
    '{"prompt":"a b c d e f","max_tokens":32,"temperature":0.8,"seed":5}' || fail "a request failed"
  gs_streamed_chat_line "$out" \
    '{"messages":[{"role":"user","content":"Tell me about the moon"}],"max_tokens":40,"temperature":0}' ||
    fail "streamed request"
}

gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 512 --page-size 4
requests "$work/plain.txt"
gs_stop_server || fail "the plain server did not shut down cleanly"

gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 512 --page-size 4 \
  --speculative-model demo-assistant --num-speculative-tokens 4
grep -q "speculative decoding: demo-assistant drafts 4 tokens a round" "$work/server.log" || fail "no startup line for the drafter"
requests "$work/spec.txt"
diff "$work/plain.txt" "$work/spec.txt" || fail "outputs with the drafter differ from outputs without it"
metrics="$(curl -sf "$GS_BASE_URL/metrics")" || fail "/metrics"
drafts="$(echo "$metrics" | awk '$1 == "vllm:spec_decode_num_drafts_total" {print $2}')"
[ -n "$drafts" ] && [ "${drafts%.*}" -gt 0 ] || fail "vllm:spec_decode_num_drafts_total is '$drafts'"
echo "$metrics" | grep -q '^vllm:spec_decode_num_draft_tokens_total ' || fail "no num_draft_tokens counter"
echo "$metrics" | grep -q '^vllm:spec_decode_num_accepted_tokens_total ' || fail "no num_accepted_tokens counter"
used="$(echo "$metrics" | awk '$1 ~ /^gemmaserve_kv_pages_used/ {s += $2} END {print s + 0}')"
[ "$used" = "0" ] || fail "$used KV pages still held"
gs_stop_server || fail "the speculative server did not shut down cleanly"
# The benchmark switch is refused where outputs would mislead.
"$bin" run --prompt hi --speculative-model demo-assistant --speculative-accept-rate 0.8 >"$work/out" 2>&1 &&
  fail "--speculative-accept-rate accepted without --load-format dummy"
grep -q "for benchmarks with --load-format dummy" "$work/out" || fail "refusal says: $(cat "$work/out")"
echo "ok   speculative serving: $(wc -l <"$work/spec.txt") outputs identical, $drafts rounds"
