#!/usr/bin/env bash
# The SGLang Gemma-4 cookbook serving workloads on this GPU, with dummy weights of each variant's
# real shape (no download): random dataset, input and output lengths uniform in [1, 1024]
# (SGLang's bench_serving semantics: --random-range-ratio 0 in sglang mode draws from [max(int(L*0),1), L]),
# ignore_eos so every request generates its drawn length (random weights would stop at random
# EOS tokens), c=1 x 10 prompts and c=100 x 1000 prompts on /v1/completions.
# Results: RESULTS_DIR/<variant>_c1.json, <variant>_c100.json (gemmaserve bench --output-json),
# server logs, and a table beside the cookbook's published figures (docs/perf/serving.md).
#
# Usage: tools/gpu/bench_cookbook.sh BUILD_DIR RESULTS_DIR [VARIANT...]
#   VARIANT: e2b e4b 26b-a4b 31b (default: all four). One variant takes about 2-4 minutes on an
#   H200, so run them in separate calls when a call is limited to ~9 minutes. The table at the end
#   covers every variant whose JSONs are in RESULTS_DIR, so calls can be split and the last one
#   prints everything.
# Tokenizer: the real Gemma-4 vocabulary (.cache/testdata/gemma4/ggml-vocab-gemma-4.gguf, from
#   scripts/fetch-test-data.sh) for both the server and the client, so prompts are real Gemma-4
#   token sequences and every sampled id decodes as it would with real weights; the official chat
#   template goes with it. Without that file, both fall back to the demo tokenizer (a warning says
#   so): prompt lengths stay exact, but most sampled ids have no text in it.
# Environment: GS_BENCH_SERVE_ARGS (extra `serve` options), GS_BENCH_C100_PROMPTS (default 1000),
#   GS_COOKBOOK_TOKENIZER (a tokenizer for server and client instead of the GGUF vocabulary),
#   GS_COOKBOOK_CHAT_TEMPLATE (a chat template file for the server).
set -euo pipefail
build="$(cd "$1" && pwd)"; results="$2"; shift 2
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(e2b e4b 26b-a4b 31b)
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$(dirname "${BASH_SOURCE[0]}")/lean_bin.bash"
bin=$(gs_runnable "$build/bin/gemmaserve")
[ -x "$bin" ] || { echo "no $bin: build first (cmake --build $build --target gemmaserve)" >&2; exit 1; }
mkdir -p "$results"
source "$src/tests/e2e/server_lib.bash"
trap gs_cleanup EXIT
c100_prompts="${GS_BENCH_C100_PROMPTS:-1000}"
tokenizer="${GS_COOKBOOK_TOKENIZER:-$src/.cache/testdata/gemma4/ggml-vocab-gemma-4.gguf}"
template="${GS_COOKBOOK_CHAT_TEMPLATE:-$src/.cache/testdata/gemma4/templates/google-gemma-4-31B-it.jinja}"
serve_tok=()
if [ -e "$tokenizer" ]; then
  serve_tok=(--tokenizer "$tokenizer")
  [ -f "$template" ] && serve_tok+=(--chat-template "$template")
else
  [ -z "${GS_COOKBOOK_TOKENIZER:-}" ] || { echo "GS_COOKBOOK_TOKENIZER=$tokenizer does not exist" >&2; exit 1; }
  echo "warning: no $tokenizer (run scripts/fetch-test-data.sh): using the demo tokenizer, whose few ids" \
       "leave most sampled tokens without text" >&2
  tokenizer="${GEMMASERVE_HOME:-$HOME/.cache/gemmaserve}/demo"  # what the server falls back to for presets
fi
echo "tokenizer (server and client): $tokenizer"

for v in "${variants[@]}"; do
  case "$v" in e2b|e4b|26b-a4b|31b) ;; *) echo "unknown variant '$v' (e2b, e4b, 26b-a4b, 31b)" >&2; exit 1 ;; esac
  echo "==== $v: starting the server (dummy weights) ===="
  # shellcheck disable=SC2086
  gs_start_server "$bin" "$results/${v}_server.log" --model "$v" --load-format dummy --backend cuda \
    --max-num-seqs 128 "${serve_tok[@]}" ${GS_BENCH_SERVE_ARGS:-}
  common=(--base-url "$GS_BASE_URL" --tokenizer "$tokenizer" --dataset-name random --random-input-len 1024
          --random-output-len 1024 --random-range-mode sglang --random-range-ratio 0 --ignore-eos --seed 1
          --disable-tqdm)
  "$bin" bench "${common[@]}" --max-concurrency 1 --num-prompts 10 --warmup-requests 1 \
    --output-json "$results/${v}_c1.json" | tee "$results/${v}_c1.txt"
  "$bin" bench "${common[@]}" --max-concurrency 100 --num-prompts "$c100_prompts" --warmup-requests 8 \
    --output-json "$results/${v}_c100.json" --output-requests "$results/${v}_c100_requests.jsonl" \
    --plot "$results/${v}_c100_plots" | tee "$results/${v}_c100.txt"
  gs_stop_server || echo "warning: the $v server did not stop cleanly" >&2
done

/usr/bin/python3 - "$results" <<'PY'
import json, os, sys
r = sys.argv[1]
# SGLang's Gemma-4 cookbook, 1x H200 (31B: 2x H200, TP2), from docs/perf/serving.md.
cookbook = {"e2b": (3.99, 9876), "e4b": (5.64, 7003), "26b-a4b": (5.60, 3676), "31b": (12.32, 2807)}
def load(v, c):
    p = os.path.join(r, f"{v}_{c}.json")
    return json.load(open(p)) if os.path.exists(p) else None
print()
print("| variant | c=1 TPOT mean / median (ms) | cookbook c=1 TPOT (ms) | c=1 TTFT median (ms) "
      "| c=100 output tok/s | cookbook c=100 tok/s | c=100 TPOT median (ms) | failed |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for v, (tpot_ref, tput_ref) in cookbook.items():
    a, b = load(v, "c1"), load(v, "c100")
    if a is None and b is None:
        continue
    f = lambda d, k, fmt: fmt.format(d[k]) if d else "-"
    failed = sum(d["failed"] for d in (a, b) if d)
    print(f"| {v} | {f(a, 'mean_tpot_ms', '{:.2f}')} / {f(a, 'median_tpot_ms', '{:.2f}')} | {tpot_ref}"
          f"{' (TP2)' if v == '31b' else ''} | {f(a, 'median_ttft_ms', '{:.1f}')} | {f(b, 'output_throughput', '{:,.0f}')} "
          f"| {tput_ref:,}{' (TP2)' if v == '31b' else ''} | {f(b, 'median_tpot_ms', '{:.2f}')} | {failed} |")
PY
