// The MoE router in one launch. A block handles kTokens tokens so each router weight row, read
// once from L2 per block, serves several tokens: the normalised inputs sit in shared memory and
// each warp takes a share of the experts.
#include <climits>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/moe.h"

namespace gs::cuda {
namespace {

constexpr int kTokens = 4;
constexpr int kWarps = 8;
constexpr int kMaxExperts = 1024;

template <typename T>
__global__ void __launch_bounds__(kWarps * 32) moe_route_kernel(const T* __restrict__ r, int T_rows, int H,
                                                                 const void* scale_w, bool scale_f32,
                                                                 const bf16* __restrict__ proj, int E,
                                                                 const void* pes_w, bool pes_f32, float in_scale,
                                                                 float eps, int top_k, int* ids, float* weights) {
  extern __shared__ float smem[];
  float* z = smem;                    // [kTokens][H]
  float* logit = smem + kTokens * H;  // [kTokens][E]
  __shared__ float s_red[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int t0 = blockIdx.x * kTokens;
  const int ntok = min(kTokens, T_rows - t0);

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
    float acc[kTokens] = {};
    for (int i = lane * 2; i < H; i += 64) {  // bf16 pairs: H is even (checked)
      float2 wv = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(w + i));
#pragma unroll
      for (int j = 0; j < kTokens; ++j)
        if (j < ntok) acc[j] += z[j * H + i] * wv.x + z[j * H + i + 1] * wv.y;
    }
#pragma unroll
    for (int j = 0; j < kTokens; ++j) {
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

}  // namespace

void launch_moe_route(const Tensor& r, const Tensor& router_scale, const Tensor& router_proj,
                      const Tensor& per_expert_scale, float in_scale, float eps, int top_k, const Tensor& ids,
                      const Tensor& weights, cudaStream_t stream) {
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
  require(H % 2 == 0, op, ": hidden size ", H, " must be even");
  require(ids.rows() == T && ids.cols() == top_k && weights.rows() == T && weights.cols() == top_k, op, ": ids ",
          ids.str(), " / weights ", weights.str(), " must be [", T, ", ", top_k, "]");
  if (T == 0) return;
  size_t smem = size_t(kTokens) * size_t(H + E) * sizeof(float);
  require(smem <= 200 * 1024, op, ": hidden ", H, " needs too much shared memory");
  dispatch_float(r.dtype, op, "r", [&](auto tag) {
    using T_ = typename decltype(tag)::type;
    auto kernel = moe_route_kernel<T_>;
    if (smem > 48 * 1024) GS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    kernel<<<unsigned((T + kTokens - 1) / kTokens), kWarps * 32, smem, stream>>>(
        r.ptr<T_>(), int(T), int(H), router_scale.data, router_scale.dtype == DType::F32, router_proj.ptr<bf16>(),
        int(E), per_expert_scale.data, per_expert_scale.dtype == DType::F32, in_scale, eps, top_k, ids.ptr<int>(),
        weights.ptr<float>());
    GS_CUDA_LAUNCHED(op);
  });
}

}  // namespace gs::cuda
