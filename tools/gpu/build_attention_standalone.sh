#!/usr/bin/env bash
# Builds a standalone attention test/bench binary (no full CMake build): the attention kernels,
# their few dependencies and tests/kernels_cuda/attention_*.cpp, linked statically against gtest
# and cudart so it runs on the lent GPU machine as is.
#   tools/gpu/build_attention_standalone.sh [out_dir]      (default: build-attn)
# Then: out_dir/attention_tests --gtest_filter='Attention*'
#       out_dir/attention_tests --gtest_also_run_disabled_tests --gtest_filter='AttentionBench.*'
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-build-attn}
JOBS=${JOBS:-2}
mkdir -p "$OUT/obj"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
GENCODE="-gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_80,code=compute_80"
NVFLAGS="-std=c++20 -O3 -DFMT_HEADER_ONLY -I src -Itests/kernels_cuda --expt-relaxed-constexpr $GENCODE -Xptxas -v"
# spdlog header-only too: the kernel policy's developer variables are logged (src/kernels/kernel_policy_env.cpp).
CXXFLAGS="-std=c++20 -O2 -DFMT_HEADER_ONLY -DSPDLOG_HEADER_ONLY -DSPDLOG_FMT_EXTERNAL -I src -I tests/kernels_cuda -I /usr/local/cuda/include"

build() {  # src -> obj
  local src=$1 obj="$OUT/obj/$(echo "$1" | tr / _).o"
  if [[ "$obj" -nt "$src" && -z "${FORCE:-}" ]] && ! find src/kernels/cuda -name '*.cuh' -newer "$obj" | grep -q .; then
    echo "$obj"; return
  fi
  case "$src" in
    *.cu) $NVCC $NVFLAGS -c "$src" -o "$obj" 2> "$obj.log" || { cat "$obj.log" >&2; return 1; } ;;
    *) g++ $CXXFLAGS -c "$src" -o "$obj" ;;
  esac
  echo "$obj"
}
export -f build
export OUT NVCC NVFLAGS CXXFLAGS
SRCS="$(ls src/kernels/cuda/attention_*.cu src/kernels/cuda/attention_*.cpp) src/kernels/cuda_bench/attention_bench.cu
      src/kernels/cuda/cuda_check.cpp
      src/kernels/cuda/kernel_policy.cpp src/kernels/kernel_policy_env.cpp src/kernels/kernel_policy_items.cpp
      src/core/tensor.cpp src/core/dtype.cpp
      tests/kernels_cuda/attention_harness.cpp tests/kernels_cuda/attention_test.cpp tests/kernels_cuda/attention_bench.cpp"
# cuda_check.cpp names two cuBLASLt status functions; the attention code never calls cuBLAS, so
# stubs keep the binary free of the 500 MB static cuBLASLt.
cat > "$OUT/cublaslt_stub.cpp" <<'STUB'
#include <cublasLt.h>
extern "C" const char* cublasLtGetStatusName(cublasStatus_t) { return "cuBLASLt (stub)"; }
extern "C" const char* cublasLtGetStatusString(cublasStatus_t) { return "not linked in this test binary"; }
STUB
SRCS="$SRCS $OUT/cublaslt_stub.cpp"
OBJS=$(printf '%s\n' $SRCS | xargs -P "$JOBS" -I{} bash -c 'build {}')
$NVCC -std=c++20 $GENCODE $OBJS -o "$OUT/attention_tests" -lgtest_main -lgtest -lpthread -cudart static
echo "built $OUT/attention_tests"
