// Prefix cache over whole KV pages. A page of tokens is identified by a hash chain:
// hash(page i) = H(hash(page i-1), tokens of page i), so equal hashes mean equal prefixes (the
// tokens and parent are stored and compared too: a 64-bit collision can never serve wrong K/V).
// A page holding image soft tokens also has a key: the content hashes of its images (the soft
// tokens' ids are the same placeholder for every image, so the ids alone would mix images up);
// the key is part of the hash and stored and compared like the tokens.
// One entry records the physical page of that prefix block in each KV group.
//
// Validity with sliding windows: continuing a sequence after a cached prefix of L tokens needs the
// full group's pages for all of it but the sliding group's pages only for the last window
// (positions >= L - W + 1). Sliding pages that fell out of a request's window are released while it
// runs, so the sliding side of an entry may be gone; lookup() shortens a hit to the longest prefix
// whose last window is still complete.
//
// The cache holds no references: an indexed page whose last user released it stays readable on its
// pool's LRU until the pool needs it; on eviction the pool tells us and the entry loses that page.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/page_pool.h"
#include "model/model_config.h"

namespace gs {

class PrefixCache {
 public:
  // pools[g] is null when the model has no cache layers in group g. window: the sliding window W.
  PrefixCache(int page_size, int window, PagePool* pools[kNumKvGroups]);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // key: the page's image key (0: a page of text only, hashed exactly as before images existed).
  static uint64_t chain_hash(uint64_t parent, const int* tokens, int n, uint64_t key = 0);

  struct Hit {
    int num_pages = 0;                  // cached prefix length in pages
    std::vector<uint64_t> hashes;       // chain hashes of those pages
    std::vector<int> pages[kNumKvGroups];  // physical pages; -1 for sliding pages outside the window
  };
  // The longest usable cached prefix of tokens[0, n) of at most max_pages pages. Takes no references.
  // keys[i]: page i's image key (absent or short: 0).
  Hit lookup(const int* tokens, int n, int max_pages, const std::vector<uint64_t>* keys = nullptr) const;

  // Indexes page `index` of a sequence: hash chained to `parent`, its tokens, and its physical pages
  // (-1 where the sequence holds none). When the prefix is already indexed, fills in a sliding page
  // the entry lost but keeps the entry's pages otherwise.
  void insert(uint64_t hash, uint64_t parent, const int* tokens, const int pages[kNumKvGroups], uint64_t key = 0);

  size_t num_entries() const { return entries_.size(); }
  // Throws gs::Error when an entry points at a page its pool does not mark cached, or vice versa.
  void check_invariants() const;

 private:
  struct Entry {
    uint64_t parent = 0;
    uint64_t key = 0;
    std::vector<int> tokens;
    int pages[kNumKvGroups] = {-1, -1};
  };
  const Entry* find(uint64_t hash, uint64_t parent, const int* tokens, uint64_t key) const;
  void on_evict(KvGroup g, int page);
  void drop_entry(uint64_t hash);
  bool needs(KvGroup g) const { return pools_[int(g)] != nullptr; }
  // Which group's page makes an entry worth keeping: full when the model has full layers.
  KvGroup anchor() const { return needs(KvGroup::Full) ? KvGroup::Full : KvGroup::Sliding; }

  int page_size_;
  int window_;
  PagePool* pools_[kNumKvGroups];
  std::unordered_map<uint64_t, Entry> entries_;
  std::vector<uint64_t> page_hash_[kNumKvGroups];  // page -> hash of the entry indexing it
};

}  // namespace gs
