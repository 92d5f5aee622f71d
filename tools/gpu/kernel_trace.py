#!/usr/bin/env python3
"""Where a replayed CUDA graph's time goes, from a kernel trace (tools/gpu/kernel_trace/).

Kernels of one decode step run as a chain (one stream, PDL): each one's end comes after the
previous one's. So a kernel's *increment*, its end minus the previous kernel's end, is what it
adds to the step; the increments of a replay sum to its span (first start to last end). The
report takes the median over the replays of each graph for every node, then sums nodes by kernel
name.

usage: kernel_trace.py TRACE.csv [--names-only] [--sequence START COUNT] [--layers-at NAME [--layer-offset K]]
  --names-only       group kernels by name without template arguments
  --sequence S N     also list nodes S..S+N-1 of the step in order (e.g. one layer)
  --layers-at NAME   also split the step into layers, one starting K nodes after (K < 0: before)
                     each kernel whose name starts with NAME, and print each layer's increments;
                     e.g. --layers-at qkv_prepare --layer-offset -1 (a layer starts at its qkv GEMV)
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    recs = []
    for r in rows:
        recs.append({"start": int(r["start_ns"]), "end": int(r["end_ns"]), "graph": int(r["graph_id"]),
                     "node": int(r["graph_node"]), "name": r["name"], "grid": int(r["grid"]),
                     "cluster": int(r["cluster"])})
    return recs


def replays_by_graph(recs):
    """{graph id: [replay, ...]}, each replay its records in start order."""
    by_graph = defaultdict(list)
    for r in recs:
        if r["graph"]:
            by_graph[r["graph"]].append(r)
    out = {}
    for g, rs in by_graph.items():
        rs.sort(key=lambda r: r["start"])
        reps, cur, seen = [], [], set()
        for r in rs:
            if r["node"] in seen:
                reps.append(cur)
                cur, seen = [], set()
            cur.append(r)
            seen.add(r["node"])
        if cur:
            reps.append(cur)
        n = statistics.mode(len(x) for x in reps)
        out[g] = [x for x in reps if len(x) == n]
    return out


def base_name(name):
    return name.split("<", 1)[0]


def report(graph, reps, names_only, sequence, layers_at=None, layer_offset=0):
    n = len(reps[0])
    inc = [[] for _ in range(n)]
    dur = [[] for _ in range(n)]
    spans = []
    for rep in reps:
        rep = sorted(rep, key=lambda r: r["start"])
        spans.append((max(r["end"] for r in rep) - rep[0]["start"]) / 1e3)
        prev_end = rep[0]["start"]
        for i, r in enumerate(rep):
            inc[i].append((r["end"] - prev_end) / 1e3)
            dur[i].append((r["end"] - r["start"]) / 1e3)
            prev_end = max(prev_end, r["end"])
    order = sorted(reps[0], key=lambda r: r["start"])
    med_inc = [statistics.median(x) for x in inc]
    med_dur = [statistics.median(x) for x in dur]
    span = statistics.median(spans)
    print(f"graph {graph}: {len(reps)} replays of {n} kernels, median span {span:.1f} us "
          f"(sum of median increments {sum(med_inc):.1f} us)")
    groups = defaultdict(lambda: [0, 0.0, []])
    for i, r in enumerate(order):
        key = base_name(r["name"]) if names_only else r["name"]
        g = groups[key]
        g[0] += 1
        g[1] += med_inc[i]
        g[2].append(med_dur[i])
    print(f"  {'kernel':<70} {'calls':>5} {'adds us':>9} {'share':>6} {'median dur us':>13}")
    for key, (calls, total, durs) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(f"  {key[:70]:<70} {calls:>5} {total:>9.1f} {100 * total / span:>5.1f}% {statistics.median(durs):>13.2f}")
    if layers_at:
        starts = [i + layer_offset for i, r in enumerate(order) if r["name"].startswith(layers_at)]
        starts = [i for i in starts if 0 <= i < n]
        print(f"  {len(starts)} layers (increments in node order, us):")
        for li, s in enumerate(starts):
            e = starts[li + 1] if li + 1 < len(starts) else n
            incs = med_inc[s:e]
            print(f"    L{li:<3} {sum(incs):7.1f}  " + " ".join(f"{x:.1f}" for x in incs))
        if starts:
            first = starts[0]
            print("    kernels of L0: " + " | ".join(base_name(order[i]["name"]) for i in
                                                     range(first, starts[1] if len(starts) > 1 else n)))
    if sequence:
        s, c = sequence
        print(f"  nodes {s}..{s + c - 1} in order (median increment / duration, us):")
        for i in range(s, min(n, s + c)):
            r = order[i]
            print(f"    {i:>4} {med_inc[i]:>7.2f} {med_dur[i]:>7.2f}  grid {r['grid']:>5}"
                  f"{' cluster ' + str(r['cluster']) if r['cluster'] > 1 else ''}  {r['name'][:90]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--names-only", action="store_true")
    ap.add_argument("--sequence", type=int, nargs=2, metavar=("START", "COUNT"))
    ap.add_argument("--min-replays", type=int, default=5)
    ap.add_argument("--layers-at")
    ap.add_argument("--layer-offset", type=int, default=0)
    a = ap.parse_args()
    graphs = replays_by_graph(load(a.trace))
    shown = 0
    for g, reps in sorted(graphs.items()):
        if len(reps) < a.min_replays:
            continue
        report(g, reps, a.names_only, a.sequence, a.layers_at, a.layer_offset)
        shown += 1
    if not shown:
        print(f"kernel_trace: no graph replayed {a.min_replays} times or more in {a.trace}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
