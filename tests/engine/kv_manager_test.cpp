#include "engine/kv_manager.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace gs {
namespace {

constexpr int S = int(KvGroup::Sliding), F = int(KvGroup::Full);

TEST(KvManager, SlidingPagesOutOfTheWindowAreReleasedWhileRunning) {
  const int P = 4, W = 8;
  int pages[2] = {16, 16};
  KvManager kv(P, W, pages, /*prefix=*/false);
  SeqPages s;
  // Prefill 10 tokens: positions 0..9 -> pages 0..2 in both groups.
  ASSERT_TRUE(kv.allocate(s, 0, 10));
  EXPECT_EQ(s.table[S].size(), 3u);
  EXPECT_EQ(kv.pool(KvGroup::Sliding).num_used(), 3);
  // Next query at 10 sees keys >= 3: page 0 (positions 0..3) still holds position 3.
  kv.release_out_of_window(s, 10);
  EXPECT_GE(s.table[S][0], 0);
  // Query at 12 sees keys >= 5: page 0 is wholly out, page 1 (4..7) not.
  ASSERT_TRUE(kv.allocate(s, 12, 13));
  EXPECT_EQ(s.table[S][0], -1);
  EXPECT_GE(s.table[S][1], 0);
  EXPECT_EQ(kv.pool(KvGroup::Sliding).num_used(), 3);  // pages 1, 2, 3
  EXPECT_EQ(kv.pool(KvGroup::Full).num_used(), 4);     // full keeps everything
  // Decode far ahead: the sliding side never holds more than ceil(W / P) + 1 pages.
  for (int q = 13; q < 60; ++q) {
    ASSERT_TRUE(kv.allocate(s, q, q + 1));
    EXPECT_LE(kv.pool(KvGroup::Sliding).num_used(), W / P + 1) << "q=" << q;
  }
  kv.check_ownership({&s}, {"s"});
  kv.free(s);
  EXPECT_EQ(kv.pool(KvGroup::Sliding).num_used(), 0);
  EXPECT_EQ(kv.pool(KvGroup::Full).num_used(), 0);
}

TEST(KvManager, ChunkedPrefillKeepsTheWindowOfTheChunksFirstQuery) {
  const int P = 4, W = 8;
  int pages[2] = {16, 16};
  KvManager kv(P, W, pages, false);
  SeqPages s;
  ASSERT_TRUE(kv.allocate(s, 0, 16));
  // A chunk starting at 16 has its first query at 16: keys >= 9 are needed, page 2 (8..11) stays.
  ASSERT_TRUE(kv.allocate(s, 16, 24));
  EXPECT_EQ(s.table[S][0], -1);
  EXPECT_EQ(s.table[S][1], -1);
  EXPECT_GE(s.table[S][2], 0);
  kv.free(s);
}

TEST(KvManager, AllocationIsAllOrNothing) {
  int pages[2] = {2, 100};
  KvManager kv(4, 8, pages, false);
  SeqPages s;
  EXPECT_FALSE(kv.allocate(s, 0, 12));  // sliding needs 3 pages, has 2
  EXPECT_EQ(kv.pool(KvGroup::Full).num_used(), 0);
  EXPECT_TRUE(kv.allocate(s, 0, 8));
  kv.free(s);
}

TEST(KvManager, PoolWithoutCacheLayersStaysEmpty) {
  int pages[2] = {0, 8};  // no sliding cache layers
  KvManager kv(4, 8, pages, true);
  SeqPages s;
  ASSERT_TRUE(kv.allocate(s, 0, 20));
  EXPECT_TRUE(s.table[S].empty());
  EXPECT_EQ(s.table[F].size(), 5u);
  kv.free(s);
}

TEST(KvManager, PrefixHitSharesPagesAndLeavesOneTokenToCompute) {
  const int P = 4, W = 8;
  int pages[2] = {32, 32};
  KvManager kv(P, W, pages, true);
  std::vector<int> a(17);
  for (int i = 0; i < 17; ++i) a[i] = 100 + i;
  SeqPages sa;
  ASSERT_TRUE(kv.allocate(sa, 0, 17));
  kv.index_computed_pages(sa, a.data(), 17);
  EXPECT_EQ(sa.hashes.size(), 4u);

  // Same 16-token prefix, different tail: 4 pages hit, but only the last window's sliding pages.
  std::vector<int> b(a.begin(), a.begin() + 16);
  b.push_back(7);
  b.push_back(8);
  SeqPages sb;
  EXPECT_EQ(kv.apply_prefix_hit(sb, b.data(), int(b.size())), 16);
  EXPECT_EQ(sb.table[F], std::vector<int>(sa.table[F].begin(), sa.table[F].begin() + 4));
  EXPECT_EQ(sb.table[S][0], -1);  // position 16 sees keys >= 9: sliding pages 2 and 3 only
  EXPECT_EQ(sb.table[S][1], -1);
  EXPECT_EQ(sb.table[S][2], sa.table[S][2]);
  EXPECT_EQ(kv.pool(KvGroup::Full).ref_count(sa.table[F][0]), 2);

  // The identical prompt: the hit stops one page short so its last token is computed.
  SeqPages sc;
  std::vector<int> c(a.begin(), a.begin() + 16);
  EXPECT_EQ(kv.apply_prefix_hit(sc, c.data(), 16), 12);
  kv.check_ownership({&sa, &sb, &sc}, {"a", "b", "c"});
  kv.free(sa);
  kv.free(sb);
  kv.free(sc);
  kv.check_invariants();
  EXPECT_EQ(kv.pool(KvGroup::Full).num_evictable(), 4);  // the indexed pages stay readable
  EXPECT_EQ(kv.pool(KvGroup::Full).num_free(), 28);
}

TEST(KvManager, HitIsShortenedWhenTheSlidingWindowPagesAreGone) {
  const int P = 4, W = 8;
  int pages[2] = {32, 32};
  KvManager kv(P, W, pages, true);
  std::vector<int> a(40);
  for (int i = 0; i < 40; ++i) a[i] = 7 * i + 1;
  SeqPages sa;
  // Run in chunks of one page, indexing after each step like the scheduler does.
  for (int q = 0; q < 40; q += 4) {
    ASSERT_TRUE(kv.allocate(sa, q, q + 4));
    kv.index_computed_pages(sa, a.data(), q + 4);
    kv.release_out_of_window(sa, q + 4);
  }
  kv.free(sa);
  // Evict sliding pages until the pool has to reuse indexed ones: take every page.
  std::vector<int> taken;
  for (int i = 0; i < 32; ++i) taken.push_back(kv.pool(KvGroup::Sliding).allocate());
  for (int p : taken) kv.pool(KvGroup::Sliding).release(p);
  // The full pages are all cached but no sliding page is: only a hit of length 0 is usable
  // (a prefix of L tokens needs sliding pages for positions >= L - W + 1, which exist only for L = 0).
  SeqPages sb;
  EXPECT_EQ(kv.apply_prefix_hit(sb, a.data(), 40), 0);
  kv.free(sb);
  kv.check_invariants();
}

TEST(KvManager, OwnershipCheckCatchesABadEntry) {
  int pages[2] = {8, 8};
  KvManager kv(4, 8, pages, false);
  SeqPages s;
  ASSERT_TRUE(kv.allocate(s, 0, 8));
  s.table[F][1] = 99;
  EXPECT_THROW(kv.check_ownership({&s}, {"bad"}), Error);
  s.table[F][1] = s.table[F][0];  // two entries, one reference
  EXPECT_THROW(kv.check_ownership({&s}, {"bad"}), Error);
}

}  // namespace
}  // namespace gs
