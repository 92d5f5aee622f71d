// cuda vs cpu: the decode GEMV (kernels/cuda/gemv.h) for every M it takes, odd N, K off every
// tile size, bf16 and f32 out; once called directly and once through the backend's matmul (which
// sends M <= GS_GEMV_MAX_M there).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "backend_harness.h"
#include "core/error.h"
#include "kernels/cuda/gemv.h"

namespace gs::test {
namespace {

class Gemv : public CudaVsCpu {};

TEST_F(Gemv, EveryMOddNBothOutDtypes) {
  struct NK { int64_t n, k; };
  // Both variants at every M: the tensor-core kernel from M = 1, then the FMA kernel always.
  for (int mma_min : {1, cuda::kGemvMaxRows + 1})
  for (int64_t m = 1; m <= cuda::kGemvMaxRows; ++m) {
    cuda::gemv_set_mma_min_rows(mma_min);
    for (NK s : {NK{1, 8}, NK{33, 264}, NK{257, 1536}, NK{771, 2056}, NK{5, 21504}}) {
      auto x = random_bf16(m * s.k);
      auto [wc, wg] = weight(random_bf16(s.n * s.k), Shape{s.n, s.k});
      Tensor xc = cpu_act(x, {m, s.k}), xg = gpu_act(x, {m, s.k});
      Tensor oc = cpu->empty(DType::F32, {m, s.n});
      cpu->matmul(xc, wc, oc);
      for (DType dt : {DType::BF16, DType::F32}) {
        const std::string what = "gemv mma_min=" + std::to_string(mma_min) + " M=" + std::to_string(m) + " N=" + std::to_string(s.n) +
                                 " K=" + std::to_string(s.k) + " out " + std::string(dtype_name(dt));
        Tensor og = gpu_poisoned(dt, {m, s.n});
        gpu->synchronize();  // the poison fill ran on the backend's stream
        cuda::launch_gemv(xg.data, wg.data, og.data, dt, m, s.n, s.k, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        expect_close(og, oc, dt == DType::F32 ? 1e-3 : kBf16Tol, what + " (direct)");
        Tensor ob = gpu_poisoned(dt, {m, s.n});
        gpu->matmul(xg, wg, ob);
        expect_close(ob, oc, dt == DType::F32 ? 1e-3 : kBf16Tol, what + " (backend matmul)");
      }
    }
  }
  cuda::gemv_set_mma_min_rows(cuda::kGemvMaxRows + 1);  // the default
}

TEST_F(Gemv, DecodeShapesOfE2B) {
  // qkv, o_proj, gate_up, down, PLE gate and projection of E2B at batch 1 and 8.
  struct NK { int64_t n, k; };
  for (int64_t m : {1, 8})
    for (NK s : {NK{2560, 1536}, NK{1536, 2048}, NK{12288, 1536}, NK{1536, 6144}, NK{256, 1536}, NK{1536, 256}}) {
      auto x = random_bf16(m * s.k);
      auto [wc, wg] = weight(random_bf16(s.n * s.k, -0.1f, 0.1f), Shape{s.n, s.k});
      Tensor xc = cpu_act(x, {m, s.k}), xg = gpu_act(x, {m, s.k});
      Tensor oc = cpu->empty(DType::F32, {m, s.n});
      cpu->matmul(xc, wc, oc);
      Tensor og = gpu_poisoned(DType::BF16, {m, s.n});
      gpu->synchronize();
      cuda::launch_gemv(xg.data, wg.data, og.data, DType::BF16, m, s.n, s.k, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      expect_close(og, oc, kBf16Tol, "gemv E2B M=" + std::to_string(m) + " N=" + std::to_string(s.n));
    }
}

TEST_F(Gemv, RejectsWhatItCannotTake) {
  EXPECT_FALSE(cuda::gemv_supported(0, 8, 8, DType::BF16, nullptr, nullptr));
  EXPECT_FALSE(cuda::gemv_supported(cuda::kGemvMaxRows + 1, 8, 8, DType::BF16, nullptr, nullptr));
  EXPECT_FALSE(cuda::gemv_supported(1, 8, 12, DType::BF16, nullptr, nullptr));  // K % 8
  EXPECT_FALSE(cuda::gemv_supported(1, 8, 8, DType::F16, nullptr, nullptr));
  EXPECT_FALSE(cuda::gemv_supported(1, 8, 8, DType::BF16, reinterpret_cast<void*>(2), nullptr));
  EXPECT_THROW(cuda::launch_gemv(nullptr, nullptr, nullptr, DType::BF16, 1, 8, 12, nullptr), Error);
}

}  // namespace
}  // namespace gs::test
