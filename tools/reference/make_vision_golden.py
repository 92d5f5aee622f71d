#!/usr/bin/env python3
"""Golden fixtures for images: the Gemma-4 vision tower and prompts with images, from transformers.

Two kinds of tiny Gemma4ForConditionalGeneration models (KINDS below):
  vision_clipped  an E2B-like text model (PLE, KV sharing) and a tower with clipped linears whose
                  bounds really clip (head_dim 64, the E2B/E4B tower's);
  vision_std      a 31B-like text model (K = V full layers, use_bidirectional_attention "vision")
                  and a tower with standardize (head_dim 72, the 26B/31B tower's).

Images: a few synthetic pictures of different aspect ratios, encoded (PNG / JPEG), decoded by PIL and
preprocessed by transformers' own Gemma4ImageProcessor at a small soft-token budget (70). Per image:
  images/<img>.<ext>          the encoded file
  images/<img>.npy            uint8 [patches, 768]: the processor's pixel values x 255 (real patches
                              only; checked to be exact: the processor resizes uint8 and rescales)
  images/<img>.json           resized height/width, budget, soft tokens, patches
  images/<img>_pos.npy        int32 [patches, 2]: the processor's position ids (x, y)
Per kind (<kind>/):
  config.json, generation_config.json, model.safetensors   the checkpoint (bf16)
  tower_<img>.npy             float32 [soft, Hv]: the vision tower's output (pooled, scaled,
                              standardized where the tower does), float32 reference
  soft_<img>.npy              float32 [soft, H]: the same after embed_vision (what the prompt gets)
  prompt_<p>.npy              int32: the prompt with ONE image token per image (what `gemmaserve
                              logits --image` reads)
  expanded_<p>.npy            int32: the prompt as the processor expands it (boi, N image tokens, eoi)
  logits_<p>.npy              float32 [T, V]: logits of the expanded prompt, float32 reference
  logits_hf_bf16_<p>.npy      float32 [T, V]: transformers' bf16 forward on the GPU (when there is one)
  greedy_<p>.json             greedy continuation (generate(), cached) and the uncached cross-check
  meta.json                   images of each prompt, the overlay layers transformers used, the vision
                              rotary inv_freq, versions

Runs where torch, transformers, torchvision and pillow live (the GPU machine):
  python3 tools/reference/make_vision_golden.py --out /tmp/vision_golden
"""
import argparse
import io
import json
import math
import os
import shutil
import sys
import traceback

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import BASE_TEXT, randomise, check_roundtrip  # noqa: E402

VOCAB = 256
BOI, EOI, IMG = 250, 251, 252
BUDGET = 70
S, F = "sliding_attention", "full_attention"

KINDS = {
    "vision_clipped": dict(
        text=dict(num_hidden_layers=5, layer_types=[S, F, S, S, F], sliding_window=12,
                  hidden_size_per_layer_input=16, num_kv_shared_layers=2),
        vision=dict(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=2,
                    num_key_value_heads=2, head_dim=64, position_embedding_size=96,
                    use_clipped_linears=True, standardize=False),
    ),
    "vision_std": dict(
        text=dict(num_hidden_layers=3, layer_types=[S, S, F], sliding_window=16, attention_k_eq_v=True,
                  num_key_value_heads=2, num_global_key_value_heads=1, use_bidirectional_attention="vision"),
        vision=dict(hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=2,
                    num_key_value_heads=2, head_dim=72, position_embedding_size=96,
                    use_clipped_linears=False, standardize=True),
    ),
}

# Synthetic pictures: (name, width, height, format). Aspect ratios 4:3, 2:5 (portrait), 10:3 (wide).
IMAGES = [("img0", 120, 90, "PNG"), ("img1", 64, 160, "JPEG"), ("img2", 200, 60, "PNG")]
# Prompts: text pieces around one image token per image.
PROMPTS = {"p1": ["img0"], "p3": ["img1", "img0", "img2"]}
NEW_TOKENS = 8


def make_image(name, w, h, fmt, seed):
    from PIL import Image, ImageDraw
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    arr = np.stack([(xx * 255 // max(1, w - 1)), (yy * 255 // max(1, h - 1)),
                    ((xx + yy) * 3) % 256], axis=-1).astype(np.uint8)
    img = Image.fromarray(arr, "RGB")
    d = ImageDraw.Draw(img)
    for _ in range(6):
        x0, y0 = int(rng.integers(0, w)), int(rng.integers(0, h))
        x1, y1 = x0 + int(rng.integers(4, w // 2 + 5)), y0 + int(rng.integers(4, h // 2 + 5))
        d.ellipse([x0, y0, x1, y1], fill=tuple(int(c) for c in rng.integers(0, 256, 3)))
    buf = io.BytesIO()
    img.save(buf, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buf.getvalue()


def preprocess(images_dir):
    """Encodes, decodes and preprocesses every image; returns name -> dict of tensors and facts."""
    from PIL import Image
    from transformers import Gemma4ImageProcessor
    proc = Gemma4ImageProcessor(max_soft_tokens=BUDGET)
    out = {}
    for i, (name, w, h, fmt) in enumerate(IMAGES):
        data = make_image(name, w, h, fmt, 100 + i)
        ext = "png" if fmt == "PNG" else "jpg"
        with open(os.path.join(images_dir, f"{name}.{ext}"), "wb") as f:
            f.write(data)
        img = Image.open(io.BytesIO(data))
        img.load()
        feats = proc(images=[img], return_tensors="pt")
        pv = feats["pixel_values"][0].float()            # [max_patches, 768]
        pos = feats["image_position_ids"][0].long()      # [max_patches, 2]
        soft = int(feats["num_soft_tokens_per_image"][0])
        real = (pos != -1).all(-1)
        n = int(real.sum())
        assert bool(real[:n].all()) and not bool(real[n:].any()), "real patches are not a prefix"
        q = torch.round(pv[:n] * 255)
        assert torch.allclose(q / 255, pv[:n], atol=0, rtol=1e-6), f"{name}: pixel values are not k/255"
        gw = int(pos[:n, 0].max()) + 1
        gh = int(pos[:n, 1].max()) + 1
        assert gw * gh == n and n == soft * 9
        np.save(os.path.join(images_dir, f"{name}.npy"), q.to(torch.uint8).numpy())
        np.save(os.path.join(images_dir, f"{name}_pos.npy"), pos[:n].to(torch.int32).numpy())
        facts = dict(file=f"{name}.{ext}", source_width=w, source_height=h, height=gh * 16, width=gw * 16,
                     budget=BUDGET, soft_tokens=soft, patches=n, max_patches=int(pv.shape[0]),
                     exact_k_over_255=bool(torch.equal(q / 255, pv[:n])),
                     exact_k_times_f32_inv255=bool(torch.equal(q * torch.tensor(1 / 255, dtype=torch.float32), pv[:n])))
        with open(os.path.join(images_dir, f"{name}.json"), "w") as f:
            json.dump(facts, f, indent=1)
        out[name] = dict(pixel_values=pv, position_ids=pos, soft=soft, facts=facts)
    return out


def build(kind, spec, out_dir, seed):
    from transformers import Gemma4Config, Gemma4ForConditionalGeneration, Gemma4TextConfig, Gemma4VisionConfig
    text = dict(BASE_TEXT)
    text.update(vocab_size=VOCAB, vocab_size_per_layer_input=VOCAB)
    text.update(spec["text"])
    config = Gemma4Config(text_config=Gemma4TextConfig(**text), vision_config=Gemma4VisionConfig(**spec["vision"]),
                          audio_config=None, boi_token_id=BOI, eoi_token_id=EOI, image_token_id=IMG)
    torch.manual_seed(seed)
    model = Gemma4ForConditionalGeneration(config).to(torch.float32)
    gen = torch.Generator().manual_seed(seed)
    randomise(model, gen)
    # Clip bounds that really clip: inputs are O(1) after the norms, outputs O(1) by the weight scale.
    with torch.no_grad():
        for name, t in model.named_buffers():
            if name.endswith("input_min") or name.endswith("output_min"):
                t.fill_(-float(0.8 + 0.8 * torch.rand((), generator=gen)))
            elif name.endswith("input_max") or name.endswith("output_max"):
                t.fill_(float(0.8 + 0.8 * torch.rand((), generator=gen)))
    model = model.to(torch.bfloat16)
    model.generation_config.eos_token_id = None
    model.save_pretrained(out_dir, safe_serialization=True)
    return model


def overlay_layers(model, ids, token_types):
    """Which layer types transformers gives the vision-block overlay: 'sliding', 'all' or 'none'."""
    try:
        from transformers.masking_utils import create_masks_for_generate
        from transformers.models.gemma4.modeling_gemma4 import get_block_sequence_ids_for_mask
        cfg = model.config.get_text_config()
        T = ids.shape[1]
        emb = torch.zeros(1, T, cfg.hidden_size)
        masks = create_masks_for_generate(config=cfg, inputs_embeds=emb, attention_mask=None, past_key_values=None,
                                          position_ids=torch.arange(T)[None],
                                          block_sequence_ids=get_block_sequence_ids_for_mask(token_types))
        blk = (token_types[0] == 1).nonzero()[:, 0]
        q, k = int(blk[0]), int(blk[-1])  # the first soft token looking at the last one of its image

        def allowed(m):
            m = m[0, 0] if m.dim() == 4 else m
            v = m[q, k]
            return bool(v) if m.dtype == torch.bool else bool(v == 0)
        full, sliding = allowed(masks["full_attention"]), allowed(masks["sliding_attention"])
        return "all" if full and sliding else "sliding" if sliding else "full-only?" if full else "none"
    except Exception as e:  # recorded, not fatal: the logits themselves are the reference
        return f"unknown ({type(e).__name__}: {e})"


def first(x):
    """A model output field that some versions return as a per-image tuple."""
    if isinstance(x, (tuple, list)):
        return torch.cat([t.reshape(-1, t.shape[-1]) for t in x])
    return x.reshape(-1, x.shape[-1])


def tower_outputs(model, spec, out_dir, name, im):
    """The tower's output for one image and its projection into the text model, as transformers computes them."""
    feats = model.model.get_image_features(im["pixel_values"][None], im["position_ids"][None], return_dict=True)
    tower = first(feats.last_hidden_state).float()
    info = dict(tower_rows_returned=int(tower.shape[0]))
    if tower.shape[0] != im["soft"]:  # padded cells first... keep the real ones (cell order puts them first)
        tower = tower[:im["soft"]]
    own = model.model.embed_vision(inputs_embeds=tower.to(torch.float32)).float()
    try:
        soft = first(feats.pooler_output).float()[:im["soft"]]
        info["pooler_vs_embed_vision"] = float((soft - own).abs().max())
    except Exception as e:
        info["pooler_output_error"] = f"{type(e).__name__}: {e}"
        soft = own
    np.save(os.path.join(out_dir, f"tower_{name}.npy"), tower.numpy())
    np.save(os.path.join(out_dir, f"soft_{name}.npy"), soft.numpy())
    info.update(rows=int(tower.shape[0]), std=float(tower.std()))
    return info


def prompt_tokens(rng, names, soft):
    compact, expanded = [2], [2]
    for name in names:
        text = rng.integers(3, BOI, size=int(rng.integers(4, 9))).tolist()
        compact += text + [IMG]
        expanded += text + [BOI] + [IMG] * soft[name] + [EOI]
    tail = rng.integers(3, BOI, size=6).tolist()
    return np.array(compact + tail, np.int32), np.array(expanded + tail, np.int32)


def run_kind(kind, spec, out_root, seed, images, cuda):
    from transformers import Gemma4ForConditionalGeneration
    out_dir = os.path.join(out_root, kind)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    saved = build(kind, spec, out_dir, seed)
    model = Gemma4ForConditionalGeneration.from_pretrained(out_dir, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    problems = check_roundtrip(saved, model)
    if problems:
        raise RuntimeError("round trip: " + "; ".join(problems[:10]))
    meta = dict(kind=kind, budget=BUDGET, boi=BOI, eoi=EOI, image_token=IMG, prompts={}, towers={})
    try:
        meta["vision_inv_freq"] = model.model.vision_tower.encoder.rotary_emb.inv_freq.tolist()
    except AttributeError as e:
        meta["vision_inv_freq"] = f"not found: {e}"
    with torch.no_grad():
        for name, im in images.items():
            try:
                meta["towers"][name] = tower_outputs(model, spec, out_dir, name, im)
            except Exception as e:
                meta["towers"][name] = dict(error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())
    rng = np.random.default_rng(seed)
    bf16 = None
    if cuda:
        bf16 = Gemma4ForConditionalGeneration.from_pretrained(out_dir, dtype=torch.bfloat16,
                                                              attn_implementation="eager").to("cuda").eval()
    for p, names in PROMPTS.items():
        try:
            compact, expanded = prompt_tokens(rng, names, {n: images[n]["soft"] for n in names})
            np.save(os.path.join(out_dir, f"prompt_{p}.npy"), compact)
            np.save(os.path.join(out_dir, f"expanded_{p}.npy"), expanded)
            ids = torch.tensor(expanded, dtype=torch.long)[None]
            tt = (ids == IMG).long()
            pv = torch.stack([images[n]["pixel_values"] for n in names])
            pos = torch.stack([images[n]["position_ids"] for n in names])
            kw = dict(pixel_values=pv, image_position_ids=pos, mm_token_type_ids=tt)
            with torch.no_grad():
                logits = model(input_ids=ids, use_cache=False, **kw).logits[0].float().numpy()
                no_overlay = model(input_ids=ids, use_cache=False, pixel_values=pv,
                                   image_position_ids=pos).logits[0].float().numpy()
            np.save(os.path.join(out_dir, f"logits_{p}.npy"), logits.astype(np.float32))
            T = ids.shape[1]
            try:
                with torch.no_grad():
                    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                         max_new_tokens=NEW_TOKENS, eos_token_id=None, pad_token_id=0, **kw)
                generate_error = None
            except Exception as e:  # fall back to an uncached argmax loop; recorded in meta.json
                generate_error = f"{type(e).__name__}: {e}"
                out = ids
                for _ in range(NEW_TOKENS):
                    with torch.no_grad():
                        lg = model(input_ids=out, use_cache=False, pixel_values=pv, image_position_ids=pos,
                                   mm_token_type_ids=(out == IMG).long()).logits[0, -1]
                    out = torch.cat([out, lg.argmax().view(1, 1)], dim=1)
            generated = out[0, T:].tolist()
            full = out[:, :T + len(generated)]
            tt_full = (full == IMG).long()
            with torch.no_grad():
                fl = model(input_ids=full, use_cache=False, pixel_values=pv, image_position_ids=pos,
                           mm_token_type_ids=tt_full).logits[0].float()
            rows = fl[T - 1:T - 1 + len(generated)]
            argmax = rows.argmax(-1).tolist()
            top2 = rows.topk(2, dim=-1).values
            with open(os.path.join(out_dir, f"greedy_{p}.json"), "w") as f:
                json.dump(dict(prompt_len=int(T), generated=generated, uncached_argmax=argmax,
                               uncached_top2_margin=(top2[:, 0] - top2[:, 1]).tolist(),
                               matches_uncached=argmax == generated), f, indent=1)
            entry = dict(images=names, compact_len=int(len(compact)), expanded_len=int(T), generated=generated,
                         matches_uncached=argmax == generated, generate_error=generate_error,
                         overlay_changes_logits=float(np.abs(logits - no_overlay).max()),
                         overlay_layers=overlay_layers(model, ids, tt) if spec["text"].get(
                             "use_bidirectional_attention") == "vision" else "none (causal model)")
            top = np.sort(logits, axis=-1)
            entry["min_top2_margin"] = float((top[:, -1] - top[:, -2]).min())
            if bf16 is not None:
                with torch.no_grad():
                    lb = bf16(input_ids=ids.cuda(), use_cache=False, pixel_values=pv.cuda(),
                              image_position_ids=pos.cuda(), mm_token_type_ids=tt.cuda()).logits[0]
                lb = lb.float().cpu().numpy()
                np.save(os.path.join(out_dir, f"logits_hf_bf16_{p}.npy"), lb.astype(np.float32))
                ref = logits.astype(np.float64)
                entry["bf16_rel_l2"] = float(np.linalg.norm(lb - ref) / np.linalg.norm(ref))
                entry["bf16_top1_agreement"] = float((lb.argmax(1) == ref.argmax(1)).mean())
            meta["prompts"][p] = entry
        except Exception as e:  # one failed prompt must not cost the others
            meta["prompts"][p] = dict(error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    ok = all("error" not in e for e in meta["prompts"].values())
    return dict(ok=ok, **{k: v for k, v in meta.items() if k != "vision_inv_freq"})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=4321)
    ap.add_argument("--dump-source", action="store_true", help="also write transformers' modeling_gemma4.py source "
                    "to OUT/reference_source.txt (to read; never commit it)")
    args = ap.parse_args()
    import transformers
    os.makedirs(os.path.join(args.out, "images"), exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    report = dict(torch=torch.__version__, transformers=transformers.__version__, kinds={})
    images = preprocess(os.path.join(args.out, "images"))
    report["images"] = {n: im["facts"] for n, im in images.items()}
    cuda = torch.cuda.is_available()
    if args.dump_source:
        import inspect
        from transformers.models.gemma4 import modeling_gemma4 as m
        with open(os.path.join(args.out, "reference_source.txt"), "w") as f:
            f.write(inspect.getsource(m))
    for i, (kind, spec) in enumerate(KINDS.items()):
        try:
            report["kinds"][kind] = run_kind(kind, spec, args.out, args.seed + i, images, cuda)
        except Exception as e:
            report["kinds"][kind] = dict(ok=False, error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())
        print(kind, json.dumps({k: v for k, v in report["kinds"][kind].items() if k != "trace"}), flush=True)
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    return 0 if all(k.get("ok") for k in report["kinds"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
