#!/usr/bin/env bash
# Image input through the official OpenAI client (tests/node/images.test.mjs): a server without
# --enable-multimodal refuses image parts; one with it answers them, counts their tokens, caches them
# by content and refuses bad ones with 400s naming the part.
# Usage (ctest): bash server_images.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
gs_require_node "$src"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
export GS_IMAGE_FIXTURES="$src/fixtures/image_golden"
status=0

gs_start_server "$bin" "$work/off.log" --backend cpu
GS_IMAGES=off timeout 300 node "$src/tests/node/images.test.mjs" || status=$?
gs_stop_server || { echo "server did not shut down cleanly"; status=1; }

if [ $status -eq 0 ]; then
  gs_start_server "$bin" "$work/on.log" --backend cpu --enable-multimodal --limit-mm-per-prompt image=2 \
    --allowed-local-media-path "$GS_IMAGE_FIXTURES" --max-num-batched-tokens 2048
  timeout 600 node "$src/tests/node/images.test.mjs" || status=$?
  gs_stop_server || { echo "server did not shut down cleanly (SIGTERM -> exit 0)"; status=1; }
fi
if [ $status -ne 0 ]; then
  echo "---- server logs (tail) ----"
  tail -30 "$work"/*.log
fi
exit $status
