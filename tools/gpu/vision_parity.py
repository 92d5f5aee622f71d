#!/usr/bin/env python3
"""Golden parity with images on a backend (the GPU machine: --backend cuda).

For every kind and prompt of fixtures/vision_golden, runs `gemmaserve logits --image-pixels ...` in
prefill and chunked mode and compares with the float32 reference. Bounds come from transformers' own
bf16 forward of the same prompt (as parity.py does for the text fixtures): relative L2 within
2.5x its distance + 0.02, top-1 agreement at most 0.05 below its own, and chunked within 2e-2 of
prefill. Prints a table; exit status 1 on any failure.

usage: vision_parity.py GEMMASERVE FIXTURES_DIR [--backend cuda] [--chunk 7]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def rel(x, y):
    return float(np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gemmaserve")
    ap.add_argument("fixtures")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--chunk", type=int, default=7)
    a = ap.parse_args()
    report = json.load(open(os.path.join(a.fixtures, "report.json")))
    ok_all = True
    print(f"{'kind':16} {'prompt':6} {'mode':8} {'rel':>7} {'bound':>7} {'top1':>6} {'bound':>6}  status")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, info in sorted(report["kinds"].items()):
            d = os.path.join(a.fixtures, kind)
            for p, pinfo in sorted(info["prompts"].items()):
                ref = np.load(os.path.join(d, f"logits_{p}.npy")).astype(np.float64)
                hf = np.load(os.path.join(d, f"logits_hf_bf16_{p}.npy")).astype(np.float64)
                hf_rel, hf_top1 = rel(hf, ref), float((hf.argmax(-1) == ref.argmax(-1)).mean())
                rel_tol, top1_tol = 2.5 * hf_rel + 0.02, hf_top1 - 0.05
                images = []
                for img in pinfo["images"]:
                    images += ["--image-pixels", os.path.join(a.fixtures, "images", f"{img}.npy")]
                prefill = None
                for mode, extra in (("prefill", []), ("chunked", ["--chunk", str(a.chunk)])):
                    out_path = os.path.join(tmp, f"{kind}-{p}-{mode}.npy")
                    cmd = [a.gemmaserve, "logits", "--model", d, "--tokens", os.path.join(d, f"prompt_{p}.npy"),
                           "--out", out_path, "--backend", a.backend, "--mode", mode] + images + extra
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    if r.returncode != 0:
                        print(f"{kind:16} {p:6} {mode:8} ERROR {r.stderr.strip()[-160:]}")
                        ok_all = False
                        continue
                    out = np.load(out_path).astype(np.float64)
                    if out.shape != ref.shape or not np.isfinite(out).all():
                        print(f"{kind:16} {p:6} {mode:8} FAIL shape {out.shape} or non-finite values")
                        ok_all = False
                        continue
                    r_out, top1 = rel(out, ref), float((out.argmax(-1) == ref.argmax(-1)).mean())
                    good = r_out <= rel_tol and top1 >= top1_tol
                    if mode == "prefill":
                        prefill = out
                    elif prefill is not None and rel(out, prefill) > 2e-2:
                        good = False
                    ok_all &= good
                    print(f"{kind:16} {p:6} {mode:8} {r_out:7.3f} {rel_tol:7.3f} {top1:6.3f} {top1_tol:6.3f}  "
                          f"{'ok' if good else 'FAIL'}  [hf bf16 rel {hf_rel:.3f} top1 {hf_top1:.3f}]")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
