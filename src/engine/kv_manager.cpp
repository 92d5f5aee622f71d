#include "engine/kv_manager.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace gs {

namespace {
const char* group_name(int g) { return g == int(KvGroup::Full) ? "full" : "sliding"; }
}  // namespace

KvManager::KvManager(int page_size, int window, const int num_pages[kNumKvGroups], bool enable_prefix_caching)
    : page_size_(page_size), window_(window) {
  GS_CHECK(page_size > 0, "KV manager: page size must be positive, got {}", page_size);
  PagePool* raw[kNumKvGroups];
  for (int g = 0; g < kNumKvGroups; ++g) {
    has_[g] = num_pages[g] > 0;
    pools_[g] = std::make_unique<PagePool>(has_[g] ? num_pages[g] : 0);
    raw[g] = has_[g] ? pools_[g].get() : nullptr;
  }
  GS_CHECK(!has_[int(KvGroup::Sliding)] || window_ > 0, "KV manager: model has sliding layers but sliding_window={}",
           window_);
  if (enable_prefix_caching) prefix_ = std::make_unique<PrefixCache>(page_size, window_, raw);
}

int KvManager::first_live_page(KvGroup g, int q) const {
  if (g == KvGroup::Full) return 0;
  return std::max(0, q - window_ + 1) / page_size_;
}

int KvManager::pages_needed(const SeqPages& s, KvGroup g, int start, int end) const {
  if (!has_group(g) || end <= start) return 0;
  const auto& t = s.table[int(g)];
  int last = (end + page_size_ - 1) / page_size_;
  int n = 0;
  for (int i = first_live_page(g, start); i < last; ++i) n += (i >= int(t.size()) || t[i] < 0);
  return n;
}

bool KvManager::can_allocate(const SeqPages& s, int start, int end, const int reserve[kNumKvGroups]) const {
  for (int g = 0; g < kNumKvGroups; ++g) {
    if (!has_[g]) continue;
    if (pages_needed(s, KvGroup(g), start, end) + reserve[g] > pools_[g]->num_available()) return false;
  }
  return true;
}

bool KvManager::allocate(SeqPages& s, int start, int end) {
  release_out_of_window(s, start);
  const int none[kNumKvGroups] = {0, 0};
  if (!can_allocate(s, start, end, none)) return false;
  int last = (end + page_size_ - 1) / page_size_;
  for (int g = 0; g < kNumKvGroups; ++g) {
    if (!has_[g]) continue;
    auto& t = s.table[g];
    if (int(t.size()) < last) t.resize(last, -1);
    for (int i = first_live_page(KvGroup(g), start); i < last; ++i) {
      if (t[i] >= 0) continue;
      t[i] = pools_[g]->allocate();
      // can_allocate() counted these pages and eviction never takes a referenced page.
      GS_CHECK(t[i] >= 0, "KV manager: {} pool ran dry after can_allocate()", group_name(g));
    }
  }
  return true;
}

void KvManager::release_out_of_window(SeqPages& s, int next_query) {
  if (!has_group(KvGroup::Sliding)) return;
  auto& t = s.table[int(KvGroup::Sliding)];
  int first = std::min<int>(first_live_page(KvGroup::Sliding, next_query), int(t.size()));
  for (int i = 0; i < first; ++i) {
    if (t[i] < 0) continue;
    pools_[int(KvGroup::Sliding)]->release(t[i]);
    t[i] = -1;
  }
}

void KvManager::free(SeqPages& s) {
  for (int g = 0; g < kNumKvGroups; ++g) {
    auto& t = s.table[g];
    for (int i = int(t.size()) - 1; i >= 0; --i)
      if (t[i] >= 0) pools_[g]->release(t[i]);
    t.clear();
  }
  s.hashes.clear();
}

int KvManager::apply_prefix_hit(SeqPages& s, const int* tokens, int n) {
  GS_CHECK(s.table[0].empty() && s.table[1].empty(), "KV manager: prefix lookup for a sequence that holds pages");
  if (!prefix_ || !s.cacheable || n <= 1) return 0;
  PrefixCache::Hit hit = prefix_->lookup(tokens, n, (n - 1) / page_size_, &s.image_keys);
  int m = hit.num_pages;
  while (m > 0 && size_t(m - 1) < s.ends_inside_image.size() && s.ends_inside_image[m - 1]) --m;
  if (m < hit.num_pages) {  // nothing is retained yet: shortening the hit is only bookkeeping
    hit.num_pages = m;
    hit.hashes.resize(m);
    for (auto& pages : hit.pages) pages.resize(std::min(pages.size(), size_t(m)));
  }
  for (int g = 0; g < kNumKvGroups; ++g) {
    if (!has_[g]) continue;
    s.table[g] = hit.pages[g];
    for (int p : s.table[g])
      if (p >= 0) pools_[g]->retain(p);
  }
  s.hashes = std::move(hit.hashes);
  return hit.num_pages * page_size_;
}

void KvManager::index_computed_pages(SeqPages& s, const int* tokens, int num_computed) {
  if (!prefix_ || !s.cacheable) return;
  for (size_t i = s.hashes.size(); int(i + 1) * page_size_ <= num_computed; ++i) {
    uint64_t parent = i ? s.hashes[i - 1] : 0;
    const int* page_tokens = tokens + i * page_size_;
    const uint64_t key = i < s.image_keys.size() ? s.image_keys[i] : 0;
    uint64_t h = PrefixCache::chain_hash(parent, page_tokens, page_size_, key);
    int pages[kNumKvGroups];
    for (int g = 0; g < kNumKvGroups; ++g) pages[g] = i < s.table[g].size() ? s.table[g][i] : -1;
    prefix_->insert(h, parent, page_tokens, pages, key);
    s.hashes.push_back(h);
  }
}

void set_image_keys(SeqPages& s, const std::vector<int>& mm_block, const std::vector<PreparedImagePtr>& images,
                    int page_size) {
  s.image_keys.clear();
  s.ends_inside_image.clear();
  const int n = int(mm_block.size());
  bool any = false;
  for (int p = 0; p < n; ++p) {
    const int b = mm_block[p];
    if (b < 0) continue;
    if (size_t(b) >= images.size() || !images[b]) {
      s.cacheable = false;  // nothing tells this image's tokens from another's
      return;
    }
    any = true;
  }
  if (!any) return;
  const int pages = (n + page_size - 1) / page_size;
  s.image_keys.assign(pages, 0);
  s.ends_inside_image.assign(pages, false);
  for (int p = 0; p < n; ++p) {
    const int b = mm_block[p];
    if (b < 0) continue;
    uint64_t& key = s.image_keys[p / page_size];
    // Once per image start within a page (and at a page start), so the key names each image the
    // page holds, in order.
    if (p % page_size == 0 || mm_block[p - 1] != b) {
      key = (key ^ images[b]->content_hash) * 0x9E3779B97F4A7C15ull + 1;
    }
    if ((p + 1) % page_size == 0 && p + 1 < n && mm_block[p + 1] == b) s.ends_inside_image[p / page_size] = true;
  }
}

void KvManager::check_ownership(const std::vector<const SeqPages*>& seqs,
                                const std::vector<std::string>& names) const {
  auto dump = [&] {
    std::string out;
    for (size_t k = 0; k < seqs.size(); ++k) {
      out += fmt::format("\n  {}:", k < names.size() ? names[k] : fmt::format("seq {}", k));
      for (int g = 0; g < kNumKvGroups; ++g) {
        const auto& t = seqs[k]->table[g];
        out += fmt::format(" {}[{}]={{", group_name(g), t.size());
        for (size_t i = 0; i < t.size() && i < 64; ++i) out += fmt::format("{}{}", i ? "," : "", t[i]);
        out += t.size() > 64 ? ",...}" : "}";
      }
    }
    for (int g = 0; g < kNumKvGroups; ++g)
      out += fmt::format("\n  {} pool: {} pages, {} free, {} evictable", group_name(g), pools_[g]->num_pages(),
                         pools_[g]->num_free(), pools_[g]->num_evictable());
    return out;
  };
  for (int g = 0; g < kNumKvGroups; ++g) {
    const PagePool& pool = *pools_[g];
    std::vector<int> uses(pool.num_pages(), 0);
    for (size_t k = 0; k < seqs.size(); ++k) {
      const auto& t = seqs[k]->table[g];
      for (size_t i = 0; i < t.size(); ++i) {
        int p = t[i];
        if (p == -1) continue;
        if (p < 0 || p >= pool.num_pages())
          throw Error("page check: {} page table of {} entry {} = {} is outside the pool [0, {}){}", group_name(g),
                      k < names.size() ? names[k] : fmt::format("seq {}", k), i, p, pool.num_pages(), dump());
        ++uses[p];
      }
    }
    for (int p = 0; p < pool.num_pages(); ++p)
      if (uses[p] != pool.ref_count(p))
        throw Error("page check: {} page {} is named by {} page-table entries but has {} references{}",
                    group_name(g), p, uses[p], pool.ref_count(p), dump());
  }
}

void KvManager::check_invariants() const {
  for (int g = 0; g < kNumKvGroups; ++g) pools_[g]->check_invariants(group_name(g));
  if (prefix_) prefix_->check_invariants();
}

}  // namespace gs
