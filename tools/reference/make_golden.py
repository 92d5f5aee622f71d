#!/usr/bin/env python3
"""Golden fixtures from the Hugging Face reference implementation of Gemma-4.

For each feature combination (COMBOS below) this script
  1. builds a tiny random checkpoint with transformers' own classes (Gemma4ForCausalLM, or
     Gemma4ForConditionalGeneration for the multimodal wrapper), with every norm weight,
     layer_scalar and router scale randomised (nothing left at its init value of 1);
  2. saves it with safetensors in bf16 (or f16) plus config.json / generation_config.json;
  3. reloads it in float32 with eager attention and checks that every tensor round-tripped;
  4. computes the logits of a random token sequence longer than the sliding window (one forward,
     after the final soft-cap) and a greedy continuation with generate(do_sample=False);
  5. writes <out>/<combo>/{config.json, generation_config.json, model.safetensors, tokens.npy,
     logits.npy, greedy.json}.

It runs only where torch and transformers live (the GPU machine); see tools/reference/README.md.
Every combo is independent: a failure is reported in <out>/report.json and the others still run.
"""
import argparse
import json
import math
import os
import shutil
import sys
import traceback

import numpy as np
import torch

VOCAB = 512

# Text-config fields shared by all combos; each combo overrides what it is about.
BASE_TEXT = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=96,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=256,
    global_head_dim=512,
    max_position_embeddings=1024,
    rms_norm_eps=1e-6,
    pad_token_id=0,
    eos_token_id=1,
    bos_token_id=2,
    tie_word_embeddings=True,
    final_logit_softcapping=30.0,
    hidden_size_per_layer_input=0,
    vocab_size_per_layer_input=VOCAB,
    hidden_activation="gelu_pytorch_tanh",
)

S, F = "sliding_attention", "full_attention"

# Head dims stay 256/512 as in the real models, so the attention weights dominate the size: hidden
# sizes and layer counts are as small as the feature under test allows (the folder stays ~6 MB).
COMBOS = {
    # (a) dense: sliding + full layers (head dims 256/512), GQA 4:2, window shorter than the sequence.
    "dense": dict(
        text=dict(num_hidden_layers=3, layer_types=[S, S, F], sliding_window=16, hidden_size=48,
                  num_attention_heads=4, num_key_value_heads=2),
        seq_len=56, new_tokens=12, dtype="bfloat16",
    ),
    # (b) E2B-like: per-layer embeddings, KV sharing of the last 2 layers (sliding -> 2, full -> 1),
    # double-wide MLP on the shared layers, one KV head.
    "e2b_like": dict(
        text=dict(num_hidden_layers=5, layer_types=[S, F, S, S, F], sliding_window=12,
                  hidden_size_per_layer_input=16, num_kv_shared_layers=2, use_double_wide_mlp=True),
        seq_len=48, new_tokens=12, dtype="bfloat16",
    ),
    # (c) 31B-like: full layers have K = V (no v_proj) and their own KV head count.
    "k_eq_v": dict(
        text=dict(num_hidden_layers=3, layer_types=[S, S, F], sliding_window=20,
                  attention_k_eq_v=True, num_key_value_heads=2, num_global_key_value_heads=1),
        seq_len=60, new_tokens=12, dtype="bfloat16",
    ),
    # (d) 26B-like MoE: 8 experts top-2 in parallel with the dense MLP, K = V full layers.
    "moe": dict(
        text=dict(num_hidden_layers=3, layer_types=[S, S, F], sliding_window=16, hidden_size=48,
                  intermediate_size=64, enable_moe_block=True, num_experts=8, top_k_experts=2,
                  moe_intermediate_size=32, attention_k_eq_v=True, num_global_key_value_heads=1),
        seq_len=52, new_tokens=12, dtype="bfloat16",
    ),
    # (e) the published wrapper class: weights under model.language_model., plus a tiny vision tower
    # whose tensors a text-only engine must skip.
    "multimodal": dict(
        text=dict(num_hidden_layers=2, layer_types=[S, F], sliding_window=16,
                  use_bidirectional_attention="vision"),
        vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                    num_key_value_heads=2, head_dim=16, position_embedding_size=64, standardize=True),
        seq_len=44, new_tokens=10, dtype="bfloat16",
    ),
    # (f) f16 weights, no soft-cap, the default layer pattern (5 sliding + 1 full) and a window
    # longer than the sequence.
    "f16_nocap": dict(
        text=dict(num_hidden_layers=6, sliding_window=128, final_logit_softcapping=None, hidden_size=32,
                  intermediate_size=48),
        seq_len=40, new_tokens=8, dtype="float16",
    ),
    # (g) the 31B's layout at scale: the default pattern (5 sliding + 1 full) twice, K = V full layers
    # with head dim 512 and one KV head, the vision wrapper ("vision" bidirectional config), a window
    # of 32 under a 96-token prompt, a larger vocabulary. Not a committed fixture (its weights are 9 MB):
    # precision_check.py builds it to show how far transformers' own f32 forward is from f64 on a
    # deep model (docs/model.md).
    "mm_k_eq_v_deep": dict(
        text=dict(num_hidden_layers=12, sliding_window=32, hidden_size=160, num_attention_heads=2,
                  num_key_value_heads=2, attention_k_eq_v=True, num_global_key_value_heads=1,
                  use_bidirectional_attention="vision", vocab_size=1024, vocab_size_per_layer_input=1024),
        vision=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                    num_key_value_heads=2, head_dim=16, position_embedding_size=64, standardize=True),
        seq_len=96, new_tokens=24, dtype="bfloat16", vocab=1024, golden=False,
    ),
}


def randomise(model, gen):
    """Overwrites every parameter and persistent buffer with seeded random values.

    Linear weights ~ N(0, 1/in) keep activations O(1); norm weights, layer scalars and router
    scales are drawn away from 1 so that a port which ignores them (or uses 1+w) fails.
    """
    persistent = set(model.state_dict().keys())
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if name not in persistent or not t.is_floating_point():
                continue
            shape = tuple(t.shape)
            if name.endswith("layer_scalar"):
                v = 0.5 + torch.rand(shape, generator=gen)
            elif name.endswith("norm.weight") or name.endswith("router.scale") or name.endswith(
                    "per_expert_scale"):
                v = 0.4 + 1.2 * torch.rand(shape, generator=gen)
            elif "std_scale" in name:
                v = 0.5 + torch.rand(shape, generator=gen)
            elif name.endswith("input_min") or name.endswith("output_min"):
                v = torch.full(shape, -1e4)
            elif name.endswith("input_max") or name.endswith("output_max"):
                v = torch.full(shape, 1e4)
            elif len(shape) == 0 or len(shape) == 1:
                v = 0.1 * torch.randn(shape, generator=gen)
            else:
                fan_in = shape[-1]
                v = torch.randn(shape, generator=gen) / math.sqrt(fan_in)
            t.copy_(v.to(t.dtype))


def build(name, spec, out_dir, seed):
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig
    text_kwargs = dict(BASE_TEXT)
    text_kwargs.update(spec["text"])
    if "vision" in spec:
        from transformers import Gemma4Config, Gemma4ForConditionalGeneration, Gemma4VisionConfig
        vision = Gemma4VisionConfig(**spec["vision"])
        config = Gemma4Config(text_config=Gemma4TextConfig(**text_kwargs), vision_config=vision,
                              audio_config=None)
        cls = Gemma4ForConditionalGeneration
    else:
        config = Gemma4TextConfig(**text_kwargs)
        cls = Gemma4ForCausalLM
    torch.manual_seed(seed)
    model = cls(config).to(torch.float32)
    gen = torch.Generator().manual_seed(seed)
    randomise(model, gen)
    dtype = getattr(torch, spec["dtype"])
    model = model.to(dtype)
    # The greedy continuation must not stop early on a random EOS.
    model.generation_config.eos_token_id = None
    model.save_pretrained(out_dir, safe_serialization=True)
    return cls, model


def check_roundtrip(saved, loaded):
    """Every tensor the engine reads must come back as exactly the saved (rounded) values."""
    a, b = saved.state_dict(), loaded.state_dict()
    problems = []
    for k, v in a.items():
        if k not in b:
            problems.append(f"missing after reload: {k}")
            continue
        if not torch.equal(v.float(), b[k].float()):
            problems.append(f"changed after reload: {k}")
    return problems


def run_combo(name, spec, out_root, seed):
    out_dir = os.path.join(out_root, name)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    cls, saved = build(name, spec, out_dir, seed)
    model = cls.from_pretrained(out_dir, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    problems = check_roundtrip(saved, model)
    if problems:
        raise RuntimeError("round trip: " + "; ".join(problems[:10]))

    rng = np.random.default_rng(seed)
    T = spec["seq_len"]
    tokens = rng.integers(3, spec.get("vocab", VOCAB), size=T).astype(np.int32)
    tokens[0] = 2  # <bos>
    ids = torch.tensor(tokens, dtype=torch.long)[None, :]
    with torch.no_grad():
        logits = model(input_ids=ids, use_cache=False).logits[0].float().numpy()
    np.save(os.path.join(out_dir, "tokens.npy"), tokens)
    np.save(os.path.join(out_dir, "logits.npy"), logits.astype(np.float32))

    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                             max_new_tokens=spec["new_tokens"], eos_token_id=None, pad_token_id=0)
    generated = out[0, T:].tolist()
    # Cross-check the cached generation against one uncached forward over prompt + continuation.
    full = out[:, :T + len(generated)]
    with torch.no_grad():
        full_logits = model(input_ids=full, use_cache=False).logits[0].float()
    argmax = full_logits[T - 1:T - 1 + len(generated)].argmax(-1).tolist()
    top2 = full_logits[T - 1:T - 1 + len(generated)].topk(2, dim=-1).values
    margins = (top2[:, 0] - top2[:, 1]).tolist()
    with open(os.path.join(out_dir, "greedy.json"), "w") as f:
        json.dump(dict(prompt_len=T, generated=generated, uncached_argmax=argmax,
                       uncached_top2_margin=margins, matches_uncached=argmax == generated), f, indent=1)
    top = np.sort(logits, axis=-1)
    return dict(ok=True, seq_len=T, generated=generated, matches_uncached=argmax == generated,
                min_top2_margin=float((top[:, -1] - top[:, -2]).min()),
                logit_std=float(logits.std()), files=sorted(os.listdir(out_dir)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (one sub-folder per combo)")
    ap.add_argument("--only", nargs="*", help="combos to build (default: all)")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    import transformers
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    report = dict(torch=torch.__version__, transformers=transformers.__version__, combos={})
    for i, (name, spec) in enumerate(COMBOS.items()):
        if (args.only and name not in args.only) or (not args.only and not spec.get("golden", True)):
            continue
        try:
            report["combos"][name] = run_combo(name, spec, args.out, args.seed + i)
        except Exception as e:  # keep going: one broken combo must not cost the others
            report["combos"][name] = dict(ok=False, error=f"{type(e).__name__}: {e}",
                                          trace=traceback.format_exc())
        print(name, json.dumps({k: v for k, v in report["combos"][name].items() if k != "trace"}), flush=True)
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    return 0 if all(c.get("ok") for c in report["combos"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
