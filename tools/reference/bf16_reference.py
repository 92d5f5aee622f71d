#!/usr/bin/env python3
"""The Hugging Face reference in bfloat16 on the GPU, for every golden fixture.

The golden logits (make_golden.py) are the float32 reference. The cuda backend computes in
bfloat16, and on these tiny random models bf16 rounding alone moves the logits a lot, so "how close
to f32 must the cuda backend be" has no a-priori answer. This script measures it: transformers' own
forward, weights as stored (bf16; f16 fixtures converted to bf16 as the cuda backend stores them),
activations in bf16 on the GPU, SDPA-free eager attention. parity.py then asks the cuda backend to
be about as close to the f32 reference as the reference itself is at the same precision.

Writes FIXTURES/<combo>/logits_hf_bf16.npy (float32 [T, V]) next to logits.npy, or under --out.
Needs torch + transformers (the GPU machine; see README.md).

usage: bf16_reference.py FIXTURES_DIR [--out DIR] [--device cuda]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch


def load(d, device):
    import transformers
    cfg = json.load(open(os.path.join(d, "config.json")))
    cls = getattr(transformers, cfg["architectures"][0])
    model = cls.from_pretrained(d, dtype=torch.bfloat16, attn_implementation="eager").to(device)
    model.eval()
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fixtures")
    ap.add_argument("--out", default=None, help="write <out>/<combo>/logits_hf_bf16.npy instead")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    combos = sorted(c for c in os.listdir(a.fixtures) if os.path.isfile(os.path.join(a.fixtures, c, "logits.npy")))
    for combo in combos:
        d = os.path.join(a.fixtures, combo)
        model = load(d, a.device)
        tokens = np.load(os.path.join(d, "tokens.npy"))
        ids = torch.tensor(tokens, dtype=torch.long, device=a.device)[None, :]
        with torch.no_grad():
            logits = model(input_ids=ids, use_cache=False).logits[0].float().cpu().numpy()
        ref = np.load(os.path.join(d, "logits.npy")).astype(np.float64)
        rel = np.linalg.norm(logits - ref) / np.linalg.norm(ref)
        agree = float((logits.argmax(1) == ref.argmax(1)).mean())
        out_dir = os.path.join(a.out, combo) if a.out else d
        os.makedirs(out_dir, exist_ok=True)
        np.save(os.path.join(out_dir, "logits_hf_bf16.npy"), logits.astype(np.float32))
        print(f"{combo:<12} HF bf16 vs HF f32: rel L2 {rel:.3e}, top-1 agreement {agree:.3f}", flush=True)
        del model
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
