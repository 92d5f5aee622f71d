#!/usr/bin/env bash
# Sets up, builds and starts the server. With no --model it serves the built-in demo model
# (tiny random weights, made on first use). Any argument is passed to `gemmaserve serve`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
exec "$root/build/bin/gemmaserve" serve "$@"
