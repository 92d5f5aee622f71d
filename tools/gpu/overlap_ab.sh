#!/usr/bin/env bash
# Overlapped scheduling on and off, same server build, same workload: what the overlap buys (TPOT
# at c=1, output throughput at high concurrency) and that it changes no output (greedy texts of
# both servers compared request by request).
#
# Usage: tools/gpu/overlap_ab.sh BUILD_DIR RESULTS_DIR [VARIANT]   (VARIANT: e2b by default)
# Environment: GS_AB_LEN (prompt and output length, default 512), GS_AB_HIGH_C (default 64),
#   GS_AB_HIGH_PROMPTS (default 256), GS_AB_BACKEND (default cuda; cpu with VARIANT demo tries the
#   script itself). About 2 minutes for e2b on an H100/H200.
# Writes RESULTS_DIR/{on,off}_{c1,cN}.json (gemmaserve bench), {on,off}_greedy.jsonl, server logs,
# and prints a table.
set -euo pipefail
build="$(cd "$1" && pwd)"; results="$2"; variant="${3:-e2b}"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/lean_bin.bash"
bin=$(gs_runnable "$build/bin/gemmaserve")
[ -x "$bin" ] || { echo "no $bin" >&2; exit 1; }
mkdir -p "$results"
source "$src/tests/e2e/server_lib.bash"
trap gs_cleanup EXIT
len="${GS_AB_LEN:-512}"; high_c="${GS_AB_HIGH_C:-64}"; high_n="${GS_AB_HIGH_PROMPTS:-256}"
tok="$src/.cache/testdata/gemma4/ggml-vocab-gemma-4.gguf"
tok_args=()
# The real Gemma-4 vocabulary for the real shapes (as bench_cookbook.sh); the demo has its own.
[ -e "$tok" ] && [ "$variant" != demo ] && tok_args=(--tokenizer "$tok")

for mode in on off; do
  extra=()
  [ "$mode" = off ] && extra=(--disable-overlap-schedule)
  gs_start_server "$bin" "$results/${mode}_server.log" --model "$variant" --load-format dummy --backend "${GS_AB_BACKEND:-cuda}" \
    --max-num-seqs 128 --seed 1 "${tok_args[@]}" "${extra[@]}"
  client_tok="${tok_args[1]:-$GS_DEMO_DIR}"
  common=(--base-url "$GS_BASE_URL" --tokenizer "$client_tok" --dataset-name random --random-input-len "$len"
          --random-output-len "$len" --random-range-mode vllm --random-range-ratio 0 --ignore-eos --seed 3
          --disable-tqdm)
  "$bin" bench "${common[@]}" --max-concurrency 1 --num-prompts 8 --warmup-requests 1 \
    --output-json "$results/${mode}_c1.json" > "$results/${mode}_c1.txt"
  "$bin" bench "${common[@]}" --max-concurrency "$high_c" --num-prompts "$high_n" --warmup-requests 4 \
    --output-json "$results/${mode}_cN.json" > "$results/${mode}_cN.txt"
  # Greedy outputs (temperature 0) of a few fixed prompts: must be identical with and without overlap.
  for i in 0 1 2 3 4 5 6 7; do
    curl -sf "$GS_BASE_URL/v1/completions" -H 'Content-Type: application/json' \
      -d "{\"model\":\"$variant\",\"prompt\":\"request $i: the quick brown fox\",\"max_tokens\":64,\"temperature\":0}" \
      | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["choices"][0]["text"]))'
  done > "$results/${mode}_greedy.jsonl"
  curl -sf "$GS_BASE_URL/metrics" | grep -E '^gemmaserve_(engine_overlapped_steps|discarded_tokens|engine_steps|engine_steps_by_kind|engine_step_seconds)_total' \
    > "$results/${mode}_metrics.txt" || true
  gs_stop_server || echo "warning: the $mode server did not stop cleanly" >&2
done

python3 - "$results" "$high_c" <<'PY'
import json, os, sys
r, c = sys.argv[1], sys.argv[2]
load = lambda n: json.load(open(os.path.join(r, n)))
print(f"| overlap | c=1 TPOT median (ms) | c=1 TTFT median (ms) | c={c} output tok/s | c={c} TPOT median (ms) |")
print("| --- | --- | --- | --- | --- |")
for m in ("on", "off"):
    a, b = load(f"{m}_c1.json"), load(f"{m}_cN.json")
    print(f"| {m} | {a['median_tpot_ms']:.3f} | {a['median_ttft_ms']:.1f} | {b['output_throughput']:,.0f} | {b['median_tpot_ms']:.2f} |")
same = open(os.path.join(r, "on_greedy.jsonl")).read() == open(os.path.join(r, "off_greedy.jsonl")).read()
print("greedy outputs identical with and without overlap:", "yes" if same else "NO")
for m in ("on", "off"):
    print(m, open(os.path.join(r, f"{m}_metrics.txt")).read().strip().replace("\n", "; "))
sys.exit(0 if same else 1)
PY
