#include "runner/graph_step_inputs.h"

#include <algorithm>

#include "core/error.h"

namespace gs {

namespace {
constexpr int kMinContextBucket = 256;
constexpr int64_t kAlign = 64;  // i32 elements: each input starts on a 256-byte boundary

int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
int ceil_div(int a, int b) { return (a + b - 1) / b; }
// The context a step's rows see: the cached tokens plus its own when it writes them.
int context_of(const SequenceStep& s) { return s.write_kv ? s.end() : s.start; }
}  // namespace

struct GraphStepInputs::Layout {
  int64_t ids = 0, logit_rows = 0, positions = 0, token_seq = 0, q_start = 0, kv_len = 0;
  int64_t slot_mapping[kNumKvGroups] = {0, 0};
  int64_t page_table[kNumKvGroups] = {0, 0};
  int pages_per_seq = 0;
  int64_t total = 0;
};

GraphStepInputs::Layout GraphStepInputs::layout(const GraphStepShape& s) const {
  Layout l;
  int64_t at = 0;
  auto take = [&](int64_t n) {
    const int64_t off = at;
    at += align_up(n);
    return off;
  };
  const int rows = s.rows();
  l.pages_per_seq = ceil_div(s.context, page_size_);
  l.ids = take(rows);
  l.logit_rows = take(rows);
  l.positions = take(rows);
  l.token_seq = take(rows);
  l.q_start = take(s.seqs + 1);
  l.kv_len = take(s.seqs);
  for (int g = 0; g < kNumKvGroups; ++g) {
    if (!groups_[g]) continue;
    l.slot_mapping[g] = take(rows);
    l.page_table[g] = take(int64_t(s.seqs) * l.pages_per_seq);
  }
  l.total = at;
  return l;
}

GraphStepInputs::GraphStepInputs(Backend& backend, const KvCache& cache, int page_size, int max_seqs, int max_q_len,
                                 int max_kv_len, int max_rows)
    : be_(backend), page_size_(page_size), max_seqs_(max_seqs), max_q_len_(max_q_len), max_kv_len_(max_kv_len),
      max_rows_(max_rows > 0 ? max_rows : max_seqs * max_q_len) {
  GS_CHECK(max_seqs > 0 && max_q_len > 0 && max_kv_len > 0 && page_size > 0,
           "graph inputs: max_seqs {}, max_q_len {}, max_kv_len {} and page size {} must be positive", max_seqs,
           max_q_len, max_kv_len, page_size);
  for (int g = 0; g < kNumKvGroups; ++g) groups_[g] = cache.pools[g].cache_layers > 0;
  const Layout largest = layout(GraphStepShape{max_seqs, max_q_len, bucket_context(max_kv_len)});
  inputs_ = be_.empty(DType::I32, Shape{largest.total});
  host_.assign(size_t(largest.total), 0);
}

int GraphStepInputs::bucket_seqs(int n) const {
  int b = n <= 1 ? 1 : n <= 2 ? 2 : n <= 4 ? 4 : (n + 7) / 8 * 8;
  return std::min(b, max_seqs_);
}

int GraphStepInputs::bucket_context(int kv_len) const {
  int b = kMinContextBucket;
  while (b < kv_len) b *= 2;
  // The last bucket stops at the model length (rounded to pages) rather than the next power of two.
  const int cap = ceil_div(max_kv_len_, page_size_) * page_size_;
  return std::max(std::min(b, cap), ceil_div(kv_len, page_size_) * page_size_);
}

bool GraphStepInputs::fits(const std::vector<SequenceStep>& steps) const {
  if (steps.empty() || int(steps.size()) > max_seqs_) return false;
  const int q = steps[0].q_len;
  const bool writes = steps[0].write_kv;
  if (q < 1 || q > max_q_len_ || bucket_seqs(int(steps.size())) * q > max_rows_) return false;
  for (const SequenceStep& s : steps) {
    if (s.q_len != q || s.write_kv != writes || context_of(s) > max_kv_len_ || context_of(s) < 1) return false;
    if (writes ? s.position_shift != 0 : q != 1) return false;
    for (int r = 0; r < q; ++r)
      if (s.mm_block_of_row(r) >= 0) return false;
    for (int g = 0; g < kNumKvGroups; ++g)
      if (groups_[g] && !s.page_table[g]) return false;
  }
  return true;
}

GraphStepShape GraphStepInputs::shape_of(const std::vector<SequenceStep>& steps) const {
  int longest = 0;
  for (const SequenceStep& s : steps) longest = std::max(longest, context_of(s));
  return GraphStepShape{bucket_seqs(int(steps.size())), steps[0].q_len, bucket_context(longest)};
}

GraphStepInputs::Packed GraphStepInputs::pack(const std::vector<SequenceStep>& steps, const std::vector<int>& ids) {
  GS_CHECK(fits(steps), "graph inputs: {} sequences that do not share one graph shape", steps.size());
  const int n = int(steps.size()), q = steps[0].q_len;
  GS_CHECK(int(ids.size()) == n * q, "graph inputs: {} ids for {} sequences of {} rows", ids.size(), n, q);
  Packed p;
  p.shape = shape_of(steps);
  const Layout l = layout(p.shape);
  const int seqs = p.shape.seqs, rows = p.shape.rows();
  const bool writes = steps[0].write_kv;

  int* h = host_.data();
  std::vector<int> h_q_start(static_cast<size_t>(seqs) + 1), h_kv_len(static_cast<size_t>(seqs));
  for (int s = 0; s <= seqs; ++s) h[l.q_start + s] = h_q_start[size_t(s)] = s * q;
  for (int s = 0; s < seqs; ++s) {
    const bool real = s < n;
    // Padding sequences: token 0 at positions 0..q-1 over keys 0..q-1 (written, or seen) of one page.
    const int kv = real ? context_of(steps[size_t(s)]) : q;
    h[l.kv_len + s] = h_kv_len[size_t(s)] = kv;
    for (int r = 0; r < q; ++r) {
      const int row = s * q + r;
      h[l.ids + row] = real ? ids[size_t(row)] : 0;
      h[l.logit_rows + row] = row;
      h[l.token_seq + row] = s;
      h[l.positions + row] = real ? steps[size_t(s)].start + r + steps[size_t(s)].position_shift : r;
    }
  }
  for (int g = 0; g < kNumKvGroups; ++g) {
    if (!groups_[g]) continue;
    int* table = h + l.page_table[g];
    std::fill(table, table + int64_t(seqs) * l.pages_per_seq, -1);
    for (int s = 0; s < n; ++s) {
      const SequenceStep& st = steps[size_t(s)];
      const std::vector<int>& t = *st.page_table[g];
      std::copy_n(t.begin(), std::min<size_t>(t.size(), size_t(l.pages_per_seq)), table + int64_t(s) * l.pages_per_seq);
      for (int r = 0; r < q; ++r) {
        int& slot = h[l.slot_mapping[g] + s * q + r];
        slot = -1;
        if (!writes) continue;
        const int pos = st.start + r, lp = pos / page_size_;
        GS_CHECK(lp < int(t.size()) && t[size_t(lp)] >= 0,
                 "graph inputs: sequence {} writes position {} but holds no {} page for it", s, pos,
                 g == int(KvGroup::Full) ? "full" : "sliding");
        slot = t[size_t(lp)] * page_size_ + pos % page_size_;
      }
    }
    // Padding sequences read the page holding the first sequence's newest key (written by this
    // step at the latest), from its first key on.
    const SequenceStep& first = steps[0];
    const int newest = context_of(first) - 1;
    const int pad_page = (*first.page_table[g])[size_t(newest / page_size_)];
    GS_CHECK(pad_page >= 0, "graph inputs: sequence 0 holds no {} page for its newest key {}",
             g == int(KvGroup::Full) ? "full" : "sliding", newest);
    for (int s = n; s < seqs; ++s) {
      table[int64_t(s) * l.pages_per_seq] = pad_page;
      for (int r = 0; r < q; ++r) h[l.slot_mapping[g] + s * q + r] = -1;
    }
  }
  be_.copy_from_host(inputs_.slice(0, l.total), h);

  auto view = [&](int64_t off, int64_t count) { return inputs_.slice(off, count); };
  AttentionBatch& b = p.batch;
  b.num_seqs = seqs;
  b.num_tokens = rows;
  b.max_q_len = q;
  b.max_kv_len = p.shape.context;
  b.page_size = page_size_;
  b.positions = view(l.positions, rows);
  b.token_seq = view(l.token_seq, rows);
  b.q_start = view(l.q_start, seqs + 1);
  b.kv_len = view(l.kv_len, seqs);
  for (int g = 0; g < kNumKvGroups; ++g) {
    if (!groups_[g]) continue;
    b.max_pages[g] = l.pages_per_seq;
    b.slot_mapping[g] = view(l.slot_mapping[g], rows);
    b.page_table[g] = view(l.page_table[g], int64_t(seqs) * l.pages_per_seq).view(Shape{seqs, l.pages_per_seq});
  }
  b.h_q_start = std::move(h_q_start);
  b.h_kv_len = std::move(h_kv_len);
  p.ids = view(l.ids, rows);
  p.logit_rows = view(l.logit_rows, rows);
  return p;
}

}  // namespace gs
