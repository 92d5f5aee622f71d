#include "engine/prefix_cache.h"

#include <algorithm>

#include "core/error.h"

namespace gs {

PrefixCache::PrefixCache(int page_size, int window, PagePool* pools[kNumKvGroups])
    : page_size_(page_size), window_(window) {
  for (int g = 0; g < kNumKvGroups; ++g) {
    pools_[g] = pools[g];
    if (!pools_[g]) continue;
    page_hash_[g].assign(pools_[g]->num_pages(), 0);
    pools_[g]->on_evict = [this, g](int page) { on_evict(KvGroup(g), page); };
  }
}

PrefixCache::~PrefixCache() {
  for (auto* pool : pools_)
    if (pool) pool->on_evict = nullptr;
}

uint64_t PrefixCache::chain_hash(uint64_t parent, const int* tokens, int n, uint64_t key) {
  // FNV-1a over the parent hash and the token bytes, then a final avalanche (splitmix64) so that
  // nearby inputs spread over the whole table.
  uint64_t h = 0xcbf29ce484222325ull ^ parent;
  auto mix = [&](uint32_t v) {
    for (int b = 0; b < 4; ++b) {
      h ^= (v >> (8 * b)) & 0xff;
      h *= 0x100000001b3ull;
    }
  };
  for (int i = 0; i < n; ++i) mix(uint32_t(tokens[i]));
  if (key) {
    mix(uint32_t(key));
    mix(uint32_t(key >> 32));
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

const PrefixCache::Entry* PrefixCache::find(uint64_t hash, uint64_t parent, const int* tokens, uint64_t key) const {
  auto it = entries_.find(hash);
  if (it == entries_.end()) return nullptr;
  const Entry& e = it->second;
  if (e.parent != parent || e.key != key || !std::equal(e.tokens.begin(), e.tokens.end(), tokens)) return nullptr;
  return &e;
}

PrefixCache::Hit PrefixCache::lookup(const int* tokens, int n, int max_pages, const std::vector<uint64_t>* keys) const {
  Hit hit;
  max_pages = std::min(max_pages, n / page_size_);
  std::vector<const Entry*> chain;
  uint64_t parent = 0;
  for (int i = 0; i < max_pages; ++i) {
    const int* page_tokens = tokens + size_t(i) * page_size_;
    const uint64_t key = keys && size_t(i) < keys->size() ? (*keys)[i] : 0;
    uint64_t h = chain_hash(parent, page_tokens, page_size_, key);
    const Entry* e = find(h, parent, page_tokens, key);
    if (!e || e->pages[int(anchor())] < 0) break;
    chain.push_back(e);
    hit.hashes.push_back(h);
    parent = h;
  }
  // Shorten until the sliding pages of the last window before the hit's end are all present.
  int m = int(chain.size());
  if (needs(KvGroup::Sliding)) {
    for (; m > 0; --m) {
      int first = std::max(0, m * page_size_ - window_ + 1) / page_size_;
      bool complete = true;
      for (int i = first; i < m && complete; ++i) complete = chain[i]->pages[int(KvGroup::Sliding)] >= 0;
      if (complete) break;
    }
  }
  hit.num_pages = m;
  hit.hashes.resize(m);
  for (int g = 0; g < kNumKvGroups; ++g) {
    if (!needs(KvGroup(g))) continue;
    int first = g == int(KvGroup::Sliding) ? std::max(0, m * page_size_ - window_ + 1) / page_size_ : 0;
    hit.pages[g].assign(m, -1);
    for (int i = first; i < m; ++i) hit.pages[g][i] = chain[i]->pages[g];
  }
  return hit;
}

void PrefixCache::insert(uint64_t hash, uint64_t parent, const int* tokens, const int pages[kNumKvGroups],
                         uint64_t key) {
  auto it = entries_.find(hash);
  if (it != entries_.end()) {
    Entry& e = it->second;
    // A different prefix with the same 64-bit hash: keep the first one, never mix them.
    if (e.parent != parent || e.key != key || !std::equal(e.tokens.begin(), e.tokens.end(), tokens)) return;
    int s = int(KvGroup::Sliding);
    if (needs(KvGroup::Sliding) && e.pages[s] < 0 && pages[s] >= 0 && !pools_[s]->is_cached(pages[s])) {
      e.pages[s] = pages[s];
      page_hash_[s][pages[s]] = hash;
      pools_[s]->set_cached(pages[s], true);
    }
    return;
  }
  if (pages[int(anchor())] < 0) return;  // nothing worth indexing
  Entry e;
  e.parent = parent;
  e.key = key;
  e.tokens.assign(tokens, tokens + page_size_);
  for (int g = 0; g < kNumKvGroups; ++g) {
    int p = pages[g];
    // A page can index one prefix only (it holds one block's K/V); a page that already indexes
    // another entry cannot be here, but a shared page of this very entry could.
    if (!needs(KvGroup(g)) || p < 0 || pools_[g]->is_cached(p)) continue;
    e.pages[g] = p;
    page_hash_[g][p] = hash;
    pools_[g]->set_cached(p, true);
  }
  if (e.pages[int(anchor())] < 0) {
    for (int g = 0; g < kNumKvGroups; ++g)
      if (e.pages[g] >= 0) pools_[g]->set_cached(e.pages[g], false);
    return;
  }
  entries_.emplace(hash, std::move(e));
}

void PrefixCache::drop_entry(uint64_t hash) {
  auto it = entries_.find(hash);
  if (it == entries_.end()) return;
  for (int g = 0; g < kNumKvGroups; ++g)
    if (it->second.pages[g] >= 0) pools_[g]->set_cached(it->second.pages[g], false);
  entries_.erase(it);
}

void PrefixCache::on_evict(KvGroup g, int page) {
  uint64_t h = page_hash_[int(g)][page];
  auto it = entries_.find(h);
  GS_CHECK(it != entries_.end() && it->second.pages[int(g)] == page,
           "prefix cache: evicted page {} is not indexed by the cache", page);
  it->second.pages[int(g)] = -1;
  if (g == anchor()) drop_entry(h);
}

void PrefixCache::check_invariants() const {
  std::vector<int> indexed[kNumKvGroups];
  for (int g = 0; g < kNumKvGroups; ++g)
    if (needs(KvGroup(g))) indexed[g].assign(pools_[g]->num_pages(), 0);
  for (const auto& [hash, e] : entries_) {
    GS_CHECK(e.pages[int(anchor())] >= 0, "prefix cache: entry {:016x} lost its anchor page", hash);
    for (int g = 0; g < kNumKvGroups; ++g) {
      int p = e.pages[g];
      if (p < 0) continue;
      GS_CHECK(needs(KvGroup(g)) && p < int(indexed[g].size()), "prefix cache: entry {:016x} has bad page {}", hash, p);
      GS_CHECK(++indexed[g][p] == 1, "prefix cache: page {} of group {} indexed twice", p, g);
      GS_CHECK(page_hash_[g][p] == hash, "prefix cache: reverse index of page {} is stale", p);
    }
  }
  for (int g = 0; g < kNumKvGroups; ++g)
    for (int p = 0; p < int(indexed[g].size()); ++p)
      GS_CHECK(bool(indexed[g][p]) == pools_[g]->is_cached(p),
               "prefix cache: page {} of group {}: indexed={} but pool says cached={}", p, g, indexed[g][p],
               pools_[g]->is_cached(p));
}

}  // namespace gs
