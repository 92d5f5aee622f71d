#!/usr/bin/env bash
# Everything the GPU machine checks and measures, in one call:
#   1. the cuda kernel tests (tests/kernels_cuda: every op vs the cpu backend, attention),
#   2. compute-sanitizer memcheck and racecheck over those tests,
#   3. golden parity of `gemmaserve logits --backend cuda` (tools/gpu/parity.py),
#   4. `gemmaserve bench-kernels`,
#   5. `gemmaserve bench-decode` of every variant shape with dummy weights (docs/perf/decode.md),
#   6. (step "profile", not in the default list) the per-kernel time of one batch-1 decode step under
#      Nsight Compute (tools/gpu/profile_step.py) for GS_PROFILE_MODELS (default "e2b 31b").
#   7. (step "sampling", not in the default list) bench-kernels' sampling rows with the candidate
#      window on and off (GS_SAMPLE_WINDOW=1 / 0, sampling_window.cuh), for an A/B in one call.
# Full logs go to RESULTS_DIR; a short table is printed last. Each step has its own time limit
# (seconds, overridable through the environment: GS_T_TESTS, GS_T_SANITIZER, GS_T_RACECHECK,
# GS_T_PARITY, GS_T_BENCH, GS_T_DECODE) so one slow step cannot eat the whole call.
#
# One device call is at most 10 minutes, and the default steps together take longer (H200,
# 11-27: tests 207 s, memcheck over every test 215 s, racecheck over its filter well past
# 560 s). Split them: GS_STEPS="tests parity bench decode" (every figure of docs/perf, ~4 min),
# then GS_STEPS=memcheck (~4 min), then racecheck in parts through GS_RACECHECK_FILTER
# (docs/perf/kernels.md, "How to reproduce").
#
# usage: tools/gpu/run-all.sh BUILD_DIR RESULTS_DIR
#   BUILD_DIR: a CUDA build (or the lean folder of collect-libs.sh) with gpu-libs/ in it.
#   GS_STEPS: which steps to run (default "tests memcheck racecheck parity bench decode").
#   GS_DECODE_MODELS / GS_DECODE_BATCH: the decode step's variants (default "e2b e4b 26b-a4b 31b")
#     and batch sizes (default "1,8,64"; 31B at 64 needs an H200's memory).
#   GS_TESTS_STEP_FILTER: gtest filter for the tests step (default: every test).
#   GS_TEST_FILTER: gtest filter for memcheck (default: everything but benchmarks).
#   GS_RACECHECK_FILTER: gtest filter for racecheck (default: everything but benchmarks, the
#     decode-graph tests (capturing CUDA graphs under racecheck takes minutes, and those tests run
#     kernels that the op tests already cover) and Attention.WgmmaKernelsOnEveryShapeTheyAccept
#     (over 200 s alone under racecheck on an H100; Attention.EveryTileKernelOnEveryShape runs
#     every wgmma kernel too, on five shapes, split and unsplit).
set -uo pipefail

build=${1:?usage: run-all.sh BUILD_DIR RESULTS_DIR}
results=${2:?usage: run-all.sh BUILD_DIR RESULTS_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$build" && pwd)
mkdir -p "$results"
results=$(cd "$results" && pwd)
steps=${GS_STEPS:-"tests memcheck racecheck parity bench decode"}
filter=${GS_TEST_FILTER:-"-*Bench*"}
race_filter=${GS_RACECHECK_FILTER:-"-*Bench*:DecodeGraphs*:Attention.WgmmaKernelsOnEveryShapeTheyAccept"}

source "$src/tools/gpu/lean_bin.bash"
gs_gpu_libs "$build"  # shared libraries our Debian build needs and Ubuntu lacks
tests_bin=$(gs_runnable "$build/tests/test_kernels_cuda")
gs_bin=$(gs_runnable "$build/bin/gemmaserve")
summary=()
note() { summary+=("$(printf '%-12s %-6s %s' "$1" "$2" "$3")"); }

# racecheck cannot follow the TMA and mbarrier pipelines of cuBLASLt's own kernels (nvjet_*) and
# reports shared-memory hazards in them (kernels.md, 11-25 and 11-27); those are counted apart
# from reports in our kernels. Prints "REPORTS OURS" for a racecheck log.
race_sites() {
  awk '/hazard detected|Race reported/ { n++; want = 1; next }
       want && / at / { if ($0 !~ / at nvjet_/) ours++; want = 0 }
       END { print n + 0, ours + 0 }' "$1"
}

{
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  nvcc --version | tail -1
  compute-sanitizer --version | head -1
} > "$results/device.txt" 2>&1
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)

for step in $steps; do
  case $step in
    tests)
      timeout "${GS_T_TESTS:-300}" "$tests_bin" --gtest_color=no --gtest_output="xml:$results/kernel-tests.xml" \
        --gtest_filter="${GS_TESTS_STEP_FILTER:-*}" > "$results/kernel-tests.log" 2>&1
      rc=$?
      passed=$(grep -c '^\[       OK \]' "$results/kernel-tests.log")
      failed=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$results/kernel-tests.log")
      note tests "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "rc=$rc, $passed passed, $failed failed (kernel-tests.log)"
      ;;
    memcheck|racecheck)
      tool=$step
      f=$filter; limit=${GS_T_SANITIZER:-400}
      [[ $tool == racecheck ]] && f=$race_filter && limit=${GS_T_RACECHECK:-300}
      timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        "$tests_bin" --gtest_color=no --gtest_filter="$f" > "$results/$tool.log" 2>&1
      rc=$?
      errors=$(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$results/$tool.log")
      status=ok
      [[ $rc == 0 ]] || status=FAIL
      if [[ $tool == racecheck ]]; then
        read -r reports ours < <(race_sites "$results/$tool.log")
        if (( reports > 0 )); then
          errors="${errors:-no summary}; $reports reports printed, $ours outside cuBLASLt's nvjet kernels"
          # (rc 99 is the tool's; a test that failed under it still fails the step)
          [[ $rc == 99 && $ours == 0 ]] && ! grep -q '^\[  FAILED  \]' "$results/$tool.log" && status=ok
        fi
      fi
      [[ $rc == 124 ]] && status=TIME
      note "$tool" "$status" "rc=$rc ${errors:-no summary} ($tool.log)"
      ;;
    parity)
      timeout "${GS_T_PARITY:-45}" python3 "$src/tools/gpu/parity.py" "$gs_bin" "$src/fixtures/golden" \
        --backend cuda --log "$results/parity-commands.log" > "$results/parity.txt" 2>&1
      rc=$?
      bad=$(grep -c -E ' (FAIL|ERROR) ' "$results/parity.txt")
      note parity "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "rc=$rc, $bad failing cases (parity.txt)"
      timeout "${GS_T_PARITY:-45}" python3 "$src/tools/gpu/vision_parity.py" "$gs_bin" "$src/fixtures/vision_golden" \
        --backend cuda > "$results/vision-parity.txt" 2>&1
      rc=$?
      note vision-parity "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "rc=$rc (vision-parity.txt)"
      ;;
    bench)
      timeout "${GS_T_BENCH:-75}" "$gs_bin" bench-kernels --json "$results/bench-kernels.json" \
        > "$results/bench-kernels.txt" 2>&1
      rc=$?
      note bench "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "rc=$rc (bench-kernels.txt, bench-kernels.json)"
      ;;
    sampling)
      for on in 1 0; do
        GS_SAMPLE_WINDOW=$on timeout "${GS_T_BENCH:-75}" "$gs_bin" bench-kernels --only sampling \
          --json "$results/sampling-window$on.json" > "$results/sampling-window$on.txt" 2>&1
        rc=$?
        note "sampling w=$on" "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "rc=$rc (sampling-window$on.txt)"
      done
      ;;
    decode)
      for m in ${GS_DECODE_MODELS:-e2b e4b 26b-a4b 31b}; do
        timeout "${GS_T_DECODE:-120}" "$gs_bin" bench-decode --model "$m" --load-format dummy --backend cuda \
          --batch "${GS_DECODE_BATCH:-1,8,64}" --context 1024 --steps 48 --json "$results/decode-$m.json" \
          > "$results/decode-$m.txt" 2>&1
        rc=$?
        note "decode $m" "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "rc=$rc (decode-$m.txt, decode-$m.json)"
      done
      ;;
    profile)
      for m in ${GS_PROFILE_MODELS:-e2b 31b}; do
        timeout "${GS_T_PROFILE:-240}" python3 "$src/tools/gpu/profile_step.py" "$gs_bin" "$m" "$results" \
          > "$results/profile-$m.txt" 2>&1
        rc=$?
        note "profile $m" "$([[ $rc == 0 ]] && echo ok || echo FAIL)" "rc=$rc (profile-$m.txt)"
      done
      ;;
    *) note "$step" "?" "unknown step" ;;
  esac
done

echo
[[ -s $results/bench-kernels.txt ]] && cat "$results/bench-kernels.txt"
for f in "$results"/sampling-window*.txt; do [[ -s $f ]] && echo "== $(basename "$f")" && cat "$f"; done
[[ -s $results/parity.txt ]] && cat "$results/parity.txt"
for f in "$results"/decode-*.txt; do [[ -s $f ]] && tail -n 8 "$f"; done
for f in "$results"/profile-*.txt; do [[ -s $f ]] && head -n 30 "$f"; done
grep -E '^\[  FAILED  \]|Failure|error:' "$results/kernel-tests.log" 2>/dev/null | head -20
echo
echo "== gemmaserve GPU run on ${device:-unknown device}: $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%s\n' "${summary[@]}"
