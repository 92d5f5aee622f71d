#!/usr/bin/env bash
# --kernel-policy end to end: every command that creates a backend refuses a bad item while the
# command line is parsed (naming the item and what it takes, or listing the keys), and a cpu run
# accepts good items with a note that the policy does not apply there.
# Usage: kernel_policy_cli.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Each command with the arguments it requires (placeholders: the flag is refused before they are read).
commands=(
  "serve"
  "run --prompt hi"
  "logits --model m --tokens t.npy --out o.npy"
  "bench-decode"
  "bench-kernels"
  "draft --model m --speculative-model a --tokens t.npy"
)
for cmd in "${commands[@]}"; do
  # shellcheck disable=SC2086
  if "$bin" $cmd --kernel-policy "attention.combine=separate,sampling.team=3" >"$work/out" 2>&1; then
    echo "$cmd accepted sampling.team=3" >&2
    exit 1
  fi
  grep -q "sampling.team=3: expected 0, 1, 2, 4 or 8" "$work/out" || {
    echo "$cmd: the error must name the item and its values: $(cat "$work/out")" >&2
    exit 1
  }
  # shellcheck disable=SC2086
  if "$bin" $cmd --kernel-policy "gemv.maxrows=1" >"$work/out" 2>&1; then
    echo "$cmd accepted an unknown key" >&2
    exit 1
  fi
  grep -q "unknown key 'gemv.maxrows'; the keys are: gemv.max_rows," "$work/out" || {
    echo "$cmd: an unknown key's error must list the keys: $(cat "$work/out")" >&2
    exit 1
  }
done

"$bin" run --backend cpu --prompt hi --max-tokens 2 --kernel-policy " pdl.mode=never, attention.combine=separate" \
  >"$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
grep -q "kernels: the policy (attention.combine=separate,pdl.mode=never) is the cuda backend's; it does not apply" \
  "$work/out" || { echo "no cpu note: $(cat "$work/out")" >&2; exit 1; }
echo "kernel_policy_cli: OK"
