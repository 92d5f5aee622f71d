// Row-wise and element-wise ops: embedding, RMSNorm (Gemma-4 form: raw weight, no 1+w), residual
// add, tanh-GELU gating, per-layer inputs (PLE), row gather and the final soft-cap.
#include <cmath>
#include <cstring>

#include "kernels/cpu/cpu_ops.h"

namespace gs::cpu {

namespace {
void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  GS_CHECK(a.numel() == b.numel() && a.cols() == b.cols(), "cpu {}: shapes {} and {} differ", op, a.str(), b.str());
}
}  // namespace

float gelu_tanh(float x) {
  // 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))), evaluated in double and rounded once.
  const double k = 0.7978845608028654;  // sqrt(2/pi)
  double xd = x;
  return float(0.5 * xd * (1.0 + std::tanh(k * (xd + 0.044715 * xd * xd * xd))));
}

void rms_norm_row(const float* x, const Tensor* w, float eps, int64_t n, float* y) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  // The reference computes mean(x²) + eps in f32 and raises it to the power -1/2.
  const float ms = float(ss / double(n)) + eps;
  const float inv = 1.0f / std::sqrt(ms);
  if (w && w->defined()) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * inv) * load(*w, i);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv;
  }
}

void embedding(ThreadPool& pool, const Tensor& table, const Tensor& ids, float scale, const Tensor& out) {
  check_float("embedding", table, "table");
  check_i32("embedding", ids, "ids");
  check_f32("embedding", out, "out");
  const int64_t V = table.dim(0), H = table.cols(), T = ids.numel();
  GS_CHECK(out.rows() == T && out.cols() == H, "cpu embedding: out {} must be [{}, {}]", out.str(), T, H);
  const int* id = ids.ptr<const int>();
  for (int64_t t = 0; t < T; ++t)
    GS_CHECK(id[t] >= 0 && id[t] < V, "token id {} at position {} is outside the vocabulary [0, {})", id[t], t, V);
  pool.parallel_for(T, 16, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* o = out.ptr<float>() + t * H;
      load_row(table, int64_t(id[t]) * H, H, o);
      for (int64_t i = 0; i < H; ++i) o[i] *= scale;
    }
  });
}

void embedding_rows(ThreadPool& pool, const Tensor& table, const Tensor& ids, int64_t first_id, float scale,
                    const Tensor& out) {
  check_float("embedding_rows", table, "table");
  check_i32("embedding_rows", ids, "ids");
  check_f32("embedding_rows", out, "out");
  const int64_t V = table.dim(0), H = table.cols(), T = ids.numel();
  GS_CHECK(out.rows() == T && out.cols() == H, "cpu embedding_rows: out {} must be [{}, {}]", out.str(), T, H);
  const int* id = ids.ptr<const int>();
  pool.parallel_for(T, 16, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* o = out.ptr<float>() + t * H;
      const int64_t row = int64_t(id[t]) - first_id;
      if (row < 0 || row >= V) {
        std::fill(o, o + H, 0.f);
        continue;
      }
      load_row(table, row * H, H, o);
      for (int64_t i = 0; i < H; ++i) o[i] *= scale;
    }
  });
}

void rms_norm(ThreadPool& pool, const Tensor& x, const Tensor* weight, float eps, const Tensor& out) {
  check_f32("rms_norm", x, "x");
  check_f32("rms_norm", out, "out");
  check_same_shape("rms_norm", x, out);
  const int64_t n = x.cols();
  if (weight && weight->defined())
    GS_CHECK(weight->numel() == n, "cpu rms_norm: weight {} does not match rows of {}", weight->str(), n);
  pool.parallel_for(x.rows(), 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) rms_norm_row(x.ptr<const float>() + r * n, weight, eps, n, out.ptr<float>() + r * n);
  });
}

void residual_add_norm(ThreadPool& pool, const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                       float out_scale) {
  check_f32("residual_add_norm", residual, "residual");
  check_f32("residual_add_norm", x, "x");
  check_same_shape("residual_add_norm", residual, x);
  const int64_t n = x.cols();
  GS_CHECK(weight.numel() == n, "cpu residual_add_norm: weight {} does not match rows of {}", weight.str(), n);
  pool.parallel_for(x.rows(), 16, [&](int64_t r0, int64_t r1) {
    float* tmp = thread_scratch(size_t(n));
    for (int64_t r = r0; r < r1; ++r) {
      rms_norm_row(x.ptr<const float>() + r * n, &weight, eps, n, tmp);
      float* h = residual.ptr<float>() + r * n;
      if (out_scale == 1.0f) {
        for (int64_t i = 0; i < n; ++i) h[i] = h[i] + tmp[i];
      } else {
        for (int64_t i = 0; i < n; ++i) h[i] = (h[i] + tmp[i]) * out_scale;
      }
    }
  });
}

void add(ThreadPool& pool, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_f32("add", a, "a");
  check_f32("add", b, "b");
  check_f32("add", out, "out");
  check_same_shape("add", a, b);
  check_same_shape("add", a, out);
  pool.parallel_for(a.numel(), 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) out.ptr<float>()[i] = a.ptr<const float>()[i] + b.ptr<const float>()[i];
  });
}

void scale(ThreadPool& pool, const Tensor& x, float s) {
  check_f32("scale", x, "x");
  pool.parallel_for(x.numel(), 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) x.ptr<float>()[i] *= s;
  });
}

void gelu_tanh_mul(ThreadPool& pool, const Tensor& gate_up, const Tensor& out) {
  check_f32("gelu_tanh_mul", gate_up, "gate_up");
  check_f32("gelu_tanh_mul", out, "out");
  const int64_t T = gate_up.rows(), I = out.cols();
  GS_CHECK(gate_up.cols() == 2 * I && out.rows() == T, "cpu gelu_tanh_mul: gate_up {} must be [T, 2·{}] for out {}",
           gate_up.str(), I, out.str());
  pool.parallel_for(T, 4, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* g = gate_up.ptr<const float>() + t * 2 * I;
      float* o = out.ptr<float>() + t * I;
      for (int64_t i = 0; i < I; ++i) o[i] = gelu_tanh(g[i]) * g[I + i];
    }
  });
}

void gelu_tanh_mul_pair(ThreadPool& pool, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_f32("gelu_tanh_mul_pair", a, "a");
  check_f32("gelu_tanh_mul_pair", b, "b");
  check_f32("gelu_tanh_mul_pair", out, "out");
  check_same_shape("gelu_tanh_mul_pair", a, b);
  check_same_shape("gelu_tanh_mul_pair", a, out);
  pool.parallel_for(a.numel(), 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) out.ptr<float>()[i] = gelu_tanh(a.ptr<const float>()[i]) * b.ptr<const float>()[i];
  });
}

void per_layer_inputs(ThreadPool& pool, const Tensor& proj, const Tensor& table, const Tensor& ids,
                      const Tensor& norm_w, float proj_scale, float table_scale, float combine_scale, float eps,
                      const Tensor& out) {
  check_f32("per_layer_inputs", proj, "proj");
  check_float("per_layer_inputs", table, "table");
  check_i32("per_layer_inputs", ids, "ids");
  check_f32("per_layer_inputs", out, "out");
  GS_CHECK(out.ndim() == 3, "cpu per_layer_inputs: out must be [L, T, P], got {}", out.str());
  const int64_t L = out.dim(0), T = out.dim(1), P = out.dim(2), V = table.dim(0);
  GS_CHECK(proj.rows() == T && proj.cols() == L * P, "cpu per_layer_inputs: proj {} must be [{}, {}]", proj.str(), T,
           L * P);
  GS_CHECK(table.cols() == L * P, "cpu per_layer_inputs: table {} must have {} columns", table.str(), L * P);
  GS_CHECK(norm_w.numel() == P, "cpu per_layer_inputs: norm weight {} must have {} values", norm_w.str(), P);
  GS_CHECK(ids.numel() == T, "cpu per_layer_inputs: {} ids for {} rows", ids.numel(), T);
  const int* id = ids.ptr<const int>();
  pool.parallel_for(T, 4, [&](int64_t t0, int64_t t1) {
    float* c = thread_scratch(size_t(P), 0);
    float* e = thread_scratch(size_t(P), 1);
    for (int64_t t = t0; t < t1; ++t) {
      // Ids outside the PLE table (multimodal placeholders) use the pad row 0, as the reference
      // substitutes pad for them before the lookup.
      const int64_t row = (id[t] >= 0 && id[t] < V) ? id[t] : 0;
      for (int64_t l = 0; l < L; ++l) {
        const float* p = proj.ptr<const float>() + t * L * P + l * P;
        for (int64_t i = 0; i < P; ++i) c[i] = p[i] * proj_scale;
        rms_norm_row(c, &norm_w, eps, P, c);
        load_row(table, row * L * P + l * P, P, e);
        float* o = out.ptr<float>() + (l * T + t) * P;
        for (int64_t i = 0; i < P; ++i) o[i] = (c[i] + e[i] * table_scale) * combine_scale;
      }
    }
  });
}

void gather_rows(const Tensor& x, const Tensor& rows, const Tensor& out) {
  check_i32("gather_rows", rows, "rows");
  GS_CHECK(x.dtype == out.dtype && x.cols() == out.cols() && out.rows() == rows.numel(),
           "cpu gather_rows: out {} must be [{}, {}] of {}", out.str(), rows.numel(), x.cols(), x.str());
  const size_t row_bytes = size_t(x.cols()) * dtype_size(x.dtype);
  for (int64_t r = 0; r < rows.numel(); ++r) {
    const int src = rows.ptr<const int>()[r];
    GS_CHECK(src >= 0 && src < x.rows(), "cpu gather_rows: row {} outside [0, {})", src, x.rows());
    std::memcpy(static_cast<char*>(out.data) + r * row_bytes, static_cast<const char*>(x.data) + src * row_bytes,
                row_bytes);
  }
}

void softcap(ThreadPool& pool, const Tensor& x, float cap) {
  check_f32("softcap", x, "x");
  pool.parallel_for(x.numel(), 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) x.ptr<float>()[i] = std::tanh(x.ptr<float>()[i] / cap) * cap;
  });
}

}  // namespace gs::cpu
