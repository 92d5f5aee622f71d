#!/usr/bin/env python3
"""Where a wgmma attention launch spends its time, CTA by CTA.

Reads the CSV that a -DGEMMASERVE_ATTN_TIMELINE=ON build writes for the last launch of each kernel
configuration (GS_ATTN_TIMELINE=PREFIX; events in attention_wgmma.cuh, namespace timeline) and
prints, over the CTAs with a full share of key tiles and over all of them:
  - the prologue: kernel entry to barriers set up, to Q landed, to the first K tile landed, to the
    first P·V done;
  - the main loop (first K landed to the last warpgroup's last P·V) and its time per key tile;
  - the epilogue (last P·V to the output stored);
  - where the serial kernel's main loop goes per key tile (consumer thread 0's waits and steps);
  - the gap on each SM between a CTA's end and the next CTA's entry, and the launch's span;
  - for the persistent kernel (one row per work item), the step from an item's last P.V to the
    next item on its SM: the producer's last tile issued, the next item published, its first page
    lookup, Q and first K landed.
Intervals within a CTA come from clock64 (one SM's counter), converted at the clock rate the
globaltimer shows; the gaps between CTAs from globaltimer.

usage: tools/gpu/attention_timeline.py CSV [CSV ...]
"""
import csv
import statistics
import sys

START, SETUP, LOOKUP, QLANDED, FIRSTK, FIRSTPV, LOOPEND0, LOOPEND1, END = range(9)
ISSUED, PUBLISHED = 9, 10  # the persistent kernel's producer (columns absent in older files)
# Sums over the main loop of consumer thread 0 (the serial kernel; columns absent in older files).
SPANS = ("wait for K", "S", "S exchange", "softmax, rescale", "wait for V", "P.V")
FIRST_SPAN = 11


def stats(values):
    if not values:
        return "-"
    v = sorted(values)
    n = len(v)
    return f"median {v[n // 2]:7.2f}  mean {sum(v) / n:7.2f}  p10 {v[n // 10]:7.2f}  p90 {v[9 * n // 10]:7.2f}"


def report(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            ns = [int(r[f"ns{e}"]) if f"ns{e}" in r else 0 for e in range(11)]
            clk = [int(r[f"clk{e}"]) for e in range(9)]
            if ns[START] == 0 or ns[END] == 0:
                continue  # idle CTA, or a role that did not record
            spans = [int(r.get(f"clk{FIRST_SPAN + i}", 0)) if r.get(f"ns{FIRST_SPAN + i}") == "1" else None
                     for i in range(len(SPANS))]
            rows.append({"smid": int(r["smid"]), "tiles": int(r["tiles"]), "ns": ns, "clk": clk, "spans": spans})
    if not rows:
        print(path, ": no CTA recorded")
        return
    ghz = statistics.median((r["clk"][END] - r["clk"][START]) / max(1, r["ns"][END] - r["ns"][START]) for r in rows)
    full = max(r["tiles"] for r in rows)
    print(f"== {path}: {len(rows)} CTAs, SM clock {ghz:.3f} GHz (clock64 / globaltimer), full share {full} tiles")

    def us(r, a, b):
        return (r["clk"][b] - r["clk"][a]) / ghz / 1000.0

    for label, sel in (("full-share CTAs", [r for r in rows if r["tiles"] == full]), ("all CTAs", rows)):
        print(f"-- {label} ({len(sel)}), us:")
        print("  entry -> setup done       ", stats([us(r, START, SETUP) for r in sel]))
        print("  entry -> first lookup     ", stats([us(r, START, LOOKUP) for r in sel if r["clk"][LOOKUP]]))
        print("  entry -> Q landed         ", stats([us(r, START, QLANDED) for r in sel]))
        print("  entry -> first K landed   ", stats([us(r, START, FIRSTK) for r in sel]))
        print("  entry -> first P.V done   ", stats([us(r, START, FIRSTPV) for r in sel]))
        loop = [(max(r["clk"][LOOPEND0], r["clk"][LOOPEND1]) - r["clk"][FIRSTK]) / ghz / 1000.0 for r in sel]
        print("  first K -> last P.V       ", stats(loop))
        print("  per tile in the loop      ", stats([l / r["tiles"] for l, r in zip(loop, sel) if r["tiles"]]))
        print("  warpgroup 1 - 0 loop end  ", stats([us(r, LOOPEND0, LOOPEND1) for r in sel]))
        print("  loop end -> stored (wg 0) ", stats([us(r, LOOPEND0, END) for r in sel]))
        print("  entry -> stored           ", stats([us(r, START, END) for r in sel]))
        for i, name in enumerate(SPANS):
            v = [r["spans"][i] / ghz / 1000.0 / r["tiles"] for r in sel if r["spans"][i] is not None and r["tiles"]]
            if v:
                print(f"  per tile: {name:17s}", stats(v))

    by_sm = {}
    for r in rows:
        by_sm.setdefault(r["smid"], []).append(r)
    gaps, busy = [], 0
    t0 = min(r["ns"][START] for r in rows)
    t1 = max(max(r["ns"][END], r["ns"][LOOPEND1]) for r in rows)
    first_starts, last_ends = [], []
    for sm, lst in by_sm.items():
        lst.sort(key=lambda r: r["ns"][START])
        for a, b in zip(lst, lst[1:]):
            gaps.append((b["ns"][START] - max(a["ns"][END], a["ns"][LOOPEND1])) / 1000.0)
        busy += sum(max(r["ns"][END], r["ns"][LOOPEND1]) - r["ns"][START] for r in lst)
        first_starts.append((lst[0]["ns"][START] - t0) / 1000.0)
        last_ends.append((t1 - max(lst[-1]["ns"][END], lst[-1]["ns"][LOOPEND1])) / 1000.0)
    span = (t1 - t0) / 1000.0
    print(f"-- launch: span {span:.1f} us over {len(by_sm)} SMs, CTAs busy {busy / 1000.0 / (span * len(by_sm)):.1%}"
          f" of SM time, {len(rows) / len(by_sm):.2f} CTAs per SM")
    print("  gap between CTAs on an SM ", stats(gaps))
    print("  SM idle before its first  ", stats(first_starts))
    print("  SM idle after its last    ", stats(last_ends))
    # A persistent kernel records per work item: from one item's last P.V to the next item on the
    # same SM (its producer's marks where the file has them).
    steps = {"producer: last tile issued": [], "producer: next item published": [],
             "next item: first page lookup": [], "next item: consumers start": [], "next item: Q landed": [],
             "next item: first K landed": []}
    for lst in by_sm.values():
        for a, b in zip(lst, lst[1:]):
            base = a["ns"][LOOPEND0]
            pairs = (("producer: last tile issued", a, ISSUED), ("producer: next item published", b, PUBLISHED),
                     ("next item: first page lookup", b, LOOKUP), ("next item: consumers start", b, START),
                     ("next item: Q landed", b, QLANDED), ("next item: first K landed", b, FIRSTK))
            for name, r, e in pairs:
                if r["ns"][e]:
                    steps[name].append((r["ns"][e] - base) / 1000.0)
    if steps["producer: next item published"]:
        print("-- from an item's last P.V (warpgroup 0) to the next item on its SM, us:")
        for name, v in steps.items():
            print(f"  {name:30s}", stats(v))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    for p in sys.argv[1:]:
        report(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
