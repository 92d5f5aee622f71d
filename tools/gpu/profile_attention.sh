#!/usr/bin/env bash
# Nsight Compute profile of the serial wgmma prefill kernels (docs/perf/attention.md; the hd512 one
# is the paired kernel, the persistent kernels' fallback): one launch of each on the bench's 8k
# prefill shapes, the details page as text and the per-SASS-instruction counts as CSV (what
# `ncu --page source` shows), in RESULTS_DIR.
#
# usage: tools/gpu/profile_attention.sh BUILD_DIR RESULTS_DIR   (BUILD_DIR as for run-all.sh)
set -uo pipefail
build=$(cd "${1:?usage: profile_attention.sh BUILD_DIR RESULTS_DIR}" && pwd)
results=${2:?usage: profile_attention.sh BUILD_DIR RESULTS_DIR}
mkdir -p "$results"
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$src/tools/gpu/lean_bin.bash"
gs_gpu_libs "$build"
tests_bin=$(gs_runnable "$build/tests/test_kernels_cuda")

# name : kernel template arguments (demangled) : bench shape
for spec in "hd256:WgConfig<\(int\)256, \(bool\)0, \(bool\)0:prefill 8k hd256" \
            "hd512:WgConfig<\(int\)512, \(bool\)0, \(bool\)1, \(bool\)1:prefill 8k hd512 causal (31B"; do
  IFS=: read -r name regex shape <<< "$spec"
  GS_BENCH_ATTENTION_SHAPES="$shape" timeout 200 ncu --kernel-name-base demangled -k "regex:$regex" \
    --launch-skip 3 --launch-count 1 --set full -o "$results/$name" -f "$tests_bin" \
    --gtest_also_run_disabled_tests --gtest_filter='AttentionBench.*' > "$results/$name-ncu.log" 2>&1
  echo "$name: ncu rc=$?"
  ncu --import "$results/$name.ncu-rep" --page details > "$results/$name-details.txt" 2>&1
  ncu --import "$results/$name.ncu-rep" --page source --print-source sass --csv > "$results/$name-sass.csv" 2>&1
  grep -E "Duration|Issue Slots Busy|Tensor \(All\)" "$results/$name-details.txt" | head -4
done
