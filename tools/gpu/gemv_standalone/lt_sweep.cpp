// Sweep of cuBLASLt configurations for the decode GEMMs of 3-64 rows (build.sh): for each weight
// shape of E2B and E4B and each row count, every configuration the heuristic offers (up to
// `--candidates`), each also with its split-K count replaced where the algorithm supports split-K,
// checked against the heuristic's first choice and timed in a CUDA graph of back-to-back calls on
// rotating weight copies (so the weight comes from HBM, as in a decode step).
//
//   lt_sweep [--rows 4,8,16,32,64] [--candidates 32] [--splitk 2,3,4,6,8,12,16] [--only SUBSTR]
//
// Prints, per shape and rows, the heuristic's first choice and the fastest configurations found,
// one line each: us per call, weight TB/s, algo id, tile, stages, split-K, reduction scheme,
// swizzle, custom option, cluster shape. Lines starting with "json " carry the same as JSON.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "graph_timer.h"
#include "kernels/cuda/cuda_check.h"

namespace {

// Fills n bf16 values with a hash of their index in [-0.125, 0.125], staged through a host
// buffer (this tool has no kernels of its own: nvcc 13 cannot compile it, g++ does).
void fill_random(__nv_bfloat16* p, size_t n, uint32_t seed) {
  const size_t chunk = size_t(1) << 24;
  std::vector<__nv_bfloat16> h(std::min(n, chunk));
  for (size_t i = 0; i < h.size(); ++i) {
    uint32_t v = uint32_t(i) * 2654435761u ^ seed;
    v ^= v >> 15, v *= 2246822519u, v ^= v >> 13, v *= 3266489917u, v ^= v >> 16;
    h[i] = __float2bfloat16((float(v & 0xffff) / 65535.f - 0.5f) * 0.25f);
  }
  for (size_t done = 0; done < n; done += h.size())
    GS_CUDA_CHECK(cudaMemcpy(p + done, h.data(), std::min(h.size(), n - done) * 2, cudaMemcpyHostToDevice));
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> v;
  for (const char* p = s; *p;) {
    v.push_back(atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return v;
}

struct Config {
  cublasLtMatmulAlgo_t algo;
  int id = 0, tile = 0, stages = 0, splitk = 1, reduction = 0, swizzle = 0, custom = 0, cluster = 0;
  size_t workspace = 0;
  float us = 0.f, err = 0.f;
};

// An attribute of an algorithm's configuration or capabilities (T{} where cuBLASLt has none).
template <typename T, typename A>
T lt_attr(cublasStatus_t (*get)(const cublasLtMatmulAlgo_t*, A, void*, size_t, size_t*), const cublasLtMatmulAlgo_t& a,
          A attr) {
  T v{};
  size_t written = 0;
  return get(&a, attr, &v, sizeof(v), &written) == CUBLAS_STATUS_SUCCESS ? v : T{};
}
template <typename T>
T config_attr(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoConfigAttributes_t attr) {
  return lt_attr<T>(cublasLtMatmulAlgoConfigGetAttribute, a, attr);
}
template <typename T>
T algo_cap(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoCapAttributes_t attr) {
  return lt_attr<T>(cublasLtMatmulAlgoCapGetAttribute, a, attr);
}

void describe(Config& c) {
  c.id = config_attr<int32_t>(c.algo, CUBLASLT_ALGO_CONFIG_ID);
  c.tile = int(config_attr<uint32_t>(c.algo, CUBLASLT_ALGO_CONFIG_TILE_ID));
  c.stages = int(config_attr<uint32_t>(c.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID));
  c.splitk = int(config_attr<uint32_t>(c.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM));
  c.reduction = int(config_attr<uint32_t>(c.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME));
  c.swizzle = int(config_attr<uint32_t>(c.algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING));
  c.custom = int(config_attr<uint32_t>(c.algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION));
  c.cluster = int(config_attr<uint16_t>(c.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
}

bool same_config(const Config& a, const Config& b) {
  return a.id == b.id && a.tile == b.tile && a.stages == b.stages && a.splitk == b.splitk &&
         a.reduction == b.reduction && a.swizzle == b.swizzle && a.custom == b.custom && a.cluster == b.cluster;
}

float max_rel_err(const std::vector<__nv_bfloat16>& ref, const std::vector<__nv_bfloat16>& got) {
  float scale = 0.f, err = 0.f;
  for (size_t i = 0; i < ref.size(); ++i) {
    float r = __bfloat162float(ref[i]), g = __bfloat162float(got[i]);
    if (!std::isfinite(g)) return INFINITY;
    scale = std::max(scale, std::fabs(r));
    err = std::max(err, std::fabs(r - g));
  }
  return scale > 0 ? err / scale : err;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gs::cuda;
  std::vector<int> rows = {4, 8, 16, 32, 64}, splits = {2, 3, 4, 6, 8, 12, 16};
  int candidates = 32;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--rows")) rows = parse_list(argv[i + 1]);
    else if (!strcmp(argv[i], "--splitk")) splits = parse_list(argv[i + 1]);
    else if (!strcmp(argv[i], "--candidates")) candidates = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    else return fprintf(stderr, "unknown option %s\n", argv[i]), 2;
  }
  struct Shape { const char* name; int N, K; };
  const Shape shapes[] = {
      {"e2b qkv", 2560, 1536},          {"e2b qkv full", 5120, 1536},  {"e2b o_proj", 1536, 2048},
      {"e2b o_proj full", 1536, 4096},  {"e2b gate_up", 12288, 1536},  {"e2b down", 1536, 6144},
      {"e2b gate_up wide", 24576, 1536}, {"e2b down wide", 1536, 12288}, {"e2b ple_gate", 256, 1536},
      {"e2b ple_proj", 1536, 256},      {"e4b qkv", 3072, 2560},       {"e4b o_proj", 2560, 2048},
      {"e4b gate_up", 20480, 2560},     {"e4b down", 2560, 10240},     {"e4b ple_gate", 256, 2560},
      {"e4b ple_proj", 2560, 256},
  };
  cudaStream_t st;
  GS_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cublasLtHandle_t lt;
  GS_CUBLAS_CHECK(cublasLtCreate(&lt));
  const size_t ws_bytes = size_t(32) << 20;  // the backend's (cuda_backend.cpp)
  void* ws = nullptr;
  GS_CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
  const size_t pool_bytes = size_t(2) << 30;
  __nv_bfloat16* pool = nullptr;
  GS_CUDA_CHECK(cudaMalloc(&pool, pool_bytes));
  fill_random(pool, pool_bytes / 2, 7);
  __nv_bfloat16 *x = nullptr, *out = nullptr;
  GS_CUDA_CHECK(cudaMalloc(&x, size_t(64) * 12288 * 2));
  GS_CUDA_CHECK(cudaMalloc(&out, size_t(64) * 24576 * 2));
  fill_random(x, size_t(64) * 12288, 11);
  GS_CUDA_CHECK(cudaStreamSynchronize(st));

  for (const Shape& s : shapes) {
    if (!only.empty() && std::string(s.name).find(only) == std::string::npos) continue;
    const size_t welems = size_t(s.N) * s.K, wbytes = welems * 2;
    const int copies = int(std::min<size_t>(16, std::max<size_t>(2, pool_bytes / wbytes)));
    const int reps = std::max(copies, 16);
    for (int M : rows) {
      // out[M,N] = x[M,K]·w[N,K]ᵀ in column-major terms, as LtGemm sets it up (gemm.cpp).
      cublasLtMatmulDesc_t desc;
      GS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      GS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
      GS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
      cublasLtMatrixLayout_t la, lb, lc;
      GS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, s.K, s.N, s.K));
      GS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, s.K, M, s.K));
      GS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, s.N, M, s.N));
      cublasLtMatmulPreference_t pref;
      GS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
      uint64_t wsl = ws_bytes;
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsl, sizeof(wsl));
      std::vector<cublasLtMatmulHeuristicResult_t> res(candidates);
      int count = 0;
      GS_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, candidates, res.data(), &count));
      cublasLtMatmulPreferenceDestroy(pref);

      std::vector<Config> configs;
      auto add = [&](const cublasLtMatmulAlgo_t& a) {
        Config c;
        c.algo = a;
        describe(c);
        for (const Config& o : configs)
          if (same_config(o, c)) return;
        cublasLtMatmulHeuristicResult_t check{};
        if (cublasLtMatmulAlgoCheck(lt, desc, la, lb, lc, lc, &c.algo, &check) != CUBLAS_STATUS_SUCCESS ||
            check.state != CUBLAS_STATUS_SUCCESS || check.workspaceSize > ws_bytes)
          return;
        c.workspace = check.workspaceSize;
        configs.push_back(c);
      };
      for (int i = 0; i < count; ++i) add(res[i].algo);
      const size_t heuristic_count = configs.size();
      for (size_t i = 0; i < std::min<size_t>(heuristic_count, 12); ++i) {  // split-K variants of the first 12
        const cublasLtMatmulAlgo_t base = configs[i].algo;
        if (!algo_cap<int32_t>(base, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT)) continue;
        const uint32_t mask = algo_cap<uint32_t>(base, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK);
        for (int sk : splits) {
          for (uint32_t scheme : {uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE), uint32_t(CUBLASLT_REDUCTION_SCHEME_INPLACE),
                                  uint32_t(CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)}) {
            if (!(mask & scheme)) continue;
            cublasLtMatmulAlgo_t a = base;
            uint32_t k = uint32_t(sk);
            cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &k, sizeof(k));
            cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof(scheme));
            add(a);
          }
        }
      }

      const float alpha = 1.f, beta = 0.f;
      std::vector<__nv_bfloat16> ref(size_t(M) * s.N), got(ref.size());
      auto run = [&](const Config& c, const __nv_bfloat16* w) {
        GS_CUBLAS_CHECK(cublasLtMatmul(lt, desc, &alpha, w, la, x, lb, &beta, out, lc, out, lc, &c.algo, ws, ws_bytes, st));
      };
      for (size_t i = 0; i < configs.size(); ++i) {
        Config& c = configs[i];
        GS_CUDA_CHECK(cudaMemsetAsync(out, 0xff, ref.size() * 2, st));  // NaN: a config that writes nothing fails
        run(c, pool);
        GS_CUDA_CHECK(cudaStreamSynchronize(st));
        GS_CUDA_CHECK(cudaMemcpy(i == 0 ? ref.data() : got.data(), out, ref.size() * 2, cudaMemcpyDeviceToHost));
        c.err = i == 0 ? 0.f : max_rel_err(ref, got);
        if (!(c.err < 2e-2f)) {
          c.us = INFINITY;
          continue;
        }
        int j = 0;
        c.us = time_graph(st, reps, [&] { run(c, pool + size_t(j++ % copies) * welems); });
      }
      const Config first = configs.empty() ? Config{} : configs[0];
      std::vector<Config> sorted = configs;
      std::sort(sorted.begin(), sorted.end(), [](const Config& a, const Config& b) { return a.us < b.us; });
      auto line = [&](const char* tag, const Config& c) {
        const double tbs = c.us > 0 ? double(wbytes) / (c.us * 1e-6) / 1e12 : 0.0;
        printf("%-16s M=%-3d %-9s %8.2f us %5.2f TB/s  algo %3d tile %3d stages %3d splitk %2d red %d swz %d custom %2d "
               "cluster %2d ws %6zu KB err %.1e\n",
               s.name, M, tag, c.us, tbs, c.id, c.tile, c.stages, c.splitk, c.reduction, c.swizzle, c.custom, c.cluster,
               c.workspace >> 10, c.err);
        printf("json {\"shape\":\"%s\",\"N\":%d,\"K\":%d,\"M\":%d,\"tag\":\"%s\",\"us\":%.3f,\"tbs\":%.3f,\"algo\":%d,"
               "\"tile\":%d,\"stages\":%d,\"splitk\":%d,\"reduction\":%d,\"swizzle\":%d,\"custom\":%d,\"cluster\":%d}\n",
               s.name, s.N, s.K, M, tag, c.us, tbs, c.id, c.tile, c.stages, c.splitk, c.reduction, c.swizzle, c.custom,
               c.cluster);
      };
      printf("# %s M=%d: %zu configurations (%zu from the heuristic)\n", s.name, M, configs.size(), heuristic_count);
      if (!configs.empty()) line("heur-1", first);
      for (size_t i = 0; i < std::min<size_t>(3, sorted.size()); ++i) line("best", sorted[i]);
      fflush(stdout);
      cublasLtMatrixLayoutDestroy(la);
      cublasLtMatrixLayoutDestroy(lb);
      cublasLtMatrixLayoutDestroy(lc);
      cublasLtMatmulDescDestroy(desc);
    }
  }
  return 0;
}
