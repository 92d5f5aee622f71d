// Developer variables: environment overrides of the kernel policy (kernel_policy.h) for A/B runs
// (tools/gpu/ab-bench.sh) and benches. This is the only place that reads the environment for a
// kernel choice; the cuda backend applies it when it is created (kernels/backends.cpp), so a
// variable set later has no effect. Each one applied is logged as a warning. Unset or empty
// variables leave the default; unparsable numbers read as 0.
//
// GEMV and its routing against cuBLASLt:
//   GS_GEMV_MAX_M=N               FMA GEMV up to N rows (0-16; 0: cuBLASLt for 1-2 rows)
//   GS_GEMV_M2_MAX_DIM=N          two rows only on weights whose shorter side is at most N
//   GS_GEMV_MAX_MB=X              one-row weights above X MiB (with K > 4096) go to cuBLASLt
//   GS_GEMV_MMA_MAX_M=N           tensor-core GEMV up to N rows (0-16)
//   GS_GEMV_MMA_MAX_MB=X          ... on weights of at most X MiB (0: cuBLASLt for 3+ rows)
//   GS_GEMV_MMA_FUSED_MAX_MB=X    fused GeLU forms at 3-8 rows on weights of at most X MiB (0: never)
//   GS_GEMV_MMA=S,T,W             tensor-core shape: S stages (2-4), T n8 tiles (1-2), K split below W warps/SM
//   GS_GEMV_MIN_BLOCKS_PER_SM=N   FMA GEMV splits K until the grid has N blocks per SM
//   GS_GEMV_STREAM=0              big one/two-row weights run in waves instead of streaming
//   GS_GEMV_L2_PREFETCH_MB=X      L2 bulk-prefetch budget before the PDL wait (X MiB over the resident blocks)
// Attention:
//   GS_ATTN_HD256_DECODE=narrow|split8   head-dim-256 decode kernel for every group size
//   GS_ATTN_HD512_PERSISTENT=0           head-dim-512 prefill on the plain paired wgmma kernel
//   GS_ATTN_COMBINE=fused|separate       how split keys are merged
//   GS_ATTN_MIN_TILES=N                  key tiles a split keeps at least (narrow and wide tiles)
//   GS_ATTN_MAX_SPLITS=N                 cap on the key splits
//   GS_ATTN_TMA_QO=0                     wgmma kernels load Q / store O without TMA
//   GS_ATTN_ALIGNED_TILES=1              wgmma key tiles start at multiples of the tile's keys
// Launch and the rest:
//   GS_PDL=1|0                   programmatic dependent launch on every step / never (sm_90)
//   GS_SAMPLE_WINDOW=0           sampling selects over whole rows
//   GS_SAMPLE_TEAM=1|2|4|8       CTAs per sampled row (sm_90 with the window)
//   GS_MOE_PATH=gemv|mma16|mma64 the experts' kernels ("gemv" only where its shared memory fits)
//   GS_MOE_GEMV_MAX_ROWS=N       routed rows up to which the experts run as GEMVs
//   GS_MOE_MMA64_BN=64           64 weight rows per 64-row grouped-GEMM tile (default 128)
//   GS_GEMM_EXACT_PLANS=1        a cuBLASLt heuristic plan for every row count
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/log.h"
#include "kernels/cuda/kernel_policy.h"

namespace gs::cuda {

KernelPolicy apply_developer_env(KernelPolicy p) {
  // Calls `set(value)` when the variable is set and not empty.
  auto with = [](const char* name, auto set) {
    const char* e = std::getenv(name);
    if (!e || !*e) return;
    set(std::string(e));
    log::warn("{}={}: developer override of the kernel policy", name, e);
  };
  auto count = [](const std::string& s) { return int64_t(std::atoll(s.c_str())); };
  auto mib = [](const std::string& s) { return int64_t(std::atof(s.c_str()) * (1 << 20)); };

  GemvPolicy& g = p.gemv;
  with("GS_GEMV_MAX_M", [&](const std::string& s) { g.max_rows = int(count(s)); });
  with("GS_GEMV_M2_MAX_DIM", [&](const std::string& s) { g.two_row_max_dim = count(s); });
  with("GS_GEMV_MAX_MB", [&](const std::string& s) { g.max_weight_bytes = mib(s); });
  with("GS_GEMV_MMA_MAX_M", [&](const std::string& s) { g.mma_max_rows = int(count(s)); });
  with("GS_GEMV_MMA_MAX_MB", [&](const std::string& s) { g.mma_max_bytes = mib(s); });
  with("GS_GEMV_MMA_FUSED_MAX_MB", [&](const std::string& s) { g.mma_fused_max_bytes = mib(s); });
  with("GS_GEMV_MMA", [&](const std::string& s) {
    std::sscanf(s.c_str(), "%d,%d,%d", &g.mma_shape.stages, &g.mma_shape.tiles, &g.mma_shape.warps_per_sm);
  });
  with("GS_GEMV_MIN_BLOCKS_PER_SM", [&](const std::string& s) { g.min_blocks_per_sm = int(count(s)); });
  with("GS_GEMV_STREAM", [&](const std::string& s) { g.streaming = s[0] != '0'; });
  with("GS_GEMV_L2_PREFETCH_MB", [&](const std::string& s) { g.l2_prefetch_bytes = mib(s); });

  AttentionPolicy& a = p.attention;
  with("GS_ATTN_HD256_DECODE", [&](const std::string& s) {
    a.hd256_decode = s == "narrow" ? Hd256Decode::Narrow : s == "split8" ? Hd256Decode::Split8 : Hd256Decode::Auto;
  });
  with("GS_ATTN_HD512_PERSISTENT",
       [&](const std::string& s) { a.hd512_prefill = s == "0" ? Hd512Prefill::Pair : Hd512Prefill::PairPersistent; });
  with("GS_ATTN_COMBINE", [&](const std::string& s) {
    a.combine = s == "fused" ? CombineMode::Fused : s == "separate" ? CombineMode::Separate : CombineMode::Auto;
  });
  with("GS_ATTN_MIN_TILES", [&](const std::string& s) { a.min_tiles_per_split = int(count(s)); });
  with("GS_ATTN_MAX_SPLITS", [&](const std::string& s) { a.max_splits = int(count(s)); });
  with("GS_ATTN_TMA_QO", [&](const std::string& s) { a.tma_qo = s != "0"; });
  with("GS_ATTN_ALIGNED_TILES", [&](const std::string& s) { a.aligned_key_tiles = s == "1"; });

  with("GS_PDL", [&](const std::string& s) {
    if (s[0] == '1') p.pdl.mode = PdlMode::Always;
    if (s[0] == '0') p.pdl.mode = PdlMode::Never;
  });
  with("GS_SAMPLE_WINDOW", [&](const std::string& s) { p.sampling.window = s != "0"; });
  with("GS_SAMPLE_TEAM", [&](const std::string& s) { p.sampling.team = int(count(s)); });
  with("GS_MOE_PATH", [&](const std::string& s) {
    p.moe.path = s == "gemv" ? MoePath::Gemv : s == "mma16" ? MoePath::Mma16 : s == "mma64" ? MoePath::Mma64
                                                                                            : MoePath::Auto;
  });
  with("GS_MOE_GEMV_MAX_ROWS", [&](const std::string& s) { p.moe.gemv_max_rows = count(s); });
  with("GS_MOE_MMA64_BN", [&](const std::string& s) { p.moe.mma64_bn = int(count(s)); });
  with("GS_GEMM_EXACT_PLANS", [&](const std::string& s) { p.gemm.exact_plans = s[0] == '1'; });
  return p;
}

}  // namespace gs::cuda
