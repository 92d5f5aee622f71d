#!/usr/bin/env bash
# Makes a CUDA build folder runnable on the GPU machine (Ubuntu 24.04, CUDA toolkit but none of our
# Debian packages): copies the non-system shared libraries that the built binaries load (OpenBLAS,
# gfortran, quadmath, cpp-httplib, ...) into BUILD_DIR/gpu-libs, gzipped (OpenBLAS alone is 36 MB;
# the carry limit is 64 MiB). run-all.sh unpacks them and puts them on LD_LIBRARY_PATH.
#
# Left out: what the GPU machine has itself (glibc, libstdc++, libgcc, libm, the loader, the
# driver's libcuda, and the CUDA toolkit's own libraries such as cuBLASLt).
#
# usage: tools/gpu/collect-libs.sh BUILD_DIR [LEAN_DIR]
#   LEAN_DIR: also assemble a small folder with only what run-all.sh needs (stripped, gzipped
#   binaries and gpu-libs), the thing to carry when the whole build folder is too big.
set -euo pipefail

build=${1:?usage: collect-libs.sh BUILD_DIR [LEAN_DIR]}
lean=${2:-}
build=$(cd "$build" && pwd)

binaries=()
for f in "$build"/bin/gemmaserve "$build"/tests/test_kernels_cuda "$build"/tests/test_parallel_cuda \
    "$build"/tests/test_engine_cuda; do
  [[ -x $f ]] && binaries+=("$f")
done
[[ ${#binaries[@]} -gt 0 ]] || { echo "collect-libs: no binaries under $build/bin or $build/tests" >&2; exit 1; }

is_system() {
  case "$(basename "$1")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libstdc++.so*|libgcc_s.so*|ld-linux*|linux-vdso*) return 0 ;;
    libcuda.so*|libnvidia*) return 0 ;;
  esac
  case "$1" in /usr/local/cuda*) return 0 ;; esac
  return 1
}

out="$build/gpu-libs"
rm -rf "$out"
mkdir -p "$out"
for bin in "${binaries[@]}"; do
  ldd "$bin" | awk '/=> \// { print $3 }' | while read -r lib; do
    is_system "$lib" && continue
    name=$(basename "$lib")
    [[ -e $out/$name.gz ]] && continue
    gzip -6 -c "$(readlink -f "$lib")" > "$out/$name.gz"
    echo "collect-libs: $name ($(du -h "$out/$name.gz" | cut -f1) gzipped)"
  done
done

if [[ -n $lean ]]; then
  rm -rf "$lean"
  mkdir -p "$lean/bin" "$lean/tests"
  cp -r "$out" "$lean/gpu-libs"
  for bin in "${binaries[@]}"; do
    rel=${bin#"$build"/}
    cp "$bin" "$lean/$rel"
    strip --strip-debug "$lean/$rel"
    # Gzipped too (43 MB -> 14 MB): with the tracked tree the folder must stay under the device
    # tool's 64 MiB carry limit. run-all.sh unpacks them.
    gzip -1 "$lean/$rel"
  done
  echo "collect-libs: lean folder $lean ($(du -sh "$lean" | cut -f1))"
fi
