#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite, as CI does:
#   1. release build (CUDA code compiled when nvcc is present; GPU tests skip without a GPU)
#   2. every test through ctest (unit, parity against golden fixtures, tokenizer and template
#      references, the server driven by the official OpenAI client)
#   3. the fuzz targets of the file parsers (safetensors, tokenizer, Jinja) for a short time each
# GS_TEST_FULL=1 adds (not yet in CI: no clean run on a 2-core machine so far) an AddressSanitizer +
# UndefinedBehaviorSanitizer build of the CPU targets with the tests run again, and the HTTP fuzzer.
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
GS_BUILD_DIR="$root/build" "$root/scripts/build.sh"
echo "== tests (release) =="
ctest --test-dir "$root/build" --output-on-failure -j "$jobs" --timeout 900

if [ "${GS_TEST_FULL:-0}" = "1" ]; then
  echo "== build (address,undefined sanitizers, cpu only) =="
  GS_BUILD_DIR="$root/build-asan" GS_BUILD_TYPE=RelWithDebInfo "$root/scripts/build.sh" \
    -DGEMMASERVE_CUDA=OFF -DGEMMASERVE_SANITIZE=address,undefined
  echo "== tests (sanitizers) =="
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" --timeout 1800 -E "e2e_(soak|overload|bench_demo)"
  fuzz_targets="fuzz_all"
else
  # The input parsers a user's files reach: checkpoint headers, tokenizer files, chat templates.
  fuzz_targets="fuzz_safetensors fuzz_tokenizer fuzz_jinja"
fi

echo "== fuzz (libFuzzer, ASan+UBSan) =="
CC=clang CXX=clang++ cmake -S "$root" -B "$root/build-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGEMMASERVE_CUDA=OFF -DGEMMASERVE_TESTS=OFF -DGEMMASERVE_FUZZ=ON >/dev/null
cmake --build "$root/build-fuzz" --target $fuzz_targets -j "$jobs"
"$root/fuzz/run-all.sh" "$root/build-fuzz" "${GS_FUZZ_SECONDS:-20}"
