#!/usr/bin/env bash
# The speculative-decoding flags as users write them (cli/speculative_options.h): vLLM's
# --speculative-config JSON carries the assistant, K and disable_by_batch_size, and the startup log
# says what drafts what and when drafting stops; unknown keys, bad values and a JSON that disagrees
# with the flags are errors that name the key.
# Usage (ctest): bash speculative_config.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/log"; exit 1; }
run() { timeout 300 "$bin" run --model demo --max-tokens 6 --temperature 0 --prompt "The river" "$@" >"$work/out" 2>"$work/log"; }

run --speculative-config '{"method":"gemma4_mtp","model":"demo-assistant","num_speculative_tokens":2,"disable_by_batch_size":4}' ||
  fail "a valid --speculative-config was refused"
grep -q "demo-assistant drafts 2 tokens a round for demo" "$work/log" || fail "no line saying what drafts what"
grep -q "none while more than 4 requests run" "$work/log" || fail "disable_by_batch_size not in the startup log"
cp "$work/out" "$work/spec.out"
run || fail "plain run failed"
diff "$work/out" "$work/spec.out" || fail "greedy output differs with the drafter"

expect_error() {  # message, flags...
  local want="$1"; shift
  if run "$@"; then fail "accepted: $*"; fi
  grep -qF "$want" "$work/log" || fail "expected '$want' for: $*"
}
expect_error "unknown key 'bogus'" --speculative-config '{"model":"demo-assistant","bogus":1}'
expect_error "disable_by_batch_size must be an integer >= 0" --speculative-config '{"model":"demo-assistant","disable_by_batch_size":-1}'
expect_error "says disable_by_batch_size 4 but --speculative-disable-by-batch-size 5" \
  --speculative-config '{"model":"demo-assistant","disable_by_batch_size":4}' --speculative-disable-by-batch-size 5
expect_error "method \"eagle\" is not supported" --speculative-config '{"method":"eagle","model":"demo-assistant"}'
expect_error "not JSON" --speculative-config '{model'
echo "speculative config: ok"
