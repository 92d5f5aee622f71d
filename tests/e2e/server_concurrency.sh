#!/usr/bin/env bash
# Many concurrent streaming clients against `gemmaserve serve` on the demo model (cpu), driven by
# `gemmaserve bench`: 100 and then 256 clients that all connect at once must all succeed (a
# listen backlog of 5 once reset a sixth of them, a fixed pool of 128 connection threads starved
# the rest), and every streamed token must arrive as its own event: per request, the number of
# inter-token gaps the client measured equals completion_tokens - 1 (from usage), on both
# endpoints. Bounded: every client command runs under `timeout`.
# Usage (ctest): bash server_concurrency.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 256 --max-num-seqs 256
demo="$GS_DEMO_DIR"  # the server created the demo model there
status=0

common=(--base-url "$GS_BASE_URL" --tokenizer "$demo" --dataset-name random --random-input-len 12
        --random-output-len 12 --random-range-ratio 0.5 --ignore-eos --disable-tqdm)
gs_run "$bin" bench "${common[@]}" --seed 1 --max-concurrency 100 --num-prompts 200 \
  --output-json "$work/c100.json" --output-requests "$work/c100.jsonl" >"$work/c100.txt"
gs_run "$bin" bench "${common[@]}" --seed 2 --max-concurrency 256 --num-prompts 256 --endpoint /v1/chat/completions \
  --output-json "$work/c256.json" --output-requests "$work/c256.jsonl" >"$work/c256.txt"

[ $status -eq 0 ] && /usr/bin/python3 - "$work" <<'PY' || status=1
import json, os, sys
w = sys.argv[1]
for name, n in (("c100", 200), ("c256", 256)):
    r = json.load(open(os.path.join(w, name + ".json")))
    reqs = [json.loads(l) for l in open(os.path.join(w, name + ".jsonl"))]
    errors = sorted({q["error"] for q in reqs if not q["success"]})
    assert r["completed"] == n and r["failed"] == 0, f"{name}: {r['failed']} failed: {errors}"
    assert len(reqs) == n
    for q in reqs:
        assert q["output_len_from_usage"], f"{name}: request {q['index']} had no usage chunk"
        # --ignore-eos: every request generates its drawn length, each token its own event.
        assert q["output_len"] >= 6, f"{name}: request {q['index']}: {q['output_len']} tokens"
        assert len(q["itl"]) == q["output_len"] - 1, \
            f"{name}: request {q['index']}: {len(q['itl'])} gaps for {q['output_len']} tokens"
    print(f"{name}: {n} of {n} streams succeeded, one event per token")
PY

if grep -E " E |error" "$work/server.log" >/dev/null; then
  echo "the server logged errors:"; grep -E " E |error" "$work/server.log" | head -20; status=1
fi
gs_stop_server || { echo "server did not shut down cleanly (SIGTERM -> exit 0)"; status=1; }
[ $status -eq 0 ] || { echo "---- server log (tail) ----"; tail -30 "$work/server.log"; }
exit $status
