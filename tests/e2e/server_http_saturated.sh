#!/usr/bin/env bash
# The HTTP layer under pressure (issue 28), on the real binary: with every connection thread held
# (--http-threads 4, five clients sending their request a byte at a time, like slow proxies or a
# slowloris), /health, /metrics and /v1/models still answer; requests pipelined on one connection
# are answered in order; the held connections are served once they complete.
# Usage (ctest): bash server_http_saturated.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 128 --max-num-seqs 2 --http-threads 4
status=0
timeout 120 /usr/bin/python3 - "$GS_PORT" <<'PY' || status=1
import json, socket, sys, threading, time, urllib.request

port = int(sys.argv[1])
base = f"http://127.0.0.1:{port}"

def parse_responses(data):
    """(status, body) of each Content-Length response in `data`, in order."""
    out, pos = [], 0
    while pos < len(data):
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            break
        head = data[pos:end].decode()
        length = 0
        for line in head.split("\r\n")[1:]:
            k, _, v = line.partition(":")
            if k.lower() == "content-length":
                length = int(v)
        out.append((int(head[9:12]), data[end + 4:end + 4 + length]))
        pos = end + 4 + length
    return out

# 1. Pipelining: three requests in one write on one connection, answered in order.
body = json.dumps({"prompt": "Hello", "max_tokens": 3, "ignore_eos": True}).encode()
reqs = (b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body +
        b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
s = socket.create_connection(("127.0.0.1", port), timeout=60)
s.sendall(reqs)
data = b""
while chunk := s.recv(65536):
    data += chunk
s.close()
got = parse_responses(data)
assert [st for st, _ in got] == [200, 200, 200], f"statuses {[st for st, _ in got]}: {data[:400]!r}"
assert json.loads(got[0][1])["status"] == "ok"
assert json.loads(got[1][1])["usage"]["completion_tokens"] == 3
assert json.loads(got[2][1])["object"] == "list"
print("ok: three pipelined requests answered in order")

# 2. Hold every connection thread: five clients send a request one byte every 0.3 s.
stop = threading.Event()
slow_answers = []
slow_req = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: " + b"p" * 40 + b"\r\n\r\n"

def slow_client():
    c = socket.create_connection(("127.0.0.1", port), timeout=60)
    for i in range(len(slow_req)):
        if stop.is_set():  # the last bytes go at once: the request completes
            c.sendall(slow_req[i:])
            break
        c.sendall(slow_req[i:i + 1])
        time.sleep(0.3)
    data = b""
    while chunk := c.recv(65536):
        data += chunk
    slow_answers.append(parse_responses(data))
    c.close()

slow = [threading.Thread(target=slow_client) for _ in range(5)]
for t in slow:
    t.start()
time.sleep(2)  # all five connected and dribbling; four hold the threads, one waits
try:
    for path in ("/health", "/metrics", "/v1/models", "/health"):
        with urllib.request.urlopen(base + path, timeout=30) as r:  # generous: only "answered" is checked
            assert r.status == 200, f"{path}: {r.status}"
    print("ok: /health, /metrics and /v1/models answered with every connection thread held")
finally:
    stop.set()
for t in slow:
    t.join(60)
assert len(slow_answers) == 5 and all(a and a[0][0] == 200 for a in slow_answers), slow_answers
print("ok: the slow clients were all served afterwards")
PY
grep -q "HTTP connection threads are busy" "$work/server.log" ||
  { echo "FAILED: the server never reported its connection threads busy (the test did not saturate it)"; status=1; }
gs_stop_server || { echo "server did not shut down cleanly (SIGTERM -> exit 0)"; status=1; }
[ $status -eq 0 ] || { echo "---- server log (tail) ----"; tail -30 "$work/server.log"; }
exit $status
