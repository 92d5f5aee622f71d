#!/usr/bin/env bash
# Soak (tests/node/soak.test.mjs): thousands of short requests with random client disconnects
# against the demo model; ends with zero KV pages held. Bounded to a few minutes.
# Usage (ctest): bash soak.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
gs_require_node "$src"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 256 --max-num-seqs 32 --max-queue 4096
status=0
timeout 300 node "$src/tests/node/soak.test.mjs" || status=$?
gs_stop_server || { echo "server did not shut down cleanly (SIGTERM -> exit 0)"; status=1; }
[ $status -eq 0 ] || { echo "---- server log (tail) ----"; tail -50 "$work/server.log"; }
exit $status
