// Dense GEMMs through cuBLASLt: out[T,N] = x[T,K] · w[N,K]ᵀ with bf16 operands, f32 accumulation
// and a bf16 or f32 result. The algorithm cuBLASLt's heuristic picks is cached per shape, dtype and
// operand alignment, so a decode step pays for the heuristic once. Above 64 rows the heuristic is
// asked once per power-of-two bucket of rows, not per row count: prefill chunks come in every
// length, and a heuristic search per new length per weight shape shows in TTFT
// (docs/kernel-policy.md, "cuBLASLt plans").
//
// Row-major to column-major: cuBLASLt sees w as the column-major K×N matrix (ld K) and x as K×T
// (ld K); out is N×T (ld N). out = opT(w)·x computes exactly the row-major x·wᵀ.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <tuple>

#include "core/tensor.h"

namespace gs::cuda {

// The operand checks of a dense matmul on the GPU (bf16 x [M,K] and w [N,K], out [M,N] bf16 or f32),
// as gs::Error naming the offending tensor; whichever kernel then runs may assume them.
void check_matmul(const Tensor& x, const Tensor& w, const Tensor& out);

class LtGemm {
 public:
  LtGemm(cudaStream_t stream, std::shared_ptr<void> workspace, size_t workspace_bytes);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  void matmul(const Tensor& x, const Tensor& w, const Tensor& out);
  // The same on raw pointers (benchmarks, MoE fallbacks): out[m,n] = x[m,k] · w[n,k]ᵀ.
  void matmul_raw(const void* x, const void* w, void* out, DType out_dtype, int64_t m, int64_t n, int64_t k);

 private:
  struct Plan;
  using Key = std::tuple<int64_t, int64_t, int64_t, int, int, int, int>;  // m n k out_dtype align(x, w, out)
  Plan& plan_for(int64_t m, int64_t n, int64_t k, DType out_dtype, const void* x, const void* w, const void* out);
  // The heuristic's algorithm for (m, n, k, ...) asked at m itself; false when it has none.
  bool heuristic(const Key& key, cublasLtMatmulAlgo_t& algo);
  // The algorithm of a row bucket (Key's m = the bucket's top), asked on first use; null if none.
  const cublasLtMatmulAlgo_t* bucket_algo(const Key& bucket_key);
  // Whether cuBLASLt runs `algo` on this plan's exact shape within our workspace.
  bool algo_fits(const Plan& plan, const cublasLtMatmulAlgo_t& algo) const;

  cudaStream_t stream_;
  cublasLtHandle_t handle_ = nullptr;
  std::shared_ptr<void> workspace_;
  size_t workspace_bytes_;
  std::map<Key, std::unique_ptr<Plan>> plans_;       // per exact shape: descriptors and algorithm
  std::map<Key, cublasLtMatmulAlgo_t> bucket_algos_;  // per row bucket (Key's m = the bucket's top)
};

}  // namespace gs::cuda
