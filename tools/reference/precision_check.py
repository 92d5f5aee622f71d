#!/usr/bin/env python3
"""How far transformers' own float32 forward is from float64 on one golden combo.

Deep stacks of random weights amplify rounding: a port can be "1e-2 away from the reference" with
no bug on either side. This script builds COMBO with make_golden.py, greedily continues its prompt,
and writes, over prompt + continuation:
  full_tokens.npy       int32 [T]
  full_logits_f32.npy   the reference in float32 (eager attention, no cache)
  full_logits_f64.npy   the same weights run in float64: the rounding-free answer
Then, on a machine without torch:
  gemmaserve logits --model OUT/COMBO --tokens OUT/COMBO/full_tokens.npy --out ours.npy --backend cpu
  python3 tools/reference/precision_check.py --compare ours.npy OUT/COMBO
prints each side's distance from float64, per position. docs/model.md ("Precision of the
reference") has the figures for mm_k_eq_v_deep.
"""
import argparse
import json
import os
import sys

import numpy as np


def rel_per_row(a, b):
    """max |a - b| per row, relative to the row's largest |b|."""
    return np.abs(a - b).max(-1) / np.abs(b).max(-1)


def compare(ours_path, combo_dir):
    f32 = np.load(os.path.join(combo_dir, "full_logits_f32.npy")).astype(np.float64)
    f64 = np.load(os.path.join(combo_dir, "full_logits_f64.npy")).astype(np.float64)
    ours = np.load(ours_path).astype(np.float64)
    rows = dict(ours_vs_f32=rel_per_row(ours, f32), ours_vs_f64=rel_per_row(ours, f64),
                hf_f32_vs_f64=rel_per_row(f32, f64))
    step = max(1, len(f64) // 12)
    for name, r in rows.items():
        print(f"{name:14s} max {r.max():.2e}   every {step}th position: " + " ".join(f"{x:.0e}" for x in r[::step]))
    print(f"top-1 agreement with float64: ours {(ours.argmax(-1) == f64.argmax(-1)).mean():.3f}, "
          f"transformers f32 {(f32.argmax(-1) == f64.argmax(-1)).mean():.3f}")
    return 0


def build(combo, out_root):
    import torch
    import transformers
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import make_golden as mg

    spec = mg.COMBOS[combo]
    report = mg.run_combo(combo, spec, out_root, 1234 + list(mg.COMBOS).index(combo))
    d = os.path.join(out_root, combo)
    cls = transformers.Gemma4ForConditionalGeneration if "vision" in spec else transformers.Gemma4ForCausalLM
    tokens = np.load(os.path.join(d, "tokens.npy")).tolist() + report["generated"]
    ids = torch.tensor(tokens, dtype=torch.long)[None]
    logits = {}
    for name, dtype in (("f32", torch.float32), ("f64", torch.float64)):
        model = cls.from_pretrained(d, dtype=dtype, attn_implementation="eager").eval()
        with torch.no_grad():
            logits[name] = model(input_ids=ids, use_cache=False).logits[0].double().numpy()
        np.save(os.path.join(d, f"full_logits_{name}.npy"), logits[name].astype(np.float32))
    np.save(os.path.join(d, "full_tokens.npy"), np.array(tokens, dtype=np.int32))
    r = rel_per_row(logits["f32"], logits["f64"])
    print(json.dumps(dict(combo=combo, tokens=len(tokens), hf_f32_vs_f64_max=float(r.max()),
                          hf_f32_vs_f64_per_position=[float(x) for x in r])))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--combo", default="mm_k_eq_v_deep", help="a combo of make_golden.py")
    ap.add_argument("--out", help="output folder (build mode, needs torch and transformers)")
    ap.add_argument("--compare", metavar="OURS_NPY", help="compare mode: logits written by gemmaserve logits")
    ap.add_argument("combo_dir", nargs="?", help="compare mode: the combo's folder written by build mode")
    args = ap.parse_args()
    if args.compare:
        return compare(args.compare, args.combo_dir)
    if not args.out:
        ap.error("--out (build) or --compare OURS_NPY COMBO_DIR")
    return build(args.combo, args.out)


if __name__ == "__main__":
    sys.exit(main())
