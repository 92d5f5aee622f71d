#!/usr/bin/env bash
# Overload (tests/node/overload.test.mjs): one running slot and a queue of two; a burst of twelve
# clients must see HTTP 429 in the OpenAI error shape for what does not fit, and no crash.
# Usage (ctest): bash overload.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
gs_require_node "$src"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 256 --max-num-seqs 1 --max-queue 2
status=0
timeout 300 node "$src/tests/node/overload.test.mjs" || status=$?
gs_stop_server || { echo "server did not shut down cleanly (SIGTERM -> exit 0)"; status=1; }
[ $status -eq 0 ] || { echo "---- server log (tail) ----"; tail -50 "$work/server.log"; }
exit $status
