// Page bookkeeping of running sequences over the two KV pools (ops/kv_cache.h conventions):
// a sequence has one page table per group, logical page i covering positions [i*P, (i+1)*P).
// The full group keeps every page; the sliding group only those that the next query can still see
// (positions >= next_query - W + 1): older sliding pages are released while the request runs and
// their entries set to -1. KV-shared layers own no pages, so they never appear here; a group with
// no cache layers has an empty pool and empty page tables.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/page_pool.h"
#include "engine/prefix_cache.h"
#include "model/model_config.h"
#include "vision/prepared_image.h"

namespace gs {

struct SeqPages {
  std::vector<int> table[kNumKvGroups];
  std::vector<uint64_t> hashes;  // chain hashes of the leading whole pages already indexed (or hit)
  bool cacheable = true;         // false: never looked up nor indexed
  // Prompt pages holding image soft tokens (set_image_keys): page i's image key, and whether the
  // end of page i falls inside an image (a prefix hit never ends there: the rest of that image
  // would start a step mid-image). Empty for text-only prompts.
  std::vector<uint64_t> image_keys;
  std::vector<bool> ends_inside_image;
};

// Keys a prompt's pages by the images whose soft tokens they hold (vision block b is images[b]), so
// a repeated image hits the prefix cache and a different image with the same token ids does not.
// A prompt whose image blocks have no PreparedImage (no content hash to key them by) is made
// not cacheable.
void set_image_keys(SeqPages& s, const std::vector<int>& mm_block, const std::vector<PreparedImagePtr>& images,
                    int page_size);

class KvManager {
 public:
  // num_pages[g] == 0: the model has no cache layers in group g. window: the sliding window W.
  KvManager(int page_size, int window, const int num_pages[kNumKvGroups], bool enable_prefix_caching);

  int page_size() const { return page_size_; }
  int window() const { return window_; }
  bool has_group(KvGroup g) const { return has_[int(g)]; }
  PagePool& pool(KvGroup g) { return *pools_[int(g)]; }
  const PagePool& pool(KvGroup g) const { return *pools_[int(g)]; }
  bool prefix_caching() const { return prefix_ != nullptr; }

  // First logical page group g must still hold when the next query is at position q.
  int first_live_page(KvGroup g, int q) const;
  // New pages group g needs so that positions [start, end) can be written and read by queries
  // starting at `start`.
  int pages_needed(const SeqPages& s, KvGroup g, int start, int end) const;
  // True when both pools can give pages_needed while keeping `reserve[g]` pages available.
  bool can_allocate(const SeqPages& s, int start, int end, const int reserve[kNumKvGroups]) const;
  // Releases sliding pages out of the window of a query at `start`, then allocates what
  // [start, end) needs. All or nothing: false (nothing allocated) when a pool runs short.
  bool allocate(SeqPages& s, int start, int end);
  // Releases sliding pages wholly below next_query - W + 1.
  void release_out_of_window(SeqPages& s, int next_query);
  // Releases every page (in reverse order, so a prefix's tail is evicted before its head).
  void free(SeqPages& s);

  // Prefix cache. Applies the longest usable cached prefix of tokens[0, n) that leaves at least one
  // token to compute; the sequence must hold no pages. Returns the number of cached tokens.
  int apply_prefix_hit(SeqPages& s, const int* tokens, int n);
  // Indexes the sequence's whole pages among its first num_computed tokens.
  void index_computed_pages(SeqPages& s, const int* tokens, int num_computed);

  // Throws gs::Error (with a dump) unless every page-table entry of `seqs` is -1 or a page inside
  // its pool, and every page's reference count equals the number of table entries naming it.
  // `names` label the sequences in the dump.
  void check_ownership(const std::vector<const SeqPages*>& seqs, const std::vector<std::string>& names) const;
  // Pool and prefix-cache internal consistency.
  void check_invariants() const;

 private:
  int page_size_;
  int window_;
  bool has_[kNumKvGroups];
  std::unique_ptr<PagePool> pools_[kNumKvGroups];
  std::unique_ptr<PrefixCache> prefix_;
};

}  // namespace gs
