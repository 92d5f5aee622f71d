#!/usr/bin/env bash
# The official OpenAI client (tests/node/openai_api.test.mjs) against `gemmaserve serve` on the
# demo model, with an API key, a 512-token model length and a 1 MiB body limit.
# Usage (ctest): bash openai_client.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
gs_require_node "$src"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
export GS_API_KEY="e2e-$RANDOM$RANDOM"
gs_start_server "$bin" "$work/server.log" --backend cpu --api-key "$GS_API_KEY" --max-model-len 512 \
  --max-body-bytes 1048576 --max-num-seqs 16
status=0
timeout 600 node "$src/tests/node/openai_api.test.mjs" || status=$?
gs_stop_server || { echo "server did not shut down cleanly (SIGTERM -> exit 0)"; status=1; }
if [ $status -ne 0 ]; then
  echo "---- server log (tail) ----"
  tail -50 "$work/server.log"
fi
exit $status
