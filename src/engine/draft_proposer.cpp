#include "engine/draft_proposer.h"

#include <algorithm>

#include "core/error.h"
#include "runner/batch_builder.h"

namespace gs {

MtpDraftSource::MtpDraftSource(std::shared_ptr<Gemma4Drafter> drafter, int num_speculative_tokens, int max_seqs,
                               int page_size, const KvCache& target_cache, int max_kv_len, bool use_graphs)
    : drafter_(std::move(drafter)), be_(drafter_->backend()), k_(num_speculative_tokens), max_seqs_(max_seqs),
      page_size_(page_size) {
  GS_CHECK(k_ >= 1, "speculative decoding: --num-speculative-tokens must be at least 1 (got {})", k_);
  drafter_->reserve(max_seqs);
  rows_ = be_.empty(DType::I32, Shape{max_seqs});
  ids_ = be_.empty(DType::I32, Shape{max_seqs});
  seeds_ = be_.empty(be_.activation_dtype(), Shape{max_seqs, drafter_->config().backbone_hidden_size});
  draft_ids_ = be_.empty(DType::I32, Shape{int64_t(k_) * max_seqs});
  if (use_graphs && be_.supports_graphs() && max_kv_len > 0)
    inputs_ = std::make_unique<GraphStepInputs>(be_, target_cache, page_size, max_seqs, 1, max_kv_len);
}

MtpDraftSource::~MtpDraftSource() {
  for (auto& [key, handle] : graphs_) be_.release_graph(handle);
}

void MtpDraftSource::enqueue_round(const Tensor& ids0, int seqs, const AttentionBatch& batch, int steps,
                                   KvCache& target_cache) {
  Tensor ids = ids0, hidden = seeds_.slice(0, seqs);
  for (int k = 0; k < steps; ++k) {
    const Tensor next = draft_ids_.slice(int64_t(k) * seqs, seqs);
    hidden = drafter_->greedy_step(ids, hidden, batch, target_cache, next);
    ids = next;
  }
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
    GS_CHECK(r.num_tokens <= k_, "speculative decoding: '{}' asks {} drafts of a source of {}", s.req.id, r.num_tokens,
             k_);
    rows.push_back(r.hidden_row);
    ids.push_back(s.tokens.back());
    most = std::max(most, r.num_tokens);
    // One query-only row at the newest token's position over the cached ones (gemma4_drafter.h).
    SequenceStep& st = steps[size_t(i)];
    st.tokens = &s.tokens;
    st.start = s.num_computed;
    st.q_len = 1;
    st.write_kv = false;
    st.position_shift = drafter_->position_shift();
    for (int g = 0; g < kNumKvGroups; ++g)
      st.page_table[g] = s.pages.table[g].empty() ? nullptr : &s.pages.table[g];
  }
  if (most == 0) return;
  Tensor rows_t = rows_.slice(0, S);
  be_.copy_from_host(rows_t, rows.data());
  be_.gather_rows(target_hidden, rows_t, seeds_.slice(0, S));

  int seqs = S;
  if (inputs_ && inputs_->fits(steps)) {
    GraphStepInputs::Packed p = inputs_->pack(steps, ids);
    seqs = p.shape.seqs;  // padding rows draft from stale seeds; their ids are never read
    be_.set_step_rows(seqs);
    const auto key = std::make_pair(p.shape, most);
    if (auto it = graphs_.find(key); it != graphs_.end()) {
      be_.replay(it->second);
    } else {
      // First round of this shape: run it eagerly (sizing workspaces and GEMM plans), then record it.
      enqueue_round(p.ids, seqs, p.batch, most, target_cache);
      be_.begin_capture();
      try {
        enqueue_round(p.ids, seqs, p.batch, most, target_cache);
      } catch (...) {
        try {
          be_.release_graph(be_.end_capture());
        } catch (...) {  // the capture may be invalid already; the round's error is the one to report
        }
        throw;
      }
      graphs_[key] = be_.end_capture();
    }
  } else {
    Tensor ids_t = ids_.slice(0, S);
    be_.copy_from_host(ids_t, ids.data());
    const AttentionBatch batch = build_attention_batch(be_, steps, page_size_);
    be_.set_step_rows(S);
    enqueue_round(ids_t, S, batch, most, target_cache);
  }
  std::vector<int> drafted(size_t(most) * seqs);
  be_.copy_to_host(draft_ids_.slice(0, int64_t(most) * seqs), drafted.data());
  for (int i = 0; i < S; ++i)
    for (int k = 0; k < reqs[size_t(i)].num_tokens; ++k) reqs[size_t(i)].seq->drafts.push_back(drafted[size_t(k) * seqs + i]);
}

}  // namespace gs
