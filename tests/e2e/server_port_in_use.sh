#!/usr/bin/env bash
# A taken port is an error, not shared traffic (issue 28): a second `gemmaserve serve` on the port
# of a running one exits non-zero at once (before loading the model), naming host:port, and the
# first keeps serving; a server restarted on the port right after the previous one stopped, with
# that one's connections still in TIME_WAIT, starts normally.
# Usage (ctest): bash server_port_in_use.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
serve_opts=(--backend cpu --max-model-len 128 --max-num-seqs 2)
gs_start_server "$bin" "$work/first.log" "${serve_opts[@]}"
port="$GS_PORT"
status=0

rc=0
timeout 120 "$bin" serve --host 127.0.0.1 --port "$port" "${serve_opts[@]}" >"$work/second.log" 2>&1 || rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
  echo "FAILED: a second serve on the taken port $port exited with $rc"; status=1
fi
if ! grep -q "error: cannot listen on 127.0.0.1:$port: port $port is already in use" "$work/second.log"; then
  echo "FAILED: the second server's error does not name 127.0.0.1:$port as in use"; status=1
fi
if grep -qE "checkpoint |model: " "$work/second.log"; then
  echo "FAILED: the second server loaded the model before finding the port taken"; status=1
fi
echo "---- second server ----"; cat "$work/second.log"
# Every connection still reaches the first server.
for _ in 1 2 3 4 5 6; do
  curl -sf --max-time 10 "$GS_BASE_URL/health" >/dev/null || { echo "FAILED: /health after the second start"; status=1; }
done

# Hold a kept-alive connection open while the server stops: the server closes it first, so the
# connection lingers in TIME_WAIT on the server's port.
/usr/bin/python3 - "$port" >"$work/client.log" 2>&1 <<'PY' &
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
data = b""
while True:  # the answer, then the server's close at shutdown
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print(data.decode().splitlines()[0])
s.close()
PY
client=$!
sleep 0.5
gs_stop_server || { echo "FAILED: the first server did not shut down cleanly"; status=1; }
wait $client || { echo "FAILED: the kept-alive client"; cat "$work/client.log"; status=1; }
echo "server-side connections in TIME_WAIT on port $port: $(ss -tan 2>/dev/null | grep -cE "TIME-WAIT +[0-9]+ +[0-9]+ +127\.0\.0\.1:$port " || true)"
grep -q "HTTP/1.1 200" "$work/client.log" || { echo "FAILED: no answer on the kept-alive connection"; status=1; }

GS_SERVE_PORT="$port" gs_start_server "$bin" "$work/restart.log" "${serve_opts[@]}" || status=1
if [ -n "${GS_PID:-}" ]; then
  [ "$GS_PORT" = "$port" ] || { echo "FAILED: restarted on $GS_PORT, not $port"; status=1; }
  curl -sf --max-time 10 "$GS_BASE_URL/health" >/dev/null || { echo "FAILED: /health after the restart"; status=1; }
  gs_stop_server || { echo "FAILED: the restarted server did not shut down cleanly"; status=1; }
fi
[ $status -eq 0 ] && echo "ok: a taken port fails fast and names itself; a restart on the port works"
exit $status
