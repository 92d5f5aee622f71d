#include "engine/page_pool.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/error.h"

namespace gs {
namespace {

TEST(PagePool, AllocatesEveryPageOnceThenRunsDry) {
  PagePool pool(5);
  std::set<int> got;
  for (int i = 0; i < 5; ++i) {
    int p = pool.allocate();
    ASSERT_GE(p, 0);
    EXPECT_TRUE(got.insert(p).second);
  }
  EXPECT_EQ(pool.allocate(), -1);
  EXPECT_EQ(pool.num_used(), 5);
  for (int p : got) pool.release(p);
  EXPECT_EQ(pool.num_free(), 5);
  pool.check_invariants("test");
}

TEST(PagePool, CachedPagesAreEvictedLeastRecentlyReleasedFirst) {
  PagePool pool(3);
  int a = pool.allocate(), b = pool.allocate(), c = pool.allocate();
  pool.set_cached(a, true);
  pool.set_cached(b, true);
  pool.release(b);  // b released first: evicted first
  pool.release(a);
  EXPECT_EQ(pool.num_evictable(), 2);
  EXPECT_EQ(pool.num_available(), 2);
  std::vector<int> evicted;
  pool.on_evict = [&](int p) { evicted.push_back(p); };
  EXPECT_EQ(pool.allocate(), b);
  pool.retain(a);  // a prefix hit takes a back out of the LRU
  EXPECT_EQ(pool.allocate(), -1);
  EXPECT_EQ(evicted, std::vector<int>{b});
  EXPECT_EQ(pool.ref_count(a), 1);
  EXPECT_FALSE(pool.is_cached(b));
  (void)c;
  pool.check_invariants("test");
}

TEST(PagePool, MisuseIsAClearError) {
  PagePool pool(2);
  EXPECT_THROW(pool.release(0), Error);       // unreferenced
  EXPECT_THROW(pool.retain(7), Error);        // out of range
  EXPECT_THROW(pool.set_cached(1, true), Error);  // free page cannot hold a cached prefix
}

// Random allocate / retain / release / cache / uncache; at the end everything comes back.
TEST(PagePool, RandomOperationsNeverLeak) {
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 20; ++round) {
    int n = 1 + int(rng() % 40);
    PagePool pool(n);
    std::multiset<int> held;  // one element per reference we own
    std::set<int> cached;
    pool.on_evict = [&](int p) { cached.erase(p); };
    for (int op = 0; op < 500; ++op) {
      switch (rng() % 5) {
        case 0:
        case 1: {
          int p = pool.allocate();
          if (p >= 0) held.insert(p);
          else EXPECT_EQ(pool.num_available(), 0);
          break;
        }
        case 2:
          if (!held.empty()) {
            auto it = std::next(held.begin(), rng() % held.size());
            pool.release(*it);
            held.erase(it);
          }
          break;
        case 3:
          if (!cached.empty()) {
            int p = *std::next(cached.begin(), rng() % cached.size());
            if (pool.ref_count(p) == 0) {
              pool.retain(p);
              held.insert(p);
            } else {
              pool.set_cached(p, false);
              cached.erase(p);
            }
          }
          break;
        case 4:
          if (!held.empty()) {
            int p = *std::next(held.begin(), rng() % held.size());
            pool.set_cached(p, true);
            cached.insert(p);
          }
          break;
      }
      ASSERT_NO_THROW(pool.check_invariants("random"));
      ASSERT_EQ(pool.num_used(), int(std::set<int>(held.begin(), held.end()).size() +
                                     [&] {
                                       int k = 0;
                                       for (int p : cached) k += pool.ref_count(p) == 0;
                                       return k;
                                     }()));
    }
    for (int p : held) pool.release(p);
    for (int p : std::set<int>(cached)) pool.set_cached(p, false);
    EXPECT_EQ(pool.num_free(), n);
    pool.check_invariants("random");
  }
}

}  // namespace
}  // namespace gs
