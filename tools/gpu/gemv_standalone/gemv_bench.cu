// Standalone benchmark of the decode GEMV (build.sh): per decode shape of E2B and 31B and per M,
//   alone    GEMV (FMA and tensor-core variants) launched back to back in a CUDA graph (µs per call, GB/s of weights)
//   lt       cuBLASLt's heuristic algorithm for the same shape (LtGemm, what the backend ran before)
//   chain    a graph of [producer, GEMV] pairs, minus a graph of producers alone: the GEMV's
//            marginal cost after a small PDL-aware kernel, which is where PDL and the weight
//            prefetch before griddepcontrol.wait pay (run with GS_PDL=0 and 1 to compare)
// First argument: L2 prefetch budget in MB (0 = off); second: the M from which the pair columns run
// the tensor-core variant (default kGemvMmaMinRows, the backend's).
#include <cuda_bf16.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/launch_util.h"
#include "graph_timer.h"

using namespace gs;
using namespace gs::cuda;

// Stands in for a norm: one block per row of x, a short dependent read-modify-write.
__global__ void producer(__nv_bfloat16* x, int K) {
  pdl_wait();
  pdl_launch_dependents();
  __nv_bfloat16* row = x + size_t(blockIdx.x) * K;
  for (int i = threadIdx.x; i < K; i += blockDim.x) row[i] = __float2bfloat16(__bfloat162float(row[i]) * 0.5f + 0.25f);
}


int main(int argc, char** argv) {
  const bool pdl = pdl_enabled();
  if (argc > 1) gemv_set_l2_prefetch_budget(int64_t(atof(argv[1]) * (1 << 20)));
  const int mma_min = argc > 2 ? atoi(argv[2]) : kGemvMmaMinRows;  // the pair columns use this routing
  struct Shape { const char* name; int N, K; };
  const Shape shapes[] = {
      {"e2b qkv", 2560, 1536},       {"e2b o_proj", 1536, 2048},     {"e2b gate_up", 12288, 1536},
      {"e2b down", 1536, 6144},      {"e2b ple_gate", 256, 1536},    {"e2b ple_proj", 1536, 256},
      {"e2b lm_head", 262144, 1536}, {"31b qkv", 16384, 5376},       {"31b o_proj", 5376, 8192},
      {"31b gate_up", 43008, 5376},  {"31b down", 5376, 21504},      {"31b lm_head", 262144, 5376},
  };
  cudaStream_t st;
  GS_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  void* ws = nullptr;
  const size_t ws_bytes = 32 << 20;
  GS_CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
  LtGemm lt(st, std::shared_ptr<void>(ws, [](void*) {}), ws_bytes);
  // Several weight copies so consecutive calls do not hit L2 (E2B's are smaller than L2).
  const size_t pool_bytes = size_t(6) << 30;
  char* pool = nullptr;
  GS_CUDA_CHECK(cudaMalloc(&pool, pool_bytes));
  GS_CUDA_CHECK(cudaMemset(pool, 0x3c, pool_bytes));
  __nv_bfloat16 *x = nullptr;
  float* out = nullptr;
  GS_CUDA_CHECK(cudaMalloc(&x, 16 * 21504 * 2));
  GS_CUDA_CHECK(cudaMemset(x, 0x3c, 16 * 21504 * 2));
  GS_CUDA_CHECK(cudaMalloc(&out, size_t(16) * 262144 * 4));
  printf("pdl=%d mma_min=%d\n%-14s %3s %9s | %9s %7s | %9s %7s | %9s %7s | %9s %9s %9s\n", int(pdl), mma_min, "shape", "M", "MB", "fma_us",
         "GB/s", "mma_us", "GB/s", "lt_us", "GB/s", "prod_us", "pair_us", "marg_us");
  for (const Shape& s : shapes) {
    const size_t wbytes = size_t(s.N) * s.K * 2;
    const int copies = int(std::min<size_t>(16, std::max<size_t>(1, pool_bytes / wbytes)));
    const int reps = std::max(copies, 8);
    for (int M : {1, 2, 4, 8, 16}) {
      const DType od = s.N == 262144 ? DType::F32 : DType::BF16;
      auto wptr = [&](int i) { return pool + size_t(i % copies) * wbytes; };
      int i = 0;
      gemv_set_mma_min_rows(kGemvMaxRows + 1);
      float g = time_graph(st, reps, [&] { launch_gemv(x, wptr(i++), out, od, M, s.N, s.K, st); });
      i = 0;
      gemv_set_mma_min_rows(1);
      float gm = time_graph(st, reps, [&] { launch_gemv(x, wptr(i++), out, od, M, s.N, s.K, st); });
      gemv_set_mma_min_rows(mma_min);
      i = 0;
      float l = time_graph(st, reps, [&] { lt.matmul_raw(x, wptr(i++), out, od, M, s.N, s.K); });
      float p = time_graph(st, reps, [&] { launch_pdl("producer", producer, dim3(M), dim3(256), 0, st, x, s.K); });
      i = 0;
      float pg = time_graph(st, reps, [&] {
        launch_pdl("producer", producer, dim3(M), dim3(256), 0, st, x, s.K);
        launch_gemv(x, wptr(i++), out, od, M, s.N, s.K, st);
      });
      printf("%-14s %3d %9.2f | %9.2f %7.0f | %9.2f %7.0f | %9.2f %7.0f | %9.2f %9.2f %9.2f\n", s.name, M,
             wbytes / 1e6, g, wbytes / g / 1e3, gm, wbytes / gm / 1e3, l, wbytes / l / 1e3, p, pg, pg - p);
    }
  }
  return 0;
}
