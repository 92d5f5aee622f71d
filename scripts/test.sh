#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite, as CI does:
#   1. release build (CUDA code compiled when nvcc is present; GPU tests skip without a GPU)
#   2. every test through ctest (unit, parity against golden fixtures, tokenizer and template
#      references, the server driven by the official OpenAI client)
#   3. one clang build of the CPU targets with AddressSanitizer + UndefinedBehaviorSanitizer (no
#      recovery: any report fails) and libFuzzer coverage, whose tests are run again through ctest
#   4. its fuzz targets for a short time each: the HTTP/JSON request path and the file parsers
#      (safetensors, tokenizer, Jinja)
# GS_TEST_QUICK=1 (local use) skips the sanitized tests and the HTTP fuzzer: only the parser
# fuzzers are built in the sanitizer build dir and run.
# Measured on a 2-core dev machine (AMD EPYC, clean clone, the whole script): 29.9 min on
# 2026-11-25 (release build and its tests ~12 min, sanitizer build ~12 min, its tests ~3 min, fuzzing
# 4 x 20 s), down from 42.6 min the day before: fmt and spdlog as compiled libraries instead of
# header-only, the CLI and the tests at -O1 with precompiled headers (CMakeLists.txt).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
"$root/scripts/setup.sh"
"$root/scripts/fetch-test-data.sh"
if [ -f tests/node/package.json ]; then
  (cd tests/node && npm ci --silent --no-audit --no-fund >/dev/null)
fi
jobs="${GS_JOBS:-$(nproc)}"

echo "== build (release) =="
# Without a GPU (CI) the kernels are built to catch compile errors, never run: compile them for the
# product's architecture only (sm_90a), not also as compute_80 PTX, which doubles nvcc's time.
cuda_args=()
if ! nvidia-smi -L >/dev/null 2>&1; then cuda_args=("-DGS_CUDA_GENCODE=-gencode=arch=compute_90a,code=sm_90a"); fi
GS_BUILD_DIR="$root/build" "$root/scripts/build.sh" "${cuda_args[@]}"
echo "== tests (release) =="
ctest --test-dir "$root/build" --output-on-failure -j "$jobs" --timeout 900

# Sanitizers and fuzzing share one build: clang (libFuzzer), -O1 -g1 (a third of the compile time of
# gcc -O2 -g with sanitizers; fast enough to run the tests), CPU only.
asan="$root/build-asan"
CC=clang CXX=clang++ cmake -S "$root" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
  -DGEMMASERVE_CUDA=OFF -DGEMMASERVE_SANITIZE=address,undefined -DGEMMASERVE_FUZZ=ON >/dev/null
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The input parsers a user's files reach: checkpoint headers, tokenizer files, chat templates,
# and the image decoders a client's bytes reach.
fuzzers="safetensors tokenizer jinja image"

if [ "${GS_TEST_QUICK:-0}" != "1" ]; then
  echo "== build (clang, address+undefined sanitizers, cpu only) =="
  cmake --build "$asan" -j "$jobs"
  echo "== tests (sanitizers) =="
  # Every test, the e2e soak/overload/bench ones included (about a minute together under ASan).
  ctest --test-dir "$asan" --output-on-failure -j "$jobs" --timeout 1800
  fuzzers="http_request $fuzzers"
fi

echo "== fuzz (libFuzzer, ASan+UBSan) =="
cmake --build "$asan" -j "$jobs" --target $(printf 'fuzz_%s ' $fuzzers)
"$root/fuzz/run-all.sh" "$asan" "${GS_FUZZ_SECONDS:-20}" $fuzzers
