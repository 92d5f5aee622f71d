#!/usr/bin/env bash
# The README's curl example against a default `gemmaserve serve` (demo model), plus curl-level
# checks of streaming, /tokenize, graceful SIGTERM during a stream, and `gemmaserve run`.
# Usage (ctest): bash readme_curl.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; echo "---- server log (tail) ----"; tail -30 "$work/server.log" 2>/dev/null; exit 1; }
json_get() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

# A short drain for step 4 (tests/e2e/graceful_shutdown.sh tests the drain itself).
gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 1024 --shutdown-timeout 1

# 1. The README's example, verbatim but for the port.
python3 - "$src/README.md" >"$work/readme_cmd.sh" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
cmds = [b for b in blocks if "curl" in b and "/v1/chat/completions" in b]
if not cmds:
    sys.exit("README.md has no curl example for /v1/chat/completions")
print(cmds[0])
PY
sed -i "s#127\.0\.0\.1:8000#127.0.0.1:$GS_PORT#g; s#localhost:8000#127.0.0.1:$GS_PORT#g" "$work/readme_cmd.sh"
grep -q "$GS_PORT" "$work/readme_cmd.sh" || fail "README curl example does not use 127.0.0.1:8000"
timeout 120 bash "$work/readme_cmd.sh" >"$work/readme_out.json" || fail "README curl example failed"
[ "$(json_get "$work/readme_out.json" 'd["object"]')" = "chat.completion" ] || fail "README example: not a chat.completion: $(cat "$work/readme_out.json")"
[ "$(json_get "$work/readme_out.json" 'd["choices"][0]["message"]["role"]')" = "assistant" ] || fail "README example: no assistant message"
[ "$(json_get "$work/readme_out.json" 'd["usage"]["completion_tokens"] <= 16')" = "True" ] || fail "README example: max_tokens not honoured"
echo "ok   README curl example"

# 2. Streaming over curl: SSE framing and the final [DONE].
curl -sN --max-time 120 "$GS_BASE_URL/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt":"Hello","max_tokens":8,"stream":true}' >"$work/stream.txt" || fail "streaming request failed"
tail -c 14 "$work/stream.txt" | grep -q '^data: \[DONE\]$' || fail "stream does not end with data: [DONE]"
grep -c '^data: {' "$work/stream.txt" >/dev/null || fail "no data events"
echo "ok   curl streaming"

# 3. /tokenize -> /detokenize round trip.
curl -s --max-time 30 "$GS_BASE_URL/tokenize" -H 'Content-Type: application/json' \
  -d '{"prompt":"The quick brown fox","add_special_tokens":false}' >"$work/tok.json"
tokens="$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["tokens"]))' "$work/tok.json")"
curl -s --max-time 30 "$GS_BASE_URL/detokenize" -H 'Content-Type: application/json' -d "{\"tokens\":$tokens}" >"$work/detok.json"
[ "$(json_get "$work/detok.json" 'd["prompt"]')" = "The quick brown fox" ] || fail "tokenize round trip: $(cat "$work/detok.json")"
echo "ok   tokenize round trip"

# 4. Graceful shutdown while a client streams: the server exits 0 once the 1 s drain is over, and
# the stream ends with [DONE] after its error event (or, on a machine fast enough to finish it,
# its finish_reason).
curl -sN --max-time 120 "$GS_BASE_URL/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt":"Hello","max_tokens":1000,"ignore_eos":true,"stream":true}' >"$work/long.txt" 2>/dev/null &
curl_pid=$!
for _ in $(seq 100); do [ -s "$work/long.txt" ] && break; sleep 0.1; done
[ -s "$work/long.txt" ] || fail "long stream produced nothing"
gs_stop_server || fail "server did not exit 0 on SIGTERM with a stream open"
for _ in $(seq 100); do kill -0 "$curl_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$curl_pid" 2>/dev/null; then kill "$curl_pid"; fail "stream still open after the server exited"; fi
wait "$curl_pid" || true
grep -q "shutting down" "$work/server.log" || fail "no shutdown log line"
grep -q '^data: {"choices"' "$work/long.txt" || fail "the long stream carried no chunk: $(head -c 300 "$work/long.txt")"
tail -c 14 "$work/long.txt" | grep -q '^data: \[DONE\]$' || fail "the cut stream does not end with data: [DONE]"
grep -q -e '^data: {"error":{"code":503' -e '"finish_reason":"length"' "$work/long.txt" \
  || fail "the stream ended with neither an error event nor its finish_reason"
echo "ok   graceful SIGTERM with an open stream"

# 5. gemmaserve run: one chat turn on the terminal; greedy output is reproducible.
out1="$(timeout 300 "$bin" run --backend cpu --prompt "Hi there" --max-tokens 8 --temperature 0 2>"$work/run.log")" \
  || { cat "$work/run.log"; fail "gemmaserve run failed"; }
out2="$(timeout 300 "$bin" run --backend cpu --prompt "Hi there" --max-tokens 8 --temperature 0 2>>"$work/run.log")"
[ "$out1" = "$out2" ] || fail "gemmaserve run (greedy) differs between runs: '$out1' vs '$out2'"
grep -q "generated tokens" "$work/run.log" || fail "gemmaserve run printed no summary"
echo "ok   gemmaserve run"
