#!/usr/bin/env python3
"""Drafter golden fixtures: what transformers' own MTP drafting proposes, for tiny target + assistant pairs.

For each pair (PAIRS below) this script
  1. builds a tiny random target (Gemma4ForCausalLM) and a tiny random assistant (Gemma4AssistantForCausalLM)
     with transformers' own classes, every norm weight / layer_scalar randomised as make_golden.py does and,
     for the centroid head, a random token_ordering permutation; saves both in bf16 (config.json,
     generation_config.json, model.safetensors) under <out>/<pair>/{target,assistant}/;
  2. reloads both in float32 with eager attention and checks every tensor round-tripped;
  3. for several contexts CTX (prefixes of one random sequence, shorter and longer than the sliding window):
     the target runs every token of CTX but the last in one forward (a prefill, as generate() does), then
     transformers' SinglePositionMultiTokenCandidateGenerator.get_candidates drafts K tokens to follow CTX.
     Hooks on the assistant record what each draft step actually received and produced, so the fixture is the
     reference's behaviour, not our reading of it:
       ctx_<N>.npy             int32 [N]      the context (N = len(CTX))
       draft_<N>.json          the K draft ids, the position id of the draft steps, the target positions each
                               drafter layer type could see, per-step top-2 margins
       drafter_logits_<N>.npy  float32 [K, V] the logits of each draft step (the centroid head's masked entries
                               included, as transformers fills them)
       hidden_<N>.npy          float32 [Ht]   the target hidden state that seeded step 0 (as the drafter got it)
       projected_<N>.npy       float32 [K, Ht] each step's post_projection output (the state fed to the next step)
  4. runs diagnostics that only go to report.json: drafting after a one-token decode step instead of a prefill
     (what the sliding cache then holds), and generate() with and without the assistant (greedy must agree;
     which hidden row the first drafting round after a prefill uses).

It runs only where torch and transformers live (the GPU machine); see tools/reference/README.md.
Every pair is independent: a failure is reported in <out>/report.json and the others still run. Every fact this
script could not confirm (an API it had to guess, a check that failed) is listed under "surprises".
"""
import argparse
import copy
import hashlib
import importlib
import inspect
import json
import os
import shutil
import sys
import traceback

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import BASE_TEXT, F, S, check_roundtrip, randomise  # noqa: E402  same conventions

NUM_DRAFT_TOKENS = 4

# Target hidden sizes are 64 or 36: sqrt(H) is then exact in bf16 (8, 6), so the embedding scale of the f32
# reference equals the bf16 one a port uses and the fixture does not depend on which of the two a port applies.
PAIRS = {
    # Dense target (sliding + full, 2 KV heads) drafted by the tied dense head (the 26B/31B head kind). The drafter
    # has 4 query heads over the target's 2 KV heads, so its GQA mapping (head j reads KV head j // 2) matters.
    "dense": dict(
        target=dict(num_hidden_layers=3, layer_types=[S, S, F], sliding_window=16, num_attention_heads=2,
                    num_key_value_heads=2),
        assistant=dict(num_attention_heads=4),
    ),
    # E2B-like target: PLE, the last 2 layers KV-shared (so the drafter reads layers 2 (sliding) and 1 (full), not
    # the last layer of each type), double-wide MLP, one KV head. Centroid head: 32 clusters of 16 tokens, top 4.
    "e2b_like": dict(
        target=dict(num_hidden_layers=5, layer_types=[S, F, S, S, F], sliding_window=12, hidden_size=36,
                    intermediate_size=72, hidden_size_per_layer_input=16, num_kv_shared_layers=2,
                    use_double_wide_mlp=True),
        assistant=dict(num_attention_heads=2, centroids=32, centroid_top_k=4),
    ),
    # 31B-like target: full layers K = V with their own KV head count. The assistant's config sets
    # final_logit_softcapping = 30: transformers' drafter never applies it (its forward calls lm_head directly), and
    # this fixture pins that down.
    "k_eq_v": dict(
        target=dict(num_hidden_layers=3, layer_types=[S, S, F], sliding_window=20, attention_k_eq_v=True,
                    num_key_value_heads=2, num_global_key_value_heads=1),
        assistant=dict(num_attention_heads=2, final_logit_softcapping=30.0),
    ),
    # 26B-like MoE target (K = V full layers) with the centroid head: 16 clusters of 32 tokens, top 2.
    "moe": dict(
        target=dict(num_hidden_layers=3, layer_types=[S, S, F], sliding_window=16, hidden_size=36,
                    intermediate_size=48, enable_moe_block=True, num_experts=8, top_k_experts=2,
                    moe_intermediate_size=24, attention_k_eq_v=True, num_global_key_value_heads=1),
        assistant=dict(num_attention_heads=2, centroids=16, centroid_top_k=2),
    ),
}

# The assistant trunk of every pair: 4 layers S,S,S,F as in the released assistants, hidden 32.
ASSISTANT_TEXT = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=4, layer_types=[S, S, S, F])

# Target fields the assistant must copy: it has no K/V of its own and reads the target's, so head dims, KV head
# counts, K = V and the window have to agree (the window the drafter applies is its own config's).
SHARED_KV_FIELDS = ("head_dim", "global_head_dim", "num_key_value_heads", "num_global_key_value_heads",
                    "attention_k_eq_v", "sliding_window", "vocab_size", "max_position_embeddings", "rms_norm_eps",
                    "pad_token_id", "eos_token_id", "bos_token_id", "hidden_activation")


def context_lengths(window):
    """Around the window, where the visible key count of the drafter's sliding layers changes, and well past it.

    With N = len(CTX) the target KV holds n = N - 1 positions; transformers' sliding drafter layers admit the last
    W + 1 of them, a standard window at the draft position would admit W - 1.
    """
    return [5, window, window + 1, window + 2, window + 3, 2 * window + 7]


# ----------------------------------------------------------------------------------------------------------------
# Building and saving the pair


def build_target(spec, out_dir, seed):
    from transformers import Gemma4ForCausalLM, Gemma4TextConfig
    kw = dict(BASE_TEXT)
    kw.update(spec["target"])
    torch.manual_seed(seed)
    model = Gemma4ForCausalLM(Gemma4TextConfig(**kw)).to(torch.float32)
    randomise(model, torch.Generator().manual_seed(seed))
    model = model.to(torch.bfloat16)
    model.generation_config.eos_token_id = None  # drafting and greedy checks must not stop on a random EOS
    model.save_pretrained(out_dir, safe_serialization=True)
    return kw, model


def assistant_text_kwargs(spec, target_kw):
    kw = {k: target_kw[k] for k in SHARED_KV_FIELDS if k in target_kw}
    kw.update(ASSISTANT_TEXT)
    kw.update(num_attention_heads=spec["assistant"]["num_attention_heads"],
              final_logit_softcapping=spec["assistant"].get("final_logit_softcapping"),
              hidden_size_per_layer_input=0, vocab_size_per_layer_input=0,
              num_kv_shared_layers=ASSISTANT_TEXT["num_hidden_layers"], enable_moe_block=False,
              use_double_wide_mlp=False, tie_word_embeddings=True)
    return kw


def build_assistant(spec, target_kw, out_dir, seed):
    from transformers import Gemma4AssistantConfig, Gemma4AssistantForCausalLM, Gemma4TextConfig
    a = spec["assistant"]
    cfg = dict(text_config=Gemma4TextConfig(**assistant_text_kwargs(spec, target_kw)),
               backbone_hidden_size=target_kw["hidden_size"], use_ordered_embeddings="centroids" in a,
               tie_word_embeddings=True)
    if "centroids" in a:
        cfg.update(num_centroids=a["centroids"], centroid_intermediate_top_k=a["centroid_top_k"])
    torch.manual_seed(seed)
    model = Gemma4AssistantForCausalLM(Gemma4AssistantConfig(**cfg)).to(torch.float32)
    gen = torch.Generator().manual_seed(seed)
    randomise(model, gen)
    if model.masked_embedding is not None:
        # An integer buffer randomise() skips; real checkpoints hold a permutation of the vocabulary.
        with torch.no_grad():
            model.masked_embedding.token_ordering.copy_(torch.randperm(target_kw["vocab_size"], generator=gen))
    model = model.to(torch.bfloat16)  # token_ordering stays int64, as in the released checkpoints
    model.generation_config.eos_token_id = None
    model.save_pretrained(out_dir, safe_serialization=True)
    return model


def load_pair(pair_dir):
    from transformers import Gemma4AssistantForCausalLM, Gemma4ForCausalLM
    target = Gemma4ForCausalLM.from_pretrained(os.path.join(pair_dir, "target"), dtype=torch.float32,
                                               attn_implementation="eager").eval()
    assistant = Gemma4AssistantForCausalLM.from_pretrained(os.path.join(pair_dir, "assistant"), dtype=torch.float32,
                                                           attn_implementation="eager").eval()
    return target, assistant


# ----------------------------------------------------------------------------------------------------------------
# Driving transformers' candidate generator


def generator_class():
    from transformers.generation.candidate_generator import SinglePositionMultiTokenCandidateGenerator
    return SinglePositionMultiTokenCandidateGenerator


def make_generator(target, assistant, input_ids, k, surprises):
    """A SinglePositionMultiTokenCandidateGenerator set up as generate() would for greedy drafting of k tokens."""
    from transformers import GenerationConfig
    from transformers.generation.logits_process import LogitsProcessorList
    gcfg = assistant.generation_config
    gcfg.num_assistant_tokens = k
    gcfg.num_assistant_tokens_schedule = "constant"
    gcfg.assistant_confidence_threshold = 0.0  # never a reason to stop drafting early
    main_cfg = GenerationConfig(max_length=input_ids.shape[1] + k + 16, do_sample=False, eos_token_id=None,
                                pad_token_id=0)
    wanted = dict(input_ids=input_ids, assistant_model=assistant,
                  target_model_input_embeddings=target.get_input_embeddings(), generation_config=main_cfg,
                  model_kwargs=dict(attention_mask=torch.ones_like(input_ids)), logits_processor=LogitsProcessorList())
    cls = generator_class()
    accepted = inspect.signature(cls.__init__).parameters
    dropped = sorted(k_ for k_ in wanted if k_ not in accepted)
    if dropped:
        surprises.append(f"{cls.__name__}.__init__ does not take {dropped}; called without them")
    return cls(**{k_: v for k_, v in wanted.items() if k_ in accepted})


class DraftRecorder:
    """Forward hooks on the assistant: what each draft step received (inputs_embeds, position ids, the masks and
    shared K/V its trunk got) and what it produced (logits, post_projection output, the trunk's normed state)."""

    def __init__(self, assistant):
        self.steps = []
        self.hooks = [assistant.register_forward_pre_hook(self._inputs, with_kwargs=True),
                      assistant.register_forward_hook(self._outputs),
                      assistant.model.register_forward_pre_hook(self._trunk_inputs, with_kwargs=True),
                      assistant.model.register_forward_hook(self._trunk_outputs)]

    def _inputs(self, _module, args, kwargs):
        embeds = kwargs.get("inputs_embeds", args[1] if len(args) > 1 else None)
        self.steps.append(dict(inputs_embeds=embeds.detach().clone(), position_ids=kwargs.get("position_ids")))

    def _trunk_inputs(self, _module, _args, kwargs):
        masks = kwargs.get("attention_mask")
        kv = kwargs.get("shared_kv_states") or {}
        rows = {kind: int(pair[0].shape[2]) for kind, pair in kv.items()}
        self.steps[-1]["kv_rows"] = rows
        self.steps[-1]["allowed_rows"] = {kind: allowed_rows(masks.get(kind) if isinstance(masks, dict) else masks,
                                                             rows[kind]) for kind in rows}

    def _trunk_outputs(self, _module, _args, output):
        self.steps[-1]["trunk"] = output.last_hidden_state.detach().clone()

    def _outputs(self, _module, _args, output):
        self.steps[-1]["logits"] = output.logits.detach().clone()
        self.steps[-1]["projected"] = output.last_hidden_state.detach().clone()

    def close(self):
        for h in self.hooks:
            h.remove()


def allowed_rows(mask, rows):
    """Key rows the (single) draft query may attend to. None means nothing is masked; eager masks are additive
    (0 where allowed), sdpa masks boolean."""
    if mask is None:
        return list(range(rows))
    m = mask[0, 0, -1] if mask.dim() == 4 else mask.reshape(-1, mask.shape[-1])[-1]
    ok = m if m.dtype == torch.bool else m == 0
    return ok.nonzero().flatten().tolist()


def row_span(rows_allowed, kv_rows, n):
    """[lo, hi) target positions seen, assuming the kv rows are the last kv_rows positions of 0..n-1."""
    if not rows_allowed:
        return [0, 0], True
    first = n - kv_rows
    contiguous = rows_allowed == list(range(rows_allowed[0], rows_allowed[-1] + 1))
    return [first + rows_allowed[0], first + rows_allowed[-1] + 1], contiguous


def draft(target, assistant, ctx, outputs, n_last_matches, k, surprises):
    """One get_candidates call (after the first-iteration call generate() makes); returns drafts and the record."""
    ids = torch.tensor(ctx, dtype=torch.long)[None, :]
    gen = make_generator(target, assistant, ids, k, surprises)
    try:
        first = gen.get_candidates(input_ids=ids, model_kwargs=dict(attention_mask=torch.ones_like(ids)),
                                   model_outputs=outputs, is_first_iteration=True, n_last_matches=0)
        if not torch.equal(first[0], ids) or first[1] is not None:
            surprises.append("get_candidates(is_first_iteration=True) proposed tokens; generate()'s prefill "
                             "round is not the no-op this script assumed")
    except Exception as e:  # noqa: BLE001  the drafting call below is what matters
        surprises.append(f"get_candidates(is_first_iteration=True) raised {type(e).__name__}: {e}")
    rec = DraftRecorder(assistant)
    try:
        cand, cand_logits = gen.get_candidates(input_ids=ids, model_kwargs=dict(attention_mask=torch.ones_like(ids)),
                                               model_outputs=outputs, is_first_iteration=False,
                                               n_last_matches=n_last_matches)
    finally:
        rec.close()
    return cand[0, ids.shape[1]:].tolist(), cand_logits, rec.steps


# ----------------------------------------------------------------------------------------------------------------
# Checking what was recorded


def seed_kind(seed, post_norm, pre_norm):
    if torch.equal(seed, post_norm):
        return "post_norm"
    if pre_norm is not None and torch.equal(seed, pre_norm):
        return "pre_norm"
    return "other"


def candidate_logits_kind(cand_logits, step_logits, drafts):
    """Which logits get_candidates returns: the raw step logits, a point mass on the draft, or processed ones."""
    if cand_logits is None:
        return "none"
    c = cand_logits[0].float()
    if c.shape == step_logits.shape and torch.equal(c, step_logits):
        return "raw"
    if c.shape[0] == len(drafts):
        expect = torch.full_like(c, -float("inf"))
        expect[torch.arange(len(drafts)), torch.tensor(drafts)] = 0.0
        if torch.equal(c, expect):
            return "point_mass"
    return "processed"


def check_centroid_head(assistant, trunk, logits):
    """Recomputes the centroid head's selection from the trunk state: the selected ids must carry d . E[id], all
    others min(selected) - 1."""
    me = assistant.masked_embedding
    d = trunk.reshape(-1)
    clusters = torch.topk(me.centroids(d), k=me.centroid_intermediate_top_k).indices
    order = me.token_ordering.long().view(me.num_centroids, -1)
    selected = order[clusters].reshape(-1)
    weight = assistant.lm_head.weight
    sel_logits = weight[selected] @ d
    others = torch.ones(logits.shape[-1], dtype=torch.bool)
    others[selected] = False
    fill = float(sel_logits.min()) - 1.0
    dense = weight @ d
    return dict(selected=int(selected.numel()),
                selected_max_abs_diff=float((logits[selected] - sel_logits).abs().max()),
                fill_value=float(logits[others][0]) if bool(others.any()) else None,
                fill_max_abs_diff=float((logits[others] - fill).abs().max()) if bool(others.any()) else 0.0,
                dense_argmax=int(dense.argmax()), masked_argmax=int(logits.argmax()))


def top2_margins(step_logits):
    top = torch.topk(step_logits, 2, dim=-1).values
    return (top[:, 0] - top[:, 1]).tolist()


def verify_steps(target, steps, ctx, drafts, post_norm, pre_norm, k):
    """Facts about the recorded steps; every False is a surprise for the caller to report."""
    n = len(ctx) - 1
    ht = post_norm.shape[-1]
    embed = target.get_input_embeddings()
    tokens = [ctx[-1]] + drafts[:-1]
    facts = dict(steps=len(steps), drafted=len(drafts))
    facts["position_ids"] = [s["position_ids"].reshape(-1).tolist() if s["position_ids"] is not None else None
                             for s in steps]
    facts["position_is_len_ctx_minus_1"] = all(p == [n] for p in facts["position_ids"])
    emb_ok, chain_ok = True, True
    for i, s in enumerate(steps):
        e = s["inputs_embeds"][0, 0, :ht]
        emb_ok &= torch.equal(e, embed(torch.tensor([tokens[i]]))[0])
        if i:
            chain_ok &= torch.equal(s["inputs_embeds"][0, 0, ht:], steps[i - 1]["projected"][0, 0])
    facts["embedding_is_target_scaled_embedding_of_previous_token"] = bool(emb_ok)
    facts["steps_after_first_take_previous_post_projection"] = bool(chain_ok)
    seed = steps[0]["inputs_embeds"][0, 0, ht:]
    facts["seed_hidden"] = seed_kind(seed, post_norm, pre_norm)
    argmax = [int(s["logits"][0, -1].argmax()) for s in steps]
    facts["drafts_are_step_argmax"] = argmax == drafts
    facts["k_tokens_drafted"] = len(drafts) == k
    row = embed.weight[ctx[-1]]
    facts["embedding_scale"] = float((steps[0]["inputs_embeds"][0, 0, :ht] @ row) / (row @ row))
    return facts, seed


# ----------------------------------------------------------------------------------------------------------------
# One pair


def target_prefill(target, ids):
    """The target runs ids in one cached forward, as generate()'s prefill does, returning what the candidate
    generator reads (hidden states, shared K/V) plus the pre-final-norm state for comparison."""
    pre = {}
    hook = target.model.norm.register_forward_hook(lambda _m, a, _o: pre.__setitem__("x", a[0].detach().clone()))
    try:
        out = target(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True, output_hidden_states=True,
                     return_shared_kv_states=True)
    finally:
        hook.remove()
    return out, pre.get("x")


def run_context(target, assistant, ctx, k, pair_dir, window, surprises):
    n = len(ctx) - 1
    ids = torch.tensor(ctx[:-1], dtype=torch.long)[None, :]
    out, pre = target_prefill(target, ids)
    post_norm = out.hidden_states[-1][0, n - 1]
    pre_norm = pre[0, n - 1] if pre is not None else None
    # The prefill's rows are positions 0..n-1; the state of position n-1 produced CTX[-1], so n-1 "accepted" rows.
    drafts, cand_logits, steps = draft(target, assistant, ctx, out, n - 1, k, surprises)
    facts, seed = verify_steps(target, steps, ctx, drafts, post_norm, pre_norm, k)
    facts["hidden_rows"] = "prefill output, n_last_matches = n - 1"
    if facts["seed_hidden"] == "other":
        # A get_candidates that indexes the hidden states differently: hand it the verify-style output of one row.
        sliced = copy.copy(out)
        sliced.hidden_states = tuple(h[:, -1:] for h in out.hidden_states)
        drafts, cand_logits, steps = draft(target, assistant, ctx, sliced, 0, k, surprises)
        facts, seed = verify_steps(target, steps, ctx, drafts, post_norm, pre_norm, k)
        facts["hidden_rows"] = "last prefill row only, n_last_matches = 0"
        surprises.append(f"N={len(ctx)}: the seed was not prefill row n-1 with n_last_matches = n - 1; "
                         f"retried with the last row only: seed is {facts['seed_hidden']}")
    step_logits = torch.cat([s["logits"][0, -1:] for s in steps]).float()
    projected = torch.cat([s["projected"][0, -1:] for s in steps]).float()
    facts["candidate_logits"] = candidate_logits_kind(cand_logits, step_logits, drafts)
    visible, contiguous = {}, True
    for kind, rows in steps[0]["allowed_rows"].items():
        visible[kind], c = row_span(rows, steps[0]["kv_rows"][kind], n)
        contiguous &= c
    facts["kv_rows"] = steps[0]["kv_rows"]
    facts["visible_target_positions"] = visible
    facts["visible_contiguous"] = contiguous
    facts["same_keys_every_step"] = all(s["allowed_rows"] == steps[0]["allowed_rows"] and
                                        s["kv_rows"] == steps[0]["kv_rows"] for s in steps)
    if assistant.masked_embedding is not None:
        facts["centroid_head"] = [check_centroid_head(assistant, s["trunk"], s["logits"][0, -1].float())
                                  for s in steps]
    margins = top2_margins(step_logits)
    # Repeatability: a second generator over the same outputs must draft the same tokens.
    again, _, _ = draft(target, assistant, ctx, out if facts["hidden_rows"].startswith("prefill") else sliced,
                        n - 1 if facts["hidden_rows"].startswith("prefill") else 0, k, [])
    facts["repeatable"] = again == drafts

    N = len(ctx)
    np.save(os.path.join(pair_dir, f"ctx_{N}.npy"), np.asarray(ctx, dtype=np.int32))
    np.save(os.path.join(pair_dir, f"drafter_logits_{N}.npy"), step_logits.numpy().astype(np.float32))
    np.save(os.path.join(pair_dir, f"hidden_{N}.npy"), seed.float().numpy().astype(np.float32))
    np.save(os.path.join(pair_dir, f"projected_{N}.npy"), projected.numpy().astype(np.float32))
    with open(os.path.join(pair_dir, f"draft_{N}.json"), "w") as f:
        json.dump(dict(context_len=N, target_kv_len=n, seed_token=int(ctx[-1]), num_speculative_tokens=k,
                       draft=drafts, position_id=facts["position_ids"][0][0] if facts["position_ids"][0] else None,
                       sliding_window=window, visible_target_positions=visible, top2_margin=margins), f, indent=1)
    for name in ("position_is_len_ctx_minus_1", "embedding_is_target_scaled_embedding_of_previous_token",
                 "steps_after_first_take_previous_post_projection", "drafts_are_step_argmax", "k_tokens_drafted",
                 "visible_contiguous", "same_keys_every_step", "repeatable"):
        if not facts[name]:
            surprises.append(f"N={N}: {name} is false")
    if facts["seed_hidden"] != "post_norm":
        surprises.append(f"N={N}: the seed hidden state is {facts['seed_hidden']}, not the final-normed state")
    return dict(draft=drafts, top2_margin=margins, **facts)


def decode_state_diagnostic(target, assistant, ctx, k, fixture_drafts, fixture_logits):
    """Drafting after the target ran CTX[:-1] as a prefill of all but its last token plus one cached decode step:
    the sliding K/V it hands over is then what the cache kept (W - 1 rows) plus the new row, not the prefill's
    full length."""
    n = len(ctx) - 1
    ids = torch.tensor(ctx[:-1], dtype=torch.long)[None, :]
    pre = target(input_ids=ids[:, :-1], attention_mask=torch.ones_like(ids[:, :-1]), use_cache=True)
    out = target(input_ids=ids[:, -1:], attention_mask=torch.ones_like(ids), past_key_values=pre.past_key_values,
                 use_cache=True, output_hidden_states=True, return_shared_kv_states=True)
    drafts, _, steps = draft(target, assistant, ctx, out, 0, k, [])
    visible = {kind: row_span(rows, steps[0]["kv_rows"][kind], n)[0] for kind, rows in steps[0]["allowed_rows"].items()}
    logits = torch.cat([s["logits"][0, -1:] for s in steps]).float().numpy()
    return dict(context_len=len(ctx), kv_rows=steps[0]["kv_rows"], visible_target_positions=visible, draft=drafts,
                same_drafts_as_prefill_fixture=drafts == fixture_drafts,
                max_abs_logit_diff_vs_fixture=float(np.abs(logits - fixture_logits).max()))


def generate_diagnostic(target, assistant, ctx, k, new_tokens=8):
    """generate() with the assistant must equal greedy generate() without it; records every get_candidates call
    and, for each drafting round, which row of the target's hidden states seeded it."""
    ids = torch.tensor(ctx, dtype=torch.long)[None, :]
    common = dict(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=new_tokens,
                  eos_token_id=None, pad_token_id=0)
    plain = target.generate(**common)[0, len(ctx):].tolist()
    assistant.generation_config.num_assistant_tokens = k
    assistant.generation_config.num_assistant_tokens_schedule = "constant"
    cls = generator_class()
    original = cls.get_candidates
    calls, used = [], []
    rec = DraftRecorder(assistant)

    def spy(self, *args, **kwargs):
        bound = inspect.signature(original).bind(self, *args, **kwargs)
        a = bound.arguments
        outputs, first_step = a.get("model_outputs"), len(rec.steps)
        hs = getattr(outputs, "hidden_states", None) if outputs is not None else None
        skv = getattr(outputs, "shared_kv_states", None) if outputs is not None else None
        result = original(*bound.args, **bound.kwargs)
        call = dict(input_len=int(a["input_ids"].shape[1]), is_first_iteration=a.get("is_first_iteration"),
                    n_last_matches=a.get("n_last_matches"), hidden_rows=int(hs[-1].shape[1]) if hs else None,
                    shared_kv_rows={kk: int(v[0].shape[2]) for kk, v in skv.items()} if skv else None,
                    proposed=int(result[0].shape[1] - a["input_ids"].shape[1]),
                    embeds_are_target_input_embeddings=getattr(self, "target_model_input_embeddings", None)
                    is target.get_input_embeddings())
        if hs and len(rec.steps) > first_step:
            seed = rec.steps[first_step]["inputs_embeds"][0, 0, -hs[-1].shape[-1]:]
            match = [r for r in range(hs[-1].shape[1]) if torch.equal(hs[-1][0, r], seed)]
            call["seed_row"] = match[0] if match else None
        calls.append(call)
        return result

    def record_generator(orig):
        def wrapper(*args, **kwargs):
            g = orig(*args, **kwargs)
            used.append(type(g).__name__)
            return g
        return wrapper

    cls.get_candidates = spy
    try:
        if hasattr(target, "_get_candidate_generator"):
            target._get_candidate_generator = record_generator(target._get_candidate_generator)
        assisted = target.generate(assistant_model=assistant, **common)[0, len(ctx):].tolist()
    finally:
        cls.get_candidates = original
        target.__dict__.pop("_get_candidate_generator", None)
        rec.close()
    return dict(prompt_len=len(ctx), greedy=plain, assisted=assisted, identical=plain == assisted,
                candidate_generator=used, calls=calls)


def run_pair(name, spec, out_root, seed, k, only_contexts=None):
    pair_dir = os.path.join(out_root, name)
    shutil.rmtree(pair_dir, ignore_errors=True)
    os.makedirs(os.path.join(pair_dir, "target"))
    os.makedirs(os.path.join(pair_dir, "assistant"))
    target_kw, saved_target = build_target(spec, os.path.join(pair_dir, "target"), seed)
    saved_assistant = build_assistant(spec, target_kw, os.path.join(pair_dir, "assistant"), seed + 1000)
    target, assistant = load_pair(pair_dir)
    problems = check_roundtrip(saved_target, target) + check_roundtrip(saved_assistant, assistant)
    if problems:
        raise RuntimeError("round trip: " + "; ".join(problems[:10]))

    window = target_kw["sliding_window"]
    lengths = only_contexts or context_lengths(window)
    rng = np.random.default_rng(seed)
    sequence = rng.integers(3, target_kw["vocab_size"], size=max(lengths)).astype(np.int64)
    sequence[0] = 2  # <bos>
    surprises, contexts = [], {}
    with torch.no_grad():
        for N in lengths:
            contexts[str(N)] = run_context(target, assistant, sequence[:N].tolist(), k, pair_dir, window, surprises)
        diagnostics = {}
        longest = sequence[:max(lengths)].tolist()
        fixture_logits = np.load(os.path.join(pair_dir, f"drafter_logits_{len(longest)}.npy"))
        for dname, fn in (("after_decode_step", lambda: decode_state_diagnostic(
                target, assistant, longest, k, contexts[str(len(longest))]["draft"], fixture_logits)),
                          ("generate", lambda: generate_diagnostic(target, assistant, longest, k))):
            try:
                diagnostics[dname] = fn()
            except Exception as e:  # noqa: BLE001  diagnostics must not cost the fixture
                diagnostics[dname] = dict(error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())
                surprises.append(f"diagnostic {dname} failed: {type(e).__name__}: {e}")
        if diagnostics.get("generate", {}).get("identical") is False:
            surprises.append("generate() with the assistant differs from greedy generate() without it")
    margins = [m for c in contexts.values() for m in c["top2_margin"]]
    return dict(ok=True, target=dict(hidden_size=target_kw["hidden_size"], sliding_window=window,
                                     layer_types=target_kw["layer_types"],
                                     kv_source_layers=kv_source_layers(target)),
                assistant=dict(head="centroids" if assistant.masked_embedding is not None else "dense",
                               config=json.loads(assistant.config.to_json_string())),
                num_speculative_tokens=k, min_top2_margin=min(margins), contexts=contexts,
                diagnostics=diagnostics, surprises=list(dict.fromkeys(surprises)), files=sorted(os.listdir(pair_dir)))


def kv_source_layers(target):
    """The target layers whose K/V the drafter reads (store_full_length_kv), by layer type."""
    out = {}
    for i, layer in enumerate(target.model.layers):
        attn = layer.self_attn
        if getattr(attn, "store_full_length_kv", False):
            out[attn.layer_type] = i
    return out


# ----------------------------------------------------------------------------------------------------------------
# Provenance


SOURCE_MODULES = ("transformers.generation.candidate_generator", "transformers.generation.utils",
                  "transformers.models.gemma4_assistant.modeling_gemma4_assistant",
                  "transformers.models.gemma4_assistant.configuration_gemma4_assistant",
                  "transformers.models.gemma4.modeling_gemma4", "transformers.masking_utils",
                  "transformers.cache_utils")


def provenance(dump_dir):
    """sha256 of every transformers module whose behaviour the fixtures depend on, the generator's signatures,
    and optionally the installed source (for reading only: it is transformers' code, never commit it)."""
    info = dict(sha256={}, signatures={})
    for mod_name in SOURCE_MODULES:
        try:
            path = importlib.import_module(mod_name).__file__
            with open(path, "rb") as f:
                info["sha256"][mod_name] = hashlib.sha256(f.read()).hexdigest()
            if dump_dir:
                os.makedirs(dump_dir, exist_ok=True)
                shutil.copyfile(path, os.path.join(dump_dir, mod_name.split(".")[-1] + ".py"))
        except Exception as e:  # noqa: BLE001
            info["sha256"][mod_name] = f"unavailable: {type(e).__name__}: {e}"
    cls = generator_class()
    info["signatures"]["__init__"] = str(inspect.signature(cls.__init__))
    info["signatures"]["get_candidates"] = str(inspect.signature(cls.get_candidates))
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (one sub-folder per pair, plus report.json)")
    ap.add_argument("--only", nargs="*", help="pairs to build (default: all)")
    ap.add_argument("--contexts", nargs="*", type=int, help="context lengths (default: around and past the window)")
    ap.add_argument("--num-speculative-tokens", type=int, default=NUM_DRAFT_TOKENS, help="K drafted per context")
    ap.add_argument("--seed", type=int, default=4321)
    ap.add_argument("--dump-source", help="also copy the installed transformers modules here, to read (not commit)")
    args = ap.parse_args()
    import transformers
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    report = dict(torch=torch.__version__, transformers=transformers.__version__, numpy=np.__version__,
                  python=sys.version.split()[0], pairs={})
    try:
        report["transformers_source"] = provenance(args.dump_source)
    except Exception as e:  # noqa: BLE001
        report["transformers_source"] = dict(error=f"{type(e).__name__}: {e}")
    for i, (name, spec) in enumerate(PAIRS.items()):
        if args.only and name not in args.only:
            continue
        try:
            report["pairs"][name] = run_pair(name, spec, args.out, args.seed + 10 * i, args.num_speculative_tokens,
                                             args.contexts)
        except Exception as e:  # noqa: BLE001  one broken pair must not cost the others
            report["pairs"][name] = dict(ok=False, error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())
        r = report["pairs"][name]
        summary = {k: r[k] for k in ("ok", "error", "min_top2_margin", "surprises") if k in r}
        if r.get("ok"):
            summary["drafts"] = {n: c["draft"] for n, c in r["contexts"].items()}
        print(name, json.dumps(summary), flush=True)
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1, default=str)
    return 0 if all(p.get("ok") for p in report["pairs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
