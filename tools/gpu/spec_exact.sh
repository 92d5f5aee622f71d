#!/usr/bin/env bash
# Speculative decoding's exactness on cuda under the batch-invariant policy
# (--enable-deterministic-inference), and what the policy costs. Prints a summary; logs under
# RESULTS_DIR.
#   1. the cuda tests: the GEMV's invariant rows (test_kernels_cuda Gemv*), test_engine_cuda
#      (rows of prefill / verify / decode steps bit for bit, greedy serving with and without drafts);
#   2. E2B, dummy weights of the real shapes: greedy completions of a few prompts from a server
#      with and without the drafter, under the default policy and the invariant one, compared;
#      TTFT / TPOT at c=1 and throughput at c=16 with the policy off and on, and c=1 TPOT with the
#      drafter at accept length ~3.1 under the policy;
#   3. bench-decode on E2B and 31B: one-row and verify steps with the policy off and on.
# usage: tools/gpu/spec_exact.sh BUILD_OR_LEAN_DIR RESULTS_DIR [TOKENIZER]
set -u
dir=${1:?usage: spec_exact.sh BUILD_OR_LEAN_DIR RESULTS_DIR [TOKENIZER]}
out=${2:?usage: spec_exact.sh BUILD_OR_LEAN_DIR RESULTS_DIR [TOKENIZER]}
tok=${3:-}
mkdir -p "$out"
# shellcheck source=tools/gpu/lean_bin.bash
source "$(dirname "$0")/lean_bin.bash"
gs_gpu_libs "$dir"
bin=$(gs_runnable "$dir/bin/gemmaserve")
ktest=$(gs_runnable "$dir/tests/test_kernels_cuda")
etest=$(gs_runnable "$dir/tests/test_engine_cuda")
port=${GS_PORT:-8131}
tokarg=()
[[ -n $tok ]] && tokarg=(--tokenizer "$tok")

echo "== 1. tests"
timeout 300 "$ktest" --gtest_filter='Gemv*:GemvFused*' >"$out/kernels_gemv.txt" 2>&1
echo "test_kernels_cuda Gemv*: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$out/kernels_gemv.txt" | tr '\n' ' ')"
grep -E '^\[  FAILED' "$out/kernels_gemv.txt" | head -5
timeout 420 "$etest" >"$out/engine_cuda.txt" 2>&1
echo "test_engine_cuda: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$out/engine_cuda.txt" | tr '\n' ' ')"
grep -E '^\[  FAILED|default kernel policy|batch invariant:' "$out/engine_cuda.txt" | head -30
grep -E 'Failure|differs' "$out/engine_cuda.txt" | head -8

echo "== 2. E2B serving (dummy weights)"
prompts=("Write a story about a lighthouse keeper who finds a message in a bottle."
  "List the prime numbers below fifty and explain why each one is prime."
  "Explain how a transformer language model generates text, step by step."
  "What are the main differences between TCP and UDP?")
serve() {  # name, extra serve flags...
  local name=$1
  shift
  "$bin" serve --model e2b --load-format dummy "${tokarg[@]}" --port "$port" --max-model-len 4096 \
    --max-num-seqs 32 --disable-log-stats "$@" >"$out/serve_$name.log" 2>&1 &
  spid=$!
  for _ in $(seq 240); do curl -sf "localhost:$port/health" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "$name: server did not start: $(tail -3 "$out/serve_$name.log")"
}
stop() { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; }
probe() {  # name: greedy completions of the prompts, one line each
  local name=$1 p
  : >"$out/greedy_$name.txt"
  for p in "${prompts[@]}"; do
    curl -s "localhost:$port/v1/completions" -H 'Content-Type: application/json' \
      -d "$(python3 -c 'import json,sys;print(json.dumps({"model":"e2b","prompt":sys.argv[1],"max_tokens":96,"temperature":0}))' "$p")" |
      python3 -c 'import json,sys;print(json.dumps(json.load(sys.stdin)["choices"][0]["text"]))' >>"$out/greedy_$name.txt" 2>&1
  done
}
bench() {  # name concurrency prompts input output
  timeout 150 "$bin" bench --base-url "http://127.0.0.1:$port" --num-prompts "$3" --max-concurrency "$2" \
    --random-input-len "$4" --random-output-len "$5" --ignore-eos --warmup-requests 1 --disable-tqdm \
    --output-json "$out/bench_$1.json" >"$out/bench_$1.txt" 2>&1
  printf '  %-26s %s\n' "$1" "$(python3 -c "import json;d=json.load(open('$out/bench_$1.json'));print('TTFT %.1f ms  TPOT %.3f ms  %.0f tok/s  accept %s' % (d.get('median_ttft_ms',0), d.get('median_tpot_ms',0), d.get('output_throughput',0), d.get('spec_decode_acceptance_length')))" 2>&1)"
}
det=--enable-deterministic-inference
drafter=(--speculative-model e2b-assistant --num-speculative-tokens 3)
serve plain_default && { probe plain_default; bench e2b_c1_default 1 12 1024 128; bench e2b_c16_default 16 64 1024 128; stop; }
serve plain_det $det && { probe plain_det; bench e2b_c1_det 1 12 1024 128; bench e2b_c16_det 16 64 1024 128; stop; }
serve spec_default "${drafter[@]}" && { probe spec_default; stop; }
serve spec_det $det "${drafter[@]}" && { probe spec_det; stop; }
serve spec_det_a083 $det "${drafter[@]}" --speculative-accept-rate 0.83 && { bench e2b_c1_spec_det_a083 1 12 512 256; stop; }
same() { cmp -s "$out/greedy_$1.txt" "$out/greedy_$2.txt" && echo identical || echo "DIFFERENT ($(diff "$out/greedy_$1.txt" "$out/greedy_$2.txt" | grep -c '^<') of ${#prompts[@]} prompts)"; }
echo "  greedy, drafter vs none, default policy:   $(same plain_default spec_default)"
echo "  greedy, drafter vs none, batch invariant:  $(same plain_det spec_det)"
echo "  greedy, invariant vs default (no drafter): $(same plain_default plain_det)"

echo "== 3. bench-decode, policy off / on"
for model in e2b 31b; do
  for policy in default det; do
    flag=()
    [[ $policy == det ]] && flag=($det)
    timeout 200 "$bin" bench-decode --model $model --load-format dummy --batch 1,8,64 --context 1024 "${flag[@]}" \
      >"$out/decode_${model}_$policy.txt" 2>&1
    echo "  $model $policy: $(grep -E '^\| (1|8|64) \|' "$out/decode_${model}_$policy.txt" | tr -s ' ' | tr '\n' '|')"
    timeout 200 "$bin" bench-decode --model $model --load-format dummy --batch 1,8 --context 1024 \
      --num-speculative-tokens 3 --speculative-model $model-assistant "${flag[@]}" >"$out/verify_${model}_$policy.txt" 2>&1
    echo "  $model $policy K=3: $(grep -E '^\| (1|8) \|' "$out/verify_${model}_$policy.txt" | tr -s ' ' | tr '\n' '|')"
  done
done
