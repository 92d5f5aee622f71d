// The MoE router. Decode (T <= kSplitMaxTokens) takes two launches: the [E, H] projection is
// spread over a grid of (expert group × token group) blocks so the 720 KB of router weights stream
// from all SMs (the single-block version took ~84 µs a layer at one token), then a small kernel
// does softmax and top-k per token from the f32 logits in scratch. Prefill keeps the fused kernel
// (a block of kFusedTokens tokens normalises, projects against every expert and selects), which is
// faster when many tokens share each weight row.
#include <climits>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/kernel_policy.h"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/moe.h"
#include "kernels/cuda/scratch_arena.h"

namespace gs::cuda {
namespace {

constexpr int kTokens = 8;          // tokens per projection block: each weight row read once serves them all
constexpr int kWarps = 8;           // experts per projection block, one per warp
constexpr int kBatch = 12;          // 16-byte weight chunks each lane has in flight at once (all of H = 2816)
constexpr int kSelectWarps = 4;     // tokens per softmax/top-k block, one per warp
constexpr int kFusedTokens = 4;     // tokens per block of the fused prefill kernel
constexpr int kMaxExperts = 1024;
constexpr int64_t kSplitMaxTokens = 64;

// logits[t, e] = z[t] · proj[e] with z = (rms_norm(r[t]) · scale) · in_scale in f32. Every block
// normalises its own tokens (a few KB from L2) rather than waiting on a separate launch.
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) route_logits_kernel(const T* __restrict__ r, int T_rows, int H,
                                                                    const void* scale_w, bool scale_f32,
                                                                    const bf16* __restrict__ proj, int E,
                                                                    float in_scale, float eps,
                                                                    float* __restrict__ logits) {
  pdl_enter();
  extern __shared__ __align__(16) float z[];  // [ntok][H]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int t0 = blockIdx.y * kTokens;
  const int ntok = min(kTokens, T_rows - t0);

  for (int j = warp; j < ntok; j += kWarps) {  // one warp per token
    const T* rr = r + int64_t(t0 + j) * H;
    float ss = 0.f;
    for (int i = lane; i < H; i += 32) {
      float v = to_f32(rr[i]);
      z[j * H + i] = v;
      ss += v * v;
    }
    const float inv = rsqrtf(warp_sum(ss) / float(H) + eps);
    for (int i = lane; i < H; i += 32) z[j * H + i] = (z[j * H + i] * inv * load_weight(scale_w, scale_f32, i)) * in_scale;
  }
  __syncthreads();

  const int e = blockIdx.x * kWarps + warp;
  if (e >= E) return;
  const bf16* w = proj + int64_t(e) * H;
  const int chunks = H / 8;
  float acc[kTokens] = {};
  for (int c0 = lane; c0 < chunks; c0 += 32 * kBatch) {
    uint4 raw[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {  // all loads first, so kBatch requests are in flight
      const int c = c0 + b * 32;
      raw[b] = c < chunks ? __ldg(reinterpret_cast<const uint4*>(w) + c) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int c = c0 + b * 32;
      if (c >= chunks) break;
      const __nv_bfloat162* wp = reinterpret_cast<const __nv_bfloat162*>(&raw[b]);
      float wv[8];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float2 f = __bfloat1622float2(wp[q]);
        wv[2 * q] = f.x, wv[2 * q + 1] = f.y;
      }
#pragma unroll
      for (int j = 0; j < kTokens; ++j) {
        if (j >= ntok) break;
        const float4* zp = reinterpret_cast<const float4*>(z + j * H + c * 8);
        const float4 a = zp[0], bb = zp[1];
        acc[j] += a.x * wv[0] + a.y * wv[1] + a.z * wv[2] + a.w * wv[3] + bb.x * wv[4] + bb.y * wv[5] + bb.z * wv[6] +
                  bb.w * wv[7];
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kTokens; ++j) {
    if (j >= ntok) break;
    const float s = warp_sum(acc[j]);
    if (lane == 0) logits[int64_t(t0 + j) * E + e] = s;
  }
}

// Softmax over the experts, top-k (ties to the lower id), renormalise, × per_expert_scale: one
// warp per token, its probabilities in shared memory.
__global__ void __launch_bounds__(kSelectWarps * 32) route_select_kernel(const float* __restrict__ logits, int T_rows,
                                                                          int E, const void* pes_w, bool pes_f32,
                                                                          int top_k, int* __restrict__ ids,
                                                                          float* __restrict__ weights) {
  pdl_enter();
  extern __shared__ float prob[];  // [kSelectWarps][E]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int t = blockIdx.x * kSelectWarps + warp;
  if (t >= T_rows) return;  // whole warps leave; no block-wide barrier follows
  float* lg = prob + warp * E;
  const float* src = logits + int64_t(t) * E;
  float mx = -INFINITY;
  for (int e = lane; e < E; e += 32) {
    lg[e] = src[e];
    mx = fmaxf(mx, lg[e]);
  }
  mx = warp_max(mx);
  float sum = 0.f;
  for (int e = lane; e < E; e += 32) {
    const float p = expf(lg[e] - mx);
    lg[e] = p;
    sum += p;
  }
  sum = warp_sum(sum);
  for (int e = lane; e < E; e += 32) lg[e] = lg[e] / sum;
  __syncwarp();
  // k rounds of a warp argmax; a chosen expert's probability becomes -1 so it is not chosen again.
  int my_id = 0;
  float my_p = 0.f, top_sum = 0.f;
  for (int j = 0; j < top_k; ++j) {
    float best = -INFINITY;
    int best_e = INT_MAX;
    for (int e = lane; e < E; e += 32)
      if (lg[e] > best || (lg[e] == best && e < best_e)) best = lg[e], best_e = e;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int oe = __shfl_xor_sync(0xffffffffu, best_e, o);
      if (ob > best || (ob == best && oe < best_e)) best = ob, best_e = oe;
    }
    top_sum += best;
    if (lane == j % 32 && j < 32) my_id = best_e, my_p = best;
    if (j >= 32 && lane == 0) ids[int64_t(t) * top_k + j] = best_e, weights[int64_t(t) * top_k + j] = best;
    __syncwarp();
    if (lane == 0) lg[best_e] = -1.f;
    __syncwarp();
  }
  // Lane j holds choice j (j < 32); larger k (never in Gemma-4) went through memory above.
  for (int j = lane; j < top_k; j += 32) {
    const int e = j < 32 ? my_id : ids[int64_t(t) * top_k + j];
    const float p = j < 32 ? my_p : weights[int64_t(t) * top_k + j];
    ids[int64_t(t) * top_k + j] = e;
    weights[int64_t(t) * top_k + j] = (p / top_sum) * load_weight(pes_w, pes_f32, e);
  }
}

// The fused prefill kernel: a block normalises kFusedTokens tokens into shared memory, each warp
// takes a share of the experts for all of them, then one warp per token does softmax and top-k.
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) route_fused_kernel(const T* __restrict__ r, int T_rows, int H,
                                                                 const void* scale_w, bool scale_f32,
                                                                 const bf16* __restrict__ proj, int E,
                                                                 const void* pes_w, bool pes_f32, float in_scale,
                                                                 float eps, int top_k, int* ids, float* weights) {
  pdl_enter();
  extern __shared__ float smem[];
  float* z = smem;                    // [kFusedTokens][H]
  float* logit = smem + kFusedTokens * H;  // [kFusedTokens][E]
  __shared__ float s_red[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int t0 = blockIdx.x * kFusedTokens;
  const int ntok = min(kFusedTokens, T_rows - t0);

  // z = rms_norm(r) · scale · in_scale
  for (int j = 0; j < ntok; ++j) {
    const T* rr = r + int64_t(t0 + j) * H;
    float ss = 0.f;
    for (int i = threadIdx.x; i < H; i += blockDim.x) {
      float v = to_f32(rr[i]);
      z[j * H + i] = v;
      ss += v * v;
    }
    float inv = rsqrtf(block_sum(ss, s_red) / float(H) + eps);
    for (int i = threadIdx.x; i < H; i += blockDim.x)
      z[j * H + i] = (z[j * H + i] * inv * load_weight(scale_w, scale_f32, i)) * in_scale;
  }
  __syncthreads();

  // logits: one warp per expert at a time, all tokens of the block together.
  for (int e = warp; e < E; e += kWarps) {
    const bf16* w = proj + int64_t(e) * H;
    float acc[kFusedTokens] = {};
    for (int i = lane * 2; i < H; i += 64) {  // bf16 pairs: H is even (checked)
      float2 wv = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(w + i));
#pragma unroll
      for (int j = 0; j < kFusedTokens; ++j)
        if (j < ntok) acc[j] += z[j * H + i] * wv.x + z[j * H + i + 1] * wv.y;
    }
#pragma unroll
    for (int j = 0; j < kFusedTokens; ++j) {
      float s = warp_sum(acc[j]);
      if (lane == 0 && j < ntok) logit[j * E + e] = s;
    }
  }
  __syncthreads();

  // softmax, top-k and renormalisation: one warp per token.
  if (warp < ntok) {
    float* lg = logit + warp * E;
    float mx = -INFINITY;
    for (int e = lane; e < E; e += 32) mx = fmaxf(mx, lg[e]);
    mx = warp_max(mx);
    float sum = 0.f;
    for (int e = lane; e < E; e += 32) {
      float p = expf(lg[e] - mx);
      lg[e] = p;
      sum += p;
    }
    sum = warp_sum(sum);
    __syncwarp();
    for (int e = lane; e < E; e += 32) lg[e] = lg[e] / sum;
    __syncwarp();
    // k rounds of a warp argmax (ties to the lower id); a chosen expert's probability becomes -1.
    const int t = t0 + warp;
    float top_sum = 0.f;
    for (int j = 0; j < top_k; ++j) {
      float best = -INFINITY;
      int best_e = INT_MAX;
      for (int e = lane; e < E; e += 32)
        if (lg[e] > best || (lg[e] == best && e < best_e)) best = lg[e], best_e = e;
      for (int o = 16; o > 0; o >>= 1) {
        float ob = __shfl_xor_sync(0xffffffffu, best, o);
        int oe = __shfl_xor_sync(0xffffffffu, best_e, o);
        if (ob > best || (ob == best && oe < best_e)) best = ob, best_e = oe;
      }
      top_sum += best;
      if (lane == 0) {
        ids[int64_t(t) * top_k + j] = best_e;
        weights[int64_t(t) * top_k + j] = best;  // probability for now
        lg[best_e] = -1.f;
      }
      __syncwarp();
    }
    for (int j = lane; j < top_k; j += 32) {
      int e = ids[int64_t(t) * top_k + j];
      float p = weights[int64_t(t) * top_k + j];
      weights[int64_t(t) * top_k + j] = (p / top_sum) * load_weight(pes_w, pes_f32, e);
    }
  }
}

size_t logits_bytes(int64_t T, int64_t E) { return size_t(T) * size_t(E) * sizeof(float); }

}  // namespace

size_t moe_route_scratch_bytes(int64_t T, int64_t E) {
  // The fused kernel keeps its logits in shared memory.
  if (T > kSplitMaxTokens && !kernel_policy().batch_invariant) return 0;
  ScratchCarver c;
  c.take<char>(logits_bytes(T, E));
  return c.used();
}

void launch_moe_route(const Tensor& r, const Tensor& router_scale, const Tensor& router_proj,
                      const Tensor& per_expert_scale, float in_scale, float eps, int top_k, const Tensor& ids,
                      const Tensor& weights, void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  const char* op = "moe_route";
  for (auto* t : {&r, &router_scale, &router_proj, &per_expert_scale, &ids, &weights}) check_cuda_tensor(*t, op, "operand");
  check_dtype(router_proj, DType::BF16, op, "router_proj");
  check_dtype(ids, DType::I32, op, "ids");
  check_dtype(weights, DType::F32, op, "weights");
  const int64_t T = r.rows(), H = r.cols(), E = router_proj.dim(0);
  require(router_proj.ndim() == 2 && router_proj.cols() == H && router_scale.numel() == H &&
              per_expert_scale.numel() == E,
          op, ": router tensors ", router_proj.str(), " ", router_scale.str(), " ", per_expert_scale.str(),
          " do not match hidden ", H);
  require(router_scale.dtype != DType::F16 && per_expert_scale.dtype != DType::F16, op,
          ": router scales must be bf16 or f32");
  require(top_k >= 1 && top_k <= E && E <= kMaxExperts, op, ": top_k ", top_k, " outside [1, ", E, "] or more than ",
          kMaxExperts, " experts");
  require(H % 8 == 0 && aligned16(router_proj.data), op, ": hidden size ", H,
          " must be a multiple of 8 with a 16-byte aligned router_proj");
  require(ids.rows() == T && ids.cols() == top_k && weights.rows() == T && weights.cols() == top_k, op, ": ids ",
          ids.str(), " / weights ", weights.str(), " must be [", T, ", ", top_k, "]");
  if (T == 0) return;
  // The fused prefill kernel sums a token's dot products in another order than the split one, so
  // the batch-invariant policy keeps every T on the split path.
  if (T > kSplitMaxTokens && !kernel_policy().batch_invariant) {
    const size_t smem = size_t(kFusedTokens) * size_t(H + E) * sizeof(float);
    require(smem <= 200 * 1024, op, ": hidden ", H, " needs too much shared memory");
    dispatch_float(r.dtype, op, "r", [&](auto tag) {
      using T_ = typename decltype(tag)::type;
      auto kernel = route_fused_kernel<T_>;
      allow_smem(kernel, smem);
      launch_pdl("moe_route", kernel, unsigned((T + kFusedTokens - 1) / kFusedTokens), kWarps * 32, smem, stream,
                 r.ptr<T_>(), int(T), int(H), router_scale.data, router_scale.dtype == DType::F32,
                 router_proj.ptr<bf16>(), int(E), per_expert_scale.data, per_expert_scale.dtype == DType::F32, in_scale,
                 eps, top_k, ids.ptr<int>(), weights.ptr<float>());
      GS_CUDA_LAUNCHED(op);
    });
    return;
  }
  require(scratch && scratch_bytes >= moe_route_scratch_bytes(T, E), op, ": scratch of ", scratch_bytes,
          " bytes, needs ", moe_route_scratch_bytes(T, E));
  float* logits = static_cast<float*>(scratch);
  const size_t z_smem = size_t(std::min<int64_t>(T, kTokens)) * size_t(H) * sizeof(float);
  require(z_smem <= 200 * 1024, op, ": hidden ", H, " needs too much shared memory");
  dispatch_float(r.dtype, op, "r", [&](auto tag) {
    using T_ = typename decltype(tag)::type;
    auto kernel = route_logits_kernel<T_>;
    allow_smem(kernel, z_smem);
    const dim3 grid(unsigned((E + kWarps - 1) / kWarps), unsigned((T + kTokens - 1) / kTokens));
    launch_pdl("moe_route", kernel, grid, kWarps * 32, z_smem, stream, r.ptr<T_>(), int(T), int(H), router_scale.data,
               router_scale.dtype == DType::F32, router_proj.ptr<bf16>(), int(E), in_scale, eps, logits);
    GS_CUDA_LAUNCHED("moe_route logits");
  });
  const size_t p_smem = size_t(kSelectWarps) * size_t(E) * sizeof(float);
  launch_pdl("route_select_kernel", route_select_kernel, unsigned((T + kSelectWarps - 1) / kSelectWarps),
             kSelectWarps * 32, p_smem, stream, logits, int(T), int(E), per_expert_scale.data,
             per_expert_scale.dtype == DType::F32, top_k, ids.ptr<int>(), weights.ptr<float>());
  GS_CUDA_LAUNCHED("moe_route select");
}

}  // namespace gs::cuda
