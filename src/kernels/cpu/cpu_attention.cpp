// Attention over the paged KV cache, done the straightforward way: for every query row and head,
// walk the visible key positions, read K/V through the sequence's page table, f32 softmax.
// qkv_prepare applies the per-head norms and RoPE and writes K/V into their slots.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "kernels/cpu/cpu_ops.h"

namespace gs::cpu {

namespace {

// Element offset of (cache_layer, slot, kv_head) in a pool laid out as
// [cache_layers, num_pages, page_size, kv_heads, head_dim]; slot = page·page_size + offset.
inline int64_t kv_offset(const KvPool& kv, int cache_layer, int64_t slot, int head) {
  return ((int64_t(cache_layer) * kv.num_pages * kv.page_size + slot) * kv.kv_heads + head) * kv.head_dim;
}

// cos/sin of position `pos` for the first head_dim/2 frequencies, in f32 as the reference computes
// them (inv_freq in f32, angle = pos·inv_freq in f32), then rounded to the activation dtype (f32 here).
void rope_tables(const RopeSpec& rope, int pos, int half, float* cos_out, float* sin_out) {
  for (int i = 0; i < half; ++i) {
    float inv = 0.f;
    if (i < rope.rotary_pairs) inv = rope_inv_freq(rope, i);
    const float angle = float(pos) * inv;
    cos_out[i] = std::cos(angle);
    sin_out[i] = std::sin(angle);
  }
}

// Rotate-half RoPE in place on one head: y[i] = x[i]·c − x[i+m]·s, y[i+m] = x[i+m]·c + x[i]·s.
void apply_rope(float* x, const float* c, const float* s, int half) {
  for (int i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    x[i] = a * c[i] + (-b) * s[i];
    x[i + half] = b * c[i] + a * s[i];
  }
}

void check_pool(const char* op, const KvPool& kv, int cache_layer, const AttentionParams& p) {
  GS_CHECK(kv.k.defined() && kv.v.defined(), "cpu {}: the KV pool has no storage", op);
  GS_CHECK(kv.k.dtype == DType::F32 && kv.v.dtype == DType::F32, "cpu {}: KV pool must be f32, got {}", op,
           kv.k.str());
  GS_CHECK(cache_layer >= 0 && cache_layer < kv.cache_layers, "cpu {}: cache layer {} outside [0, {})", op,
           cache_layer, kv.cache_layers);
  GS_CHECK(kv.kv_heads == p.num_kv_heads && kv.head_dim == p.head_dim,
           "cpu {}: pool holds {} heads × {} dims, layer wants {} × {}", op, kv.kv_heads, kv.head_dim, p.num_kv_heads,
           p.head_dim);
}

}  // namespace

void qkv_prepare(ThreadPool& pool, const Tensor& qkv, QkvLayout layout, const AttentionParams& p,
                 const RopeSpec& rope, const Tensor& q_norm_w, const Tensor* k_norm_w, float eps,
                 const AttentionBatch& batch, KvGroup group, KvPool& kv, int cache_layer, const Tensor& q_out) {
  check_f32("qkv_prepare", qkv, "qkv");
  check_f32("qkv_prepare", q_out, "q_out");
  const int T = batch.num_tokens, Nq = p.num_q_heads, Nkv = p.num_kv_heads, d = p.head_dim, half = d / 2;
  GS_CHECK(rope.head_dim == d, "cpu qkv_prepare: RoPE over {} dims for head dim {}", rope.head_dim, d);
  const int64_t width = layout == QkvLayout::QKV        ? int64_t(Nq + 2 * Nkv) * d
                        : layout == QkvLayout::QK_SHARED ? int64_t(Nq + Nkv) * d
                                                         : int64_t(Nq) * d;
  GS_CHECK(qkv.rows() == T && qkv.cols() == width, "cpu qkv_prepare: qkv {} must be [{}, {}]", qkv.str(), T, width);
  GS_CHECK(q_out.rows() == T && q_out.cols() == int64_t(Nq) * d, "cpu qkv_prepare: q_out {} must be [{}, {}]",
           q_out.str(), T, Nq * d);
  GS_CHECK(int(batch.h_positions.size()) == T, "cpu qkv_prepare: batch has no host positions");
  const bool writes = layout != QkvLayout::Q_ONLY;
  const std::vector<int>* slots = nullptr;
  if (writes) {
    GS_CHECK(k_norm_w && k_norm_w->defined(), "cpu qkv_prepare: a layer that writes K/V needs k_norm");
    check_pool("qkv_prepare", kv, cache_layer, p);
    slots = &batch.h_slot_mapping[int(group)];
    GS_CHECK(int(slots->size()) == T, "cpu qkv_prepare: slot mapping has {} rows for {} tokens", slots->size(), T);
    const int64_t capacity = int64_t(kv.num_pages) * kv.page_size;
    for (int t = 0; t < T; ++t)
      GS_CHECK((*slots)[t] < capacity, "cpu qkv_prepare: slot {} of row {} outside the pool ({} slots)", (*slots)[t], t,
               capacity);
  }
  pool.parallel_for(T, 1, [&](int64_t t0, int64_t t1) {
    float* c = thread_scratch(size_t(half), 0);
    float* s = thread_scratch(size_t(half), 1);
    float* tmp = thread_scratch(size_t(d), 2);
    for (int64_t t = t0; t < t1; ++t) {
      rope_tables(rope, batch.h_positions[t], half, c, s);
      const float* row = qkv.ptr<const float>() + t * width;
      for (int h = 0; h < Nq; ++h) {
        float* q = q_out.ptr<float>() + t * int64_t(Nq) * d + int64_t(h) * d;
        rms_norm_row(row + int64_t(h) * d, &q_norm_w, eps, d, q);
        apply_rope(q, c, s, half);
      }
      if (!writes || (*slots)[t] < 0) continue;
      const int64_t slot = (*slots)[t];
      const float* k_raw = row + int64_t(Nq) * d;
      const float* v_raw = layout == QkvLayout::QKV ? row + int64_t(Nq + Nkv) * d : k_raw;
      for (int h = 0; h < Nkv; ++h) {
        float* k = kv.k.ptr<float>() + kv_offset(kv, cache_layer, slot, h);
        rms_norm_row(k_raw + int64_t(h) * d, k_norm_w, eps, d, tmp);
        apply_rope(tmp, c, s, half);
        std::copy(tmp, tmp + d, k);
        float* v = kv.v.ptr<float>() + kv_offset(kv, cache_layer, slot, h);
        rms_norm_row(v_raw + int64_t(h) * d, nullptr, eps, d, v);
      }
    }
  });
}

void attention(ThreadPool& pool, const Tensor& q, const AttentionBatch& batch, KvGroup group, const KvPool& kv,
               int cache_layer, const AttentionParams& p, const Tensor& out) {
  check_f32("attention", q, "q");
  check_f32("attention", out, "out");
  check_pool("attention", kv, cache_layer, p);
  const int T = batch.num_tokens, S = batch.num_seqs, Nq = p.num_q_heads, Nkv = p.num_kv_heads, d = p.head_dim;
  GS_CHECK(Nkv > 0 && Nq % Nkv == 0, "cpu attention: {} query heads do not group over {} KV heads", Nq, Nkv);
  GS_CHECK(q.rows() == T && q.cols() == int64_t(Nq) * d, "cpu attention: q {} must be [{}, {}]", q.str(), T, Nq * d);
  GS_CHECK(out.rows() == T && out.cols() == int64_t(Nq) * d, "cpu attention: out {} must be [{}, {}]", out.str(), T,
           Nq * d);
  GS_CHECK(int(batch.h_positions.size()) == T && int(batch.h_token_seq.size()) == T &&
               int(batch.h_q_start.size()) == S + 1 && int(batch.h_kv_len.size()) == S,
           "cpu attention: the batch's host mirrors do not match {} rows / {} sequences", T, S);
  GS_CHECK(batch.page_size == kv.page_size, "cpu attention: batch page size {} vs pool page size {}", batch.page_size,
           kv.page_size);
  const std::vector<int>& table = batch.h_page_table[int(group)];
  const int max_pages = batch.max_pages[int(group)];
  const int W = p.sliding_window;
  GS_CHECK(table.size() == size_t(S) * size_t(max_pages), "cpu attention: page table has {} entries for {} × {}",
           table.size(), S, max_pages);
  const bool overlay = p.mm_bidirectional && int(batch.h_mm_block.size()) == T;

  // Visible key range of each row: [lo, hi] by the causal/sliding rule, widened to the row's vision
  // block [blo, bhi] by the overlay. Blocks are never split across steps, so a block's keys are rows
  // of this step with consecutive positions.
  std::vector<int> lo(T), hi(T), blo(T, 1), bhi(T, 0);
  for (int t = 0; t < T; ++t) {
    const int s = batch.h_token_seq[t], pos = batch.h_positions[t];
    GS_CHECK(s >= 0 && s < S, "cpu attention: row {} belongs to sequence {} of {}", t, s, S);
    hi[t] = std::min(pos, batch.h_kv_len[s] - 1);
    lo[t] = W > 0 ? std::max(0, pos - W + 1) : 0;
    if (overlay && batch.h_mm_block[t] >= 0) {
      blo[t] = pos;
      bhi[t] = pos;
      for (int r = batch.h_q_start[s]; r < batch.h_q_start[s + 1]; ++r) {
        if (batch.h_mm_block[r] != batch.h_mm_block[t]) continue;
        blo[t] = std::min(blo[t], batch.h_positions[r]);
        bhi[t] = std::max(bhi[t], batch.h_positions[r]);
      }
      if (p.mm_block_in_window) blo[t] = std::max(blo[t], lo[t]);  // the window still bounds the past
    }
    // Every key this row reads must sit on a page the sequence still owns.
    auto check_range = [&](int a, int b) {
      if (a > b) return;
      for (int lp = a / kv.page_size; lp <= b / kv.page_size; ++lp) {
        GS_CHECK(lp < max_pages && table[size_t(s) * max_pages + lp] >= 0,
                 "cpu attention: sequence {} row {} (position {}) needs keys [{}, {}], but logical page {} is not "
                 "owned (page table entry {})",
                 s, t, pos, a, b, lp, lp < max_pages ? table[size_t(s) * max_pages + lp] : -1);
        GS_CHECK(table[size_t(s) * max_pages + lp] < kv.num_pages, "cpu attention: page {} outside the pool ({} pages)",
                 table[size_t(s) * max_pages + lp], kv.num_pages);
      }
    };
    check_range(lo[t], hi[t]);
    if (blo[t] <= bhi[t]) check_range(blo[t], bhi[t]);
  }

  const int group_size = Nq / Nkv;
  pool.parallel_for(int64_t(T) * Nq, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int t = int(i / Nq), h = int(i % Nq), kvh = h / group_size, s = batch.h_token_seq[t];
      const float* qv = q.ptr<const float>() + int64_t(t) * Nq * d + int64_t(h) * d;
      // Union of the two ranges, visited in key order.
      const int first = blo[t] <= bhi[t] ? std::min(lo[t], blo[t]) : lo[t];
      const int last = blo[t] <= bhi[t] ? std::max(hi[t], bhi[t]) : hi[t];
      const int n = std::max(0, last - first + 1);
      float* score = thread_scratch(size_t(n), 0);
      thread_local std::vector<double> acc;
      acc.assign(size_t(d), 0.0);
      float mx = -std::numeric_limits<float>::infinity();
      for (int j = first; j <= last; ++j) {
        const bool visible = (j >= lo[t] && j <= hi[t]) || (j >= blo[t] && j <= bhi[t]);
        if (!visible) {
          score[j - first] = -std::numeric_limits<float>::infinity();
          continue;
        }
        const int page = table[size_t(s) * max_pages + j / kv.page_size];
        assert(page >= 0);
        const float* k = kv.k.ptr<const float>() + kv_offset(kv, cache_layer, int64_t(page) * kv.page_size + j % kv.page_size, kvh);
        double dot = 0;
        for (int e = 0; e < d; ++e) dot += double(qv[e]) * k[e];
        score[j - first] = float(dot) * p.scale;
        mx = std::max(mx, score[j - first]);
      }
      float* o = out.ptr<float>() + int64_t(t) * Nq * d + int64_t(h) * d;
      if (mx == -std::numeric_limits<float>::infinity()) {
        std::fill(o, o + d, 0.f);  // no visible key (cannot happen for a well-formed batch)
        continue;
      }
      double sum = 0;
      for (int j = 0; j < n; ++j) {
        const float e = score[j] == -std::numeric_limits<float>::infinity() ? 0.f : std::exp(score[j] - mx);
        score[j] = e;
        sum += e;
      }
      for (int j = first; j <= last; ++j) {
        const float pj = float(score[j - first] / sum);
        if (pj == 0.f) continue;  // masked keys (which may lie on freed pages) are never read
        const int page = table[size_t(s) * max_pages + j / kv.page_size];
        const float* v = kv.v.ptr<const float>() + kv_offset(kv, cache_layer, int64_t(page) * kv.page_size + j % kv.page_size, kvh);
        for (int e = 0; e < d; ++e) acc[size_t(e)] += double(pj) * v[e];
      }
      for (int e = 0; e < d; ++e) o[e] = float(acc[size_t(e)]);
    }
  });
}

}  // namespace gs::cpu
