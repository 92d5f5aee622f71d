// qkv_prepare + attention over the paged cache against a double-precision reference: ragged
// batches of sequences with cached prefixes, random physical page placement, GQA, head dims
// 64/256/512, default and proportional RoPE, windows smaller and larger than the sequences,
// freed (poisoned) sliding pages, K=V and Q-only layouts, and the vision-block overlay.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "ops/attention_batch.h"
#include "ops/kv_cache.h"
#include "test_util.h"

namespace gs::test {
namespace {

constexpr KvGroup kGroup = KvGroup::Sliding;
constexpr int kCacheLayer = 1;  // of 2: exercises the layer offset inside the pool

struct Seq {
  int cached = 0, q_len = 0;
  std::vector<int> table;          // logical -> physical page
  std::vector<int> mm;             // vision block of each new row (-1: text); empty: none
};

// The host side of an AttentionBatch, as the runner's batch builder fills it.
AttentionBatch make_batch(const std::vector<Seq>& seqs, int page_size, bool prefix_step) {
  AttentionBatch b;
  b.num_seqs = int(seqs.size());
  b.page_size = page_size;
  b.h_q_start.push_back(0);
  bool any_mm = false;
  for (const Seq& s : seqs) any_mm |= !s.mm.empty();
  size_t max_pages = 0;
  for (const Seq& s : seqs) max_pages = std::max(max_pages, s.table.size());
  b.max_pages[int(kGroup)] = int(max_pages);
  for (int i = 0; i < b.num_seqs; ++i) {
    const Seq& s = seqs[size_t(i)];
    const int first = prefix_step ? 0 : s.cached, n = prefix_step ? s.cached : s.q_len;
    for (int r = 0; r < n; ++r) {
      const int pos = first + r;
      b.h_positions.push_back(pos);
      b.h_token_seq.push_back(i);
      b.h_slot_mapping[int(kGroup)].push_back(s.table[size_t(pos / page_size)] * page_size + pos % page_size);
      if (any_mm) b.h_mm_block.push_back(!prefix_step && !s.mm.empty() ? s.mm[size_t(r)] : -1);
    }
    b.h_q_start.push_back(b.h_q_start.back() + n);
    b.h_kv_len.push_back(first + n);
    std::vector<int> padded = s.table;
    padded.resize(max_pages, -1);
    b.h_page_table[int(kGroup)].insert(b.h_page_table[int(kGroup)].end(), padded.begin(), padded.end());
  }
  b.num_tokens = int(b.h_positions.size());
  return b;
}

struct Case {
  int head_dim, num_q, num_kv, page_size, window;
  RopeSpec rope;
  QkvLayout layout;
  bool overlay;
};

// Reference of one head vector: rms_norm (with weight) then RoPE, in double.
std::vector<double> norm_rope_ref(const float* x, const Tensor* w, const RopeSpec& rope, int pos, int d) {
  std::vector<double> xd(x, x + d);
  std::vector<double> y = rms_norm_ref(xd.data(), d, w, 1e-6);
  if (rope.head_dim == 0) return y;
  const int half = d / 2;
  std::vector<double> out(y);
  for (int i = 0; i < half; ++i) {
    const double inv = i < rope.rotary_pairs ? std::pow(double(rope.theta), -2.0 * i / rope.freq_dim) : 0.0;
    const double c = std::cos(pos * inv), s = std::sin(pos * inv);
    out[size_t(i)] = y[size_t(i)] * c - y[size_t(i + half)] * s;
    out[size_t(i + half)] = y[size_t(i + half)] * c + y[size_t(i)] * s;
  }
  return out;
}

void run_case(const Case& c, Rng& rng) {
  auto be = make_cpu_backend(3);
  const int d = c.head_dim, Nq = c.num_q, Nkv = c.num_kv, ps = c.page_size;
  const int width = c.layout == QkvLayout::QKV ? (Nq + 2 * Nkv) * d : (Nq + Nkv) * d;

  // Sequences: a mix of fresh prefills, continued chunks and single decode tokens.
  std::vector<Seq> seqs(size_t(rng.integer(1, 4)));
  int total_pages = 0;
  for (Seq& s : seqs) {
    s.cached = rng.integer(0, 3) == 0 ? 0 : rng.integer(1, 40);
    s.q_len = rng.integer(0, 2) == 0 ? 1 : rng.integer(1, 12);
    total_pages += (s.cached + s.q_len + ps - 1) / ps;
  }
  if (c.overlay) {
    // One image block inside the new rows of the first sequence, wider than the window.
    Seq& s = seqs[0];
    s.q_len = std::max(s.q_len, 10);
    total_pages += 1;
    s.mm.assign(size_t(s.q_len), -1);
    const int b0 = rng.integer(0, 2), b1 = s.q_len - rng.integer(0, 2);
    for (int r = b0; r < b1; ++r) s.mm[size_t(r)] = 0;
  }
  const int num_pages = total_pages + 3;
  std::vector<int> perm(static_cast<size_t>(num_pages));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng.gen);
  size_t next = 0;
  for (Seq& s : seqs)
    for (int p = 0; p < (s.cached + s.q_len + ps - 1) / ps; ++p) s.table.push_back(perm[next++]);

  KvPool pool;
  pool.cache_layers = 2;
  pool.num_pages = num_pages;
  pool.page_size = ps;
  pool.kv_heads = Nkv;
  pool.head_dim = d;
  pool.k = poisoned(Shape{2, num_pages, ps, Nkv, d});
  pool.v = poisoned(Shape{2, num_pages, ps, Nkv, d});

  Tensor q_norm = random_tensor(rng, DType::BF16, Shape{d}, 0.3f, 1.7f);
  Tensor k_norm = random_tensor(rng, DType::BF16, Shape{d}, 0.3f, 1.7f);
  // Raw projection rows of every position of every sequence.
  std::vector<Tensor> raw;
  for (const Seq& s : seqs) raw.push_back(random_tensor(rng, DType::F32, Shape{s.cached + s.q_len, width}, -2, 2));

  AttentionParams p;
  p.num_q_heads = Nq;
  p.num_kv_heads = Nkv;
  p.head_dim = d;
  p.sliding_window = c.window;
  p.mm_bidirectional = c.overlay;

  auto gather_rows = [&](bool prefix) {
    int rows = 0;
    for (const Seq& s : seqs) rows += prefix ? s.cached : s.q_len;
    Tensor t = host_tensor(DType::F32, Shape{std::max(rows, 1), width});
    int r = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      const int first = prefix ? 0 : seqs[i].cached, n = prefix ? seqs[i].cached : seqs[i].q_len;
      std::copy_n(raw[i].ptr<float>() + int64_t(first) * width, int64_t(n) * width, t.ptr<float>() + int64_t(r) * width);
      r += n;
    }
    return t.view(Shape{std::max(rows, 1), width}).slice(0, rows);
  };

  // Step 1: the cached prefixes write their K/V.
  {
    AttentionBatch b = make_batch(seqs, ps, true);
    if (b.num_tokens > 0) {
      Tensor qkv = gather_rows(true), q = poisoned(Shape{b.num_tokens, Nq * d});
      be->qkv_prepare(qkv, c.layout, p, c.rope, q_norm, &k_norm, 1e-6f, b, kGroup, pool, kCacheLayer, q);
    }
  }
  // Sliding pages entirely before every new query's window are freed: -1 in the table and
  // poisoned in the pool, so reading one would turn the output into NaN.
  if (c.window > 0 && !c.overlay) {
    for (Seq& s : seqs) {
      const int first_visible = std::max(0, s.cached - c.window + 1);
      for (int lp = 0; (lp + 1) * ps <= first_visible; ++lp) {
        const int page = s.table[size_t(lp)];
        for (int64_t e = 0; e < int64_t(ps) * Nkv * d; ++e) {
          const int64_t off = ((int64_t(kCacheLayer) * num_pages + page) * ps) * Nkv * d + e;
          pool.k.ptr<float>()[off] = pool.v.ptr<float>()[off] = std::nanf("");
        }
        s.table[size_t(lp)] = -1;
      }
    }
  }
  // Step 2: the new rows write their K/V and attend.
  AttentionBatch b = make_batch(seqs, ps, false);
  const int T = b.num_tokens;
  Tensor qkv = gather_rows(false), q = poisoned(Shape{T, Nq * d}), out = poisoned(Shape{T, Nq * d});
  be->qkv_prepare(qkv, c.layout, p, c.rope, q_norm, &k_norm, 1e-6f, b, kGroup, pool, kCacheLayer, q);
  // Q-only: a KV-shared layer with its own queries reads the K/V just written.
  Tensor q_only_rows = random_tensor(rng, DType::F32, Shape{T, Nq * d}, -2, 2);
  const bool q_only = c.layout == QkvLayout::QK_SHARED;
  if (q_only) be->qkv_prepare(q_only_rows, QkvLayout::Q_ONLY, p, c.rope, q_norm, nullptr, 1e-6f, b, kGroup, pool,
                              kCacheLayer, q);
  be->attention(q, b, kGroup, pool, kCacheLayer, p, out);

  // Reference.
  std::vector<double> want_q, want_out;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const Seq& s = seqs[i];
    const int n = s.cached + s.q_len;
    std::vector<std::vector<double>> K(size_t(n) * Nkv), Vv(size_t(n) * Nkv);
    for (int j = 0; j < n; ++j)
      for (int h = 0; h < Nkv; ++h) {
        const float* row = raw[i].ptr<float>() + int64_t(j) * width;
        K[size_t(j) * Nkv + h] = norm_rope_ref(row + (Nq + h) * d, &k_norm, c.rope, j, d);
        const float* vr = c.layout == QkvLayout::QKV ? row + (Nq + Nkv + h) * d : row + (Nq + h) * d;
        Vv[size_t(j) * Nkv + h] = norm_rope_ref(vr, nullptr, RopeSpec{0.f, 0, 0, 0}, j, d);
      }
    for (int r = 0; r < s.q_len; ++r) {
      const int pos = s.cached + r;
      const int row_index = b.h_q_start[i] + r;
      for (int h = 0; h < Nq; ++h) {
        const float* qr = q_only ? q_only_rows.ptr<float>() + int64_t(row_index) * Nq * d + h * d
                                 : raw[i].ptr<float>() + int64_t(pos) * width + h * d;
        std::vector<double> qv = norm_rope_ref(qr, &q_norm, c.rope, pos, d);
        want_q.insert(want_q.end(), qv.begin(), qv.end());
        const int kvh = h / (Nq / Nkv);
        std::vector<double> sc(static_cast<size_t>(n), -INFINITY);
        double mx = -INFINITY;
        for (int j = 0; j < n; ++j) {
          bool vis = j <= pos && (c.window == 0 || pos - j < c.window);
          if (!s.mm.empty() && s.mm[size_t(r)] >= 0 && j >= s.cached && s.mm[size_t(j - s.cached)] == s.mm[size_t(r)])
            vis = true;
          if (!vis) continue;
          double dot = 0;
          for (int e = 0; e < d; ++e) dot += qv[size_t(e)] * K[size_t(j) * Nkv + kvh][size_t(e)];
          sc[size_t(j)] = dot;
          mx = std::max(mx, dot);
        }
        double sum = 0;
        for (double& x : sc) sum += (x = std::isinf(x) ? 0.0 : std::exp(x - mx));
        for (int e = 0; e < d; ++e) {
          double o = 0;
          for (int j = 0; j < n; ++j)
            if (sc[size_t(j)] > 0) o += sc[size_t(j)] / sum * Vv[size_t(j) * Nkv + kvh][size_t(e)];
          want_out.push_back(o);
        }
      }
    }
  }
  expect_close(q, want_q, 1e-4, 1e-4, "q after norm + RoPE");
  expect_close(out, want_out, 2e-4, 2e-4, "attention output");
}

RopeSpec default_rope(int d) { return RopeSpec{10000.f, d, d / 2, d}; }
RopeSpec proportional_rope(int d) { return RopeSpec{1e6f, d, d / 8, d}; }

TEST(CpuAttention, SlidingLayersHeadDim256Gqa) {
  Rng rng;
  SCOPED_TRACE(rng.trace());
  for (int window : {3, 7, 16, 200})
    for (int ps : {4, 16}) run_case({256, 4, 2, ps, window, default_rope(256), QkvLayout::QKV, false}, rng);
}

TEST(CpuAttention, FullLayersHeadDim512ProportionalRope) {
  Rng rng;
  SCOPED_TRACE(rng.trace());
  for (int ps : {8, 16}) run_case({512, 2, 1, ps, 0, proportional_rope(512), QkvLayout::QKV, false}, rng);
}

TEST(CpuAttention, KEqualsVAndQOnlyLayers) {
  Rng rng;
  SCOPED_TRACE(rng.trace());
  run_case({512, 4, 1, 8, 0, proportional_rope(512), QkvLayout::QK_SHARED, false}, rng);
  run_case({64, 4, 2, 4, 5, default_rope(64), QkvLayout::QK_SHARED, false}, rng);
}

TEST(CpuAttention, MultiHeadWithoutGrouping) {
  Rng rng;
  SCOPED_TRACE(rng.trace());
  run_case({64, 3, 3, 4, 9, default_rope(64), QkvLayout::QKV, false}, rng);
}

TEST(CpuAttention, VisionBlockSeesItsWholeImageBeyondTheWindow) {
  Rng rng;
  SCOPED_TRACE(rng.trace());
  for (int window : {4, 0}) run_case({64, 2, 1, 4, window, default_rope(64), QkvLayout::QKV, true}, rng);
}

TEST(CpuAttention, RefusesToReadAFreedPage) {
  auto be = make_cpu_backend(1);
  const int d = 64, ps = 4;
  KvPool pool;
  pool.cache_layers = 1;
  pool.num_pages = 4;
  pool.page_size = ps;
  pool.kv_heads = 1;
  pool.head_dim = d;
  pool.k = poisoned(Shape{1, 4, ps, 1, d});
  pool.v = poisoned(Shape{1, 4, ps, 1, d});
  std::vector<Seq> seqs(1);
  seqs[0].cached = 7;
  seqs[0].q_len = 1;
  seqs[0].table = {-1, 2};  // page 0 freed, but a full-attention query needs it
  AttentionBatch b = make_batch(seqs, ps, false);
  AttentionParams p;
  p.num_q_heads = 1;
  p.num_kv_heads = 1;
  p.head_dim = d;
  p.sliding_window = 0;
  Tensor q = poisoned(Shape{1, d}), out = poisoned(Shape{1, d});
  EXPECT_THROW(be->attention(q, b, kGroup, pool, 0, p, out), Error);
  p.sliding_window = 4;  // positions 4..7 only: page 0 is never needed
  Rng rng;
  Tensor k = random_tensor(rng, DType::F32, Shape{1, 4, ps, 1, d});
  pool.k = k;
  pool.v = random_tensor(rng, DType::F32, Shape{1, 4, ps, 1, d});
  q = random_tensor(rng, DType::F32, Shape{1, d});
  EXPECT_NO_THROW(be->attention(q, b, kGroup, pool, 0, p, out));
  for (int e = 0; e < d; ++e) EXPECT_TRUE(std::isfinite(out.ptr<float>()[e]));
}

}  // namespace
}  // namespace gs::test
