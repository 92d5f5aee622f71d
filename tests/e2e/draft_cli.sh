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
# vLLM's convention: K ids all the same, from another position.
got="$("$bin" draft --model "$dense/target" --speculative-model "$dense/assistant" --tokens "$dense/ctx_39.npy" \
  --num-speculative-tokens 3 --speculative-convention vllm 2>"$work/log" | tail -1)"
python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert len(d) == 3 and all(0 <= t < 512 for t in d)" "$got" ||
  fail "vllm convention: '$got' is not 3 token ids ($(cat "$work/log"))"
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
"$bin" draft --model "$dense/target" --speculative-model "$dense/assistant" --tokens "$dense/ctx_5.npy" \
  --speculative-convention sglang >"$work/out" 2>&1 && fail "--speculative-convention sglang accepted"
grep -q "speculative-convention" "$work/out" || fail "the refusal must name the flag: $(cat "$work/out")"
echo "draft CLI: ok"
