#include "runner/context_draft.h"

#include "core/error.h"
#include "runner/batch_builder.h"

namespace gs {

namespace {

// Rows of an activation tensor as f32 on the host, appended to `out`.
void append_f32(Backend& be, const Tensor& t, std::vector<float>& out) {
  std::vector<uint8_t> raw(t.nbytes());
  be.copy_to_host(t, raw.data());
  const size_t n = size_t(t.numel());
  out.resize(out.size() + n);
  convert_to_f32(t.dtype, raw.data(), out.data() + out.size() - n, n);
}

}  // namespace

DraftContext prefill_for_drafting(Gemma4Model& target, Gemma4Drafter& drafter, const std::vector<int>& ctx,
                                  int page_size) {
  const ModelConfig& cfg = target.config();
  DraftContext d;
  d.n = int(ctx.size()) - 1;
  const int n = d.n;
  GS_CHECK(n >= 1, "draft: the context needs at least two tokens (got {})", ctx.size());
  for (size_t i = 0; i < ctx.size(); ++i)
    GS_CHECK(ctx[i] >= 0 && ctx[i] < cfg.vocab_size, "draft: token id {} at index {} is outside the vocabulary [0, {})",
             ctx[i], i, cfg.vocab_size);
  Backend& be = target.backend();

  d.pages.page_size = page_size;
  d.pages.ensure(n);
  const int num_pages[kNumKvGroups] = {int(d.pages.table[0].size()), int(d.pages.table[1].size())};
  d.cache = be.allocate_kv_cache(cfg.kv_layout(), page_size, num_pages);

  // The target's prefill of ctx[0..n), asking for the hidden state of its last row.
  target.reserve(n, 1);
  SequenceStep prefill;
  prefill.start = 0;
  prefill.q_len = n;
  for (int g = 0; g < kNumKvGroups; ++g) prefill.page_table[g] = &d.pages.table[g];
  AttentionBatch batch = build_attention_batch(be, {prefill}, page_size);
  Tensor ids = be.empty(DType::I32, Shape{n});
  be.copy_from_host(ids, ctx.data());
  const int last_row = n - 1;
  Tensor rows = be.empty(DType::I32, Shape{1});
  be.copy_from_host(rows, &last_row);
  be.set_step_rows(n);
  d.seed_hidden = target.forward(ids, batch, d.cache, rows).hidden;

  // Draft steps at position n (or n-1, vLLM's convention) over keys 0..n-1; nothing is written.
  drafter.reserve(1);
  SequenceStep q = prefill;
  q.start = n;
  q.q_len = 1;
  q.write_kv = false;
  q.position_shift = drafter.position_shift();
  d.draft_batch = build_attention_batch(be, {q}, page_size);
  return d;
}

ContextDraft draft_after_context(Gemma4Model& target, Gemma4Drafter& drafter, const std::vector<int>& ctx,
                                 int num_draft_tokens, int page_size) {
  GS_CHECK(num_draft_tokens >= 1, "draft: --num-speculative-tokens must be at least 1 (got {})", num_draft_tokens);
  DraftContext d = prefill_for_drafting(target, drafter, ctx, page_size);
  Backend& be = target.backend();
  Tensor token = be.empty(DType::I32, Shape{1});
  int t = ctx[size_t(d.n)];
  Tensor hidden = d.seed_hidden;
  ContextDraft out;
  append_f32(be, hidden, out.seed_hidden);
  std::vector<float> row(size_t(target.config().vocab_size));
  be.set_step_rows(1);
  for (int k = 0; k < num_draft_tokens; ++k) {
    be.copy_from_host(token, &t);
    DraftStepOutput step = drafter.step(token, hidden, d.draft_batch, d.cache);
    be.copy_to_host(step.logits, row.data());
    out.logits.insert(out.logits.end(), row.begin(), row.end());
    t = drafter.argmax(step)[0];
    out.tokens.push_back(t);
    append_f32(be, step.next_hidden, out.projected);
    hidden = step.next_hidden;
  }
  return out;
}

}  // namespace gs
