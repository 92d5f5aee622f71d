#!/usr/bin/env bash
# c=1 TPOT with and without the MTP drafter at set acceptance rates (dummy weights), the rows of
# docs/perf/speculative.md. usage: tools/gpu/spec_tpot.sh BUILD_DIR RESULTS_DIR
set -u
build=${1:?usage: spec_tpot.sh BUILD_DIR RESULTS_DIR}; out=${2:?usage: spec_tpot.sh BUILD_DIR RESULTS_DIR}
bin=$build/bin/gemmaserve; mkdir -p "$out"; port=${GS_PORT:-8124}
run() {  # name model prompts output_len extra-serve-flags
  $bin serve --model $2 --load-format dummy --port $port --max-model-len 2048 --max-num-seqs 16 --disable-log-stats $5 \
    > "$out/serve_$1.log" 2>&1 &
  local pid=$!
  for _ in $(seq 180); do curl -sf localhost:$port/health >/dev/null 2>&1 && break; sleep 1; done
  timeout 120 $bin bench --base-url http://127.0.0.1:$port --num-prompts $3 --max-concurrency 1 --random-input-len 512 \
    --random-output-len $4 --ignore-eos --warmup-requests 1 --disable-tqdm --output-json "$out/bench_$1.json" \
    > "$out/bench_$1.txt" 2>&1
  printf '%-14s %s\n' "$1" "$(python3 -c "import json;d=json.load(open('$out/bench_$1.json'));print('TPOT %.3f ms  %.1f tok/s  accept %s' % (d.get('median_tpot_ms',0), d.get('output_throughput',0), d.get('spec_decode_acceptance_length')))" 2>&1)"
  kill $pid; wait $pid 2>/dev/null
}
run e2b_plain e2b 12 256 ""
run e2b_k3_a083 e2b 12 256 "--speculative-model e2b-assistant --num-speculative-tokens 3 --speculative-accept-rate 0.83"
run e2b_k4_a076 e2b 12 256 "--speculative-model e2b-assistant --num-speculative-tokens 4 --speculative-accept-rate 0.76"
run e2b_k3_a0 e2b 12 256 "--speculative-model e2b-assistant --num-speculative-tokens 3"
for k in 1 2 5 7; do
  run e2b_k${k}_a08 e2b 8 256 "--speculative-model e2b-assistant --num-speculative-tokens $k --speculative-accept-rate 0.8"
done
run 31b_plain 31b 3 128 ""
run 31b_k3_a083 31b 3 128 "--speculative-model 31b-assistant --num-speculative-tokens 3 --speculative-accept-rate 0.83"
