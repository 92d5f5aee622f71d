// Every choice the cuda backend makes between kernels, and the bounds it routes by, in one typed
// value. The defaults are what the product runs (each one's measurement: docs/kernel-policy.md);
// other values exist for A/B runs, tests and benches, set in code (BackendOptions), by
// `--kernel-policy` items or by developer variables (both through kernels/kernel_policy_items.h).
// The backend installs its policy when it is created (make_cuda_backend) and logs it once
// ("kernels: ..."); the launchers in this folder read the installed one. Plain C++ (no CUDA
// headers), so engine and CLI code can carry a policy in a build without CUDA.
#pragma once
#include <cstdint>
#include <string>

namespace gs::cuda {

// Bounds of fields that the kernels are compiled for, here so that code without CUDA can check
// values against them (kernel_policy.cpp and attention_dispatch.cpp assert they are the kernels').
constexpr int kPolicyGemvMaxRows = 16;  // gemv.h's kGemvMaxRows
constexpr int kPolicyMaxSplits = 128;   // attention_params.cuh's kMaxAttentionSplits

// ---- GEMV (gemv.h) and its routing against cuBLASLt (cuda_backend.cpp) ----------------------------
struct GemvMmaShape {
  int stages = 3;         // shared-memory ring stages per warp: 2, 3 or 4
  int tiles = 1;          // n8 tiles per warp: 1 or 2 (the GeLU forms always use 2)
  int warps_per_sm = 16;  // K is split while the grid has fewer warps per SM than this
  int split_min_stages = 1;  // ... and each warp keeps at least this many ring stages of K
};

struct GemvPolicy {
  // Routing (which matmuls the backend sends to the GEMV instead of cuBLASLt).
  int max_rows = 2;                          // FMA GEMV up to this many rows (0: cuBLASLt always)
  int64_t two_row_max_dim = 2560;            // two rows only on weights whose shorter side is at most this
  int64_t max_weight_bytes = INT64_MAX;      // one-row weights above this (and K > 4096) go to cuBLASLt
  int mma_max_rows = 8;                      // tensor-core GEMV from mma_min_rows up to this many rows
  int64_t mma_max_bytes = int64_t(20) << 20;        // ... on weights of at most this size
  int64_t mma_max_k = 4096;                         // ... whose rows are at most this long
  int64_t mma_fused_max_bytes = int64_t(20) << 20;  // the fused GeLU forms at 3-8 rows, weight bound
  // Kernel shape (inside launch_gemv).
  int mma_min_rows = 3;               // rows from which launch_gemv runs the tensor-core variant
  GemvMmaShape mma_shape;             // the tensor-core variant's shape
  int min_blocks_per_sm = 8;          // the FMA kernel splits K until the grid has this many blocks per SM
  bool streaming = true;              // 1-2 rows beyond one wave stream through one wave (false: waves)
  int64_t l2_prefetch_bytes = 0;      // L2 bulk-prefetch budget before the PDL wait (0: off)
};

// ---- attention (attention_dispatch.cpp) ----------------------------------------------------------
// Decode (<= 16 packed rows) at head dim 256: Auto takes the 8-warp split-d kernel for groups of
// 8+ query heads per KV head, the narrow tile kernel otherwise.
enum class Hd256Decode { Auto, Narrow, Split8 };
// Prefill at head dim 512 on Hopper: the persistent paired wgmma kernel, or the plain paired one.
enum class Hd512Prefill { PairPersistent, Pair };
// How split keys are merged: by the last split CTA of the mma.sync tile and decode kernels
// (Fused, no second launch), by the combine kernel launched after them (Separate), or as the
// dispatcher chooses (Auto: the combine kernel).
enum class CombineMode { Auto, Fused, Separate };

struct AttentionPolicy {
  Hd256Decode hd256_decode = Hd256Decode::Auto;
  Hd512Prefill hd512_prefill = Hd512Prefill::PairPersistent;
  CombineMode combine = CombineMode::Auto;
  int min_tiles_per_split = 0;  // key tiles a split keeps at least (0: one for narrow tiles, two otherwise)
  int max_splits = 0;           // cap on the key splits (0: the combine's limit, 128)
  // Verify steps on the 16-row decode tiles: a batch whose sequences bring more than 16 packed
  // query rows (q_len · q heads per KV head) still takes them while those rows are at most
  // narrow_max_rows and its 16-row tiles together read at most narrow_max_kv_bytes of keys and
  // values (each tile reads its sequence's again); wider steps take the prefill tiles (decision
  // record "Attention: verify steps on decode tiles", docs/kernel-policy.md).
  int narrow_max_rows = 64;
  int64_t narrow_max_kv_bytes = int64_t(16) << 20;
  bool tma_qo = true;           // wgmma kernels load Q and store O through TMA where the shape allows
  // wgmma key tiles start at multiples of the tile's keys, as the mma.sync kernels' do (false: at
  // the first visible key rounded down to 16, so TMA boxes of 8 or 16 keys never straddle a page).
  bool aligned_key_tiles = false;
};

// ---- programmatic dependent launch (launch_util.h) -----------------------------------------------
enum class PdlMode { ByStepRows, Always, Never };
struct PdlPolicy {
  PdlMode mode = PdlMode::ByStepRows;  // ByStepRows: steps of 1..max_step_rows rows (sm_90 only, always)
  int max_step_rows = 8;
};

// ---- sampling (sampling.cu) ----------------------------------------------------------------------
struct SamplingPolicy {
  bool window = true;  // select over a window of the row's best candidates (false: whole rows)
  int team = 0;        // CTAs per row: 0 by the rows' share of the SMs; 1, 2, 4 or 8 forced (sm_90)
};

// ---- mixture of experts (moe_experts.cu, grouped_gemm_mma.cu) -------------------------------------
enum class MoePath { Auto, Gemv, Mma16, Mma64 };
struct MoePolicy {
  MoePath path = MoePath::Auto;  // Auto: by gemv_max_rows and the rows per expert; Gemv where it fits
  int64_t gemv_max_rows = 32;    // routed rows (T·k) up to which the experts run as GEMVs
  int mma64_bn = 128;            // weight rows per 64-row grouped-GEMM tile: 64 or 128
};

// ---- cuBLASLt (gemm.cpp) ---------------------------------------------------------------------------
struct GemmPolicy {
  bool exact_plans = false;  // a heuristic plan per row count (false: rows above 64 bucket to powers of two)
};

struct KernelPolicy {
  // Batch-invariant kernels (--enable-deterministic-inference): every row's bits independent of the
  // batch it runs in, so decode, verify and prefill rows of one token agree and greedy output with
  // a drafter equals greedy output without one. Overrides the routing below: every matmul on the
  // tensor-core GEMV in 16-row tiles (gemv.h), attention on one kernel per head dim with the keys
  // never split, MoE experts on 16-row grouped tiles and the router on one path. Costs prefill
  // and long-context decode speed (docs/speculative-decoding.md).
  bool batch_invariant = false;
  GemvPolicy gemv;
  AttentionPolicy attention;
  PdlPolicy pdl;
  SamplingPolicy sampling;
  MoePolicy moe;
  GemmPolicy gemm;

  // One readable block, "kernels: ..." and a line per area, for the startup log.
  std::string describe() const;
};

// The policy the launchers read: the one the last created cuda backend installed, the defaults
// before that. Tests and benches install variants with set_kernel_policy (not while another
// thread launches).
const KernelPolicy& kernel_policy();
void set_kernel_policy(const KernelPolicy& policy);

}  // namespace gs::cuda
