// Mixture of experts (26B-A4B, gemma4-architecture.md §2.8): the router picks top-k experts per
// token; the experts run grouped by expert so each expert's weights are converted once per call.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/cpu/cpu_ops.h"

namespace gs::cpu {

void moe_route(ThreadPool& pool, const Tensor& r, const Tensor& router_scale, const Tensor& router_proj,
               const Tensor& per_expert_scale, float in_scale, float eps, int top_k, const Tensor& ids,
               const Tensor& weights) {
  check_f32("moe_route", r, "r");
  check_float("moe_route", router_scale, "router_scale");
  check_float("moe_route", router_proj, "router_proj");
  check_float("moe_route", per_expert_scale, "per_expert_scale");
  check_i32("moe_route", ids, "ids");
  check_f32("moe_route", weights, "weights");
  const int64_t T = r.rows(), H = r.cols(), E = router_proj.dim(0);
  GS_CHECK(router_proj.cols() == H && router_scale.numel() == H && per_expert_scale.numel() == E,
           "cpu moe_route: router tensors {} {} {} do not match hidden {}", router_proj.str(), router_scale.str(),
           per_expert_scale.str(), H);
  GS_CHECK(top_k >= 1 && top_k <= E, "cpu moe_route: top_k {} outside [1, {}]", top_k, E);
  GS_CHECK(ids.rows() == T && ids.cols() == top_k && weights.rows() == T && weights.cols() == top_k,
           "cpu moe_route: ids {} / weights {} must be [{}, {}]", ids.str(), weights.str(), T, top_k);
  pool.parallel_for(T, 1, [&](int64_t t0, int64_t t1) {
    float* z = thread_scratch(size_t(H), 0);
    float* w = thread_scratch(size_t(H), 1);
    thread_local std::vector<float> prob;
    thread_local std::vector<int> order;
    prob.resize(size_t(E));
    order.resize(size_t(E));
    for (int64_t t = t0; t < t1; ++t) {
      // z = rms_norm(r) · scale · H^-1/2, in the reference's order.
      rms_norm_row(r.ptr<const float>() + t * H, nullptr, eps, H, z);
      for (int64_t i = 0; i < H; ++i) z[i] = (z[i] * load(router_scale, i)) * in_scale;
      float mx = -INFINITY;
      for (int64_t e = 0; e < E; ++e) {
        load_row(router_proj, e * H, H, w);
        double dot = 0;
        for (int64_t i = 0; i < H; ++i) dot += double(z[i]) * w[i];
        prob[size_t(e)] = float(dot);
        mx = std::max(mx, prob[size_t(e)]);
      }
      double sum = 0;
      for (int64_t e = 0; e < E; ++e) sum += (prob[size_t(e)] = std::exp(prob[size_t(e)] - mx));
      for (int64_t e = 0; e < E; ++e) prob[size_t(e)] = float(prob[size_t(e)] / sum);
      // Top-k by probability, ties to the lower expert id.
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + top_k, order.end(), [&](int a, int b) {
        return prob[size_t(a)] != prob[size_t(b)] ? prob[size_t(a)] > prob[size_t(b)] : a < b;
      });
      float top_sum = 0;
      for (int j = 0; j < top_k; ++j) top_sum += prob[size_t(order[size_t(j)])];
      for (int j = 0; j < top_k; ++j) {
        const int e = order[size_t(j)];
        ids.ptr<int>()[t * top_k + j] = e;
        weights.ptr<float>()[t * top_k + j] = (prob[size_t(e)] / top_sum) * load(per_expert_scale, e);
      }
    }
  });
}

void moe_experts(ThreadPool& pool, const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                 const Tensor& down, const Tensor& out) {
  check_f32("moe_experts", x, "x");
  check_i32("moe_experts", ids, "ids");
  check_f32("moe_experts", weights, "weights");
  check_float("moe_experts", gate_up, "gate_up");
  check_float("moe_experts", down, "down");
  check_f32("moe_experts", out, "out");
  GS_CHECK(gate_up.ndim() == 3 && down.ndim() == 3, "cpu moe_experts: gate_up {} and down {} must be 3-D",
           gate_up.str(), down.str());
  const int64_t T = x.rows(), H = x.cols(), E = gate_up.dim(0), I = gate_up.dim(1) / 2, K = ids.cols();
  GS_CHECK(gate_up.dim(2) == H && down.dim(0) == E && down.dim(1) == H && down.dim(2) == I,
           "cpu moe_experts: gate_up {} / down {} do not match hidden {}", gate_up.str(), down.str(), H);
  GS_CHECK(ids.rows() == T && weights.rows() == T && weights.cols() == K && out.rows() == T && out.cols() == H,
           "cpu moe_experts: ids {} weights {} out {} for x {}", ids.str(), weights.str(), out.str(), x.str());
  // Token slots (t, j) of each expert; contributions land in a [T·K, H] buffer and are summed per
  // token in ascending expert order, as the reference adds experts one after the other.
  std::vector<std::vector<int64_t>> slots(static_cast<size_t>(E));
  for (int64_t i = 0; i < T * K; ++i) {
    const int e = ids.ptr<const int>()[i];
    GS_CHECK(e >= 0 && e < E, "cpu moe_experts: expert id {} outside [0, {})", e, E);
    slots[size_t(e)].push_back(i);
  }
  std::vector<float> contrib(size_t(T * K * H));
  pool.parallel_for(E, 1, [&](int64_t e0, int64_t e1) {
    std::vector<float> wgu(size_t(2 * I * H)), wd(size_t(H * I)), xin, gu, act;
    for (int64_t e = e0; e < e1; ++e) {
      const auto& sl = slots[size_t(e)];
      if (sl.empty()) continue;
      const int64_t n = int64_t(sl.size());
      load_row(gate_up, e * 2 * I * H, 2 * I * H, wgu.data());
      load_row(down, e * H * I, H * I, wd.data());
      xin.resize(size_t(n * H));
      gu.resize(size_t(n * 2 * I));
      act.resize(size_t(n * I));
      for (int64_t r = 0; r < n; ++r)
        std::copy_n(x.ptr<const float>() + (sl[size_t(r)] / K) * H, H, xin.data() + r * H);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t o = 0; o < 2 * I; ++o) {
          double dot = 0;
          for (int64_t i = 0; i < H; ++i) dot += double(xin[size_t(r * H + i)]) * wgu[size_t(o * H + i)];
          gu[size_t(r * 2 * I + o)] = float(dot);
        }
      for (int64_t r = 0; r < n; ++r)
        for (int64_t i = 0; i < I; ++i)
          act[size_t(r * I + i)] = gelu_tanh(gu[size_t(r * 2 * I + i)]) * gu[size_t(r * 2 * I + I + i)];
      for (int64_t r = 0; r < n; ++r) {
        const float wt = weights.ptr<const float>()[sl[size_t(r)]];
        float* c = contrib.data() + sl[size_t(r)] * H;
        for (int64_t o = 0; o < H; ++o) {
          double dot = 0;
          for (int64_t i = 0; i < I; ++i) dot += double(act[size_t(r * I + i)]) * wd[size_t(o * I + i)];
          c[o] = float(dot) * wt;
        }
      }
    }
  });
  pool.parallel_for(T, 4, [&](int64_t t0, int64_t t1) {
    std::vector<int> order(static_cast<size_t>(K));
    for (int64_t t = t0; t < t1; ++t) {
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(),
                [&](int a, int b) { return ids.ptr<const int>()[t * K + a] < ids.ptr<const int>()[t * K + b]; });
      float* o = out.ptr<float>() + t * H;
      std::fill(o, o + H, 0.f);
      for (int j : order) {
        const float* c = contrib.data() + (t * K + j) * H;
        for (int64_t i = 0; i < H; ++i) o[i] += c[i];
      }
    }
  });
}

}  // namespace gs::cpu
