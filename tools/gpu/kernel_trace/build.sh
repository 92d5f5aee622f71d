#!/usr/bin/env bash
# Builds the CUPTI kernel tracer (kernel_trace.cpp) into OUT_DIR/libkernel_trace.so, with the
# toolkit's libcupti copied beside it (the GPU machine's toolkit may keep it elsewhere); carry
# OUT_DIR and run with LD_LIBRARY_PATH=OUT_DIR.
# usage: tools/gpu/kernel_trace/build.sh OUT_DIR   (from the repo root)
set -euo pipefail
out=${1:?usage: build.sh OUT_DIR}
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}
shopt -s nullglob
libs=("$cuda"/lib*/libcupti.so.* "$cuda"/extras/CUPTI/lib64/libcupti.so.*)
cupti=${libs[0]:-}
[[ -n $cupti ]] || { echo "build.sh: no libcupti under $cuda" >&2; exit 1; }
g++ -std=c++20 -O2 -shared -fPIC -I "$cuda/include" tools/gpu/kernel_trace/kernel_trace.cpp \
  -L "$(dirname "$cupti")" -l:"$(basename "$cupti")" -Wl,-rpath,'$ORIGIN' -o "$out/libkernel_trace.so"
cp -L "$cupti" "$out/"
echo "build.sh: $out/libkernel_trace.so (+ $(basename "$cupti"))"
