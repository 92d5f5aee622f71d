#!/usr/bin/env python3
"""Image preprocessing golden fixtures: what transformers' Gemma-4 image processor makes of real encoded files.

For a handful of synthetic images (smooth deterministic patterns plus a little seeded noise, several aspect
ratios: square, 16:9, 9:16, 8:1, a tiny 30x20, one with an alpha channel, one grayscale), this script
  1. encodes them with Pillow as PNG, JPEG, GIF and WebP (what Pillow supports there) and saves the files;
  2. opens each file with Pillow, as transformers' load_image does, and runs the default Gemma4ImageProcessor
     (the torchvision backend) at the budgets listed in CASES;
  3. saves what the processor made, only the real patches (the padding is zeros at position (-1,-1)):
       <case>.resized.png   the resized image as uint8 RGB (lossless PNG). pixel_values are exactly these
                            bytes times float32(1/255) in patch order; the script checks that and records the
                            largest difference in manifest.json ("uint8_exact")
       <case>.pixels.npy    float32 [64, 768] and <case>.positions.npy int32 [64, 2] (x, y): the first 64
                            patches, for the cases marked full=True only
     and manifest.json: per case the file, the budget, the resized height and width, the soft-token count,
     the patch count;
  4. runs Gemma4Processor over one chat prompt with two images (the demo model's tokenizer.json, given with
     --tokenizer) and saves the ids it makes (expansion.json), so the request path's boi + N x image + eoi
     expansion can be checked against the processor's own;
  5. records in report.json what else is worth knowing: the PIL backend's difference from the torchvision one,
     what happens to alpha, versions.

The output folder is written and packed into <out>/image_golden.tar.gz (the GPU machine returns few files).
Runs where torch, torchvision, Pillow and transformers live (the GPU machine).

usage: make_image_golden.py --out DIR --tokenizer tokenizer.json
"""
import argparse
import io
import json
import os
import tarfile
import traceback

import numpy as np
from PIL import Image

# name: (width, height, mode, seed)
SOURCES = {
    "square": (256, 256, "RGB", 1),
    "wide169": (320, 180, "RGB", 2),
    "tall916": (180, 320, "RGB", 3),
    "wide81": (800, 100, "RGB", 4),
    "tiny": (30, 20, "RGB", 5),
    "alpha": (200, 150, "RGBA", 6),
    "gray": (120, 160, "L", 7),
}

# (source, format, budget, full): full also saves the first FULL_PATCHES rows of pixel_values and positions as .npy
# (enough to pin the patch order and the layout inside a patch; the whole arrays would be megabytes).
FULL_PATCHES = 64
CASES = [
    ("square", "png", 70, False),
    ("wide169", "png", 70, False),
    ("wide169", "jpeg", 70, False),
    ("tall916", "webp", 70, False),
    ("wide81", "png", 70, True),
    ("wide81", "gif", 70, False),
    ("tiny", "png", 70, False),
    ("tiny", "png", 280, False),
    ("tiny", "png", 1120, False),
    ("alpha", "png", 70, False),
    ("gray", "png", 70, False),
    ("gray", "jpeg", 70, False),
]

EXT = {"png": "png", "jpeg": "jpg", "gif": "gif", "webp": "webp"}


def synthetic(w, h, mode, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 100 * np.sin(x / (7 + seed) + y / 23)
    g = 255 * (x / max(w - 1, 1)) * 0.6 + 60 * np.cos(y / (5 + seed))
    b = 255 * (y / max(h - 1, 1)) * 0.7 + 40 * np.sin((x + y) / 11)
    rgb = np.stack([r, g, b], -1) + rng.normal(0, 6, (h, w, 3))
    rgb = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)
    if mode == "L":
        return Image.fromarray(rgb[..., 1], "L")
    if mode == "RGBA":
        a = np.clip(np.rint(255 * (x / max(w - 1, 1))), 0, 255).astype(np.uint8)  # 0 on the left, 255 right
        return Image.fromarray(np.dstack([rgb, a]), "RGBA")
    return Image.fromarray(rgb, "RGB")


def encode(img, fmt):
    buf = io.BytesIO()
    if fmt == "jpeg":
        img.convert("RGB" if img.mode != "L" else "L").save(buf, "JPEG", quality=90)
    elif fmt == "gif":
        img.convert("RGB").quantize(colors=64, dither=Image.Dither.NONE).save(buf, "GIF")
    elif fmt == "webp":
        img.save(buf, "WEBP", quality=90)
    else:
        img.save(buf, "PNG")
    return buf.getvalue()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer", required=True)
    a = ap.parse_args()
    import torch
    import torchvision
    import transformers
    from transformers.models.gemma4.image_processing_gemma4 import Gemma4ImageProcessor

    gold = os.path.join(a.out, "image_golden")
    os.makedirs(gold, exist_ok=True)
    report = {"versions": {"torch": torch.__version__, "torchvision": torchvision.__version__,
                           "transformers": transformers.__version__, "PIL": Image.__version__},
              "surprises": []}
    proc = Gemma4ImageProcessor()
    report["processor_class"] = type(proc).__name__
    pil_proc = None
    try:
        from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil
        pil_proc = Gemma4ImageProcessorPil()
    except Exception as e:  # noqa: BLE001  only for the report
        report["surprises"].append(f"PIL backend not loaded: {e!r}")

    files = {}
    manifest = {"cases": []}
    for name, (w, h, mode, seed) in SOURCES.items():
        img = synthetic(w, h, mode, seed)
        for src, fmt, _, _ in CASES:
            if src != name or (name, fmt) in files:
                continue
            fn = f"{name}.{EXT[fmt]}"
            try:
                data = encode(img, fmt)
            except Exception as e:  # noqa: BLE001
                report["surprises"].append(f"{fn}: Pillow could not encode: {e!r}")
                continue
            with open(os.path.join(gold, fn), "wb") as f:
                f.write(data)
            files[(name, fmt)] = fn

    for src, fmt, budget, full in CASES:
        fn = files.get((src, fmt))
        if fn is None:
            continue
        case = f"{os.path.splitext(fn)[0]}_{fmt}_b{budget}"
        try:
            img = Image.open(os.path.join(gold, fn))
            img.load()
            out = proc(images=[img], max_soft_tokens=budget, return_tensors="pt")
            n_soft = int(out["num_soft_tokens_per_image"][0])
            pv = out["pixel_values"][0].float().numpy()
            pos = out["image_position_ids"][0].numpy().astype(np.int32)
            real = pos[:, 0] >= 0
            n = int(real.sum())
            pv, pos = pv[:n], pos[:n]
            gw, gh = int(pos[:, 0].max()) + 1, int(pos[:, 1].max()) + 1
            H, W = gh * 16, gw * 16
            # Unpatchify: (patch row, patch col, pixel row, pixel col, channel) -> image.
            im = pv.reshape(gh, gw, 16, 16, 3).transpose(0, 2, 1, 3, 4).reshape(H, W, 3)
            u8 = np.rint(im * 255).astype(np.uint8)
            exact = float(np.abs(u8.astype(np.float32) * np.float32(1 / 255) - im).max())
            Image.fromarray(u8, "RGB").save(os.path.join(gold, case + ".resized.png"), optimize=True)
            if full:
                np.save(os.path.join(gold, case + ".pixels.npy"), pv[:FULL_PATCHES].astype(np.float32))
                np.save(os.path.join(gold, case + ".positions.npy"), pos[:FULL_PATCHES])
            entry = {"case": case, "file": fn, "format": fmt, "budget": budget, "source_width": img.width,
                     "source_height": img.height, "source_mode": img.mode, "height": H, "width": W,
                     "soft_tokens": n_soft, "patches": n, "uint8_exact": exact, "full": full}
            if pil_proc is not None:
                try:
                    o2 = pil_proc(images=[Image.open(os.path.join(gold, fn))], max_soft_tokens=budget,
                                  return_tensors="np")
                    p2 = np.asarray(o2["pixel_values"][0], dtype=np.float32)[:n]
                    entry["pil_backend_max_abs_diff"] = float(np.abs(p2 - pv).max()) if p2.shape == pv.shape else None
                except Exception as e:  # noqa: BLE001
                    entry["pil_backend_error"] = repr(e)
            if img.mode == "RGBA":
                # Does the reference drop alpha, or composite on white?
                rgb_drop = np.asarray(img.convert("RGB"))
                entry["alpha_note"] = "compare with a resize of the dropped-alpha RGB (C++ test decides)"
                entry["alpha_left_column_mean"] = float(rgb_drop[:, 0].mean())
            manifest["cases"].append(entry)
            print(f"{case:<28} {W}x{H} soft={n_soft} patches={n} exact={exact:.2e} "
                  f"pil_diff={entry.get('pil_backend_max_abs_diff')}", flush=True)
        except Exception:  # noqa: BLE001
            report["surprises"].append(f"{case}: {traceback.format_exc()}")

    # The processor's expansion of a two-image chat prompt.
    try:
        expansion = two_image_expansion(a.tokenizer, gold, files, report)
        with open(os.path.join(gold, "expansion.json"), "w") as f:
            json.dump(expansion, f)
    except Exception:  # noqa: BLE001
        report["surprises"].append(f"expansion: {traceback.format_exc()}")

    with open(os.path.join(gold, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    with open(os.path.join(a.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    with tarfile.open(os.path.join(a.out, "image_golden.tar.gz"), "w:gz") as t:
        t.add(gold, arcname="image_golden")
    total = sum(os.path.getsize(os.path.join(gold, f)) for f in os.listdir(gold))
    print(f"fixture bytes: {total}; surprises: {len(report['surprises'])}")
    for s in report["surprises"]:
        print("SURPRISE", s[-600:])
    return 0


def two_image_expansion(tokenizer_file, gold, files, report):
    from transformers import PreTrainedTokenizerFast
    from transformers.models.gemma4.image_processing_gemma4 import Gemma4ImageProcessor
    from transformers.models.gemma4.processing_gemma4 import Gemma4Processor

    names = {"image_token": "<|image|>", "boi_token": "<|image>", "eoi_token": "<image|>",
             "audio_token": "<|audio|>", "boa_token": "<|audio>", "eoa_token": "<audio|>"}
    tok = PreTrainedTokenizerFast(tokenizer_file=tokenizer_file, bos_token="<bos>", eos_token="<eos>",
                                  pad_token="<pad>", unk_token="<unk>")
    for k, v in names.items():
        try:
            setattr(tok, k, v)
        except Exception:  # noqa: BLE001
            pass
        try:
            setattr(tok, k + "_id", tok.convert_tokens_to_ids(v))
        except Exception:  # noqa: BLE001
            pass
    text = "<bos><|turn>user\nCompare <|image|> with <|image|> please.<turn|>\n<|turn>model\n"
    imgs = [Image.open(os.path.join(gold, files[("wide169", "png")])),
            Image.open(os.path.join(gold, files[("tiny", "png")]))]
    result = {"text": text, "images": [files[("wide169", "png")], files[("tiny", "png")]], "budget": 70}
    try:
        fe = vp = None
        try:
            from transformers.models.gemma4.feature_extraction_gemma4 import Gemma4AudioFeatureExtractor
            fe = Gemma4AudioFeatureExtractor()
        except Exception as e:  # noqa: BLE001
            report["surprises"].append(f"feature extractor: {e!r}")
        try:
            from transformers.models.gemma4.video_processing_gemma4 import Gemma4VideoProcessor
            vp = Gemma4VideoProcessor()
        except Exception as e:  # noqa: BLE001
            report["surprises"].append(f"video processor: {e!r}")
        p = Gemma4Processor(feature_extractor=fe, image_processor=Gemma4ImageProcessor(), tokenizer=tok,
                            video_processor=vp)
        out = p(text=[text], images=[imgs], max_soft_tokens=70, add_special_tokens=False)
        ids = out["input_ids"][0]
        result["ids"] = [int(i) for i in (ids.tolist() if hasattr(ids, "tolist") else ids)]
        result["how"] = "Gemma4Processor"
    except Exception:  # noqa: BLE001
        report["surprises"].append(f"Gemma4Processor over the demo tokenizer failed, emulated: {traceback.format_exc()}")
        ip = Gemma4ImageProcessor()
        counts = [int(ip(images=[im], max_soft_tokens=70)["num_soft_tokens_per_image"][0]) for im in imgs]
        expanded = text
        for n in counts:  # the processor's replace_image_token, one placeholder at a time
            expanded = expanded.replace("<|image|>", "\0" * 1, 1)
            expanded = expanded.replace("\0", "<|image>" + "<|IMG|>" * n + "<image|>", 1)
        expanded = expanded.replace("<|IMG|>", "<|image|>")
        result["ids"] = tok(expanded, add_special_tokens=False)["input_ids"]
        result["how"] = "emulated: text replace + tokenizer"
    result["unexpanded_ids"] = tok(text, add_special_tokens=False)["input_ids"]
    return result


if __name__ == "__main__":
    raise SystemExit(main())
