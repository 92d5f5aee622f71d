// cuda vs cpu qkv_prepare: every QKV layout, both head dims with the real RoPE specs (default over
// 256, proportional over 512), GQA, rows that write no KV (slot -1), positions far from zero.
// The cache is NaN-poisoned, so both the written slots and q_out must be fully written.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "backend_harness.h"

namespace gs::test {
namespace {

class QkvPrepare : public CudaVsCpu {
 protected:
  // Positions and slots on both backends, with the host mirrors the cpu backend reads.
  void make_batches(const std::vector<int>& pos, const std::vector<int>& slots, KvGroup g, AttentionBatch& bc,
                    AttentionBatch& bg) {
    const int T = int(pos.size());
    for (AttentionBatch* b : {&bc, &bg}) {
      b->num_seqs = 1, b->num_tokens = T, b->max_q_len = T, b->page_size = 16;
      b->h_positions = pos;
      b->h_slot_mapping[int(g)] = slots;
    }
    bc.positions = cpu_ints(pos, {T});
    bc.slot_mapping[int(g)] = cpu_ints(slots, {T});
    bg.positions = gpu_ints(pos, {T});
    bg.slot_mapping[int(g)] = gpu_ints(slots, {T});
  }

  KvPool make_pool(Backend& b, DType dt, int pages, int heads, int d) {
    KvPool p;
    p.cache_layers = 2, p.num_pages = pages, p.page_size = 16, p.kv_heads = heads, p.head_dim = d;
    Shape s{2, pages, 16, heads, d};
    p.k = b.empty(dt, s);
    p.v = b.empty(dt, s);
    if (&b == gpu.get()) gpu->fill(p.k, NAN), gpu->fill(p.v, NAN);
    return p;
  }

  // Rows [slot·heads·d, +heads·d) of cache layer `layer` for each written slot.
  std::vector<float> written(Backend& b, const Tensor& cache, int layer, const std::vector<int>& slots, int pages,
                             int heads, int d) {
    std::vector<float> all = download(b, cache), out;
    const int64_t per_slot = int64_t(heads) * d, layer_off = int64_t(layer) * pages * 16 * per_slot;
    for (int s : slots)
      if (s >= 0) out.insert(out.end(), all.begin() + layer_off + s * per_slot, all.begin() + layer_off + (s + 1) * per_slot);
    return out;
  }
};

TEST_F(QkvPrepare, AllLayoutsBothHeadDims) {
  struct Case { int d; QkvLayout layout; KvGroup group; RopeSpec rope; };
  const RopeSpec sliding{10000.f, 256, 128, 256}, full{1e6f, 512, 64, 512};
  const Case cases[] = {{256, QkvLayout::QKV, KvGroup::Sliding, sliding},
                        {512, QkvLayout::QKV, KvGroup::Full, full},
                        {512, QkvLayout::QK_SHARED, KvGroup::Full, full},
                        {256, QkvLayout::Q_ONLY, KvGroup::Sliding, sliding}};
  for (const Case& c : cases) {
    const int nq = 4, nkv = 2, d = c.d, T = 7, pages = 4, layer = 1;
    const int width = c.layout == QkvLayout::QKV ? (nq + 2 * nkv) * d
                      : c.layout == QkvLayout::QK_SHARED ? (nq + nkv) * d : nq * d;
    auto qkv = random_bf16(int64_t(T) * width, -2.f, 2.f);
    auto [qwc, qwg] = weight(random_bf16(d, 0.5f, 1.5f), Shape{d});
    auto [kwc, kwg] = weight(random_bf16(d, 0.5f, 1.5f), Shape{d});
    std::vector<int> pos = random_ints(T, 0, 70000), slots(pages * 16);
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng);  // distinct slots anywhere in the pool
    slots.resize(T);
    slots[2] = -1;  // a row that writes no KV
    AttentionBatch bc, bg;
    make_batches(pos, slots, c.group, bc, bg);
    KvPool pc = make_pool(*cpu, DType::F32, pages, nkv, d), pg = make_pool(*gpu, DType::BF16, pages, nkv, d);
    AttentionParams p;
    p.num_q_heads = nq, p.num_kv_heads = nkv, p.head_dim = d;
    Tensor qc = cpu->empty(DType::F32, {T, nq * d}), qg = gpu_poisoned(DType::BF16, {T, nq * d});
    cpu->qkv_prepare(cpu_act(qkv, {T, width}), c.layout, p, c.rope, qwc, &kwc, 1e-6f, bc, c.group, pc, layer, qc);
    gpu->qkv_prepare(gpu_act(qkv, {T, width}), c.layout, p, c.rope, qwg, &kwg, 1e-6f, bg, c.group, pg, layer, qg);
    const std::string what = "d=" + std::to_string(d) + " layout=" + std::to_string(int(c.layout));
    expect_close(qg, qc, kBf16Tol, "q " + what);
    if (c.layout == QkvLayout::Q_ONLY) {
      auto k = download(*gpu, pg.k);
      for (float v : k) ASSERT_TRUE(std::isnan(v)) << "Q_ONLY wrote the cache, " << what;
      continue;
    }
    EXPECT_LE(rel_error(written(*gpu, pg.k, layer, slots, pages, nkv, d), written(*cpu, pc.k, layer, slots, pages, nkv, d)),
              kBf16Tol) << "k " << what << " seed " << seed;
    EXPECT_LE(rel_error(written(*gpu, pg.v, layer, slots, pages, nkv, d), written(*cpu, pc.v, layer, slots, pages, nkv, d)),
              kBf16Tol) << "v " << what << " seed " << seed;
    // The other cache layer and every unwritten slot stay untouched (NaN).
    auto k_all = download(*gpu, pg.k);
    int64_t written_count = 0;
    for (float v : k_all) written_count += !std::isnan(v);
    int rows_written = 0;
    for (int s : slots) rows_written += s >= 0;
    EXPECT_EQ(written_count, int64_t(rows_written) * nkv * d) << what;
  }
}

}  // namespace
}  // namespace gs::test
