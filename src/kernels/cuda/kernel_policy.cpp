// The installed kernel policy and its startup description (kernel_policy.h).
#include "kernels/cuda/kernel_policy.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/cuda/gemv.h"

namespace gs::cuda {

static_assert(GemvPolicy{}.mma_min_rows == kGemvMmaMinRows, "the GEMV's default tensor-core rows are its routing's");
static_assert(kPolicyGemvMaxRows == kGemvMaxRows, "the policy's GEMV row bound is the kernel's");

namespace {

KernelPolicy& installed() {
  static KernelPolicy policy;
  return policy;
}

// Values the kernels cannot take are brought back to the nearest built one (or the default).
KernelPolicy sanitized(KernelPolicy p) {
  GemvPolicy& g = p.gemv;
  g.max_rows = std::clamp(g.max_rows, 0, kGemvMaxRows);
  g.mma_max_rows = std::clamp(g.mma_max_rows, 0, kGemvMaxRows);
  g.min_blocks_per_sm = std::max(1, g.min_blocks_per_sm);
  if (g.mma_shape.stages < 2 || g.mma_shape.stages > 4) g.mma_shape.stages = 3;
  if (g.mma_shape.tiles != 1 && g.mma_shape.tiles != 2) g.mma_shape.tiles = 1;
  g.mma_shape.warps_per_sm = std::max(1, g.mma_shape.warps_per_sm);
  g.mma_shape.split_min_stages = std::clamp(g.mma_shape.split_min_stages, 1, 4);
  p.attention.narrow_max_rows = std::max(16, p.attention.narrow_max_rows);
  p.attention.narrow_max_kv_bytes = std::max<int64_t>(0, p.attention.narrow_max_kv_bytes);
  const int t = p.sampling.team;
  if (t != 1 && t != 2 && t != 4 && t != 8) p.sampling.team = 0;
  if (p.moe.mma64_bn != 64) p.moe.mma64_bn = 128;
  return p;
}

std::string megabytes(int64_t bytes) {
  if (bytes == INT64_MAX) return "any size";
  return fmt::format("<= {:g} MiB", double(bytes) / double(1 << 20));
}

const char* name(Hd256Decode d) {
  switch (d) {
    case Hd256Decode::Auto: return "auto (split-d 8 warps for 8+ query heads per KV head, else narrow)";
    case Hd256Decode::Narrow: return "narrow";
    case Hd256Decode::Split8: return "split-d 8 warps";
  }
  return "?";
}
const char* name(Hd512Prefill d) { return d == Hd512Prefill::PairPersistent ? "paired persistent" : "paired"; }
const char* name(CombineMode m) {
  switch (m) {
    case CombineMode::Auto: return "auto (combine kernel)";
    case CombineMode::Fused: return "fused into the last split CTA";
    case CombineMode::Separate: return "combine kernel";
  }
  return "?";
}
const char* name(MoePath p) {
  switch (p) {
    case MoePath::Auto: return "auto";
    case MoePath::Gemv: return "gemv";
    case MoePath::Mma16: return "grouped gemm, 16-row tiles";
    case MoePath::Mma64: return "grouped gemm, 64-row tiles";
  }
  return "?";
}

}  // namespace

const KernelPolicy& kernel_policy() { return installed(); }
void set_kernel_policy(const KernelPolicy& policy) { installed() = sanitized(policy); }

std::string KernelPolicy::describe() const {
  const GemvPolicy& g = gemv;
  const AttentionPolicy& a = attention;
  std::string pdl_rows = pdl.mode == PdlMode::Always  ? "every step"
                         : pdl.mode == PdlMode::Never ? "off"
                                                      : fmt::format("steps of 1-{} rows", pdl.max_step_rows);
  return fmt::format(
      "kernels: policy (docs/kernel-policy.md){}\n"
      "  gemv: fma up to {} rows (2 rows on weights with a side <= {}; at one row {}); "
      "tensor-core {}-{} rows on weights {} with K <= {} (fused GeLU {}), {} stages x {} tiles, K split below {} "
      "warps/SM keeping {} stages a warp; fma K split below {} blocks/SM, streaming {}, L2 prefetch {}\n"
      "  attention: hd256 decode {}; hd512 prefill {}; combine {}; min key tiles per split {}; max splits {}; "
      "decode tiles for up to {} rows a sequence while they read <= {} of KV; TMA Q/O {}; wgmma key tiles start {}\n"
      "  pdl: {} (sm_90)\n"
      "  sampling: window {}, CTAs per row {}\n"
      "  moe: {} (gemv up to {} routed rows), 64-row tiles of {} weight rows\n"
      "  gemm: cuBLASLt plans {}",
      batch_invariant ? "\n  batch invariant: on (every matmul on the tensor-core GEMV in 16-row tiles, attention "
                        "unsplit on the narrow kernels, MoE on 16-row grouped tiles; overrides the routing below)"
                      : "",
      g.max_rows, g.two_row_max_dim,
      g.max_weight_bytes == INT64_MAX ? std::string("every weight")
                                      : fmt::format("weights {} or with K <= 4096", megabytes(g.max_weight_bytes)),
      kGemvMmaMinRows, g.mma_max_rows,
      megabytes(g.mma_max_bytes), g.mma_max_k, megabytes(g.mma_fused_max_bytes), g.mma_shape.stages,
      g.mma_shape.tiles, g.mma_shape.warps_per_sm, g.mma_shape.split_min_stages, g.min_blocks_per_sm, g.streaming ? "on" : "off",
      g.l2_prefetch_bytes > 0 ? megabytes(g.l2_prefetch_bytes) : std::string("off"), name(a.hd256_decode),
      name(a.hd512_prefill), name(a.combine),
      a.min_tiles_per_split > 0 ? fmt::format("{}", a.min_tiles_per_split) : std::string("auto (1 narrow, 2 wide)"),
      a.max_splits > 0 ? fmt::format("{}", a.max_splits) : std::string("128"), a.narrow_max_rows,
      megabytes(a.narrow_max_kv_bytes), a.tma_qo ? "on" : "off",
      a.aligned_key_tiles ? "at multiples of the tile's keys" : "at the first visible key rounded down to 16", pdl_rows, sampling.window ? "on" : "off",
      sampling.team > 0 ? fmt::format("{}", sampling.team) : std::string("auto"), name(moe.path), moe.gemv_max_rows,
      moe.mma64_bn, gemm.exact_plans ? "per row count" : "per row count to 64, then per power of two");
}

}  // namespace gs::cuda
