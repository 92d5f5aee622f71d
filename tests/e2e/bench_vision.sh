#!/usr/bin/env bash
# gemmaserve bench-vision on the demo model's tiny tower (cpu): one row per batch size, with the
# prepared image's patch and soft-token counts the preprocessing gives a 16:9 frame, the same FLOPs
# per image at every batch, and a clear error for a model without a tower.
# Usage (ctest): bash bench_vision.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

timeout 300 "$bin" bench-vision --model demo --backend cpu --batch 1,2 --width 480 --height 270 --budget 70 \
  --iters 1 --warmup 1 --json "$work/v.json" > "$work/v.log" 2>&1 || { cat "$work/v.log"; exit 1; }
grep -q '| images | ms per call | images/s |' "$work/v.log" || { cat "$work/v.log"; exit 1; }

python3 - "$work/v.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["images"] for r in rows] == [1, 2], rows
for r in rows:
    # 480x270 within 70 soft tokens: resized to multiples of 48 keeping the aspect ratio.
    assert r["soft_tokens_per_image"] <= 70 and r["patches_per_image"] == 9 * r["soft_tokens_per_image"], r
    assert r["ms_per_call"] > 0 and r["images_per_s"] > 0 and r["gflop_per_image"] > 0, r
assert rows[1]["floor_ms"] >= rows[0]["floor_ms"] and rows[0]["gflop_per_image"] == rows[1]["gflop_per_image"], rows
print("bench-vision: rows", [(r["images"], round(r["images_per_s"], 1)) for r in rows])
PY

# A text-only assistant has no tower: the command says so instead of crashing.
if "$bin" bench-vision --model e2b-assistant --backend cpu > "$work/err.log" 2>&1; then
  echo "bench-vision ran on a model without a tower"; exit 1
fi
grep -q "no vision tower" "$work/err.log" || { cat "$work/err.log"; exit 1; }
echo "bench-vision: ok"
