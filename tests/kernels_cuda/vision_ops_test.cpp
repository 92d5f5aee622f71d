// The vision tower's cuda ops (kernels/cuda/vision_ops.cu) against the cpu reference ops: clamp,
// the position table add, 2-D RoPE at the towers' head dims (64, 72), the 3×3 pooler with its
// scale, standardize and the soft-token scatter. Inputs are bf16-exact, so the only differences are
// the bf16 roundings the cuda ops make where the reference stores a bf16 tensor.
#include "backend_harness.h"

namespace gs::test {
namespace {

class VisionOps : public CudaVsCpu {};

TEST_F(VisionOps, ClampAndStandardize) {
  const int64_t R = 9, H = 40;
  auto x = random_bf16(R * H, -3.f, 3.f);
  Tensor xc = cpu_act(x, {R, H}), xg = gpu_act(x, {R, H});
  cpu->clamp(xc, -1.25f, 0.75f);
  gpu->clamp(xg, -1.25f, 0.75f);
  expect_close(xg, xc, 0.0, "clamp (exact)");
  auto [bc, bg] = weight(random_bf16(H, -0.5f, 0.5f), Shape{H});
  auto [sc, sg] = weight(random_bf16(H, 0.5f, 1.5f), Shape{H});
  cpu->standardize(xc, bc, sc);
  gpu->standardize(xg, bg, sg);
  expect_close(xg, xc, kBf16Tol, "standardize");
}

TEST_F(VisionOps, PositionAdd) {
  const int64_t R = 30, H = 48, P = 64;
  auto x = random_bf16(R * H);
  auto [tc, tg] = weight(random_bf16(2 * P * H, -0.2f, 0.2f), Shape{2, P, H});
  auto pos = random_ints(2 * R, 0, int(P) - 1);
  Tensor xc = cpu_act(x, {R, H}), xg = gpu_act(x, {R, H});
  cpu->vision_position_add(xc, tc, cpu_ints(pos, {R, 2}));
  gpu->vision_position_add(xg, tg, gpu_ints(pos, {R, 2}));
  expect_close(xg, xc, kBf16Tol, "vision_position_add");
}

TEST_F(VisionOps, RopeAtBothTowerHeadDims) {
  for (int hd : {64, 72}) {
    const int heads = 3;
    const int64_t R = 25, W = int64_t(heads) * hd;
    auto x = random_bf16(R * W);
    auto pos = random_ints(2 * R, 0, 47);
    Tensor xc = cpu_act(x, {R, W}), xg = gpu_act(x, {R, W});
    cpu->vision_rope(xc, cpu_ints(pos, {R, 2}), heads, hd, 100.f);
    gpu->vision_rope(xg, gpu_ints(pos, {R, 2}), heads, hd, 100.f);
    expect_close(xg, xc, kBf16Tol, "vision_rope head_dim " + std::to_string(hd));
  }
}

TEST_F(VisionOps, PoolAndScatter) {
  const int64_t P = 36, H = 40, C = 4, T = 10;
  auto x = random_bf16(P * H);
  std::vector<int> src(size_t(C * 9));
  for (int c = 0; c < C; ++c)  // a 6×6 patch grid: cell (cx, cy) holds patches (3cy+dy)·6 + 3cx+dx
    for (int d = 0; d < 9; ++d) src[size_t(c * 9 + d)] = (3 * (c / 2) + d / 3) * 6 + 3 * (c % 2) + d % 3;
  Tensor oc = cpu->empty(DType::F32, {C, H}), og = gpu_poisoned(DType::BF16, {C, H});
  cpu->vision_pool(cpu_act(x, {P, H}), cpu_ints(src, {C, 9}), 6.928203f, oc);
  gpu->vision_pool(gpu_act(x, {P, H}), gpu_ints(src, {C, 9}), 6.928203f, og);
  expect_close(og, oc, kBf16Tol, "vision_pool");

  auto soft = random_bf16(C * H);
  auto base = random_bf16(T * H);
  const std::vector<int> rows{7, 2, 3, 9};
  Tensor dc = cpu_act(base, {T, H}), dg = gpu_act(base, {T, H});
  cpu->scatter_rows(cpu_act(soft, {C, H}), cpu_ints(rows, {C}), dc);
  gpu->scatter_rows(gpu_act(soft, {C, H}), gpu_ints(rows, {C}), dg);
  expect_close(dg, dc, 0.0, "scatter_rows (exact)");
}

}  // namespace
}  // namespace gs::test
