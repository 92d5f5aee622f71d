#include "runner/model_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include "core/error.h"
#include "core/log.h"
#include "core/thread_activity.h"
#include "runner/batch_builder.h"
#include "runner/step_images.h"

namespace gs {

ModelRunner::ModelRunner(Gemma4Model& model, KvCache& cache, int page_size, int max_tokens, int max_logit_rows,
                         DecodeGraphOptions graphs, bool follower)
    : model_(model), be_(model.backend()), follower_(follower), cache_(cache), page_size_(page_size),
      max_tokens_(max_tokens), max_logit_rows_(max_logit_rows) {
  ids_ = be_.empty(DType::I32, Shape{max_tokens});
  logit_rows_ = be_.empty(DType::I32, Shape{max_logit_rows});
  out_ids_ = be_.empty(DType::I32, Shape{max_logit_rows});
  out_logprobs_ = be_.empty(DType::F32, Shape{max_logit_rows});
  top_ids_ = be_.empty(DType::I32, Shape{int64_t(max_logit_rows) * kMaxTopLogprobs});
  top_logprobs_ = be_.empty(DType::F32, Shape{int64_t(max_logit_rows) * kMaxTopLogprobs});
  for (HostResults& h : host_) {
    h.ids = be_.host_buffer(size_t(max_logit_rows) * sizeof(int));
    h.logprobs = be_.host_buffer(size_t(max_logit_rows) * sizeof(float));
    h.top_ids = be_.host_buffer(size_t(max_logit_rows) * kMaxTopLogprobs * sizeof(int));
    h.top_logprobs = be_.host_buffer(size_t(max_logit_rows) * kMaxTopLogprobs * sizeof(float));
  }
  graphs.max_batch = std::min({graphs.max_batch, max_tokens, max_logit_rows});
  graphs.max_rows = std::min(max_tokens, max_logit_rows);
  if (graphs.max_batch > 0 && be_.supports_graphs())
    graphs_ = std::make_unique<DecodeGraphs>(model_, cache_, page_size_, graphs);
  RankGroup* group = follower ? nullptr : model.rank_group();
  if (!group || group->size() <= 1) return;
  // Every other rank: its workspace, a cache with the same pages (of its heads), a follower runner,
  // each made on the rank's own thread (its device).
  const int n = group->size();
  rank_caches_.resize(size_t(n - 1));
  followers_.resize(size_t(n - 1));
  const int pages[kNumKvGroups] = {cache.pools[0].num_pages, cache.pools[1].num_pages};
  group->run_on_ranks([&](int r) {
    if (r == 0) return;
    Gemma4Model& m = group->rank_model(r);
    if (m.workspace_bytes() == 0) m.reserve(max_tokens, max_logit_rows);
    rank_caches_[size_t(r - 1)] = m.backend().allocate_kv_cache(m.config().kv_layout(), page_size, pages);
    followers_[size_t(r - 1)] = std::make_unique<ModelRunner>(m, rank_caches_[size_t(r - 1)], page_size, max_tokens,
                                                              max_logit_rows, graphs, true);
  });
  group_ = group;
}

void ModelRunner::on_every_rank(const std::function<void(int rank)>& fn) {
  try {
    group_->run_on_ranks(fn);
  } catch (const std::exception& e) {
    // The group's communicators are aborted: no later step can run. Stop here, loudly, rather
    // than fail every request from now on or wait for a rank that is gone.
    log::error("{}; stopping the process: a tensor-parallel group cannot continue without one of its ranks",
               e.what());
    spdlog::default_logger()->flush();
    std::_Exit(70);
  }
}

ModelRunner::~ModelRunner() = default;

ModelRunner::Counters ModelRunner::counters() const {
  Counters c = counters_;
  c.graphs = graphs_ ? graphs_->num_graphs() : 0;
  return c;
}

bool ModelRunner::can_launch_ahead() const {
  return inflight_.size() == 1 && inflight_.back().num_prompt_rows == 0;
}

void ModelRunner::launch(const std::vector<SequenceStep>& seqs) {
  if (!group_) return launch_here(seqs);
  on_every_rank([&](int r) { r == 0 ? launch_here(seqs) : followers_[size_t(r - 1)]->launch_here(seqs); });
}

void ModelRunner::launch_here(const std::vector<SequenceStep>& seqs) {
  GS_CHECK(inflight_.empty() || can_launch_ahead(),
           "model runner: launch() with {} steps in flight (at most one, without prompt-logprob rows)",
           inflight_.size());
  Launched st;
  st.seqs = seqs;
  std::vector<int> ids;
  std::vector<int> sampled_rows, prompt_rows;
  std::vector<std::pair<int, int>> feedback;  // (row of this step's ids, sampled row of the previous step)
  StepImages images;                          // the images whose soft tokens this step prefills
  for (size_t i = 0; i < seqs.size(); ++i) {
    const SequenceStep& s = seqs[i];
    GS_CHECK(s.position_shift == 0 && s.write_kv, "model runner: chunk {} is a query-only step (a drafter's)", i);
    GS_CHECK(s.tokens && s.q_len > 0 && s.end() <= int(s.tokens->size()),
             "model runner: chunk [{}, {}) outside the {} known tokens", s.start, s.end(),
             s.tokens ? s.tokens->size() : 0);
    const int row0 = int(ids.size());
    for (int p = s.start; p < s.end(); ++p) ids.push_back(model_.embedding_id((*s.tokens)[size_t(p)]));
    collect_step_images(s, row0, images);
    if (s.feedback_row >= 0) {
      GS_CHECK(!inflight_.empty() && s.feedback_row < inflight_.back().num_sampled && s.end() == int(s.tokens->size()),
               "model runner: chunk {} takes its last token from sampled row {} of a step in flight, which has {}",
               i, s.feedback_row, inflight_.empty() ? 0 : inflight_.back().num_sampled);
      ids.back() = 0;  // overwritten on the device before the forward reads it
      feedback.push_back({row0 + s.q_len - 1, s.feedback_row});
    }
    GS_CHECK(s.num_drafts >= 0 && s.num_drafts < s.q_len && (s.num_drafts == 0 || s.sample),
             "model runner: chunk {} verifies {} drafts in {} rows", i, s.num_drafts, s.q_len);
    for (int r = s.q_len - s.sampled_rows(); r < s.q_len; ++r) sampled_rows.push_back(row0 + r);
    for (int r = 0; r < s.prompt_logprob_rows; ++r) prompt_rows.push_back(row0 + r);
    if (s.sample || s.prompt_logprob_rows) st.top_n = std::max(st.top_n, std::min(s.logprobs, kMaxTopLogprobs));
  }
  GS_CHECK(int(ids.size()) <= max_tokens_, "model runner: {} tokens in one step, reserved for {}", ids.size(),
           max_tokens_);
  st.num_sampled = int(sampled_rows.size());
  st.num_prompt_rows = int(prompt_rows.size());
  std::vector<int> rows = sampled_rows;
  rows.insert(rows.end(), prompt_rows.begin(), prompt_rows.end());
  GS_CHECK(int(rows.size()) <= max_logit_rows_, "model runner: {} logit rows in one step, reserved for {}",
           rows.size(), max_logit_rows_);

  // The previous step's sampled ids stay in out_ids_ until this step's sampling overwrites them:
  // the feedback copy is enqueued before that, and the previous step's host copy before both.
  // Decode and verify steps: every row sampled, the same rows per sequence.
  const bool all_rows_sampled = st.num_prompt_rows == 0 && std::all_of(seqs.begin(), seqs.end(), [](const SequenceStep& s) {
                                  return s.sampled_rows() == s.q_len;
                                });
  if (graphs_ && all_rows_sampled && images.empty() && graphs_->accepts(seqs)) {
    // Sampled rows are 0..n-1 in row order, as the graph's logits rows are.
    st.fwd = graphs_->forward(seqs, ids, out_ids_, feedback);
    counters_.graph_steps++;
  } else {
    Tensor ids_t = ids_.slice(0, int64_t(ids.size()));
    be_.copy_from_host(ids_t, ids.data());
    if (!feedback.empty()) be_.scatter_ids(ids_t, out_ids_, feedback);
    Tensor rows_t = logit_rows_.slice(0, int64_t(rows.size()));
    if (!rows.empty()) be_.copy_from_host(rows_t, rows.data());
    st.batch = build_attention_batch(be_, seqs, page_size_);
    be_.set_step_rows(int(ids.size()));
    mark_activity("eager forward");
    st.fwd = model_.forward(ids_t, st.batch, cache_, rows_t, &images);
    counters_.eager_steps++;
  }

  if (st.num_sampled > 0 && !follower_) enqueue_sampling(st);
  // Tensor parallel: rank 0's sampled ids reach every rank's out_ids_, where a step launched ahead
  // reads its last tokens from (the feedback scatter above runs on every rank).
  if (st.num_sampled > 0 && model_.tensor_parallel())
    model_.tensor_parallel()->broadcast(out_ids_.slice(0, st.num_sampled), 0);
  // Every step gets a fence, so collect() always waits for its step: the host never runs more
  // than one step ahead of the device.
  st.fence = be_.record_fence();
  inflight_.push_back(std::move(st));
}

void ModelRunner::enqueue_sampling(Launched& st) {
  const int n = st.num_sampled;
  Tensor logits = st.fwd.logits.slice(0, n);
  std::vector<SamplingRow> sampling;
  std::vector<LogitAdjustRow> adjust;
  bool any_adjust = false;
  for (const SequenceStep& s : st.seqs) {
    // A verify's rows draw the tokens at indices step, step + 1, ... as decode steps would.
    for (int r = 0; r < s.sampled_rows(); ++r) {
      SamplingRow row = s.sampling;
      row.step += uint64_t(r);
      sampling.push_back(row);
      adjust.push_back(s.adjust ? s.adjust[r] : LogitAdjustRow{});
      any_adjust |= s.adjust && !s.adjust[r].empty();
    }
  }
  // Bias, bans and penalties shape the distribution that is sampled and reported, as in vLLM.
  if (any_adjust) be_.adjust_logits(logits, adjust);
  be_.sample(logits, sampling, out_ids_.slice(0, n), out_logprobs_.slice(0, n));
  st.host = next_host_;
  next_host_ ^= 1;
  const HostResults& h = host_[st.host];
  be_.copy_to_host_async(out_ids_.slice(0, n), h.ids.get());
  be_.copy_to_host_async(out_logprobs_.slice(0, n), h.logprobs.get());
  if (st.top_n > 0) {
    Tensor ti = top_ids_.slice(0, int64_t(n) * st.top_n).view(Shape{n, st.top_n});
    Tensor tl = top_logprobs_.slice(0, int64_t(n) * st.top_n).view(Shape{n, st.top_n});
    be_.top_logprobs(logits, st.top_n, ti, tl);
    be_.copy_to_host_async(ti, h.top_ids.get());
    be_.copy_to_host_async(tl, h.top_logprobs.get());
  }
}

void ModelRunner::reset() {
  if (!group_) return reset_here();
  on_every_rank([&](int r) { r == 0 ? reset_here() : followers_[size_t(r - 1)]->reset_here(); });
}

void ModelRunner::for_each_rank_cache(const std::function<void(Backend&, KvCache&)>& fn) {
  if (!group_) return fn(be_, cache_);
  on_every_rank([&](int r) {
    if (r == 0) fn(be_, cache_);
    else fn(followers_[size_t(r - 1)]->be_, rank_caches_[size_t(r - 1)]);
  });
}

void ModelRunner::reset_here() {
  be_.synchronize();
  inflight_.clear();
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
  if (!group_) return collect_here();
  std::vector<RunnerOutput> out;
  on_every_rank([&](int r) {
    if (r == 0) out = collect_here();
    else followers_[size_t(r - 1)]->collect_here();
  });
  return out;
}

std::vector<RunnerOutput> ModelRunner::collect_here() {
  GS_CHECK(!inflight_.empty(), "model runner: collect() without launch()");
  Launched st = std::move(inflight_.front());
  inflight_.pop_front();
  be_.wait_fence(st.fence);
  if (follower_) return {};  // rank 0 samples
  const int n = st.num_sampled, top_n = st.top_n;
  const HostResults& h = host_[st.host];
  const int* ids = static_cast<const int*>(h.ids.get());
  const float* lps = static_cast<const float*>(h.logprobs.get());
  const int* top_ids = static_cast<const int*>(h.top_ids.get());
  const float* top_lps = static_cast<const float*>(h.top_logprobs.get());
  const int V = int(st.fwd.logits.cols());
  std::vector<float> prompt_logits;
  if (st.num_prompt_rows > 0) {
    // Nothing was launched after this step (can_launch_ahead()), so its logits are intact.
    prompt_logits.resize(size_t(st.num_prompt_rows) * V);
    be_.copy_to_host(st.fwd.logits.slice(n, st.num_prompt_rows), prompt_logits.data());
  }
  std::vector<RunnerOutput> out(st.seqs.size());
  int si = 0, pi = 0;
  for (size_t i = 0; i < st.seqs.size(); ++i) {
    const SequenceStep& s = st.seqs[i];
    RunnerOutput& o = out[i];
    if (s.sample) o.hidden_row = si;
    for (int r = 0; r < s.sampled_rows(); ++r, ++si) {
      o.tokens.push_back(ids[si]);
      o.logprobs.push_back(lps[si]);
      o.top.emplace_back();
      for (int j = 0; j < std::min(s.logprobs, top_n); ++j)
        o.top.back().push_back({top_ids[size_t(si) * top_n + j], top_lps[size_t(si) * top_n + j]});
    }
    for (int r = 0; r < s.prompt_logprob_rows; ++r, ++pi) {
      int target = (*s.tokens)[s.start + r + 1];
      o.prompt_logprobs.emplace_back();
      o.prompt_top.emplace_back();
      host_row_logprobs(prompt_logits.data() + size_t(pi) * V, V, target, std::min(s.logprobs, kMaxTopLogprobs),
                        &o.prompt_logprobs.back(), &o.prompt_top.back());
    }
  }
  GS_CHECK(si == n, "model runner: {} sampled rows, the chunks name {}", n, si);
  last_hidden_ = st.fwd.hidden;
  return out;
}

}  // namespace gs
