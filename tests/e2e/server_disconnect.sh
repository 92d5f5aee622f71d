#!/usr/bin/env bash
# Clients that hang up on NON-streaming requests (nothing is written to them before the end, so
# no failed write can tell) against `gemmaserve serve` on the demo model (cpu): their engine
# requests must be aborted, counted as aborted (and HTTP 499), and every KV page must come back,
# all seen through /metrics. A client that waits gets its whole answer meanwhile.
# Usage (ctest): bash server_disconnect.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 4096 --max-num-seqs 8
status=0
timeout 120 /usr/bin/python3 - "$GS_PORT" <<'PY' || status=1
import json, socket, sys, threading, time, urllib.request
port = int(sys.argv[1])
base = f"http://127.0.0.1:{port}"

def metrics():
    out = {}
    for line in urllib.request.urlopen(base + "/metrics", timeout=10).read().decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out

def pages(m):
    return m['gemmaserve_kv_pages_used{pool="full"}'] + m['gemmaserve_kv_pages_used{pool="sliding"}']

def wait_for(pred, what, limit=20.0):
    end = time.time() + limit
    while time.time() < end:
        m = metrics()
        if pred(m):
            return m
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}: {m}")

ABORT = 'gemmaserve_request_success_total{finished_reason="abort"}'
HTTP499 = 'gemmaserve_http_errors_total{status="499"}'
before = metrics()

def post_raw(body):
    s = socket.create_connection(("127.0.0.1", port))
    data = json.dumps(body).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return s

# Long requests (4000 tokens each, far more than they get to run) on raw sockets.
long_body = {"prompt": "The quick brown fox", "max_tokens": 4000, "ignore_eos": True}
socks = [post_raw(long_body) for _ in range(4)]
# Meanwhile a patient client's short request must complete normally.
result = {}
def patient():
    req = urllib.request.Request(base + "/v1/completions", json.dumps(
        {"prompt": "hello", "max_tokens": 8, "ignore_eos": True}).encode(), {"Content-Type": "application/json"})
    result["reply"] = json.load(urllib.request.urlopen(req, timeout=60))
t = threading.Thread(target=patient)
t.start()
busy = wait_for(lambda m: m["gemmaserve_requests_running"] >= 4 and pages(m) > 0, "the long requests to run")
for s in socks:
    s.close()
after = wait_for(lambda m: m["gemmaserve_requests_running"] == 0 and m["gemmaserve_requests_waiting"] == 0
                 and pages(m) == 0, "every page to come back")
t.join(60)
assert result["reply"]["usage"]["completion_tokens"] == 8, result
assert after.get(ABORT, 0) - before.get(ABORT, 0) == 4, (before.get(ABORT), after.get(ABORT))
assert after.get(HTTP499, 0) - before.get(HTTP499, 0) == 4, after.get(HTTP499)
assert after['gemmaserve_request_success_total{finished_reason="length"}'] - \
       before.get('gemmaserve_request_success_total{finished_reason="length"}', 0) == 1, "only the patient request ran to its end"
print(f"4 abandoned non-streaming requests aborted; pages used {pages(busy):.0f} -> {pages(after):.0f}")
PY
gs_stop_server || { echo "server did not shut down cleanly (SIGTERM -> exit 0)"; status=1; }
[ $status -eq 0 ] || { echo "---- server log (tail) ----"; tail -30 "$work/server.log"; }
exit $status
