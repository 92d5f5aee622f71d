# Helpers for e2e scripts (sourced, not run by ctest): start `gemmaserve serve` on the demo model
# on a free loopback port and wait until it answers. Scripts must `trap gs_cleanup EXIT` (plus their
# own cleanup) before starting, so the server never outlives the test.
#   gs_start_server BINARY LOGFILE [serve options...]   -> sets GS_PID, GS_PORT, GS_BASE_URL
#     (on the port in $GS_SERVE_PORT when set, else on one the kernel picks)
#   gs_stop_server                                       -> SIGTERM, waits, returns its exit code

gs_start_server() {
  local bin="$1" log="$2"
  shift 2
  # --port 0: the kernel picks a free port; the server logs the one it got.
  "$bin" serve --host 127.0.0.1 --port "${GS_SERVE_PORT:-0}" "$@" >"$log" 2>&1 &
  GS_PID=$!
  local deadline=$((SECONDS + 300))  # first use builds the demo checkpoint
  GS_PORT=""
  while [ -z "$GS_PORT" ]; do
    if ! kill -0 "$GS_PID" 2>/dev/null; then
      echo "gemmaserve serve exited during start-up:" >&2
      cat "$log" >&2
      return 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "gemmaserve serve did not start within 300 s:" >&2
      cat "$log" >&2
      return 1
    fi
    GS_PORT="$(grep -o 'on http://127\.0\.0\.1:[0-9]*' "$log" | head -1 | sed 's/.*://')" || true
    [ -n "$GS_PORT" ] || sleep 0.2
  done
  GS_BASE_URL="http://127.0.0.1:$GS_PORT"
  export GS_BASE_URL
  until curl -sf --max-time 2 "$GS_BASE_URL/health" >/dev/null; do
    if [ $SECONDS -ge $deadline ] || ! kill -0 "$GS_PID" 2>/dev/null; then
      echo "gemmaserve serve never answered /health:" >&2
      cat "$log" >&2
      return 1
    fi
    sleep 0.2
  done
  echo "server up at $GS_BASE_URL (pid $GS_PID)"
}

gs_stop_server() {
  [ -n "${GS_PID:-}" ] || return 0
  kill -TERM "$GS_PID" 2>/dev/null || true
  local rc=0
  # Bounded: a server that ignores SIGTERM for 30 s is killed and the test fails.
  for _ in $(seq 300); do
    kill -0 "$GS_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$GS_PID" 2>/dev/null; then
    echo "gemmaserve did not exit within 30 s of SIGTERM" >&2
    kill -KILL "$GS_PID" 2>/dev/null || true
    wait "$GS_PID" 2>/dev/null || true
    GS_PID=""
    return 1
  fi
  wait "$GS_PID" || rc=$?
  GS_PID=""
  return $rc
}

gs_cleanup() {
  if [ -n "${GS_PID:-}" ]; then
    kill -KILL "$GS_PID" 2>/dev/null || true
    wait "$GS_PID" 2>/dev/null || true
  fi
}

gs_require_node() {
  local src="$1"
  if ! command -v node >/dev/null || [ ! -d "$src/tests/node/node_modules/openai" ]; then
    echo "node and tests/node/node_modules/openai are needed: run 'npm ci' in tests/node (scripts/test.sh does)" >&2
    return 1
  fi
}

# Where `gemmaserve serve` writes the demo model (and its tokenizer) when it starts without --model.
GS_DEMO_DIR="${GEMMASERVE_HOME:-$HOME/.cache/gemmaserve}/demo"

# Runs a client command under a 120 s limit; a failure is reported and recorded in the caller's
# `status` (scripts set status=0 first and exit with it), so the remaining checks still run.
gs_run() { timeout 120 "$@" || { echo "FAILED ($?): $*"; status=1; }; }

# gs_completion_lines OUT BODY...: POSTs each JSON body to $GS_BASE_URL/v1/completions and appends
# one line per request to OUT: [[text, finish_reason, logprob tokens or null] for each choice].
# Returns non-zero at the first request that fails. Scripts compare two servers' OUT files.
gs_completion_lines() {
  local out="$1" b
  shift
  for b in "$@"; do
    curl -sf --max-time 120 "$GS_BASE_URL/v1/completions" -H 'Content-Type: application/json' -d "$b" |
      python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps([[c["text"], c["finish_reason"], (c.get("logprobs") or {}).get("tokens")] for c in d["choices"]]))' >>"$out" ||
      { echo "request failed: $b" >&2; return 1; }
  done
}

# gs_streamed_chat_line OUT BODY: streams a /v1/chat/completions request (BODY without "stream")
# and appends the concatenated content deltas to OUT as one JSON string.
gs_streamed_chat_line() {
  local out="$1" body="$2"
  curl -sfN --max-time 120 "$GS_BASE_URL/v1/chat/completions" -H 'Content-Type: application/json' \
    -d "${body%\}},\"stream\":true}" |
    python3 -c '
import json, sys
text = ""
for line in sys.stdin:
    line = line.strip()
    if line.startswith("data: {"):
        for c in json.loads(line[6:])["choices"]:
            text += c.get("delta", {}).get("content") or ""
print(json.dumps(text))' >>"$out"
}
