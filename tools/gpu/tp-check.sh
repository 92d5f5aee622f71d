#!/usr/bin/env bash
# Tensor parallelism on a 2- or 4-GPU machine, in one call (issue 31, docs/scale-out.md):
#   1. allreduce: the custom all-reduce against NCCL (tests/parallel_cuda, every size class, bf16
#      and f32, eager and from CUDA graphs) and its fused residual-norm form against the unfused ops,
#      then under compute-sanitizer memcheck for a few sizes;
#   2. golden: tools/gpu/parity.py with `--tensor-parallel-size 2` on every golden fixture and mode,
#      against the Hugging Face f32 logits under the one-GPU bounds (python3 + numpy);
#   3. shapes: first-step logits of TP2 (TP4) vs TP1 on random checkpoints of the four real shapes
#      cut to 4 layers (tests/parallel_cuda RealShapes; writes up to ~10 GB under /tmp);
#   4. bench: `gemmaserve bench-allreduce` (decode messages at batch 1 and 64 of hidden 5376 and a
#      size sweep, 2 and 4 GPUs), with the push kernel (default) and the one-shot kernel alone;
#   5. decode: `gemmaserve bench-decode` of 31B (GS_TP_DECODE_MODEL) with dummy weights at batch 1 and
#      64, TP1 beside TP2 (and TP4), and TP2 (TP4) again with --overlap: the same greedy tokens;
#      TP2 also unfused (GS_TP_FUSE_NORM=0) and with the one-shot kernel alone (and
#      GS_TP_ALLREDUCE_PUSH=0): the same greedy tokens (the kernels are bit-exact), and their cost.
# Full logs go to RESULTS_DIR; a short table is printed last. NCCL_NVLS_ENABLE=0 (NVLink
# SHARP multicast stays off on the lent machines).
#
# usage: tools/gpu/tp-check.sh BUILD_DIR RESULTS_DIR
#   BUILD_DIR: a CUDA build, or a lean folder (collect-libs.sh) holding bin/gemmaserve and
#   tests/test_parallel_cuda (gzipped or not) and gpu-libs/.
#   GS_STEPS: which steps (default "allreduce golden shapes bench decode"; they run in the order
#   allreduce, bench, golden, shapes, decode). GS_T_DECODE: its limit per run (s). GS_T_ALLREDUCE, GS_T_MEMCHECK, GS_T_BENCH, GS_T_SHAPES: time limits (s).
set -uo pipefail

build=${1:?usage: tp-check.sh BUILD_DIR RESULTS_DIR}
results=${2:?usage: tp-check.sh BUILD_DIR RESULTS_DIR}
src=${GS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}  # GS_SRC: a checkout with fixtures/ and tools/gpu/
build=$(cd "$build" && pwd)
mkdir -p "$results"
results=$(cd "$results" && pwd)
steps=${GS_STEPS:-"allreduce golden shapes bench decode"}
export NCCL_NVLS_ENABLE=0

source "$src/tools/gpu/lean_bin.bash"
gs_gpu_libs "$build"
gs_bin=$(gs_runnable "$build/bin/gemmaserve")
test_bin=$(gs_runnable "$build/tests/test_parallel_cuda")
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
summary=()
note() { summary+=("$(printf '%-10s %-6s %s' "$1" "$2" "$3")"); }
has() { [[ " $steps " == *" $1 "* ]]; }
echo "tp-check: $gpus GPUs; steps: $steps" | tee "$results/summary.txt"
nvidia-smi topo -m > "$results/topo.txt" 2>&1

if has allreduce; then
  timeout ${GS_T_ALLREDUCE:-90} "$test_bin" --gtest_filter='CustomAllReduce.*:FusedAllReduceNorm.*' > "$results/allreduce.log" 2>&1
  rc=$?
  note allreduce "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$results/allreduce.log" | tr '\n' ' ')"
  GS_TP_QUICK=1 timeout ${GS_T_MEMCHECK:-90} compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$test_bin" --gtest_filter='CustomAllReduce.TwoRanksBitExactWithNccl:CustomAllReduce.TwoRanksReplayedFromGraphs:FusedAllReduceNorm.TwoRanks*' \
    > "$results/allreduce_memcheck.log" 2>&1
  rc=$?
  note memcheck "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "$(grep -E 'ERROR SUMMARY' "$results/allreduce_memcheck.log" | head -1)"
fi

if has bench; then
  timeout ${GS_T_BENCH:-120} "$gs_bin" bench-allreduce --tensor-parallel-size 2,4 --json "$results/allreduce.json" \
    > "$results/bench_allreduce.txt" 2> "$results/bench_allreduce.log"
  note bench "$([[ $? == 0 ]] && echo ok || echo FAIL)" "bench_allreduce.txt"
  GS_TP_ALLREDUCE_PUSH=0 timeout ${GS_T_BENCH:-120} "$gs_bin" bench-allreduce --tensor-parallel-size 2,4 \
    --json "$results/allreduce_oneshot.json" > "$results/bench_allreduce_oneshot.txt" 2>> "$results/bench_allreduce.log"
  note bench "$([[ $? == 0 ]] && echo ok || echo FAIL)" "bench_allreduce_oneshot.txt (the one-shot kernel alone)"
fi

if has golden; then
  # Every golden fixture in every mode (prefill, chunked, decode) at TP2 against the Hugging Face
  # f32 reference, under the same bounds as one GPU (tools/gpu/parity.py: from transformers' own bf16
  # run). TP4 does not divide these fixtures' 1-2 KV heads / 2 query heads; RealShapes covers it.
  python3 "$src/tools/gpu/parity.py" "$gs_bin" "$src/fixtures/golden" --backend cuda \
    --logits-args "--tensor-parallel-size 2" --log "$results/golden.log" > "$results/golden.txt" 2>&1
  rc=$?
  while read -r l; do note golden "-" "$l"; done < <(grep -E ' (ok|FAIL|ERROR) ' "$results/golden.txt" | awk '{print $1, $2, $3, "rel", $4, "top1", $6}')
  note golden "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "TP2 vs HF f32 (golden.txt)"
fi

if has shapes; then
  GS_TP_REAL_SHAPES=1 timeout ${GS_T_SHAPES:-420} "$test_bin" --gtest_filter='Presets/RealShapes.*' > "$results/shapes.log" 2>&1
  rc=$?
  while read -r l; do note shapes "-" "${l#\[real-shapes\] }"; done < <(grep '^\[real-shapes\]' "$results/shapes.log")
  note shapes "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "rc $rc"
fi

if has decode; then
  # A 31B batch-1/64 decode step on dummy weights, TP1 beside TP2 (and TP4), same machine.
  for n in 1 2 4; do
    [[ $n -le $gpus ]] || continue
    timeout ${GS_T_DECODE:-150} "$gs_bin" bench-decode --model "${GS_TP_DECODE_MODEL:-31b}" --load-format dummy \
      --backend cuda --tensor-parallel-size $n --batch 1,64 --context 1024 --steps 32 --json "$results/decode_tp$n.json" \
      > "$results/decode_tp$n.txt" 2>> "$results/decode.log"
    rc=$?
    note decode "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "TP$n: $(grep -E '^\| (1|64) \|' "$results/decode_tp$n.txt" | awk -F'|' '{printf "batch%s %s ms (floor%s); ", $2, $3, $7}')"
    [[ $n -gt 1 ]] || continue
    if [[ $n == 2 ]]; then
      # The same step unfused, then with the one-shot kernel alone (the kernels before the push one).
      for ab in "GS_TP_FUSE_NORM=0" "GS_TP_FUSE_NORM=0 GS_TP_ALLREDUCE_PUSH=0"; do
        tag=$(echo "$ab" | tr -dc 'A-Z_0=' | tr '=' '-' | tr -d ' ')
        env $ab timeout ${GS_T_DECODE:-150} "$gs_bin" bench-decode --model "${GS_TP_DECODE_MODEL:-31b}" --load-format dummy \
          --backend cuda --tensor-parallel-size 2 --batch 1,64 --context 1024 --steps 32 \
          --json "$results/decode_tp2_$tag.json" > "$results/decode_tp2_$tag.txt" 2>> "$results/decode.log"
        rc=$?
        same=$(python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); print("tokens equal" if [r["tokens_fnv1a"] for r in a]==[r["tokens_fnv1a"] for r in b] else "TOKENS DIFFER")' \
          "$results/decode_tp2.json" "$results/decode_tp2_$tag.json" 2>/dev/null || echo "no result")
        note decode "$([[ $rc == 0 && $same == "tokens equal" ]] && echo ok || echo FAIL)" "TP2 $ab: $same; $(grep -E '^\| (1|64) \|' "$results/decode_tp2_$tag.txt" | awk -F'|' '{printf "batch%s %s ms; ", $2, $3}')"
      done
    fi
    # Overlapped steps under TP (rank 0 broadcasts its sampled ids; a step launched ahead reads them
    # on every rank): greedy tokens must equal the serial run's.
    timeout ${GS_T_DECODE:-150} "$gs_bin" bench-decode --model "${GS_TP_DECODE_MODEL:-31b}" --load-format dummy \
      --backend cuda --tensor-parallel-size $n --batch 1,64 --context 1024 --steps 32 --overlap \
      --json "$results/decode_tp${n}_overlap.json" > "$results/decode_tp${n}_overlap.txt" 2>> "$results/decode.log"
    rc=$?
    same=$(python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); print("tokens equal" if [r["tokens_fnv1a"] for r in a]==[r["tokens_fnv1a"] for r in b] else "TOKENS DIFFER")' \
      "$results/decode_tp$n.json" "$results/decode_tp${n}_overlap.json" 2>/dev/null || echo "no result")
    note decode "$([[ $rc == 0 && $same == "tokens equal" ]] && echo ok || echo FAIL)" "TP$n overlapped: $same; $(grep -E '^\| (1|64) \|' "$results/decode_tp${n}_overlap.txt" | awk -F'|' '{printf "batch%s %s ms; ", $2, $3}')"
  done
fi

{
  echo
  [[ -f $results/bench_allreduce.txt ]] && cat "$results/bench_allreduce.txt"
  echo
  printf '%s\n' "${summary[@]}"
} | tee -a "$results/summary.txt"
