#!/usr/bin/env python3
"""Golden parity of a gemmaserve backend on the GPU machine.

For every fixture under fixtures/golden/<combo>/ (tiny checkpoints whose logits the Hugging Face
reference computed in float32) and every mode (prefill, chunked, decode), runs
`gemmaserve logits --backend B` and checks two things:

1. The three modes agree with each other (relative L2 <= --mode-tol): chunking and token-by-token
   decode must compute the prefill's function; only summation order may differ.
2. Against the f32 reference: relative L2 error and top-1 agreement on the rows where the
   reference is confident (top-2 margin above --margin).

The cuda backend computes in bf16, and these tiny random models amplify rounding a lot: the cpu
backend (f32) run on the f16_nocap checkpoint with only its weights rounded to bf16 already
differs from the reference by 41% (relative L2; measured 2026-11-22). So the bounds against the
reference are those of a bf16 forward of such a model, per fixture where a fixture is known to be
more sensitive (SENSITIVE below, with the reason), and the mode-consistency check carries the
exactness.

When the fixture also holds logits_hf_bf16.npy (tools/reference/bf16_reference.py: transformers'
own forward in bf16 on the GPU), the bounds against the f32 reference come from it instead: the
backend must be about as close to f32 as the reference itself is at the same precision:
- the median over rows of the per-row relative L2 error <= 1.5 x the reference's + 0.01: the
  systematic error of the bf16 forward (a wrong rounding point, a missing f32 accumulation);
- top-1 agreement >= the reference's - 0.05 on the same confident rows;
- the whole-tensor relative L2 <= 2.5 x the reference's + 0.02, a catch-all only: in these tiny
  random models single rows are chaotic (a near-tied MoE router choice or norm flips, and the row
  moves by 50-90% in ours and the reference alike, in different rows), so the whole-tensor
  figure of two equally good bf16 forwards differs by up to ~2x (measured on an H200,
  2026-11-22: multimodal 0.142 vs 0.067 from one row, moe 0.39 vs 0.26; medians 0.015 vs 0.018
  and 0.055 vs 0.036).
--bf16-ref DIR reads those files from DIR/<combo>/ instead.

usage: parity.py GEMMASERVE FIXTURES_DIR [--backend cuda] [--log FILE] [--logits-args ARGS] [--combos A,B]
(tools/gpu/tp-check.sh runs it with --logits-args "--tensor-parallel-size 2": a sharded forward must
meet the same bounds as one GPU.)
Exit status 0 when every case passes.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

MODES = [("prefill", []), ("chunked", ["--chunk", "5"]), ("decode", [])]

# Fixtures whose distances are dominated by bf16 sensitivity, with looser bounds:
# (rel L2 bound, top-1 agreement bound, mode-consistency bound, why). Measured on an H200,
# 2026-11-22: f16_nocap rel 0.51, top-1 0.64, chunked/decode vs prefill 0.074; moe rel 0.39,
# top-1 0.88, modes 0.018 (docs/perf/kernels.md).
SENSITIVE = {
    "f16_nocap": (0.7, 0.5, 0.15, "f16 weights stored as bf16: weight rounding alone moves the f32 forward by 41%"),
    "moe": (0.6, 0.8, 0.05, "router top-k flips under bf16 activations (8 experts, near-tied probabilities)"),
    # Decode steps run the one-row GEMV and prefill runs cuBLASLt: another f32 summation order,
    # and bf16 rounding alone moves this fixture 8.1% (its HF bf16 run against f32). H200,
    # 2026-11-24: decode vs prefill 0.050 with the GEMV, 0.011 with it off (GS_GEMV_MAX_M=0),
    # while decode lands closer to the f32 reference with it (0.071) than prefill does (0.077).
    "e2b_like": (0.15, 0.95, 0.08, "decode's one-row GEMV sums in another order than prefill's cuBLASLt"),
}


def compare(out, ref, margin):
    rel = float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))
    top2 = np.sort(ref, axis=1)[:, -2:]
    confident = (top2[:, 1] - top2[:, 0]) > margin
    agree = out.argmax(axis=1) == ref.argmax(axis=1)
    frac = float(agree[confident].mean()) if confident.any() else 1.0
    return rel, float(np.abs(out - ref).max()), frac, int(confident.sum())


def median_row_rel(out, ref):
    """Median over rows of ||out_r - ref_r|| / ||ref_r||: the typical row, blind to a chaotic one."""
    return float(np.median(np.linalg.norm(out - ref, axis=1) / np.maximum(np.linalg.norm(ref, axis=1), 1e-30)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gemmaserve")
    ap.add_argument("fixtures")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--rel-tol", type=float, default=0.15, help="bound on ||out-ref||/||ref||")
    ap.add_argument("--mode-tol", type=float, default=2e-2, help="bound on ||mode-prefill||/||prefill||")
    ap.add_argument("--margin", type=float, default=0.5, help="top-2 margin of a confident row")
    ap.add_argument("--min-agree", type=float, default=0.95, help="top-1 agreement on confident rows")
    ap.add_argument("--log", default=None)
    ap.add_argument("--outputs", default=None,
                    help="check outputs kept by an earlier --keep run (DIR/<combo>-<mode>.npy) instead of running")
    ap.add_argument("--keep", default=None, help="copy each backend output to KEEP/<combo>-<mode>.npy")
    ap.add_argument("--logits-args", default="",
                    help="more arguments for every `gemmaserve logits` run, e.g. \"--tensor-parallel-size 2\"")
    ap.add_argument("--combos", default=None, help="comma-separated fixtures to run (default: all)")
    ap.add_argument("--bf16-ref", default=None, help="folder of <combo>/logits_hf_bf16.npy (default: the fixtures)")
    a = ap.parse_args()

    log = open(a.log, "w") if a.log else sys.stderr
    combos = sorted(d for d in os.listdir(a.fixtures) if os.path.isfile(os.path.join(a.fixtures, d, "logits.npy")))
    if a.combos:
        combos = [c for c in combos if c in a.combos.split(",")]
    rows, ok_all = [], True
    with tempfile.TemporaryDirectory() as tmp:
        for combo in combos:
            d = os.path.join(a.fixtures, combo)
            ref = np.load(os.path.join(d, "logits.npy")).astype(np.float64)
            rel_tol, agree_tol, mode_tol, why = SENSITIVE.get(combo, (a.rel_tol, a.min_agree, a.mode_tol, ""))
            bf16_path = os.path.join(a.bf16_ref or a.fixtures, combo, "logits_hf_bf16.npy")
            hf_bf16, median_tol = None, None
            if os.path.exists(bf16_path):
                hf_bf16 = np.load(bf16_path).astype(np.float64)
                hf_rel, _, hf_agree, _ = compare(hf_bf16, ref, a.margin)
                hf_median = median_row_rel(hf_bf16, ref)
                rel_tol = round(2.5 * hf_rel + 0.02, 4)
                median_tol = round(1.5 * hf_median + 0.01, 4)
                agree_tol = round(hf_agree - 0.05, 3)
                why = f"bounds from HF bf16: rel {hf_rel:.2e}, median row {hf_median:.3f}, top1 {hf_agree:.3f}"
            prefill = None
            for mode, extra in MODES:
                if a.outputs:
                    out_path = os.path.join(a.outputs, f"{combo}-{mode}.npy")
                    if not os.path.exists(out_path):
                        rows.append((combo, mode, "ERROR", "", "", "", f"no {out_path}"))
                        ok_all = False
                        continue
                else:
                    out_path = os.path.join(tmp, f"{combo}-{mode}.npy")
                    cmd = [a.gemmaserve, "logits", "--model", d, "--tokens", os.path.join(d, "tokens.npy"),
                           "--out", out_path, "--backend", a.backend, "--mode", mode] + extra + a.logits_args.split()
                    p = subprocess.run(cmd, capture_output=True, text=True)
                    log.write(f"$ {' '.join(cmd)}\n{p.stdout}{p.stderr}\n")
                    if p.returncode != 0:
                        rows.append((combo, mode, "ERROR", "", "", "",
                                     f"exit {p.returncode}: {p.stderr.strip()[-120:]}"))
                        ok_all = False
                        continue
                out = np.load(out_path).astype(np.float64)
                if a.keep:
                    os.makedirs(a.keep, exist_ok=True)
                    np.save(os.path.join(a.keep, f"{combo}-{mode}.npy"), out.astype(np.float32))
                if out.shape != ref.shape or not np.isfinite(out).all():
                    rows.append((combo, mode, "FAIL", "", "", "", f"shape {out.shape} / non-finite values"))
                    ok_all = False
                    continue
                rel, mx, agree, n_conf = compare(out, ref, a.margin)
                if mode == "prefill":
                    prefill = out
                vs_prefill = float(np.linalg.norm(out - prefill) / np.linalg.norm(prefill)) if prefill is not None else 0
                ok = rel <= rel_tol and agree >= agree_tol and vs_prefill <= mode_tol
                median = median_row_rel(out, ref)
                if median_tol is not None:
                    ok = ok and median <= median_tol
                ok_all &= ok
                vs_hf = (f", vs HF bf16 {np.linalg.norm(out - hf_bf16) / np.linalg.norm(hf_bf16):.1e}"
                         if hf_bf16 is not None else "")
                bounds = f"rel {rel_tol}, " + (f"median row {median_tol}, " if median_tol is not None else "")
                note = (f"median row {median:.3f}, {n_conf} confident rows, vs prefill {vs_prefill:.1e}{vs_hf}; "
                        f"bounds {bounds}top1 {agree_tol}, modes {mode_tol}")
                rows.append((combo, mode, "ok" if ok else "FAIL", f"{rel:.2e}", f"{mx:.3f}", f"{agree:.3f}",
                             note + (f" ({why})" if why else "")))
    print(f"parity ({a.backend} vs HF f32 reference; bounds per fixture from its HF bf16 run where it has one, see "
          f"the docstring; else modes within {a.mode_tol}, rel <= {a.rel_tol}, top-1 agreement >= {a.min_agree} on "
          f"rows with top-2 margin > {a.margin}, looser for fixtures listed as sensitive)")
    print(f"{'combo':<12} {'mode':<8} {'result':<6} {'rel L2':>9} {'max|d|':>8} {'top1':>6}  note")
    for r in rows:
        print(f"{r[0]:<12} {r[1]:<8} {r[2]:<6} {r[3]:>9} {r[4]:>8} {r[5]:>6}  {r[6]}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
