#!/usr/bin/env bash
# gemmaserve bench-decode on the demo model (cpu): the serial and the overlapped step loops
# (--overlap, where each step's input id comes from the step still in flight) must sample the same
# tokens, greedily and with seeded top-p sampling, at batch 1 and 3; the JSON carries every field.
# Usage (ctest): bash bench_decode_overlap.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

run() {  # name, extra flags...
  local name=$1
  shift
  timeout 300 "$bin" bench-decode --model demo --backend cpu --batch 1,3 --context 40 --steps 6 --warmup 2 \
    --json "$work/$name.json" "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
}
run serial
run overlap --overlap
run serial_topp --temperature 1 --top-p 0.9
run overlap_topp --temperature 1 --top-p 0.9 --overlap

python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
load = lambda n: json.load(open(f"{w}/{n}.json"))
for a, b in (("serial", "overlap"), ("serial_topp", "overlap_topp")):
    ra, rb = load(a), load(b)
    assert [r["batch"] for r in ra] == [1, 3] == [r["batch"] for r in rb], (ra, rb)
    for x, y in zip(ra, rb):
        assert x["overlap"] is False and y["overlap"] is True, (x, y)
        assert x["ms_per_step"] > 0 and y["ms_per_step"] > 0, (x, y)
        assert x["tokens_fnv1a"] == y["tokens_fnv1a"], f"{a} vs {b} at batch {x['batch']}: different tokens"
# Greedy and sampled runs must not agree by accident of a constant hash.
assert load("serial")[1]["tokens_fnv1a"] != load("serial_topp")[1]["tokens_fnv1a"]
print("bench-decode: serial and overlapped steps sample the same tokens")
PY
