#!/usr/bin/env bash
# gemmaserve bench-decode --tensor-parallel-size 2 on cpu (the dense golden fixture): rank 0's
# runner drives both ranks from the bench's thread, as serving does. A regression here once
# deadlocked (each rank built its own driving runner, which waited for the ranks from inside a
# rank). Greedy and seeded top-p runs must sample the same tokens serial and overlapped (--overlap:
# each step's input ids come from the step in flight, on every rank: rank 0 broadcasts them), at
# batch 1 and 3.
# Usage (ctest): bash bench_decode_tp.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"
src="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
model="$src/fixtures/golden/dense"

run() {  # name, extra flags...
  local name=$1
  shift
  timeout 120 "$bin" bench-decode --model "$model" --backend cpu --tensor-parallel-size 2 --batch 1,3 --context 20 \
    --steps 5 --warmup 2 --json "$work/$name.json" "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
}
run greedy_a
run greedy_b --overlap
run topp_a --temperature 1 --top-p 0.9
run topp_b --temperature 1 --top-p 0.9 --overlap

python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
load = lambda n: json.load(open(f"{w}/{n}.json"))
for a, b in (("greedy_a", "greedy_b"), ("topp_a", "topp_b")):
    ra, rb = load(a), load(b)
    assert [r["batch"] for r in ra] == [1, 3] == [r["batch"] for r in rb], (ra, rb)
    for x, y in zip(ra, rb):
        assert x["ms_per_step"] > 0 and x["eager_steps"] == 7 and not x["overlap"] and y["overlap"], (x, y)
        assert x["tokens_fnv1a"] == y["tokens_fnv1a"], (a, x, y)
PY

echo "bench-decode TP2 on cpu: ok"
