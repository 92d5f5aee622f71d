#!/usr/bin/env bash
# A/B of kernel-test binaries built by tools/gpu/ab-build.sh, on the GPU machine: each binary's
# tests first (GS_AB_TESTS, a gtest filter; empty skips them), then its benchmark rounds
# alternated (A B C A B C ...), so that clock and thermal drift fall on every binary alike. Lines
# are tagged with the binary's name; the benchmarks are the disabled gtest tables, AttentionBench
# by default (GS_AB_BENCH; empty skips it), restricted to the shapes whose name contains
# GS_BENCH_ATTENTION_SHAPES, and where ab-build.sh built gemmaserve too, `bench-kernels --only
# GS_AB_KERNELS` (e.g. sampling; unset skips it).
# Also where gemmaserve was built: GS_AB_PARITY=1 runs tools/gpu/parity.py on each binary once
# (before the tests; GS_AB_PARITY_NAMES="a b" limits it to those binaries), and
# GS_AB_DECODE="e2b 31b" times `bench-decode` of those shapes in each round, at the batch sizes of
# GS_AB_DECODE_BATCH (default 1; e.g. 1,8,64,128), with GS_AB_DECODE_FLAGS added (e.g. --overlap;
# a line per batch size in decode.txt).
#
# usage: tools/gpu/ab-bench.sh LEAN_DIR AB_DIR RESULTS_DIR [ROUNDS]
#   LEAN_DIR: a folder of collect-libs.sh (its gpu-libs); AB_DIR: the *.gz of ab-build.sh.
#   e.g. GS_AB_TESTS='Attention*' GS_BENCH_ATTENTION_SHAPES=prefill tools/gpu/ab-bench.sh build-lean build-ab $OUT/ab
set -uo pipefail
lean=$(cd "${1:?usage: ab-bench.sh LEAN_DIR AB_DIR RESULTS_DIR [ROUNDS]}" && pwd)
ab=$(cd "${2:?usage: ab-bench.sh LEAN_DIR AB_DIR RESULTS_DIR [ROUNDS]}" && pwd)
results=${3:?usage: ab-bench.sh LEAN_DIR AB_DIR RESULTS_DIR [ROUNDS]}
rounds=${4:-2}
mkdir -p "$results"
source "$(dirname "$0")/lean_bin.bash"
gs_gpu_libs "$lean"

names=()
for f in "$ab"/*.gz; do
  [[ $f == *.gemmaserve.gz ]] && continue
  name=$(basename "${f%.gz}")
  [[ -e $ab/$name.gemmaserve.gz ]] && gunzip -c "$ab/$name.gemmaserve.gz" > "/tmp/gs-ab-$name.gemmaserve" &&
    chmod +x "/tmp/gs-ab-$name.gemmaserve"
  gunzip -c "$f" > "/tmp/gs-ab-$name" && chmod +x "/tmp/gs-ab-$name"
  names+=("$name")
done
[[ ${#names[@]} -gt 0 ]] || { echo "ab-bench: no binaries in $ab" >&2; exit 1; }

src=$(cd "$(dirname "$0")/../.." && pwd)
if [[ ${GS_AB_PARITY:-0} == 1 ]]; then
  for name in "${names[@]}"; do
    [[ -x /tmp/gs-ab-$name.gemmaserve ]] || continue
    [[ -z ${GS_AB_PARITY_NAMES:-} || " $GS_AB_PARITY_NAMES " == *" $name "* ]] || continue
    timeout "${GS_AB_T_PARITY:-100}" python3 "$src/tools/gpu/parity.py" "/tmp/gs-ab-$name.gemmaserve" \
      "$src/fixtures/golden" --backend cuda > "$results/parity-$name.txt" 2>&1
    rc=$?
    echo "$name parity: rc=$rc, $(grep -c -E ' (FAIL|ERROR) ' "$results/parity-$name.txt") failing cases"
  done
fi
if [[ -n ${GS_AB_TESTS-Attention*} ]]; then
  for name in "${names[@]}"; do
    timeout "${GS_AB_T_TESTS:-400}" "/tmp/gs-ab-$name" --gtest_color=no --gtest_filter="${GS_AB_TESTS-Attention*}" \
      > "$results/tests-$name.log" 2>&1
    rc=$?
    echo "$name tests: rc=$rc, $(grep -c '^\[       OK \]' "$results/tests-$name.log") passed," \
      "$(grep -c '^\[  FAILED  \] [A-Za-z]' "$results/tests-$name.log") failed"
  done
fi
for ((r = 1; r <= rounds; ++r)); do
  for name in "${names[@]}"; do
    if [[ -n ${GS_AB_BENCH-AttentionBench.*} ]]; then
      timeout "${GS_AB_T_BENCH:-200}" "/tmp/gs-ab-$name" --gtest_also_run_disabled_tests \
        --gtest_filter="${GS_AB_BENCH-AttentionBench.*}" 2>&1 | grep -vE '^(\[|Running main|Note: )' |
        sed "s/^/$name $r /" | tee -a "$results/bench.txt"
    fi
    if [[ -x /tmp/gs-ab-$name.gemmaserve ]]; then
      for m in ${GS_AB_DECODE:-}; do
        # shellcheck disable=SC2086  # GS_AB_DECODE_FLAGS is a list of flags
        timeout "${GS_AB_T_DECODE:-120}" "/tmp/gs-ab-$name.gemmaserve" bench-decode --model "$m" \
          --load-format dummy --backend cuda --batch "${GS_AB_DECODE_BATCH:-1}" --context 1024 --steps 48 \
          ${GS_AB_DECODE_FLAGS:-} 2>&1 | grep -E '^\| [0-9]+ \|' |
          sed "s/^/$name $r decode $m ${GS_AB_DECODE_FLAGS:-} /" | tee -a "$results/decode.txt"
      done
    fi
    if [[ -n ${GS_AB_KERNELS:-} && -x /tmp/gs-ab-$name.gemmaserve ]]; then
      timeout "${GS_AB_T_BENCH:-200}" "/tmp/gs-ab-$name.gemmaserve" bench-kernels --only "$GS_AB_KERNELS" 2>&1 |
        grep -vE '^[0-9:.]+ [A-Z] ' | sed "s/^/$name $r /" | tee -a "$results/bench-kernels.txt"
    fi
  done
done
