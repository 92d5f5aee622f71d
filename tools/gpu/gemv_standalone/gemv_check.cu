// Standalone check of the decode GEMV (src/kernels/cuda/gemv.cu) against a host f64 reference,
// built with nvcc alone (build.sh) so it runs before the full CMake build exists. The backend-level
// test (cuda vs cpu backend) is tests/kernels_cuda/gemv_test.cpp.
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda {
namespace {

std::mt19937_64 rng(std::random_device{}());

std::vector<__nv_bfloat16> rand_bf16(size_t n) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<__nv_bfloat16> v(n);
  for (auto& x : v) x = __float2bfloat16(u(rng));
  return v;
}

template <typename T>
T* dev(const std::vector<T>& h) {
  T* p = nullptr;
  GS_CUDA_CHECK(cudaMalloc(&p, h.size() * sizeof(T) + 256));
  GS_CUDA_CHECK(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

// Runs one GEMV and compares with the reference; out has 64 sentinel elements past M·N that must
// survive.
void check(int M, int N, int K, DType od) {
  auto x = rand_bf16(size_t(M) * K), w = rand_bf16(size_t(N) * K);
  std::vector<double> ref(size_t(M) * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += double(__bfloat162float(x[size_t(m) * K + k])) * __bfloat162float(w[size_t(n) * K + k]);
      ref[size_t(m) * N + n] = s;
    }
  auto* dx = dev(x);
  auto* dw = dev(w);
  const size_t es = od == DType::F32 ? 4 : 2, total = size_t(M) * N + 64;
  void* dout = nullptr;
  GS_CUDA_CHECK(cudaMalloc(&dout, total * es));
  GS_CUDA_CHECK(cudaMemset(dout, 0xff, total * es));  // NaN in both dtypes
  launch_gemv(dx, dw, dout, od, M, N, K, nullptr);
  GS_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> out(total);
  if (od == DType::F32) {
    GS_CUDA_CHECK(cudaMemcpy(out.data(), dout, total * 4, cudaMemcpyDeviceToHost));
  } else {
    std::vector<__nv_bfloat16> h(total);
    GS_CUDA_CHECK(cudaMemcpy(h.data(), dout, total * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < total; ++i) out[i] = __bfloat162float(h[i]);
  }
  double num = 0, den = 0;
  int bad = 0;
  for (size_t i = 0; i < size_t(M) * N; ++i) {
    if (std::isnan(out[i])) ++bad;
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  for (size_t i = size_t(M) * N; i < total; ++i) EXPECT_TRUE(std::isnan(out[i])) << "wrote past the end at " << i;
  const double rel = std::sqrt(num / std::max(den, 1e-30));
  EXPECT_EQ(bad, 0) << "M=" << M << " N=" << N << " K=" << K;
  EXPECT_LE(rel, od == DType::F32 ? 1e-5 : 1e-2) << "M=" << M << " N=" << N << " K=" << K;
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dout);
}

TEST(Gemv, EveryMOddShapes) {
  // Both variants at every M: 1 = tensor-core kernel always, kGemvMaxRows + 1 = FMA kernel always.
  for (int mma_min : {1, kGemvMaxRows + 1}) {
    gemv_set_mma_min_rows(mma_min);
    for (int M = 1; M <= kGemvMaxRows; ++M)
      for (auto [N, K] : {std::pair{1, 8}, {7, 24}, {33, 256}, {257, 1536}, {1031, 2056}, {3, 21504}, {9, 40}})
        for (DType od : {DType::F32, DType::BF16}) check(M, N, K, od);
  }
  gemv_set_mma_min_rows(kGemvMmaMinRows);  // the default
}

TEST(Gemv, DecodeShapes) {
  for (int M : {1, 3, 8, 16})
    for (auto [N, K] : {std::pair{2560, 1536}, {1536, 2048}, {12288, 1536}, {1536, 6144}, {256, 1536}, {1536, 256},
                        {5376, 8192}})
      check(M, N, K, DType::BF16);
  check(1, 262144 / 8, 1536, DType::F32);
}

// A producer kernel (PDL-aware, like the backend's) rewrites x before every GEMV; under PDL the
// GEMV starts early, so a missing or misplaced wait shows up as a result computed from the old x.
__global__ void scale_into(const __nv_bfloat16* src, __nv_bfloat16* dst, int n, float s) {
  pdl_wait();
  pdl_launch_dependents();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    dst[i] = __float2bfloat16(__bfloat162float(src[i]) * s);
}

TEST(Gemv, ProducerChainInGraph) {
  const int M = 4, N = 4096, K = 1536, reps = 8;
  auto x = rand_bf16(size_t(M) * K), w = rand_bf16(size_t(N) * K);
  auto* dsrc = dev(x);
  auto* dw = dev(w);
  __nv_bfloat16* dx = nullptr;
  float* dout = nullptr;
  GS_CUDA_CHECK(cudaMalloc(&dx, size_t(M) * K * 2));
  GS_CUDA_CHECK(cudaMalloc(&dout, size_t(reps) * M * N * 4));
  cudaStream_t st;
  GS_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t g;
  GS_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int r = 0; r < reps; ++r) {
    // Powers of two: the scaled bf16 x is exact, so out_r = 2^r · out_0 exactly.
    launch_pdl("scale_into", scale_into, dim3(4), dim3(256), 0, st, (const __nv_bfloat16*)dsrc, dx, M * K, float(1 << r));
    launch_gemv(dx, dw, dout + size_t(r) * M * N, DType::F32, M, N, K, st);
  }
  GS_CUDA_CHECK(cudaStreamEndCapture(st, &g));
  cudaGraphExec_t ge;
  GS_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
  for (int it = 0; it < 20; ++it) GS_CUDA_CHECK(cudaGraphLaunch(ge, st));
  GS_CUDA_CHECK(cudaStreamSynchronize(st));
  std::vector<float> out(size_t(reps) * M * N);
  GS_CUDA_CHECK(cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int r = 1; r < reps; ++r)
    for (size_t i = 0; i < size_t(M) * N; ++i)
      if (out[size_t(r) * M * N + i] != out[i] * float(1 << r)) ++bad;
  EXPECT_EQ(bad, 0);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(st);
}

}  // namespace
}  // namespace gs::cuda
