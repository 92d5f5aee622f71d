#include "runner/model_runner.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "runner/batch_builder.h"

namespace gs {

ModelRunner::ModelRunner(Gemma4Model& model, KvCache& cache, int page_size, int max_tokens, int max_logit_rows)
    : model_(model), be_(model.backend()), cache_(cache), page_size_(page_size), max_tokens_(max_tokens),
      max_logit_rows_(max_logit_rows) {
  ids_ = be_.empty(DType::I32, Shape{max_tokens});
  logit_rows_ = be_.empty(DType::I32, Shape{max_logit_rows});
  out_ids_ = be_.empty(DType::I32, Shape{max_logit_rows});
  out_logprobs_ = be_.empty(DType::F32, Shape{max_logit_rows});
  top_ids_ = be_.empty(DType::I32, Shape{int64_t(max_logit_rows) * kMaxTopLogprobs});
  top_logprobs_ = be_.empty(DType::F32, Shape{int64_t(max_logit_rows) * kMaxTopLogprobs});
}

void ModelRunner::launch(const std::vector<RunnerSeq>& seqs) {
  GS_CHECK(!launched_, "model runner: launch() twice without collect()");
  seqs_ = seqs;
  std::vector<int> ids;
  std::vector<SeqStep> steps(seqs.size());
  std::vector<int> sampled_rows, prompt_rows;
  std::vector<std::vector<int>> mm(seqs.size());
  top_n_ = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const RunnerSeq& s = seqs[i];
    GS_CHECK(s.q_len > 0 && s.start + s.q_len <= int(s.tokens->size()),
             "model runner: chunk [{}, {}) outside the {} known tokens", s.start, s.start + s.q_len, s.tokens->size());
    const int row0 = int(ids.size());
    ids.insert(ids.end(), s.tokens->begin() + s.start, s.tokens->begin() + s.start + s.q_len);
    SeqStep& st = steps[i];
    st.cached_len = s.start;
    st.q_len = s.q_len;
    for (int g = 0; g < kNumKvGroups; ++g) st.page_table[g] = s.page_table[g];
    if (s.mm_block) {
      mm[i].resize(s.q_len);
      for (int r = 0; r < s.q_len; ++r) {
        int p = s.start + r;
        mm[i][r] = p < int(s.mm_block->size()) ? (*s.mm_block)[p] : -1;
      }
      st.mm_block = mm[i].data();
    }
    if (s.sample) sampled_rows.push_back(row0 + s.q_len - 1);
    for (int r = 0; r < s.prompt_logprob_rows; ++r) prompt_rows.push_back(row0 + r);
    if (s.sample || s.prompt_logprob_rows) top_n_ = std::max(top_n_, std::min(s.logprobs, kMaxTopLogprobs));
  }
  GS_CHECK(int(ids.size()) <= max_tokens_, "model runner: {} tokens in one step, reserved for {}", ids.size(),
           max_tokens_);
  num_sampled_ = int(sampled_rows.size());
  num_prompt_rows_ = int(prompt_rows.size());
  std::vector<int> rows = sampled_rows;
  rows.insert(rows.end(), prompt_rows.begin(), prompt_rows.end());
  GS_CHECK(int(rows.size()) <= max_logit_rows_, "model runner: {} logit rows in one step, reserved for {}",
           rows.size(), max_logit_rows_);

  Tensor ids_t = ids_.slice(0, int64_t(ids.size()));
  be_.copy_from_host(ids_t, ids.data());
  Tensor rows_t = logit_rows_.slice(0, int64_t(rows.size()));
  if (!rows.empty()) be_.copy_from_host(rows_t, rows.data());
  batch_ = build_attention_batch(be_, steps, page_size_);
  fwd_ = model_.forward(ids_t, batch_, cache_, rows_t);
  if (num_sampled_ == 0) {
    launched_ = true;
    return;
  }

  Tensor logits = fwd_.logits.slice(0, num_sampled_);
  std::vector<SamplingRow> sampling;
  std::vector<std::vector<std::pair<int, int>>> counts;
  std::vector<float> presence, frequency;
  bool penalties = false;
  for (const RunnerSeq& s : seqs) {
    if (!s.sample) continue;
    sampling.push_back(s.sampling);
    counts.push_back(s.token_counts ? *s.token_counts : std::vector<std::pair<int, int>>{});
    presence.push_back(s.presence_penalty);
    frequency.push_back(s.frequency_penalty);
    penalties |= (s.presence_penalty != 0.f || s.frequency_penalty != 0.f) && s.token_counts &&
                 !s.token_counts->empty();
  }
  // Penalties shape the distribution that is sampled and reported, as in vLLM.
  if (penalties) be_.apply_penalties(logits, counts, presence, frequency);
  be_.sample(logits, sampling, out_ids_.slice(0, num_sampled_), out_logprobs_.slice(0, num_sampled_));
  if (top_n_ > 0) {
    Tensor ti = top_ids_.slice(0, int64_t(num_sampled_) * top_n_).view(Shape{num_sampled_, top_n_});
    Tensor tl = top_logprobs_.slice(0, int64_t(num_sampled_) * top_n_).view(Shape{num_sampled_, top_n_});
    be_.top_logprobs(logits, top_n_, ti, tl);
  }
  launched_ = true;
}

void ModelRunner::reset() {
  be_.synchronize();
  launched_ = false;
  seqs_.clear();
}

namespace {
// log_softmax of one row on the host: the prompt-logprob path (completions `echo`), rare enough
// that copying its rows back is cheaper than another device op.
void host_row_logprobs(const float* l, int V, int target, int n, float* target_lp,
                       std::vector<std::pair<int, float>>* top) {
  double m = *std::max_element(l, l + V), sum = 0;
  for (int v = 0; v < V; ++v) sum += std::exp(double(l[v]) - m);
  const double lse = m + std::log(sum);
  *target_lp = float(double(l[target]) - lse);
  if (n <= 0) return;
  std::vector<int> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + n, order.end(),
                    [&](int a, int b) { return l[a] != l[b] ? l[a] > l[b] : a < b; });
  for (int j = 0; j < n; ++j) top->push_back({order[j], float(double(l[order[j]]) - lse)});
}
}  // namespace

std::vector<RunnerOutput> ModelRunner::collect() {
  GS_CHECK(launched_, "model runner: collect() without launch()");
  launched_ = false;
  std::vector<RunnerOutput> out(seqs_.size());
  std::vector<int> ids(num_sampled_), top_ids(size_t(num_sampled_) * top_n_);
  std::vector<float> lps(num_sampled_), top_lps(size_t(num_sampled_) * top_n_);
  if (num_sampled_ > 0) {
    be_.copy_to_host(out_ids_.slice(0, num_sampled_), ids.data());
    be_.copy_to_host(out_logprobs_.slice(0, num_sampled_), lps.data());
    if (top_n_ > 0) {
      be_.copy_to_host(top_ids_.slice(0, int64_t(num_sampled_) * top_n_), top_ids.data());
      be_.copy_to_host(top_logprobs_.slice(0, int64_t(num_sampled_) * top_n_), top_lps.data());
    }
  }
  const int V = int(fwd_.logits.cols());
  std::vector<float> prompt_logits;
  if (num_prompt_rows_ > 0) {
    prompt_logits.resize(size_t(num_prompt_rows_) * V);
    be_.copy_to_host(fwd_.logits.slice(num_sampled_, num_prompt_rows_), prompt_logits.data());
  } else {
    be_.synchronize();
  }
  int si = 0, pi = 0;
  for (size_t i = 0; i < seqs_.size(); ++i) {
    const RunnerSeq& s = seqs_[i];
    RunnerOutput& o = out[i];
    if (s.sample) {
      o.token = ids[si];
      o.logprob = lps[si];
      for (int j = 0; j < std::min(s.logprobs, top_n_); ++j)
        o.top.push_back({top_ids[size_t(si) * top_n_ + j], top_lps[size_t(si) * top_n_ + j]});
      ++si;
    }
    for (int r = 0; r < s.prompt_logprob_rows; ++r, ++pi) {
      int target = (*s.tokens)[s.start + r + 1];
      o.prompt_logprobs.emplace_back();
      o.prompt_top.emplace_back();
      host_row_logprobs(prompt_logits.data() + size_t(pi) * V, V, target, std::min(s.logprobs, kMaxTopLogprobs),
                        &o.prompt_logprobs.back(), &o.prompt_top.back());
    }
  }
  seqs_.clear();
  return out;
}

}  // namespace gs
