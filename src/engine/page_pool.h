// The page allocator of one KV pool (sliding or full). Pages are reference-counted so a prefix
// cache hit can share them between requests. An unreferenced page is either free or still holds a
// cached prefix: cached pages stay readable until the pool runs short, then the least recently
// released one is evicted (its owner, the prefix cache, is told through on_evict).
#pragma once
#include <functional>
#include <list>
#include <string>
#include <vector>

namespace gs {

class PagePool {
 public:
  explicit PagePool(int num_pages);

  int num_pages() const { return int(refs_.size()); }
  int num_free() const { return int(free_.size()); }
  int num_evictable() const { return int(lru_.size()); }
  // Pages allocate() can hand out right now.
  int num_available() const { return num_free() + num_evictable(); }
  // Pages that are referenced or keep a cached prefix.
  int num_used() const { return num_pages() - num_free(); }

  // A page with one reference: a free one, else the least recently released cached page after
  // evicting it. -1 when every page is referenced.
  int allocate();
  void retain(int page);   // one more reference; a cached unreferenced page leaves the LRU
  void release(int page);  // one reference less; at zero the page becomes evictable or free

  // The prefix cache marks pages whose contents it indexes. Unmarking an unreferenced page frees it.
  void set_cached(int page, bool cached);
  bool is_cached(int page) const { return cached_[page]; }
  int ref_count(int page) const { return refs_[page]; }

  // Called with the page about to be reused, before allocate() returns it.
  std::function<void(int page)> on_evict;

  // Throws gs::Error when the free list, LRU and reference counts disagree.
  void check_invariants(const std::string& pool_name) const;

 private:
  void check_page(int page, const char* what) const;
  std::vector<int> refs_;
  std::vector<bool> cached_;
  std::vector<int> free_;  // LIFO: recently freed pages are reused first (warm in caches)
  std::list<int> lru_;     // unreferenced cached pages, least recently released first
  std::vector<std::list<int>::iterator> lru_pos_;
  std::vector<bool> in_lru_;
};

}  // namespace gs
