#!/usr/bin/env bash
# gemmaserve draft end to end: on a target + assistant pair of fixtures/draft_golden, the last line
# of stdout is the JSON array of the K tokens transformers drafted, the logits file has K rows, and
# wrong inputs are refused with a message naming the problem.
# Usage: draft_cli.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for pair in dense e2b_like; do
  dir="$src/fixtures/draft_golden/$pair"
  for ctx in "$dir"/ctx_*.npy; do
    n="$(basename "$ctx" .npy)"; n="${n#ctx_}"
    want="$(python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))['draft'], separators=(',', ':')))" "$dir/draft_$n.json")"
    got="$("$bin" draft --model "$dir/target" --speculative-model "$dir/assistant" --tokens "$ctx" \
      --num-speculative-tokens 4 --out-logits "$work/logits.npy" 2>"$work/log" | tail -1)"
    [ "$got" = "$want" ] || fail "$pair context $n: drafted $got, transformers $want ($(cat "$work/log"))"
    rows="$(python3 -c "import sys; h=open(sys.argv[1],'rb').read(128).decode('latin1'); print(h[h.index('shape'):h.index(')')+1])" "$work/logits.npy")"
    [[ "$rows" == *"(4, "* ]] || fail "$pair context $n: logits header says $rows, expected 4 rows"
  done
done

dense="$src/fixtures/draft_golden/dense"
expect_error() {  # expect_error "what it must say" args...
  local msg="$1"; shift
  if "$bin" draft "$@" >"$work/out" 2>&1; then fail "accepted: $*"; fi
  grep -q "$msg" "$work/out" || fail "'$*' must say '$msg', said: $(cat "$work/out")"
}
expect_error "is an MTP assistant; it goes in --speculative-model" \
  --model "$dense/assistant" --speculative-model "$dense/assistant" --tokens "$dense/ctx_5.npy"
expect_error "is not an MTP assistant" \
  --model "$dense/target" --speculative-model "$dense/target" --tokens "$dense/ctx_5.npy"
python3 -c "
import sys
hdr = \"{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }\"
hdr += ' ' * (63 - len(hdr)) + '\n'
open(sys.argv[1], 'wb').write(b'\x93NUMPY\x01\x00' + bytes([len(hdr), 0]) + hdr.encode() + (7).to_bytes(4, 'little'))
" "$work/one.npy"
expect_error "the context needs at least two tokens" \
  --model "$dense/target" --speculative-model "$dense/assistant" --tokens "$work/one.npy"
expect_error "assistant backbone_hidden_size" \
  --model "$src/fixtures/draft_golden/e2b_like/target" --speculative-model "$dense/assistant" --tokens "$dense/ctx_5.npy"
echo "draft CLI: ok"
