// CUDA graphs: a captured sequence of ops, replayed after its input tensors were given new
// contents, computes what running the ops eagerly on those contents computes; captures refuse
// allocation and host input.
#include <gtest/gtest.h>

#include "backend_harness.h"
#include "core/error.h"

namespace gs::test {
namespace {

class Graphs : public CudaVsCpu {};

TEST_F(Graphs, ReplayMatchesEagerOnNewInputs) {
  ASSERT_TRUE(gpu->supports_graphs());
  const int64_t T = 4, H = 128, N = 96;
  auto [wc, wg] = weight(random_bf16(N * H), Shape{N, H});
  auto [nc, ng] = weight(random_bf16(H, 0.5f, 1.5f), Shape{H});
  Tensor x = gpu->empty(DType::BF16, {T, H}), normed = gpu->empty(DType::BF16, {T, H});
  Tensor y = gpu->empty(DType::F32, {T, N});
  auto step = [&] {
    gpu->rms_norm(x, &ng, 1e-6f, normed);
    gpu->matmul(normed, wg, y);
    gpu->softcap(y, 30.f);
  };
  // Eager run first: it creates the GEMM plan, as a runner's warm-up step would.
  gpu->copy(x, gpu_act(random_bf16(T * H, -2.f, 2.f), {T, H}));
  step();
  gpu->begin_capture();
  step();
  EXPECT_THROW(gpu->empty(DType::F32, {4}), Error);
  EXPECT_THROW(gpu->sample(y, std::vector<SamplingRow>(size_t(T)), x, y), Error);
  const int graph = gpu->end_capture();

  for (int round = 0; round < 3; ++round) {
    auto x1 = random_bf16(T * H, -2.f, 2.f);
    Tensor src = gpu_act(x1, {T, H});
    gpu->copy(x, src);
    gpu->fill(y, NAN);
    gpu->replay(graph);
    auto replayed = download(*gpu, y);
    gpu->fill(y, NAN);
    step();
    EXPECT_EQ(replayed, download(*gpu, y)) << "round " << round;
    // And against the cpu backend.
    Tensor nc_out = cpu->empty(DType::F32, {T, H}), yc = cpu->empty(DType::F32, {T, N});
    cpu->rms_norm(cpu_act(x1, {T, H}), &nc, 1e-6f, nc_out);
    cpu->matmul(nc_out, wc, yc);
    cpu->softcap(yc, 30.f);
    expect_close(y, yc, kBf16Tol, "graph step vs cpu");
  }
  gpu->release_graph(graph);
  EXPECT_THROW(gpu->replay(graph), Error);
}

}  // namespace
}  // namespace gs::test
