#!/usr/bin/env bash
# Issue 30's figures (docs/perf/images.md) on one GPU, dummy weights of the real shapes:
#   1. tower: `gemmaserve bench-vision` for the E2B/E4B tower (e4b) and the 26B/31B tower (31b), a
#      720p frame at the 280-token budget, 1 and 16 images per call, against the FLOP floor;
#   2. serving: E4B and 31B with --enable-multimodal, one 720p image + 128 text tokens in, 256 out
#      (ignore_eos), c=1 (4 requests) and c=16 (32 requests) on /v1/chat/completions: TTFT and
#      output tok/s.
# usage: tools/gpu/bench_images.sh BUILD_DIR RESULTS_DIR [tower serve]
#   BUILD_DIR: a CUDA build or a lean folder (collect-libs.sh). GS_IMG_MODELS (default "e4b 31b").
set -u
build=${1:?usage: bench_images.sh BUILD_DIR RESULTS_DIR [tower serve]}; out=${2:?usage}; shift 2
steps=${*:-tower serve}
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$src/tools/gpu/lean_bin.bash"
gs_gpu_libs "$build"
bin=$(gs_runnable "$build/bin/gemmaserve")
mkdir -p "$out"
source "$src/tests/e2e/server_lib.bash"
trap gs_cleanup EXIT
models=${GS_IMG_MODELS:-e4b 31b}

if [[ " $steps " == *" tower "* ]]; then
  for m in $models; do
    timeout 240 "$bin" bench-vision --model "$m" --batch 1,16 --budget 280 --iters 10 --warmup 2 \
      --json "$out/tower_$m.json" > "$out/tower_$m.txt" 2> "$out/tower_$m.log"
    echo "tower $m rc $?"; tail -4 "$out/tower_$m.txt"
  done
fi

if [[ " $steps " == *" serve "* ]]; then
  for m in $models; do
    gs_start_server "$bin" "$out/serve_$m.log" --model "$m" --load-format dummy --backend cuda --enable-multimodal \
      --max-num-seqs 32 --max-model-len 4096 --disable-log-stats || continue
    for c in 1 16; do
      n=$([[ $c == 1 ]] && echo 4 || echo 32)
      timeout 300 "$bin" bench --base-url "$GS_BASE_URL" --endpoint /v1/chat/completions --dataset-name random-mm \
        --random-mm-image-sizes 720x1280 --random-mm-base-items-per-request 1 --random-input-len 128 \
        --random-output-len 256 --random-range-ratio 0 --ignore-eos --num-prompts $n --max-concurrency $c \
        --warmup-requests 2 --seed 1 --disable-tqdm --output-json "$out/serve_${m}_c$c.json" \
        > "$out/serve_${m}_c$c.txt" 2>&1
      echo "serve $m c=$c rc $? $(python3 -c "import json;d=json.load(open('$out/serve_${m}_c$c.json'));print('TTFT median %.1f ms, mean %.1f ms; output %.1f tok/s; TPOT median %.2f ms; input tokens %d over %d requests' % (d['median_ttft_ms'], d['mean_ttft_ms'], d['output_throughput'], d['median_tpot_ms'], d['total_input_tokens'], d['completed']))" 2>&1)"
    done
    gs_stop_server || true
  done
fi
