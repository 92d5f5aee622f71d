// Developer variables: environment overrides of the kernel policy (kernel_policy.h) for A/B runs
// (tools/gpu/ab-bench.sh) and benches. This is the only place that reads the environment for a
// kernel choice; the cuda backend applies it when it is created (kernels/backends.cpp), so a
// variable set later has no effect. Each variable is the item of one or more policy keys
// (kernel_policy_items.h): its value goes through the same table as `--kernel-policy`, so a value
// the field does not take is an error naming the variable. Each one applied is logged as a
// warning. Unset or empty variables leave the field as it was.
//
// GEMV and its routing against cuBLASLt:
//   GS_GEMV_MAX_M=N               gemv.max_rows: FMA GEMV up to N rows (0-16; 0: cuBLASLt for 1-2 rows)
//   GS_GEMV_M2_MAX_DIM=N          gemv.two_row_max_dim: two rows only on weights whose shorter side is at most N
//   GS_GEMV_MAX_MB=X              gemv.max_weight_mib: one-row weights above X MiB (with K > 4096) go to cuBLASLt
//   GS_GEMV_MMA_MAX_M=N           gemv.mma_max_rows: tensor-core GEMV up to N rows (0-16)
//   GS_GEMV_MMA_MAX_MB=X          gemv.mma_max_mib: ... on weights of at most X MiB (0: cuBLASLt for 3+ rows)
//   GS_GEMV_MMA_FUSED_MAX_MB=X    gemv.mma_fused_max_mib: fused GeLU forms at 3-8 rows up to X MiB (0: never)
//   GS_GEMV_MMA=S,T,W             gemv.mma_stages, gemv.mma_tiles, gemv.mma_warps_per_sm: tensor-core shape,
//                                 S stages (2-4), T n8 tiles (1-2), K split below W warps/SM
//   GS_GEMV_MIN_BLOCKS_PER_SM=N   gemv.min_blocks_per_sm: FMA GEMV splits K until the grid has N blocks per SM
//   GS_GEMV_STREAM=0              gemv.streaming: big one/two-row weights run in waves instead of streaming
//   GS_GEMV_L2_PREFETCH_MB=X      gemv.l2_prefetch_mib: L2 bulk-prefetch budget before the PDL wait
// Attention:
//   GS_ATTN_HD256_DECODE=narrow|split8   attention.hd256_decode: head-dim-256 decode kernel for every group size
//   GS_ATTN_HD512_PERSISTENT=0           attention.hd512_prefill=pair: the plain paired wgmma kernel
//   GS_ATTN_COMBINE=fused|separate       attention.combine: how split keys are merged
//   GS_ATTN_MIN_TILES=N                  attention.min_tiles_per_split: key tiles a split keeps at least
//   GS_ATTN_MAX_SPLITS=N                 attention.max_splits: cap on the key splits
//   GS_ATTN_TMA_QO=0                     attention.tma_qo: wgmma kernels load Q / store O without TMA
//   GS_ATTN_ALIGNED_TILES=1              attention.aligned_key_tiles: key tiles at multiples of the tile's keys
// Launch and the rest:
//   GS_PDL=1|0                   pdl.mode=always|never: programmatic dependent launch on every step / never
//   GS_SAMPLE_WINDOW=0           sampling.window: sampling selects over whole rows
//   GS_SAMPLE_TEAM=1|2|4|8       sampling.team: CTAs per sampled row (sm_90 with the window)
//   GS_MOE_PATH=gemv|mma16|mma64 moe.path: the experts' kernels ("gemv" only where its shared memory fits)
//   GS_MOE_GEMV_MAX_ROWS=N       moe.gemv_max_rows: routed rows up to which the experts run as GEMVs
//   GS_MOE_MMA64_BN=64           moe.mma64_bn: weight rows per 64-row grouped-GEMM tile (default 128)
//   GS_GEMM_EXACT_PLANS=1        gemm.exact_plans: a cuBLASLt heuristic plan for every row count
#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "kernels/kernel_policy_items.h"

namespace gs::cuda {

namespace {

struct DeveloperVariable {
  const char* name;
  // The policy keys the value's comma-separated parts go to, in order (one key for most).
  std::vector<std::string_view> keys;
  // Values of the variable that are not the field's own (GS_PDL=1 is pdl.mode=always).
  std::vector<std::pair<std::string_view, std::string_view>> renames = {};
};

const std::vector<DeveloperVariable>& variables() {
  static const std::vector<DeveloperVariable> list = {
      {"GS_GEMV_MAX_M", {"gemv.max_rows"}},
      {"GS_GEMV_M2_MAX_DIM", {"gemv.two_row_max_dim"}},
      {"GS_GEMV_MAX_MB", {"gemv.max_weight_mib"}},
      {"GS_GEMV_MMA_MAX_M", {"gemv.mma_max_rows"}},
      {"GS_GEMV_MMA_MAX_MB", {"gemv.mma_max_mib"}},
      {"GS_GEMV_MMA_FUSED_MAX_MB", {"gemv.mma_fused_max_mib"}},
      {"GS_GEMV_MMA", {"gemv.mma_stages", "gemv.mma_tiles", "gemv.mma_warps_per_sm"}},
      {"GS_GEMV_MIN_BLOCKS_PER_SM", {"gemv.min_blocks_per_sm"}},
      {"GS_GEMV_STREAM", {"gemv.streaming"}},
      {"GS_GEMV_L2_PREFETCH_MB", {"gemv.l2_prefetch_mib"}},
      {"GS_ATTN_HD256_DECODE", {"attention.hd256_decode"}},
      {"GS_ATTN_HD512_PERSISTENT", {"attention.hd512_prefill"}, {{"0", "pair"}, {"1", "pair_persistent"}}},
      {"GS_ATTN_COMBINE", {"attention.combine"}},
      {"GS_ATTN_MIN_TILES", {"attention.min_tiles_per_split"}},
      {"GS_ATTN_MAX_SPLITS", {"attention.max_splits"}},
      {"GS_ATTN_TMA_QO", {"attention.tma_qo"}},
      {"GS_ATTN_ALIGNED_TILES", {"attention.aligned_key_tiles"}},
      {"GS_PDL", {"pdl.mode"}, {{"1", "always"}, {"0", "never"}}},
      {"GS_SAMPLE_WINDOW", {"sampling.window"}},
      {"GS_SAMPLE_TEAM", {"sampling.team"}},
      {"GS_MOE_PATH", {"moe.path"}},
      {"GS_MOE_GEMV_MAX_ROWS", {"moe.gemv_max_rows"}},
      {"GS_MOE_MMA64_BN", {"moe.mma64_bn"}},
      {"GS_GEMM_EXACT_PLANS", {"gemm.exact_plans"}},
  };
  return list;
}

// The items a variable's value stands for: "4,2,32" of GS_GEMV_MMA is
// "gemv.mma_stages=4,gemv.mma_tiles=2,gemv.mma_warps_per_sm=32".
std::string items_of(const DeveloperVariable& var, const std::string_view whole) {
  std::string_view value = whole;
  std::string items;
  size_t part = 0;
  while (true) {
    const size_t comma = value.find(',');
    std::string_view v = value.substr(0, comma);
    GS_CHECK(part < var.keys.size(), "{}={}: at most {} comma-separated value(s)", var.name, whole, var.keys.size());
    for (const auto& [from, to] : var.renames)
      if (v == from) v = to;
    items += fmt::format("{}{}={}", items.empty() ? "" : ",", var.keys[part++], v);
    if (comma == std::string_view::npos) break;
    value = value.substr(comma + 1);
  }
  return items;
}

}  // namespace

KernelPolicy apply_developer_env(KernelPolicy p) {
  for (const DeveloperVariable& var : variables()) {
    const char* e = std::getenv(var.name);
    if (!e || !*e) continue;
    apply_policy_items(p, items_of(var, e), fmt::format("{}={}", var.name, e));
    log::warn("{}={}: developer override of the kernel policy", var.name, e);
  }
  return p;
}

}  // namespace gs::cuda
