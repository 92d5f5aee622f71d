#!/usr/bin/env python3
"""Per-kernel time of one eager decode step, from Nsight Compute.

Runs `ncu` (duration metric only, clocks left alone) over `gemmaserve bench-decode --enforce-eager`
for one shape at batch 1, takes the kernels of the last step (between the last two sampling
kernels) and prints them grouped by name: count, total µs, share. ncu serialises kernels, so the
sum is the step's kernel time without launch gaps or overlap; the bench's own ms/step (printed
first, measured without ncu) minus that sum is what launches and gaps cost.

usage: tools/gpu/profile_step.py GEMMASERVE_BINARY MODEL OUT_DIR [--batch N]
"""
import argparse
import collections
import csv
import io
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("model")
    ap.add_argument("out_dir")
    ap.add_argument("--batch", default="1")
    ap.add_argument("--context", default="1024")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    bench = [a.binary, "bench-decode", "--model", a.model, "--load-format", "dummy", "--backend", "cuda",
             "--batch", a.batch, "--context", a.context]
    graphs = subprocess.run(bench + ["--steps", "32"], capture_output=True, text=True)
    print(graphs.stdout.strip().splitlines()[-1] if graphs.stdout.strip() else graphs.stderr[-2000:])
    cmd = ["ncu", "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
           "--kernel-name-base", "function"] + bench + ["--steps", "2", "--warmup", "1", "--enforce-eager"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    raw = os.path.join(a.out_dir, f"ncu_{a.model}_b{a.batch}.csv")
    with open(raw, "w") as f:
        f.write(r.stdout)
    rows = [l for l in r.stdout.splitlines() if l.startswith('"')]
    if not rows:
        print("ncu produced no rows:", r.stderr[-3000:])
        return 1
    kernels = []
    for rec in csv.DictReader(io.StringIO("\n".join(rows))):
        if rec.get("Metric Name") != "gpu__time_duration.sum":
            continue
        v = float(rec["Metric Value"].replace(",", ""))
        unit = rec.get("Metric Unit", "ns")
        us = v / 1000 if unit == "nsecond" or unit == "ns" else v * (1000 if unit in ("msecond", "ms") else 1)
        kernels.append((rec["Kernel Name"], us))
    ends = [i for i, (n, _) in enumerate(kernels) if "sampl" in n.lower()]
    if len(ends) < 2:
        print("could not find two sampling kernels among", len(kernels))
        return 1
    step = kernels[ends[-2] + 1: ends[-1] + 1]
    total = sum(us for _, us in step)
    groups = collections.OrderedDict()
    for n, us in step:
        c, t = groups.get(n, (0, 0.0))
        groups[n] = (c + 1, t + us)
    print(f"{a.model} batch {a.batch}: {len(step)} kernels in the last eager step, {total / 1000:.3f} ms of kernel time")
    print(f"{'kernel':60s} {'count':>5s} {'total us':>9s} {'us each':>8s} {'share':>6s}")
    for n, (c, t) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(f"{n[:60]:60s} {c:5d} {t:9.1f} {t / c:8.2f} {100 * t / total:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
