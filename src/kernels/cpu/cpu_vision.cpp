// The vision tower's own ops (gemma4-architecture.md §4.2), in f32: the clipped linears' clamp, the
// patch embedding's 2-D position table, 2-D RoPE, the 3×3 pooler, standardize, the soft-token
// scatter and bidirectional attention over packed images.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_ops.h"

namespace gs::cpu {

void clamp(ThreadPool& pool, const Tensor& x, float lo, float hi) {
  check_f32("clamp", x, "x");
  GS_CHECK(!(lo > hi), "cpu clamp: lower bound {} above upper bound {}", lo, hi);
  float* p = x.ptr<float>();
  pool.parallel_for(x.numel(), 1 << 14, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) p[i] = std::min(std::max(p[i], lo), hi);
  });
}

void vision_position_add(ThreadPool& pool, const Tensor& x, const Tensor& table, const Tensor& pos_xy) {
  check_f32("vision_position_add", x, "x");
  check_float("vision_position_add", table, "table");
  check_i32("vision_position_add", pos_xy, "pos_xy");
  const int64_t R = x.rows(), H = x.cols();
  GS_CHECK(table.ndim() == 3 && table.dim(0) == 2 && table.dim(2) == H,
           "cpu vision_position_add: table {} must be [2, P, {}]", table.str(), H);
  GS_CHECK(pos_xy.numel() == 2 * R, "cpu vision_position_add: pos_xy {} must be [{}, 2]", pos_xy.str(), R);
  const int64_t P = table.dim(1);
  const int* pos = pos_xy.ptr<const int>();
  for (int64_t r = 0; r < R; ++r)
    GS_CHECK(pos[2 * r] >= 0 && pos[2 * r] < P && pos[2 * r + 1] >= 0 && pos[2 * r + 1] < P,
             "patch {} at position ({}, {}) is outside the position table ({} entries per axis)", r, pos[2 * r],
             pos[2 * r + 1], P);
  pool.parallel_for(R, 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* row = x.ptr<float>() + r * H;
      const int64_t ex = int64_t(pos[2 * r]) * H, ey = (P + pos[2 * r + 1]) * H;
      for (int64_t c = 0; c < H; ++c) row[c] += load(table, ex + c) + load(table, ey + c);
    }
  });
}

void vision_rope(ThreadPool& pool, const Tensor& x, const Tensor& pos_xy, int heads, int head_dim, float theta) {
  check_f32("vision_rope", x, "x");
  check_i32("vision_rope", pos_xy, "pos_xy");
  const int64_t R = x.rows(), W = x.cols();
  GS_CHECK(W == int64_t(heads) * head_dim && head_dim % 4 == 0,
           "cpu vision_rope: x {} is not [rows, {} heads x {}] (head_dim a multiple of 4)", x.str(), heads, head_dim);
  GS_CHECK(pos_xy.numel() == 2 * R, "cpu vision_rope: pos_xy {} must be [{}, 2]", pos_xy.str(), R);
  const int s = head_dim / 2, half = s / 2;
  // Inverse frequencies as the reference computes them: 1 / theta^(2i/s) in f32, the same for both axes.
  std::vector<float> inv(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) inv[size_t(i)] = 1.0f / std::pow(theta, float(2 * i) / float(s));
  const int* pos = pos_xy.ptr<const int>();
  pool.parallel_for(R, 8, [&](int64_t r0, int64_t r1) {
    std::vector<float> c(static_cast<size_t>(s)), sn(static_cast<size_t>(s));  // [axis][i]
    for (int64_t r = r0; r < r1; ++r) {
      for (int a = 0; a < 2; ++a)
        for (int i = 0; i < half; ++i) {
          const float ang = float(pos[2 * r + a]) * inv[size_t(i)];
          c[size_t(a * half + i)] = std::cos(ang);
          sn[size_t(a * half + i)] = std::sin(ang);
        }
      for (int h = 0; h < heads; ++h) {
        float* v = x.ptr<float>() + r * W + int64_t(h) * head_dim;
        for (int a = 0; a < 2; ++a) {
          float* part = v + a * s;
          for (int i = 0; i < half; ++i) {
            const float x1 = part[i], x2 = part[i + half];
            const float cs = c[size_t(a * half + i)], sv = sn[size_t(a * half + i)];
            part[i] = x1 * cs - x2 * sv;
            part[i + half] = x2 * cs + x1 * sv;
          }
        }
      }
    }
  });
}

void vision_pool(ThreadPool& pool, const Tensor& x, const Tensor& src, float scale, const Tensor& out) {
  check_f32("vision_pool", x, "x");
  check_f32("vision_pool", out, "out");
  check_i32("vision_pool", src, "src");
  const int64_t H = x.cols(), C = out.rows(), K = src.cols();
  GS_CHECK(out.cols() == H && src.rows() == C && K > 0, "cpu vision_pool: x {}, src {}, out {} do not agree", x.str(),
           src.str(), out.str());
  const int* idx = src.ptr<const int>();
  for (int64_t i = 0; i < C * K; ++i)
    GS_CHECK(idx[i] >= 0 && idx[i] < x.rows(), "cpu vision_pool: source row {} outside [0, {})", idx[i], x.rows());
  const float w = 1.0f / float(K);
  pool.parallel_for(C, 4, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      float* o = out.ptr<float>() + c * H;
      std::fill(o, o + H, 0.f);
      for (int64_t j = 0; j < K; ++j) {
        const float* row = x.ptr<const float>() + int64_t(idx[c * K + j]) * H;
        for (int64_t e = 0; e < H; ++e) o[e] += w * row[e];
      }
      for (int64_t e = 0; e < H; ++e) o[e] *= scale;
    }
  });
}

void standardize(ThreadPool& pool, const Tensor& x, const Tensor& bias, const Tensor& scale) {
  check_f32("standardize", x, "x");
  const int64_t H = x.cols();
  GS_CHECK(bias.numel() == H && scale.numel() == H, "cpu standardize: bias {} / scale {} must have {} entries",
           bias.str(), scale.str(), H);
  std::vector<float> b(static_cast<size_t>(H)), s(static_cast<size_t>(H));
  load_row(bias, 0, H, b.data());
  load_row(scale, 0, H, s.data());
  pool.parallel_for(x.rows(), 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* row = x.ptr<float>() + r * H;
      for (int64_t e = 0; e < H; ++e) row[e] = (row[e] - b[size_t(e)]) * s[size_t(e)];
    }
  });
}

void scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst) {
  check_f32("scatter_rows", src, "src");
  check_f32("scatter_rows", dst, "dst");
  check_i32("scatter_rows", rows, "rows");
  const int64_t H = dst.cols(), N = rows.numel();
  GS_CHECK(src.cols() == H && src.rows() == N, "cpu scatter_rows: src {} must be [{}, {}]", src.str(), N, H);
  const int* r = rows.ptr<const int>();
  for (int64_t i = 0; i < N; ++i) {
    GS_CHECK(r[i] >= 0 && r[i] < dst.rows(), "cpu scatter_rows: row {} outside [0, {})", r[i], dst.rows());
    std::copy_n(src.ptr<const float>() + i * H, H, dst.ptr<float>() + int64_t(r[i]) * H);
  }
}

void vision_attention(ThreadPool& pool, const Tensor& q, const Tensor& k, const Tensor& v,
                      const std::vector<int>& cu, int heads, int head_dim, const Tensor& out) {
  for (const Tensor* t : {&q, &k, &v, &out}) check_f32("vision_attention", *t, "q/k/v/out");
  const int64_t W = int64_t(heads) * head_dim, R = out.rows();
  GS_CHECK(q.cols() == W && k.cols() == W && v.cols() == W && out.cols() == W && q.rows() == R && k.rows() == R &&
               v.rows() == R,
           "cpu vision_attention: q {}, k {}, v {}, out {} must all be [rows, {}]", q.str(), k.str(), v.str(),
           out.str(), W);
  GS_CHECK(!cu.empty() && cu.front() == 0 && cu.back() == R, "cpu vision_attention: cu_rows must run from 0 to {}",
           R);
  std::vector<int> image_of(static_cast<size_t>(R));
  for (size_t i = 0; i + 1 < cu.size(); ++i) {
    GS_CHECK(cu[i] <= cu[i + 1], "cpu vision_attention: cu_rows is not ascending at {}", i);
    for (int r = cu[i]; r < cu[i + 1]; ++r) image_of[size_t(r)] = int(i);
  }
  pool.parallel_for(R * heads, 1, [&](int64_t i0, int64_t i1) {
    std::vector<double> acc(static_cast<size_t>(head_dim));
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t r = i / heads, h = i % heads;
      const int img = image_of[size_t(r)], lo = cu[size_t(img)], hi = cu[size_t(img) + 1];
      const float* qv = q.ptr<const float>() + r * W + h * head_dim;
      float* score = thread_scratch(size_t(hi - lo), 0);
      float mx = -std::numeric_limits<float>::infinity();
      for (int j = lo; j < hi; ++j) {
        const float* kv = k.ptr<const float>() + int64_t(j) * W + h * head_dim;
        double dot = 0;
        for (int e = 0; e < head_dim; ++e) dot += double(qv[e]) * kv[e];
        score[j - lo] = float(dot);  // scale 1.0
        mx = std::max(mx, score[j - lo]);
      }
      double sum = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int j = lo; j < hi; ++j) {
        const double e = std::exp(double(score[j - lo]) - mx);
        sum += e;
        const float* vv = v.ptr<const float>() + int64_t(j) * W + h * head_dim;
        for (int d = 0; d < head_dim; ++d) acc[size_t(d)] += e * vv[d];
      }
      float* o = out.ptr<float>() + r * W + h * head_dim;
      for (int d = 0; d < head_dim; ++d) o[d] = float(acc[size_t(d)] / sum);
    }
  });
}

}  // namespace gs::cpu
