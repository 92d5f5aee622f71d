// gs::cuda::paged_attention against a double-precision reference (attention_harness.cpp) on fresh
// random inputs: both head dims, GQA groups 1..16, ragged lengths, page sizes, windows below and
// above the sequence, freed sliding pages, chunks over a cached prefix, the vision overlay,
// decode and verify batches, with and without split-KV. Skipped where no CUDA device exists.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attention_harness.h"
#include "core/error.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_plan.cuh"

namespace gs::test {
namespace {

class Attention : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device";
    seed_ = std::random_device{}();
    rng_.seed(seed_);
  }
  AttnResult expect_exact(const AttnCase& c, const std::string& what) {
    SCOPED_TRACE(what + " (seed " + std::to_string(seed_) + ")");
    const AttnResult r = run_attention_case(c, rng_);
    EXPECT_EQ(r.nonfinite, 0) << "of " << r.elems << " outputs";
    EXPECT_LT(r.rel_err, 1e-2);
    EXPECT_EQ(r.bad_elems, 0) << "first: " << r.first_bad;
    return r;
  }
  // A case with `n` sequences of random cached prefix in [0, max_cached] and q_len in [1, max_q].
  std::vector<SeqCase> ragged(int n, int max_cached, int max_q) {
    std::vector<SeqCase> seqs(n);
    for (auto& s : seqs) {
      s.cached = std::uniform_int_distribution<int>(0, max_cached)(rng_);
      s.q_len = std::uniform_int_distribution<int>(1, max_q)(rng_);
    }
    return seqs;
  }
  // Each case with the kernel forced, split (as planned) and unsplit.
  void expect_exact_forced(std::vector<std::pair<AttnCase, std::string>>& cases, int kernel, const std::string& name) {
    for (auto& [c, what] : cases) {
      c.force_kernel = kernel;
      expect_exact(c, name + what);
      c.use_workspace = false;
      expect_exact(c, name + what + ", unsplit");
    }
  }
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

AttnCase make(int hd, int nq, int nkv, int window, int page_size, std::vector<SeqCase> seqs) {
  AttnCase c;
  c.head_dim = hd, c.num_q_heads = nq, c.num_kv_heads = nkv, c.window = window, c.page_size = page_size;
  c.seqs = std::move(seqs);
  return c;
}

// Rows at arbitrary positions (a drafter queries at a fixed position) with a non-unit scale.
AttnCase explicit_positions(int hd) {
  SeqCase s(60, 4);
  s.positions = {63, 10, 63, 41};
  AttnCase c = make(hd, 4, 1, 0, 16, {s});
  c.scale = 0.0625f;
  c.q_amp = 2.f;
  return c;
}

TEST_F(Attention, PrefillCausalBothHeadDimsAllGroups) {
  for (int hd : {256, 512})
    for (int group : {1, 2, 4, 8}) {
      const int nkv = group == 1 ? 2 : 1;
      expect_exact(make(hd, group * nkv, nkv, 0, 16, {{0, 77}}),
                   "hd " + std::to_string(hd) + " group " + std::to_string(group));
    }
}

TEST_F(Attention, PrefillRaggedBatchPageSizes) {
  for (int ps : {16, 32, 48})
    for (int hd : {256, 512}) {
      AttnCase c = make(hd, 8, 2, 0, ps, {{0, 1}, {0, 130}, {0, 33}, {0, 64}, {0, 65}});
      expect_exact(c, "page size " + std::to_string(ps) + " hd " + std::to_string(hd));
    }
}

TEST_F(Attention, ChunkOverCachedPrefix) {
  expect_exact(make(512, 8, 2, 0, 16, {{150, 70}, {31, 200}, {1000, 17}}), "hd 512 chunks");
  expect_exact(make(256, 4, 2, 0, 32, ragged(6, 600, 150)), "hd 256 random chunks");
}

TEST_F(Attention, SlidingWindowSmallerAndLargerThanSequence) {
  expect_exact(make(256, 4, 2, 64, 16, {{0, 300}}), "window 64 < 300 rows");
  expect_exact(make(256, 8, 1, 1024, 16, {{100, 50}}), "window 1024 > 150 keys");
  expect_exact(make(256, 2, 2, 100, 32, {{0, 250}, {300, 37}}), "window 100, not a tile multiple");
  expect_exact(make(512, 8, 2, 48, 16, {{0, 129}}), "hd 512 with a window");
}

TEST_F(Attention, SlidingWindowSkipsFreedPages) {
  for (int ps : {16, 32}) {
    AttnCase c = make(256, 4, 2, 128, ps, {{500, 40}, {700, 1}, {129, 5}, {64, 64}});
    c.free_below_window = true;
    SCOPED_TRACE("page size " + std::to_string(ps));
    expect_exact(c, "freed sliding pages");
  }
  AttnCase decode = make(256, 16, 8, 96, 16, ragged(20, 1500, 1));
  decode.free_below_window = true;
  expect_exact(decode, "decode with freed pages");
}

TEST_F(Attention, VisionBlocksAttendBidirectionally) {
  // Two images in one chunk over a text prefix; the first image is longer than the window, so its
  // rows see keys of their own block far outside the window, and earlier rows see later keys.
  SeqCase s(20, 100);
  s.mm_block.assign(100, -1);
  for (int i = 30; i < 70; ++i) s.mm_block[i] = 0;
  for (int i = 80; i < 90; ++i) s.mm_block[i] = 1;
  AttnCase sliding = make(256, 4, 2, 16, 16, {s, {5, 9}});
  sliding.mm_bidirectional = true;
  expect_exact(sliding, "sliding window 16 with vision blocks");
  sliding.free_below_window = true;
  expect_exact(sliding, "vision blocks with freed pages");
  AttnCase full = make(512, 8, 1, 0, 32, {s});
  full.mm_bidirectional = true;
  expect_exact(full, "causal hd 512 with vision blocks");
}

TEST_F(Attention, DecodeBatchOfMixedLengths) {
  for (int group : {1, 2, 4, 8, 16}) {
    const int nkv = group >= 8 ? 1 : 2;
    expect_exact(make(512, group * nkv, nkv, 0, 16, ragged(12, 3000, 1)), "hd 512 group " + std::to_string(group));
    expect_exact(make(256, group * nkv, nkv, 512, 32, ragged(12, 3000, 1)), "hd 256 group " + std::to_string(group));
  }
}

TEST_F(Attention, DecodeWithoutAndWithSmallWorkspace) {
  AttnCase c = make(512, 8, 2, 0, 16, ragged(5, 2000, 1));
  c.use_workspace = false;
  EXPECT_EQ(expect_exact(c, "single pass").splits, 1);
  c.use_workspace = true;
  c.workspace_bytes = 3 * 5 * 8 * (512 + 2) * 4;  // room for three splits only
  EXPECT_EQ(expect_exact(c, "three splits").splits, 3);
}

TEST_F(Attention, VerifyShapes) {
  for (int q = 2; q <= 8; q += 3) {
    expect_exact(make(512, 8, 1, 0, 16, ragged(6, 900, q)), "hd 512 group 8 verify " + std::to_string(q));
    expect_exact(make(256, 4, 2, 512, 16, ragged(6, 900, q)), "hd 256 group 2 verify " + std::to_string(q));
    expect_exact(make(256, 8, 1, 512, 16, ragged(3, 900, q)), "hd 256 group 8 verify " + std::to_string(q));
  }
}

TEST_F(Attention, ExplicitPositionsAndScale) {
  AttnCase c = explicit_positions(256);
  expect_exact(c, "explicit positions");
  c.window = 20;
  expect_exact(c, "explicit positions, window 20");
}

// A drafter's rows (model/gemma4_drafter.h): one query per sequence at the position one past its
// last key, several sequences, GQA over two KV heads, the drafter's window (W + 2) and none.
TEST_F(Attention, QueriesOnePastTheCache) {
  for (int hd : {256, 512})
    for (int window : {0, 18}) {
      if (hd == 512 && window) continue;  // full layers have no window
      std::vector<SeqCase> seqs;
      for (int cached : {4, 15, 38, 300}) {
        SeqCase s(cached, 1);
        s.positions = {cached + 1};  // the harness's one new key sits at `cached`: keys 0..cached
        seqs.push_back(s);
      }
      expect_exact(make(hd, 4, 2, window, 16, seqs),
                   "hd " + std::to_string(hd) + " window " + std::to_string(window));
      expect_exact(make(hd, 4, 2, window, 4, seqs), "page size 4, hd " + std::to_string(hd));
    }
}

// Every tile kernel, whatever shape class the dispatcher gives it, on prefill, chunk, sliding,
// vision, decode and verify shapes of its head dim.
TEST_F(Attention, EveryTileKernelOnEveryShape) {
  for (int k = 0; k < cuda::attn::kNumTileKernels; ++k) {
    const auto info = cuda::attn::tile_kernel_info(cuda::attn::TileKernel(k));
    const bool wgmma = cuda::attn::is_wgmma_kernel(cuda::attn::TileKernel(k));
    if (wgmma && !cuda::attn::wgmma_supported()) continue;  // sm_90a only
    const int hd = info.head_dim;
    SeqCase img(10, 60);
    img.mm_block.assign(60, -1);
    for (int i = 5; i < 45; ++i) img.mm_block[i] = 0;
    std::vector<AttnCase> cases = {
        make(hd, 8, 2, 0, 16, {{0, 100}, {37, 20}}),
        make(hd, 4, 2, 40, 32, {{0, 150}, {200, 30}}),
        make(hd, 8, 1, 0, 16, ragged(9, 1500, 1)),
        make(hd, 4, 2, 0, 16, ragged(5, 800, 6)),
        make(hd, 2, 1, 12, 16, {img}),
    };
    cases[1].free_below_window = true;
    cases[4].mm_bidirectional = true;
    cases.push_back(cases[4]);
    cases.back().mm_in_window = true;  // transformers 5.17's overlay: the window still bounds the past
    for (size_t i = 0; i < cases.size(); ++i) {
      cases[i].force_kernel = k;
      expect_exact(cases[i], std::string(info.name) + ", case " + std::to_string(i));
      cases[i].use_workspace = false;
      expect_exact(cases[i], std::string(info.name) + ", case " + std::to_string(i) + " unsplit");
    }
  }
}

// The Hopper wgmma kernels on every shape class they accept, forced (whatever the dispatcher
// would pick): ragged batches, row counts not a multiple of the 128/64-row tile, page sizes that
// split key tiles, windows below and above the sequence, chunks over a cached prefix, freed
// sliding pages, GQA groups 1..8, explicit positions and scale, few-row (decode/verify) batches,
// split and unsplit.
TEST_F(Attention, WgmmaKernelsOnEveryShapeTheyAccept) {
  if (!cuda::attn::wgmma_supported()) GTEST_SKIP() << "needs an sm_90 GPU";
  using cuda::attn::TileKernel;
  for (TileKernel kernel : {TileKernel::Hd256WgmmaSerial, TileKernel::Hd512WgmmaSerialTmaPair,
                            TileKernel::Hd256WgmmaPersistent, TileKernel::Hd512WgmmaPairPersistent}) {
    const int k = int(kernel), hd = cuda::attn::tile_kernel_info(kernel).head_dim;
    const std::string name = std::string(cuda::attn::tile_kernel_info(kernel).name) + ": ";
    std::vector<std::pair<AttnCase, std::string>> cases;
    for (int group : {1, 2, 3, 4, 8}) {
      const int nkv = group == 1 ? 2 : 1;
      cases.push_back({make(hd, group * nkv, nkv, 0, 16, {{0, 77}}), "causal group " + std::to_string(group)});
      cases.push_back({make(hd, group * nkv, nkv, 0, 16, {{0, 300}}), "causal 300 rows group " + std::to_string(group)});
    }
    for (int ps : {16, 32, 48, 8, 24})
      cases.push_back({make(hd, 8, 2, 0, ps, {{0, 1}, {0, 130}, {0, 33}, {0, 64}, {0, 65}, {0, 129}}),
                       "ragged, page size " + std::to_string(ps)});
    cases.push_back({make(hd, 8, 2, 0, 16, {{150, 70}, {31, 200}, {1000, 17}}), "chunks over a prefix"});
    cases.push_back({make(hd, 4, 2, 0, 32, ragged(6, 600, 150)), "random chunks"});
    cases.push_back({make(hd, 4, 2, 64, 16, {{0, 300}}), "window 64 < 300 rows"});
    cases.push_back({make(hd, 8, 1, 1024, 16, {{100, 50}}), "window 1024 > 150 keys"});
    cases.push_back({make(hd, 2, 2, 100, 32, {{0, 250}, {300, 37}}), "window 100"});
    cases.push_back({make(hd, 16, 8, 37, 16, ragged(5, 700, 90)), "window 37, ragged chunks"});
    for (int ps : {16, 32}) {
      AttnCase c = make(hd, 4, 2, 128, ps, {{500, 40}, {700, 1}, {129, 5}, {64, 64}, {0, 400}});
      c.free_below_window = true;
      cases.push_back({c, "freed sliding pages, page size " + std::to_string(ps)});
    }
    AttnCase decode = make(hd, 16, 8, 96, 16, ragged(20, 1500, 1));
    decode.free_below_window = true;
    cases.push_back({decode, "decode with freed pages"});
    cases.push_back({make(hd, 8, 1, 0, 16, ragged(9, 1500, 1)), "decode group 8"});
    cases.push_back({make(hd, 8, 2, 0, 16, ragged(6, 900, 5)), "verify 5"});
    AttnCase pos = explicit_positions(hd);
    cases.push_back({pos, "explicit positions"});
    pos.window = 20;
    cases.push_back({pos, "explicit positions, window 20"});
    expect_exact_forced(cases, k, name);
  }
}

// The persistent kernels over launches with several units per CTA or cluster (the shapes above
// give most of them one): the queue's claims, the hand-over of a claim to the partner CTA, units
// skipped because their sequence is shorter, a pair whose second tile is past the end, and the
// queue left at zero for the next launch (each case runs twice).
TEST_F(Attention, PersistentKernelsOverManyUnits) {
  if (!cuda::attn::wgmma_supported()) GTEST_SKIP() << "needs an sm_90 GPU";
  using cuda::attn::TileKernel;
  for (TileKernel kernel : {TileKernel::Hd256WgmmaPersistent, TileKernel::Hd512WgmmaPairPersistent}) {
    const int hd = cuda::attn::tile_kernel_info(kernel).head_dim;
    const std::string name = std::string(cuda::attn::tile_kernel_info(kernel).name) + ": ";
    std::vector<std::pair<AttnCase, std::string>> cases;
    cases.push_back({make(hd, 8, 1, 0, 16, {{0, 2000}}), "2000 rows, group 8"});
    cases.push_back({make(hd, 8, 2, 0, 16, {{0, 1500}, {0, 100}, {200, 900}}), "ragged, a chunk over a prefix"});
    cases.push_back({make(hd, 8, 2, 0, 32, {{0, 1500}, {0, 100}, {200, 900}}), "ragged, page size 32"});
    for (auto& [c, what] : cases) {
      c.force_kernel = int(kernel);
      expect_exact(c, name + what);
      expect_exact(c, name + what + ", again");
    }
  }
}

// The split-d decode kernels (attention_decode.cuh) forced on every decode and verify shape class:
// GQA groups 1..16 (3 and 6 not powers of two), ragged lengths across page boundaries, page sizes
// that are not powers of two or not multiples of the key tile, windows with freed pages, explicit
// positions, split (fused combine) and unsplit.
TEST_F(Attention, SplitDecodeKernelsOnEveryDecodeShape) {
  using cuda::attn::TileKernel;
  for (TileKernel kernel : {TileKernel::Hd512Split8Pair, TileKernel::Hd256Split8}) {
    const int hd = cuda::attn::tile_kernel_info(kernel).head_dim;
    const std::string name = std::string(cuda::attn::tile_kernel_info(kernel).name) + ": ";
    std::vector<std::pair<AttnCase, std::string>> cases;
    for (int group : {1, 2, 3, 4, 6, 8, 16}) {
      const int nkv = group <= 4 ? 2 : 1;
      cases.push_back({make(hd, group * nkv, nkv, 0, 16, ragged(7, 2500, 1)), "decode group " + std::to_string(group)});
    }
    for (int ps : {8, 24, 32, 48})
      cases.push_back({make(hd, 8, 1, 0, ps, ragged(5, 1200, 1)), "decode page size " + std::to_string(ps)});
    cases.push_back({make(hd, 8, 1, 0, 16, {{0, 1}, {15, 1}, {16, 1}, {31, 1}, {32, 1}, {33, 1}}), "short contexts"});
    cases.push_back({make(hd, 32, 4, 0, 16, {{4000, 1}}), "batch 1, long context (many splits)"});
    AttnCase freed = make(hd, 16, 8, 96, 16, ragged(20, 1500, 1));
    freed.free_below_window = true;
    cases.push_back({freed, "decode with freed sliding pages"});
    cases.push_back({make(hd, 8, 2, 1024, 32, ragged(6, 3000, 1)), "window 1024"});
    cases.push_back({make(hd, 8, 2, 0, 16, ragged(6, 900, 2)), "verify up to 2 (8 rows)"});
    cases.push_back({make(hd, 4, 2, 0, 16, ragged(6, 900, 5)), "verify up to 5 (10 rows)"});
    cases.push_back({explicit_positions(hd), "explicit positions"});
    expect_exact_forced(cases, int(kernel), name);
  }
}

// Split keys merged in the kernel's last split CTA: the same output, bit for bit, as the separate
// combine kernel on the same inputs, and as every replay of the launch captured in a CUDA graph
// (the arrival counters reset themselves; the splits are merged in split order, not arrival order).
TEST_F(Attention, FusedCombineIsExactAndReplaysBitIdentically) {
  using cuda::attn::TileKernel;
  struct Item {
    TileKernel kernel;
    AttnCase c;
    const char* what;
  };
  std::vector<Item> items = {
      {TileKernel::Hd512Split8Pair, make(512, 32, 4, 0, 16, {{4000, 1}}), "hd512 split d pair, batch 1, 4 KV heads"},
      {TileKernel::Hd512Split8Pair, make(512, 8, 1, 0, 16, ragged(3, 3000, 1)), "hd512 split d pair, batch 3"},
      {TileKernel::Hd512Split8Pair, make(512, 8, 1, 0, 16, {{8000, 1}}), "hd512 split d pair, batch 1, 8k (128)"},
      {TileKernel::Hd256Narrow, make(256, 32, 16, 1024, 16, {{3000, 1}}), "hd256 narrow sliding, batch 1"},
      {TileKernel::Hd256Split8, make(256, 8, 2, 0, 16, ragged(2, 2000, 1)), "hd256 split d, batch 2"},
      {TileKernel::Hd256WideQuad, make(256, 8, 2, 0, 16, {{1500, 20}}), "hd256 wide, short chunk"},
      {TileKernel::Hd512Wide, make(512, 8, 2, 0, 16, {{1500, 20}}), "hd512 wide, short chunk"},
  };
  for (auto& [kernel, c, what] : items) {
    c.force_kernel = int(kernel);
    c.graph_replays = 3;
    const std::mt19937_64 inputs = rng_;  // both runs draw the same inputs
    rng_ = inputs;
    const AttnResult fused = expect_exact(c, std::string(what) + ", fused");
    EXPECT_GT(fused.splits, 1) << what;
    EXPECT_EQ(fused.replay_mismatches, 0) << what;
    rng_ = inputs;
    c.separate_combine = true;
    const AttnResult separate = expect_exact(c, std::string(what) + ", combine kernel");
    EXPECT_EQ(separate.replay_mismatches, 0) << what;
    EXPECT_TRUE(fused.out == separate.out) << what << ": fused and separate combine differ";
  }
}

// The vision overlay in the wgmma kernels, forced: 280-token images (the default budget) in
// chunks over a cached prefix, crossing the sliding window, several 128-row query tiles and the
// chunk's first row (an image that starts right where the previous chunk ended), next to text-only
// sequences and CTAs of a pair with and without image rows; sliding (hd 256) and, as the params
// may ask, full layers (hd 512); GQA groups 1 and 4; split and unsplit.
TEST_F(Attention, WgmmaKernelsApplyTheVisionOverlay) {
  if (!cuda::attn::wgmma_supported()) GTEST_SKIP() << "needs an sm_90 GPU";
  using cuda::attn::TileKernel;
  auto image = [](SeqCase s, int first, int len, int block) {
    if (s.mm_block.empty()) s.mm_block.assign(size_t(s.q_len), -1);
    for (int i = first; i < first + len; ++i) s.mm_block[size_t(i)] = block;
    return s;
  };
  // 300 cached keys, a 400-row chunk: text, a 280-token image, text, a 10-token image at the end.
  const SeqCase mixed = image(image(SeqCase(300, 400), 100, 280, 0), 390, 10, 1);
  // The chunk starts with an image (the one before it ended at the cached prefix's end).
  const SeqCase at_start = image(SeqCase(256, 300), 0, 280, 0);
  const SeqCase text(37, 150);
  for (TileKernel kernel : {TileKernel::Hd256WgmmaSerial, TileKernel::Hd512WgmmaSerialTmaPair,
                            TileKernel::Hd256WgmmaPersistent, TileKernel::Hd512WgmmaPairPersistent}) {
    const int hd = cuda::attn::tile_kernel_info(kernel).head_dim;
    const std::string name = cuda::attn::tile_kernel_info(kernel).name;
    for (int group : {1, 4})
      for (int window : {64, 1024, 0}) {
        AttnCase c = make(hd, 2 * group, 2, window, 16, {mixed, text, at_start});
        c.mm_bidirectional = true;
        c.force_kernel = int(kernel);
        const std::string what = name + ", group " + std::to_string(group) + ", window " + std::to_string(window);
        expect_exact(c, what);
        c.use_workspace = false;
        expect_exact(c, what + " unsplit");
        c.use_workspace = true;
        c.mm_in_window = true;  // transformers 5.17: an image's earlier keys only inside the window
        expect_exact(c, what + ", overlay inside the window");
      }
    // An image alone (every row of the chunk in one block) and a page size that cuts key tiles.
    AttnCase one = make(hd, 4, 1, 128, 48, {image(SeqCase(0, 280), 0, 280, 0)});
    one.mm_bidirectional = true;
    one.force_kernel = int(kernel);
    one.free_below_window = true;
    expect_exact(one, name + ", one image, freed pages below the window");
  }
}

// The dispatcher keeps prefill batches with the overlay on the wgmma kernels (Hopper).
TEST_F(Attention, DispatcherSendsTheOverlayToWgmma) {
  if (!cuda::attn::wgmma_supported()) GTEST_SKIP() << "needs an sm_90 GPU";
  SeqCase img(10, 300);
  img.mm_block.assign(300, -1);
  for (int i = 10; i < 290; ++i) img.mm_block[size_t(i)] = 0;
  AttnCase c = make(256, 8, 4, 1024, 16, {img});
  c.mm_bidirectional = true;
  const AttnResult r = expect_exact(c, "hd 256 sliding with an image, dispatcher's choice");
  EXPECT_TRUE(cuda::attn::is_wgmma_kernel(cuda::attn::TileKernel(r.kernel))) << "kernel " << r.kernel;
}

// Verify steps: a few sequences with more than 16 packed query rows take the decode tiles while
// their key reads stay small, the prefill tiles once long contexts or many sequences multiply them.
TEST_F(Attention, DispatcherTakesDecodeTilesForSmallVerifySteps) {
  using cuda::attn::TileKernel;
  auto chosen = [&](AttnCase c, const std::string& what) { return TileKernel(expect_exact(c, what).kernel); };
  EXPECT_EQ(chosen(make(256, 8, 1, 512, 16, {{900, 4}}), "hd 256 group 8, 4 queries, window 512"),
            TileKernel::Hd256Split8);
  EXPECT_EQ(chosen(make(512, 8, 1, 0, 16, {{900, 8}}), "hd 512 group 8, 8 queries"), TileKernel::Hd512Split8Pair);
  if (!cuda::attn::wgmma_supported()) return;
  EXPECT_TRUE(cuda::attn::is_wgmma_kernel(
      chosen(make(512, 32, 4, 0, 16, {{6000, 4}, {6000, 4}}), "hd 512, 4 KV heads, 6k context")));
  EXPECT_TRUE(cuda::attn::is_wgmma_kernel(
      chosen(make(256, 8, 1, 0, 16, {{900, 9}, {900, 9}}), "hd 256 group 8, 9 queries")));
}

// Argument checks run before anything touches the GPU, so they also run where there is none.
TEST(AttentionArgs, RejectsWhatItCannotCompute) {
  int fake = 0;
  auto dev = [&](DType dt, Shape s) {
    Tensor t;
    t.data = &fake, t.dtype = dt, t.shape = s, t.device = Device::CUDA;
    return t;
  };
  AttentionBatch b;
  b.num_seqs = 1, b.num_tokens = 2, b.max_q_len = 2, b.max_kv_len = 2, b.page_size = 16;
  KvPool pool;
  pool.cache_layers = 1, pool.num_pages = 1, pool.page_size = 16, pool.kv_heads = 1, pool.head_dim = 256;
  pool.k = pool.v = dev(DType::BF16, {1, 1, 16, 1, 256});
  AttentionParams p;
  p.num_q_heads = 2, p.num_kv_heads = 1, p.head_dim = 256;
  const Tensor q = dev(DType::BF16, {2, 512});
  auto message = [&](const Tensor& qq, const AttentionParams& pp, int layer) {
    try {
      cuda::paged_attention(qq, b, KvGroup::Full, pool, layer, pp, qq, nullptr, 0, nullptr);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  AttentionParams bad_hd = p;
  bad_hd.head_dim = 128;
  EXPECT_NE(message(q, bad_hd, 0).find("head_dim 128"), std::string::npos);
  AttentionParams bad_group = p;
  bad_group.num_q_heads = 3, bad_group.num_kv_heads = 2;
  EXPECT_NE(message(q, bad_group, 0).find("3 query heads"), std::string::npos);
  EXPECT_NE(message(dev(DType::F32, {2, 512}), p, 0).find("q is f32"), std::string::npos);
  EXPECT_NE(message(dev(DType::BF16, {2, 256}), p, 0).find("expected [2, 512]"), std::string::npos);
  EXPECT_NE(message(q, p, 1).find("cache layer 1"), std::string::npos);
  EXPECT_NE(message(q, p, 0).find("AttentionBatch.positions is undefined"), std::string::npos);
  b.positions = b.q_start = b.kv_len = dev(DType::I32, {2});
  b.page_table[int(KvGroup::Full)] = dev(DType::I32, {1, 1});
  b.max_pages[int(KvGroup::Full)] = 1;
  b.h_q_start = {0, 2};
  b.h_kv_len = {40};  // more keys than max_kv_len says: the grid would be planned too small
  EXPECT_NE(message(q, p, 0).find("sequence 0 has q_len 2 and kv_len 40"), std::string::npos);
}

}  // namespace
}  // namespace gs::test
