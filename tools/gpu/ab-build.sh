#!/usr/bin/env bash
# Builds the CUDA kernel tests of several git revisions for an A/B run on the GPU machine
# (tools/gpu/ab-bench.sh): each revision is checked out into one scratch worktree that shares one
# build folder, so after the first only what differs recompiles. Writes OUT_DIR/<name>.gz
# (stripped, gzipped test_kernels_cuda; ~7 MB each) with <name> the revision with '/' turned to
# '-', and with GS_AB_GEMMASERVE=1 also OUT_DIR/<name>.gemmaserve.gz (~8 MB, for bench-kernels
# rows such as sampling). Carry OUT_DIR together with the gpu-libs of a collect-libs.sh folder
# (the carry limit is 64 MiB: the libraries take ~15 MB).
#
# GS_AB_CMAKE_ARGS adds CMake options to every revision of the call and GS_AB_SUFFIX to its names.
# Revisions before the kernel-policy change had two diagnostic options (GEMMASERVE_ATTN_TIMELINE,
# GEMMASERVE_ATTN_WAIT_CHECK); they are turned off for every revision, so a shared build folder
# never keeps one on. Kernel choices of one build are A/B'd with --kernel-policy items or the
# developer variables of src/kernels/kernel_policy_env.cpp (docs/kernel-policy.md) instead of rebuilding.
#
# usage: tools/gpu/ab-build.sh OUT_DIR REV [REV ...]     e.g. build-ab main wgmma-n80 sampling-cluster
set -euo pipefail
out=${1:?usage: ab-build.sh OUT_DIR REV [REV ...]}
shift
[[ $# -gt 0 ]] || { echo "ab-build: no revisions" >&2; exit 1; }
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
wt=${GS_AB_WORKTREE:-/tmp/gs-ab-worktree}
build=${GS_AB_BUILD:-/tmp/gs-ab-build}
if [[ ! -d $wt ]]; then
  git -C "$src" worktree add --detach "$wt" "$1" > /dev/null
fi
for rev in "$@"; do
  git -C "$wt" checkout --quiet --detach "$rev"
  # shellcheck disable=SC2086  # GS_AB_CMAKE_ARGS is a list of options
  cmake -S "$wt" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGEMMASERVE_ATTN_TIMELINE=OFF -DGEMMASERVE_ATTN_WAIT_CHECK=OFF \
    ${GS_AB_CMAKE_ARGS:-} > /dev/null
  targets=(test_kernels_cuda)
  [[ ${GS_AB_GEMMASERVE:-0} == 1 ]] && targets+=(gemmaserve)
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
  name=${rev//\//-}${GS_AB_SUFFIX:-}
  strip -o "$out/$name" "$build/tests/test_kernels_cuda"
  gzip -f "$out/$name"
  if [[ ${GS_AB_GEMMASERVE:-0} == 1 ]]; then
    strip -o "$out/$name.gemmaserve" "$build/bin/gemmaserve"
    gzip -f "$out/$name.gemmaserve"
  fi
  echo "ab-build: $rev ($(git -C "$wt" rev-parse --short HEAD)) -> $out/$name.gz"
done
