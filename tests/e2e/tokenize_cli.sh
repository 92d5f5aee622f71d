#!/usr/bin/env bash
# gemmaserve tokenize end to end: the Gemma-4 vocabulary test strings give their reference ids,
# --decode gives the strings back, --special adds BOS, and a bad path is a clear error.
# Usage: tokenize_cli.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
vocab="$src/.cache/testdata/gemma4/ggml-vocab-gemma-4.gguf"
if [ ! -f "$vocab" ]; then
  echo "missing $vocab: run scripts/fetch-test-data.sh" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The .inp strings (separated by marker lines) and .out ids (one line each) as JSON.
python3 - "$vocab" "$work" <<'PY'
import json, sys
vocab, work = sys.argv[1], sys.argv[2]
strings = open(vocab + ".inp", encoding="utf-8").read().split("\n__ggml_vocab_test__\n")
ids = [[int(x) for x in line.split()] for line in open(vocab + ".out").read().split("\n")[: len(strings)]]
json.dump(strings, open(work + "/strings.json", "w"))
json.dump(ids, open(work + "/expected.json", "w"))
PY

"$bin" tokenize --tokenizer "$vocab" --input "$work/strings.json" --output "$work/ids.json"
"$bin" tokenize --tokenizer "$vocab" --input "$work/ids.json" --output "$work/decoded.json" --decode
"$bin" tokenize --tokenizer "$vocab" --input "$work/strings.json" --output "$work/ids_bos.json" --special

python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
load = lambda n: json.load(open(f"{w}/{n}.json"))
strings, expected, ids, decoded, ids_bos = (load(n) for n in ("strings", "expected", "ids", "decoded", "ids_bos"))
assert len(strings) > 20 and len(ids) == len(strings)
bad = [i for i in range(len(strings)) if ids[i] != expected[i]]
assert not bad, f"ids differ from the reference for strings {bad}"
assert decoded == strings, "decode(encode(s)) != s"
assert all(b == [2] + i for b, i in zip(ids_bos, ids)), "--special must add BOS (id 2)"
print(f"tokenize_cli: {len(strings)} strings OK")
PY

if "$bin" tokenize --tokenizer "$work/nope.json" --input "$work/strings.json" --output "$work/x.json" 2>"$work/err"; then
  echo "a missing tokenizer must fail" >&2
  exit 1
fi
grep -q "nope.json" "$work/err" || { echo "error must name the file: $(cat "$work/err")" >&2; exit 1; }
