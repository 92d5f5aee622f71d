#!/usr/bin/env bash
# SIGTERM drains `gemmaserve serve` (demo model, cpu) instead of cutting it off:
#  1. streams in flight (two of them queued behind --max-num-seqs) when SIGTERM arrives run to
#     their normal end (finish_reason "length", usage, [DONE]) while new requests get 503, /health
#     answers 503 {"status":"draining"} and /metrics shows gemmaserve_server_draining 1; the server
#     then exits 0;
#  2. with a short --shutdown-timeout, what is still unfinished is cut: a stream ends with an error
#     event (code 503) before [DONE], a plain request gets a 503 error body; never finish_reason
#     "abort"; the server still exits 0.
# Nothing here depends on timing except that the demo model cannot generate the few thousand
# tokens queued in scenario 2 within its 1 s timeout.
# Usage (ctest): bash graceful_shutdown.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
status=0

# Waits (bounded) for the server, already signalled, to exit; checks its exit code is 0.
wait_exit_0() {
  for _ in $(seq 1200); do
    kill -0 "$GS_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$GS_PID" 2>/dev/null; then
    echo "FAILED: the server still runs 120 s after SIGTERM"
    status=1
    return
  fi
  local rc=0
  wait "$GS_PID" || rc=$?
  GS_PID=""
  [ $rc -eq 0 ] || { echo "FAILED: exit code $rc after the drain, expected 0"; status=1; }
}

expect_log() {
  grep -q -- "$1" "$2" || { echo "FAILED: the server log lacks '$1'"; status=1; }
}

cat >"$work/client.py" <<'PY'
# Shared by both scenarios: requests on their own connections, /metrics and /health readers.
import http.client, json, os, signal, sys, threading, time

port, pid = int(sys.argv[2]), int(sys.argv[3])

def request(method, path, body=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request(method, path, None if body is None else json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, data

def metrics():
    out = {}
    for line in request("GET", "/metrics")[1].splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out

def wait_for(pred, what, limit=120.0):
    end = time.time() + limit
    while time.time() < end:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")

def in_engine():
    m = metrics()
    return m["gemmaserve_requests_running"] + m["gemmaserve_requests_waiting"]

class Call(threading.Thread):
    """One completion in the background; .status and .body once joined."""
    def __init__(self, body):
        super().__init__()
        self.payload, self.status, self.body = body, None, ""
        self.start()
    def run(self):
        self.status, self.body = request("POST", "/v1/completions", self.payload, timeout=300)

def events(body):
    """The data payloads of an SSE body; asserts it ends with [DONE]."""
    assert body.endswith("data: [DONE]\n\n"), body[-300:]
    return [e[6:] for e in body.split("\n\n") if e.startswith("data: ")][:-1]

def long_body(max_tokens, stream):
    b = {"prompt": "The quick brown fox", "max_tokens": max_tokens, "ignore_eos": True, "stream": stream}
    if stream:
        b["stream_options"] = {"include_usage": True}
    return b

def drain_scenario():
    # One stream runs and two wait for its slot (--max-num-seqs 1) when SIGTERM comes: the drain
    # lasts three times as long as one stream, far longer than the checks below.
    calls = [Call(long_body(100, True)) for _ in range(3)]
    wait_for(lambda: in_engine() == 3, "3 requests in the engine")
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: request("GET", "/health")[0] == 503, "/health to fail", limit=60)
    st, body = request("GET", "/health")
    assert st == 503 and json.loads(body) == {"status": "draining"}, (st, body)
    for path, b in [("/v1/completions", {"prompt": "hi", "max_tokens": 4}),
                    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "stream": True})]:
        st, body = request("POST", path, b)
        err = json.loads(body)["error"]
        assert st == 503 and "shutting down" in err["message"] and err["type"], (path, st, body)
    m = metrics()
    assert m["gemmaserve_server_draining"] == 1, m
    for c in calls:
        c.join(300)
        assert c.status == 200, (c.status, c.body[-300:])
        ev = [json.loads(e) for e in events(c.body)]
        assert not any("error" in e for e in ev), c.body[-500:]
        assert ev[-1]["usage"]["completion_tokens"] == 100, ev[-1]
        assert ev[-2]["choices"][0]["finish_reason"] == "length", ev[-2]
    print("3 streams drained to their end; new requests got 503 and /health 503 meanwhile")

def timeout_scenario():
    # One stream runs; a second stream and a plain request queue behind it (--max-num-seqs 1):
    # thousands of tokens, far more than the 1 s --shutdown-timeout lets finish.
    first = Call(long_body(2000, True))
    wait_for(lambda: metrics()["gemmaserve_requests_running"] == 1, "the first stream to run")
    queued = [Call(long_body(2000, True)), Call(long_body(2000, False))]
    wait_for(lambda: in_engine() == 3, "3 requests in the engine")
    os.kill(pid, signal.SIGTERM)
    cut = 0
    for c in [first] + queued:
        c.join(300)
        assert '"abort"' not in c.body, c.body[-500:]
        if c.payload["stream"]:
            assert c.status == 200, (c.status, c.body[-300:])
            ev = [json.loads(e) for e in events(c.body)]
            if "error" in ev[-1]:
                err = ev[-1]["error"]
                assert err["code"] == 503 and "shutting down" in err["message"], err
                assert all(ch["finish_reason"] is None for e in ev[:-1] for ch in e.get("choices", [])), c.body[-500:]
                cut += 1
            else:  # the running stream may have made it in time
                assert ev[-2]["choices"][0]["finish_reason"] == "length", ev[-2:]
        else:
            assert c.status == 503, (c.status, c.body[-300:])
            err = json.loads(c.body)["error"]
            assert "shutting down" in err["message"] and err["type"] == "service_unavailable_error", err
    assert cut >= 1, "the queued stream must have been cut"
    print(f"drain timed out: {cut} streams ended with an error event, the plain request got 503")

{"drain": drain_scenario, "timeout": timeout_scenario}[sys.argv[1]]()
PY

echo "== scenario 1: a drain that completes"
gs_start_server "$bin" "$work/drain.log" --backend cpu --max-model-len 4096 --max-num-seqs 1 --shutdown-timeout 600
timeout 600 python3 "$work/client.py" drain "$GS_PORT" "$GS_PID" || { echo "FAILED: scenario 1"; status=1; }
wait_exit_0
expect_log "draining: 3 requests running, up to 600 s" "$work/drain.log"
expect_log "drained: every request finished" "$work/drain.log"
[ $status -eq 0 ] || { echo "---- server log (tail) ----"; tail -30 "$work/drain.log"; }

echo "== scenario 2: a drain that times out"
s1=$status
gs_start_server "$bin" "$work/timeout.log" --backend cpu --max-model-len 4096 --max-num-seqs 1 --shutdown-timeout 1
timeout 600 python3 "$work/client.py" timeout "$GS_PORT" "$GS_PID" || { echo "FAILED: scenario 2"; status=1; }
wait_exit_0
expect_log "drain timed out after 1 s" "$work/timeout.log"
[ $status -eq "$s1" ] || { echo "---- server log (tail) ----"; tail -30 "$work/timeout.log"; }
exit $status
