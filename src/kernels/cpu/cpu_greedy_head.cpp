// Greedy ids for the MTP drafter on the cpu backend (Backend::argmax_rows, centroid_head_argmax):
// the references of greedy_head.cu, ties to the lowest token id as the sampler's greedy rows.
#include <algorithm>
#include <numeric>

#include "kernels/cpu/cpu_ops.h"

namespace gs::cpu {

void argmax_rows(const Tensor& logits, const Tensor& out_ids) {
  check_f32("argmax_rows", logits, "logits");
  const int64_t R = logits.rows(), V = logits.cols();
  GS_CHECK(out_ids.dtype == DType::I32 && out_ids.numel() == R, "argmax_rows: out_ids {} for {} rows",
           out_ids.str(), R);
  for (int64_t r = 0; r < R; ++r) {
    const float* row = logits.ptr<const float>() + r * V;
    out_ids.ptr<int>()[r] = int(std::max_element(row, row + V) - row);  // the first of equal maxima
  }
}

void centroid_head_argmax(ThreadPool& pool, const Tensor& d, const Tensor& embed, const Tensor& centroid_scores,
                          const Tensor& token_ordering, int top_k, const Tensor& out_ids) {
  check_f32("centroid_head_argmax", centroid_scores, "centroid_scores");
  const int64_t R = d.rows(), H = d.cols(), C = centroid_scores.cols(), V = embed.rows();
  GS_CHECK(embed.cols() == H && centroid_scores.rows() == R && token_ordering.dtype == DType::I32 &&
               token_ordering.numel() == V && out_ids.dtype == DType::I32 && out_ids.numel() == R && C > 0 &&
               V % C == 0 && top_k >= 1 && top_k <= C,
           "centroid_head_argmax: d {} embed {} scores {} ordering {} out {} top_k {}", d.str(), embed.str(),
           centroid_scores.str(), token_ordering.str(), out_ids.str(), top_k);
  const int64_t per = V / C;
  const int* ordering = token_ordering.ptr<const int>();
  pool.parallel_for(R, 1, [&](int64_t r0, int64_t r1) {
    std::vector<float> dr(static_cast<size_t>(H)), e(static_cast<size_t>(H));
    std::vector<int> order(static_cast<size_t>(C));
    for (int64_t r = r0; r < r1; ++r) {
      load_row(d, r * H, H, dr.data());
      const float* s = centroid_scores.ptr<const float>() + r * C;
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                        [&](int a, int b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
      float best = 0.f;
      int best_id = -1;
      for (int k = 0; k < top_k; ++k)
        for (int64_t j = 0; j < per; ++j) {
          const int t = ordering[int64_t(order[size_t(k)]) * per + j];
          load_row(embed, int64_t(t) * H, H, e.data());
          float acc = 0.f;
          for (int64_t h = 0; h < H; ++h) acc += dr[size_t(h)] * e[size_t(h)];
          if (best_id < 0 || acc > best || (acc == best && t < best_id)) best = acc, best_id = t;
        }
      out_ids.ptr<int>()[r] = best_id;
    }
  });
}

}  // namespace gs::cpu
