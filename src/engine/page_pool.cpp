#include "engine/page_pool.h"

#include "core/error.h"

namespace gs {

PagePool::PagePool(int num_pages)
    : refs_(num_pages, 0), cached_(num_pages, false), lru_pos_(num_pages), in_lru_(num_pages, false) {
  GS_CHECK(num_pages >= 0, "page pool: negative page count {}", num_pages);
  free_.reserve(num_pages);
  // Reversed so that pages come out in ascending order (easier to read in dumps).
  for (int p = num_pages - 1; p >= 0; --p) free_.push_back(p);
}

void PagePool::check_page(int page, const char* what) const {
  GS_CHECK(page >= 0 && page < num_pages(), "page pool: {} of page {} outside [0, {})", what, page, num_pages());
}

int PagePool::allocate() {
  int page;
  if (!free_.empty()) {
    page = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    page = lru_.front();
    lru_.pop_front();
    in_lru_[page] = false;
    // The owner drops its index entry; it may call set_cached(page, false) itself, which is a no-op
    // on the flag we clear below.
    if (on_evict) on_evict(page);
    cached_[page] = false;
  } else {
    return -1;
  }
  refs_[page] = 1;
  return page;
}

void PagePool::retain(int page) {
  check_page(page, "retain");
  if (refs_[page] == 0) {
    GS_CHECK(in_lru_[page], "page pool: retain of free page {}", page);
    lru_.erase(lru_pos_[page]);
    in_lru_[page] = false;
  }
  ++refs_[page];
}

void PagePool::release(int page) {
  check_page(page, "release");
  GS_CHECK(refs_[page] > 0, "page pool: release of unreferenced page {}", page);
  if (--refs_[page] > 0) return;
  if (cached_[page]) {
    lru_pos_[page] = lru_.insert(lru_.end(), page);
    in_lru_[page] = true;
  } else {
    free_.push_back(page);
  }
}

void PagePool::set_cached(int page, bool cached) {
  check_page(page, "set_cached");
  if (cached_[page] == cached) return;
  cached_[page] = cached;
  if (refs_[page] > 0) return;
  if (!cached && in_lru_[page]) {
    lru_.erase(lru_pos_[page]);
    in_lru_[page] = false;
    free_.push_back(page);
  } else if (cached) {
    // Caching a free page would make it readable while on the free list: never legitimate.
    throw Error("page pool: set_cached on free page {}", page);
  }
}

void PagePool::check_invariants(const std::string& pool_name) const {
  std::vector<int> seen(refs_.size(), 0);
  for (int p : free_) {
    GS_CHECK(p >= 0 && p < num_pages(), "{} pool: free list holds page {} outside [0, {})", pool_name, p, num_pages());
    GS_CHECK(++seen[p] == 1, "{} pool: page {} twice on the free list", pool_name, p);
    GS_CHECK(refs_[p] == 0 && !cached_[p], "{} pool: free page {} has {} refs, cached={}", pool_name, p, refs_[p],
             bool(cached_[p]));
  }
  for (int p : lru_) {
    GS_CHECK(++seen[p] == 1, "{} pool: page {} both free and evictable, or twice in the LRU", pool_name, p);
    GS_CHECK(refs_[p] == 0 && cached_[p] && in_lru_[p], "{} pool: evictable page {} has {} refs, cached={}",
             pool_name, p, refs_[p], bool(cached_[p]));
  }
  for (int p = 0; p < num_pages(); ++p) {
    GS_CHECK(refs_[p] >= 0, "{} pool: page {} has negative refs", pool_name, p);
    if (refs_[p] == 0)
      GS_CHECK(seen[p] == 1, "{} pool: page {} is unreferenced but neither free nor evictable (leak)", pool_name, p);
  }
}

}  // namespace gs
