#!/usr/bin/env bash
# Configures and builds gemmaserve into build/ (or $GS_BUILD_DIR). Extra args go to CMake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${GS_BUILD_DIR:-$root/build}"
jobs="${GS_JOBS:-$(nproc)}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${GS_BUILD_TYPE:-Release}" "$@" >/dev/null
cmake --build "$build" -j "$jobs"
