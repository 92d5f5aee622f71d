#include "engine/draft_proposer.h"

#include <algorithm>

#include "core/error.h"
#include "runner/batch_builder.h"

namespace gs {

MtpDraftSource::MtpDraftSource(std::shared_ptr<Gemma4Drafter> drafter, int num_speculative_tokens, int max_seqs,
                             int page_size)
    : drafter_(std::move(drafter)), be_(drafter_->backend()), k_(num_speculative_tokens), max_seqs_(max_seqs),
      page_size_(page_size) {
  GS_CHECK(k_ >= 1, "speculative decoding: --num-speculative-tokens must be at least 1 (got {})", k_);
  drafter_->reserve(max_seqs);
  rows_ = be_.empty(DType::I32, Shape{max_seqs});
  ids_ = be_.empty(DType::I32, Shape{max_seqs});
  seeds_ = be_.empty(be_.activation_dtype(), Shape{max_seqs, drafter_->config().backbone_hidden_size});
}

void MtpDraftSource::propose(const std::vector<DraftRequest>& reqs, const Tensor& target_hidden,
                            KvCache& target_cache) {
  const int S = int(reqs.size());
  if (S == 0) return;
  GS_CHECK(S <= max_seqs_, "speculative decoding: {} sequences to draft for, reserved for {}", S, max_seqs_);
  std::vector<int> rows, ids;
  std::vector<SequenceStep> steps(static_cast<size_t>(S));
  int most = 0;
  for (int i = 0; i < S; ++i) {
    const DraftRequest& r = reqs[size_t(i)];
    const Sequence& s = *r.seq;
    GS_CHECK(r.hidden_row >= 0 && r.hidden_row < target_hidden.rows(),
             "speculative decoding: '{}' seeds from hidden row {} of {}", s.req.id, r.hidden_row, target_hidden.rows());
    GS_CHECK(s.num_computed == int(s.tokens.size()) - 1,
             "speculative decoding: '{}' has {} of {} tokens computed (drafts follow the one newest token)",
             s.req.id, s.num_computed, s.tokens.size());
    rows.push_back(r.hidden_row);
    ids.push_back(s.tokens.back());
    most = std::max(most, r.num_tokens);
    // One query-only row at the newest token's position over the cached ones (gemma4_drafter.h).
    SequenceStep& st = steps[size_t(i)];
    st.start = s.num_computed;
    st.q_len = 1;
    st.write_kv = false;
    st.position_shift = drafter_->position_shift();
    for (int g = 0; g < kNumKvGroups; ++g)
      st.page_table[g] = s.pages.table[g].empty() ? nullptr : &s.pages.table[g];
  }
  Tensor rows_t = rows_.slice(0, S), ids_t = ids_.slice(0, S);
  Tensor seeds = seeds_.slice(0, S);
  be_.copy_from_host(rows_t, rows.data());
  be_.gather_rows(target_hidden, rows_t, seeds);
  AttentionBatch batch = build_attention_batch(be_, steps, page_size_);
  Tensor hidden = seeds;
  for (int k = 0; k < most; ++k) {
    be_.copy_from_host(ids_t, ids.data());
    be_.set_step_rows(S);
    DraftStepOutput out = drafter_->step(ids_t, hidden, batch, target_cache);
    ids = drafter_->argmax(out);
    for (int i = 0; i < S; ++i)
      if (k < reqs[size_t(i)].num_tokens) reqs[size_t(i)].seq->drafts.push_back(ids[size_t(i)]);
    hidden = out.next_hidden;
  }
}

}  // namespace gs
