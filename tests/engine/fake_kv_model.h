// A stand-in for the model that uses the KV cache exactly the way the attention kernels do: each
// row writes its K/V slot through the page tables, and each query reads every key visible to it
// (full group: all earlier positions; sliding group: the last W) through the page tables. Each
// value chains the whole prefix (like real K/V, which depends on every earlier token), and the
// output token depends on everything read. So a wrong page (freed too early, reused while still
// needed, a bad prefix-cache hit) changes the generated tokens or trips a check, while correct
// bookkeeping reproduces reference_tokens() exactly.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/sequence.h"
#include "ops/sampling_rng.h"

namespace gs::testing {

using gs::rng::mix64;  // the project's counter-based hash (ops/sampling_rng.h)

class FakeKvModel {
 public:
  FakeKvModel(int page_size, int window, const int num_pages[kNumKvGroups], int vocab)
      : page_size_(page_size), window_(window), vocab_(vocab) {
    for (int g = 0; g < kNumKvGroups; ++g) slots_[g].assign(size_t(num_pages[g]) * page_size, 0);
  }

  // The value of position p given the value of p-1 (the prefix chain).
  static uint64_t chain(uint64_t prev, int token, int pos) { return mix64(prev ^ mix64(uint64_t(token) * 31 + pos + 1)); }
  static uint64_t salt(int g) { return g == 0 ? 0x5151515151515151ull : 0xf0f0f0f0f0f0f0f0ull; }

  // Next token after the row at position q, given the chain values of all positions <= q.
  int output(const std::vector<uint64_t>& c, int q, bool has_full, bool has_sliding) const {
    uint64_t h = c[q];
    if (has_full)
      for (int k = 0; k <= q; ++k) h += mix64(c[k] ^ 1);
    if (has_sliding)
      for (int k = std::max(0, q - window_ + 1); k <= q; ++k) h += mix64(c[k] ^ 2);
    return int(mix64(h) % uint64_t(vocab_));
  }

  // The tokens a correct engine generates after `prompt`.
  std::vector<int> reference_tokens(const std::vector<int>& prompt, int n, bool has_full, bool has_sliding) const {
    std::vector<int> toks = prompt;
    std::vector<uint64_t> c;
    for (int i = 0; int(toks.size()) < int(prompt.size()) + n; ++i) {
      c.push_back(chain(i ? c.back() : 0, toks[i], i));
      if (i == int(toks.size()) - 1) toks.push_back(output(c, i, has_full, has_sliding));
    }
    return std::vector<int>(toks.begin() + prompt.size(), toks.end());
  }

  // Runs positions [start, start+q_len) of `s`; returns the next token of the last row.
  int run_chunk(const Sequence& s, int start, int q_len, bool has_full, bool has_sliding) {
    std::vector<uint64_t> c(start + q_len, 0);
    for (int p = start; p < start + q_len; ++p) {
      uint64_t prev = p == 0 ? 0 : read_chain(s, p - 1, p, has_full, has_sliding);
      uint64_t v = chain(prev, s.tokens[p], p);
      for (int g = 0; g < kNumKvGroups; ++g)
        if ((g == 1 && has_full) || (g == 0 && has_sliding)) slot(s, g, p, p) = v ^ salt(g);
      c[p] = v;
    }
    int q = start + q_len - 1;
    // Read exactly what the kernels read for the last row.
    if (has_full)
      for (int k = 0; k < q; ++k) c[k] = slot(s, 1, k, q) ^ salt(1);
    if (has_sliding)
      for (int k = std::max(0, q - window_ + 1); k < q; ++k) {
        uint64_t v = slot(s, 0, k, q) ^ salt(0);
        if (has_full && v != c[k]) throw std::runtime_error("sliding and full K/V disagree at position " + std::to_string(k));
        c[k] = v;
      }
    return output(c, q, has_full, has_sliding);
  }

 private:
  uint64_t read_chain(const Sequence& s, int p, int q, bool has_full, bool has_sliding) {
    return has_full ? slot(s, 1, p, q) ^ salt(1) : slot(s, 0, p, q) ^ salt(0);
  }
  // Slot of position p for a query at q; throws on what would be an illegal read.
  uint64_t& slot(const Sequence& s, int g, int p, int q) {
    if (g == 0 && q - p >= window_) throw std::runtime_error("fake model: read outside the sliding window");
    const auto& t = s.pages.table[g];
    int li = p / page_size_;
    if (li >= int(t.size()) || t[li] < 0)
      throw std::runtime_error("fake model: '" + s.req.id + "' group " + std::to_string(g) + " has no page for position " +
                               std::to_string(p) + " (query " + std::to_string(q) + ")");
    size_t idx = size_t(t[li]) * page_size_ + p % page_size_;
    if (idx >= slots_[g].size()) throw std::runtime_error("fake model: page outside the pool");
    return slots_[g][idx];
  }

  int page_size_, window_, vocab_;
  std::vector<uint64_t> slots_[kNumKvGroups];
};

}  // namespace gs::testing
