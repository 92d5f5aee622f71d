// The drafter's greedy ids on the device (Backend::argmax_rows, centroid_head_argmax) against the cpu
// backend and a double-precision host reference, on fresh random inputs with planted ties.
#include <algorithm>
#include <numeric>

#include "backend_harness.h"

namespace gs::test {
namespace {

class GreedyHead : public CudaVsCpu {};

std::vector<int> ids_of(Backend& be, const Tensor& t) {
  std::vector<int> h(static_cast<size_t>(t.numel()));
  be.copy_to_host(t, h.data());
  return h;
}

TEST_F(GreedyHead, ArgmaxRowsTakesTheLowestOfEqualMaxima) {
  for (auto [R, V] : std::vector<std::pair<int, int>>{{1, 7}, {3, 8192}, {5, 262144}, {17, 1000}}) {
    std::vector<float> l = random_bf16(int64_t(R) * V, -30.f, 30.f);
    // Plant the row maximum twice (and in one row everywhere) so ties decide the id.
    for (int r = 0; r < R; ++r) {
      float* row = l.data() + size_t(r) * V;
      if (r == 2) std::fill(row, row + V, 1.f);
      const int a = int(rng() % V), b = int(rng() % V);
      row[a] = row[b] = 40.f;
    }
    Tensor cl = cpu_tensor(l, Shape{R, V}), gl = gpu_tensor(l, DType::F32, Shape{R, V});
    Tensor ci = cpu->empty(DType::I32, Shape{R}), gi = gpu->empty(DType::I32, Shape{R});
    cpu->argmax_rows(cl, ci);
    gpu->argmax_rows(gl, gi);
    std::vector<int> want(static_cast<size_t>(R));
    for (int r = 0; r < R; ++r) {
      const float* row = l.data() + size_t(r) * V;
      want[size_t(r)] = int(std::max_element(row, row + V) - row);
    }
    EXPECT_EQ(ids_of(*cpu, ci), want) << R << "x" << V;
    EXPECT_EQ(ids_of(*gpu, gi), want) << R << "x" << V;
  }
}

TEST_F(GreedyHead, CentroidHeadPicksTheBestTokenOfTheTopClusters) {
  struct Shape4 { int R, H, C, per, top_k; };
  for (const Shape4 s : {Shape4{1, 256, 2048, 128, 32}, Shape4{4, 256, 64, 16, 8}, Shape4{9, 96, 48, 10, 5},
                         Shape4{2, 1024, 100, 4, 100}}) {
    const int V = s.C * s.per;
    std::vector<float> d = random_bf16(int64_t(s.R) * s.H), e = random_bf16(int64_t(V) * s.H);
    std::vector<float> scores = random_bf16(int64_t(s.R) * s.C, -4.f, 4.f);
    // Ties among cluster scores (the lower cluster wins) at the top-k boundary of row 0.
    for (int c = 0; c < s.C; c += 3) scores[size_t(c)] = 3.5f;
    std::vector<int> ordering(static_cast<size_t>(V));
    std::iota(ordering.begin(), ordering.end(), 0);
    std::shuffle(ordering.begin(), ordering.end(), rng);

    Tensor cids = cpu->empty(DType::I32, Shape{s.R}), gids = gpu->empty(DType::I32, Shape{s.R});
    cpu->centroid_head_argmax(cpu_act(d, Shape{s.R, s.H}), cpu_tensor(e, Shape{V, s.H}),
                              cpu_tensor(scores, Shape{s.R, s.C}), cpu_ints(ordering, Shape{V}), s.top_k, cids);
    gpu->centroid_head_argmax(gpu_act(d, Shape{s.R, s.H}), gpu_tensor(e, DType::BF16, Shape{V, s.H}),
                              gpu_tensor(scores, DType::F32, Shape{s.R, s.C}), gpu_ints(ordering, Shape{V}), s.top_k,
                              gids);
    const std::vector<int> got_cpu = ids_of(*cpu, cids), got_gpu = ids_of(*gpu, gids);
    for (int r = 0; r < s.R; ++r) {
      // The reference: clusters by score (ties to the lower), then the best dot product in double.
      const float* sc = scores.data() + size_t(r) * s.C;
      std::vector<int> order(static_cast<size_t>(s.C));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return sc[a] > sc[b]; });
      std::vector<double> dot(static_cast<size_t>(V), -1e300);
      double best = -1e300;
      for (int k = 0; k < s.top_k; ++k)
        for (int j = 0; j < s.per; ++j) {
          const int t = ordering[size_t(order[size_t(k)]) * s.per + j];
          double acc = 0;
          for (int h = 0; h < s.H; ++h) acc += double(d[size_t(r) * s.H + h]) * e[size_t(t) * s.H + h];
          dot[size_t(t)] = acc;
          best = std::max(best, acc);
        }
      // Either backend's choice is in a chosen cluster and scores the maximum up to f32 summation order.
      for (int got : {got_cpu[size_t(r)], got_gpu[size_t(r)]}) {
        ASSERT_TRUE(got >= 0 && got < V) << "row " << r << " id " << got;
        EXPECT_GT(dot[size_t(got)], -1e299) << "row " << r << ": token " << got << " is outside the top clusters";
        EXPECT_NEAR(dot[size_t(got)], best, 1e-4 * std::max(1.0, std::abs(best))) << "row " << r;
      }
    }
  }
}

}  // namespace
}  // namespace gs::test
