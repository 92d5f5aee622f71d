#!/usr/bin/env bash
# Builds the standalone GEMV check and bench with nvcc alone (no CMake): OUT_DIR/gemv_check,
# OUT_DIR/gemv_bench, OUT_DIR/chain_ll_bench, OUT_DIR/lt_sweep. usage: tools/gpu/gemv_standalone/build.sh OUT_DIR   (from the repo root)
set -euo pipefail
out=${1:?usage: build.sh OUT_DIR}
mkdir -p "$out/obj"
flags=(-gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_80,code=compute_80 -std=c++20
       --expt-relaxed-constexpr -O3 -I src)
for f in src/kernels/cuda/gemv.cu tools/gpu/gemv_standalone/gemv_check.cu tools/gpu/gemv_standalone/gemv_bench.cu \
         tools/gpu/gemv_standalone/chain_ll_bench.cu tools/gpu/gemv_standalone/lt_sweep.cpp \
         src/kernels/cuda/cuda_check.cpp src/kernels/cuda/gemm.cpp src/core/dtype.cpp src/core/tensor.cpp; do
  o="$out/obj/$(basename "$f").o"
  newer=1
  for dep in "$f" src/kernels/cuda/launch_util.h src/kernels/cuda/gemv_device.cuh tools/gpu/gemv_standalone/*.cuh \
             tools/gpu/gemv_standalone/*.h; do
    [[ $o -nt $dep ]] || newer=0
  done
  (( newer )) && continue
  # .cpp files through g++: nvcc 13 cannot compile fmt 9's headers (core/error.h).
  case $f in
    *.cu) nvcc "${flags[@]}" -c "$f" -o "$o" ;;
    *) g++ -std=c++20 -O2 -I src -I /usr/local/cuda/include -c "$f" -o "$o" ;;
  esac
done
common=("$out/obj/gemv.cu.o" "$out/obj/cuda_check.cpp.o" "$out/obj/dtype.cpp.o" "$out/obj/tensor.cpp.o")
nvcc "${flags[@]}" -o "$out/gemv_check" "$out/obj/gemv_check.cu.o" "${common[@]}" -lgtest_main -lgtest -lfmt -lcublasLt -lcudart
nvcc "${flags[@]}" -o "$out/gemv_bench" "$out/obj/gemv_bench.cu.o" "$out/obj/gemm.cpp.o" "${common[@]}" -lfmt -lcublasLt -lcudart
nvcc "${flags[@]}" -o "$out/chain_ll_bench" "$out/obj/chain_ll_bench.cu.o" "${common[@]}" -lfmt -lcublasLt -lcudart
nvcc "${flags[@]}" -o "$out/lt_sweep" "$out/obj/lt_sweep.cpp.o" "${common[@]}" -lfmt -lcublasLt -lcudart
