#include "runner/decode_graphs.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"

namespace gs {

namespace {
constexpr int kMinContextBucket = 256;
constexpr int64_t kAlign = 64;  // i32 elements: each input starts on a 256-byte boundary

int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
int ceil_div(int a, int b) { return (a + b - 1) / b; }
}  // namespace

struct DecodeGraphs::Layout {
  int64_t ids = 0, logit_rows = 0, positions = 0, token_seq = 0, q_start = 0, kv_len = 0;
  int64_t slot_mapping[kNumKvGroups] = {0, 0};
  int64_t page_table[kNumKvGroups] = {0, 0};
  int pages_per_seq = 0;
  int64_t total = 0;
};

DecodeGraphs::Layout DecodeGraphs::layout(int rows, int pages_per_seq) const {
  Layout l;
  int64_t at = 0;
  auto take = [&](int64_t n) {
    const int64_t off = at;
    at += align_up(n);
    return off;
  };
  l.ids = take(rows);
  l.logit_rows = take(rows);
  l.positions = take(rows);
  l.token_seq = take(rows);
  l.q_start = take(rows + 1);
  l.kv_len = take(rows);
  for (int g = 0; g < kNumKvGroups; ++g) {
    if (!groups_[g]) continue;
    l.slot_mapping[g] = take(rows);
    l.page_table[g] = take(int64_t(rows) * pages_per_seq);
  }
  l.pages_per_seq = pages_per_seq;
  l.total = at;
  return l;
}

DecodeGraphs::DecodeGraphs(Gemma4Model& model, KvCache& cache, int page_size, DecodeGraphOptions opts)
    : model_(model), be_(model.backend()), cache_(cache), page_size_(page_size), opts_(opts) {
  GS_CHECK(be_.supports_graphs(), "decode graphs: the {} backend cannot record graphs", be_.name());
  GS_CHECK(opts_.max_batch > 0 && opts_.max_kv_len > 0 && page_size > 0,
           "decode graphs: max_batch {}, max_kv_len {} and page size {} must be positive", opts_.max_batch,
           opts_.max_kv_len, page_size);
  for (int g = 0; g < kNumKvGroups; ++g) groups_[g] = cache.pools[g].cache_layers > 0;
  const Layout largest = layout(opts_.max_batch, ceil_div(bucket_context(opts_.max_kv_len), page_size_));
  inputs_ = be_.empty(DType::I32, Shape{largest.total});
  host_.assign(size_t(largest.total), 0);
}

DecodeGraphs::~DecodeGraphs() {
  for (auto& [key, g] : graphs_) be_.release_graph(g.handle);
}

int DecodeGraphs::bucket_rows(int n) const {
  int b = n <= 1 ? 1 : n <= 2 ? 2 : n <= 4 ? 4 : (n + 7) / 8 * 8;
  return std::min(b, opts_.max_batch);
}

int DecodeGraphs::bucket_context(int kv_len) const {
  int b = kMinContextBucket;
  while (b < kv_len) b *= 2;
  // The last bucket stops at the model length (rounded to pages) rather than the next power of two.
  const int cap = ceil_div(opts_.max_kv_len, page_size_) * page_size_;
  return std::max(std::min(b, cap), ceil_div(kv_len, page_size_) * page_size_);
}

bool DecodeGraphs::accepts(const std::vector<SequenceStep>& steps) const {
  if (steps.empty() || int(steps.size()) > opts_.max_batch) return false;
  for (const SequenceStep& s : steps) {
    if (s.q_len != 1 || !s.write_kv || s.mm_block_of_row(0) >= 0 || s.start + 1 > opts_.max_kv_len) return false;
    for (int g = 0; g < kNumKvGroups; ++g)
      if (groups_[g] && !s.page_table[g]) return false;
  }
  return true;
}

AttentionBatch DecodeGraphs::views(const Layout& l, int rows, int context) const {
  AttentionBatch b;
  b.num_seqs = rows;
  b.num_tokens = rows;
  b.max_q_len = 1;
  b.max_kv_len = context;
  b.page_size = page_size_;
  auto view = [&](int64_t off, int64_t n) { return inputs_.slice(off, n); };
  b.positions = view(l.positions, rows);
  b.token_seq = view(l.token_seq, rows);
  b.q_start = view(l.q_start, rows + 1);
  b.kv_len = view(l.kv_len, rows);
  for (int g = 0; g < kNumKvGroups; ++g) {
    if (!groups_[g]) continue;
    b.max_pages[g] = l.pages_per_seq;
    b.slot_mapping[g] = view(l.slot_mapping[g], rows);
    b.page_table[g] = view(l.page_table[g], int64_t(rows) * l.pages_per_seq).view(Shape{rows, l.pages_per_seq});
  }
  return b;
}

ForwardOutput DecodeGraphs::forward(const std::vector<SequenceStep>& steps, const std::vector<int>& ids,
                                    const Tensor& feedback_src, const std::vector<std::pair<int, int>>& feedback) {
  GS_CHECK(accepts(steps) && ids.size() == steps.size(), "decode graphs: {} sequences / {} ids are not a decode step",
           steps.size(), ids.size());
  const int n = int(steps.size());
  const int rows = bucket_rows(n);
  int longest = 0;
  for (const SequenceStep& s : steps) longest = std::max(longest, s.start + 1);
  const int context = bucket_context(longest);
  const Layout l = layout(rows, ceil_div(context, page_size_));

  // The packed inputs of this step (padding rows after the real ones).
  int* h = host_.data();
  std::vector<int> h_q_start(static_cast<size_t>(rows) + 1), h_kv_len(static_cast<size_t>(rows));
  for (int r = 0; r <= rows; ++r) h[l.q_start + r] = h_q_start[size_t(r)] = r;
  for (int r = 0; r < rows; ++r) {
    const bool real = r < n;
    const int kv = real ? steps[size_t(r)].start + 1 : 1;
    h[l.ids + r] = real ? ids[size_t(r)] : 0;
    h[l.logit_rows + r] = r;
    h[l.positions + r] = kv - 1;
    h[l.token_seq + r] = r;
    h[l.kv_len + r] = h_kv_len[size_t(r)] = kv;
  }
  for (int g = 0; g < kNumKvGroups; ++g) {
    if (!groups_[g]) continue;
    int* table = h + l.page_table[g];
    std::fill(table, table + int64_t(rows) * l.pages_per_seq, -1);
    for (int r = 0; r < n; ++r) {
      const std::vector<int>& t = *steps[size_t(r)].page_table[g];
      const int pos = steps[size_t(r)].start;
      const int lp = pos / page_size_;
      GS_CHECK(lp < int(t.size()) && t[size_t(lp)] >= 0, "decode graphs: sequence {} writes position {} but holds no {} page for it",
               r, pos, g == int(KvGroup::Full) ? "full" : "sliding");
      std::copy_n(t.begin(), std::min<size_t>(t.size(), size_t(l.pages_per_seq)), table + int64_t(r) * l.pages_per_seq);
      h[l.slot_mapping[g] + r] = t[size_t(lp)] * page_size_ + pos % page_size_;
    }
    // Padding rows read key 0 of the page holding sequence 0's newest token: written by this step
    // at the latest, so never uninitialised memory.
    const int pad_page = (*steps[0].page_table[g])[size_t(steps[0].start / page_size_)];
    for (int r = n; r < rows; ++r) {
      table[int64_t(r) * l.pages_per_seq] = pad_page;
      h[l.slot_mapping[g] + r] = -1;
    }
  }
  be_.copy_from_host(inputs_.slice(0, l.total), h);
  if (!feedback.empty()) be_.scatter_ids(inputs_.slice(l.ids, rows), feedback_src, feedback);

  AttentionBatch batch = views(l, rows, context);
  batch.h_q_start = std::move(h_q_start);
  batch.h_kv_len = std::move(h_kv_len);
  const Tensor ids_t = inputs_.slice(l.ids, rows);
  const Tensor rows_t = inputs_.slice(l.logit_rows, rows);

  const auto key = std::make_pair(rows, context);
  be_.set_step_rows(rows);  // before the eager run and the capture: launches are recorded with it
  if (auto it = graphs_.find(key); it != graphs_.end()) {
    be_.replay(it->second.handle);
    return it->second.out;
  }
  // First step of this shape: run it eagerly (sizing workspaces and GEMM plans), then record it.
  ForwardOutput out = model_.forward(ids_t, batch, cache_, rows_t);
  be_.begin_capture();
  try {
    model_.forward(ids_t, batch, cache_, rows_t);
  } catch (...) {
    try {
      be_.release_graph(be_.end_capture());
    } catch (...) {  // the capture may be invalid already; the forward's error is the one to report
    }
    throw;
  }
  graphs_[key] = Graph{be_.end_capture(), out};
  log::debug("decode graphs: captured {} rows x {} context ({} graphs)", rows, context, graphs_.size());
  return out;
}

}  // namespace gs
