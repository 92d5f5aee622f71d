// q/k RMSNorm + RoPE + v_norm + paged KV write, one warp per (token, head job).
//
// Rotate-half RoPE pairs element i with i + d/2, so each lane holds the same E = d/64 positions of
// both halves and the rotation needs no data exchange between lanes; only the sum of squares of
// the norm is a warp reduction. Numerics follow the reference: the normed vector is stored in the
// activation dtype, cos/sin are computed in f32 and rounded to it, and each product of the
// rotation and their sum are rounded again. The inverse frequencies come from a table made on the
// host (rope_inv_freq, the cpu backend's), loaded before the PDL wait: a powf per element was
// ~1% of an E2B decode step.
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "kernels/cuda/device_allocator.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/qkv_prepare.h"

namespace gs::cuda {
namespace {

struct QkvArgs {
  const void* qkv;
  int64_t row_stride;  // elements per token row of qkv
  int num_tokens, nq, nkv, d;
  bool has_kv, v_from_k;  // v_from_k: QK_SHARED, V = v_norm(raw k)
  const void* q_norm_w;
  bool q_norm_f32;
  const void* k_norm_w;
  bool k_norm_f32;
  float eps;
  const int* positions;
  const int* slots;  // slot_mapping of the group; -1: no write
  void* q_out;
  void* k_cache;  // start of this cache layer
  void* v_cache;
  float theta;
  int rotary_pairs, freq_dim;
  const float* inv_freq;  // [rotary_pairs]; null: computed here (a call captured before any table)
};

template <typename T, int E>
__global__ void qkv_prepare_kernel(QkvArgs a) {
  const int lane = threadIdx.x & 31;
  const int jobs_per_token = a.nq + (a.has_kv ? 2 * a.nkv : 0);
  const int64_t job = blockIdx.x * int64_t(blockDim.x >> 5) + (threadIdx.x >> 5);
  const bool live = job < int64_t(a.num_tokens) * jobs_per_token;
  const int t = live ? int(job / jobs_per_token) : 0, j = live ? int(job % jobs_per_token) : 0;
  const int d = a.d, half = d / 2;
  const bool is_q = j < a.nq, is_k = !is_q && j < a.nq + a.nkv;

  // The norm weights do not depend on the previous kernel: load them before the wait, so at decode
  // (a few warps, latency-bound) their round trip overlaps the previous kernel's tail.
  const void* w = is_q ? a.q_norm_w : is_k ? a.k_norm_w : nullptr;
  const bool w_f32 = is_q ? a.q_norm_f32 : a.k_norm_f32;
  float w1[E], w2[E], freq[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int i = lane * E + e;
    w1[e] = live && w ? load_weight(w, w_f32, i) : 1.f;
    w2[e] = live && w ? load_weight(w, w_f32, i + half) : 1.f;
    freq[e] = live && a.inv_freq && i < a.rotary_pairs ? a.inv_freq[i] : 0.f;
  }
  pdl_enter();
  if (!live) return;

  const T* row = static_cast<const T*>(a.qkv) + int64_t(t) * a.row_stride;
  const int pos = a.positions[t];
  // What this job reads, whether it rotates, where it goes.
  const T* src;
  bool rope = true;
  T* dst;
  if (is_q) {
    src = row + int64_t(j) * d;
    dst = static_cast<T*>(a.q_out) + (int64_t(t) * a.nq + j) * d;
  } else {
    int slot = a.slots[t];
    if (slot < 0) return;  // the whole warp leaves together
    int h = is_k ? j - a.nq : j - a.nq - a.nkv;
    if (is_k || a.v_from_k) src = row + int64_t(a.nq + h) * d;
    else src = row + int64_t(a.nq + a.nkv + h) * d;
    rope = is_k;
    T* cache = static_cast<T*>(is_k ? a.k_cache : a.v_cache);
    dst = cache + (int64_t(slot) * a.nkv + h) * d;
  }
  float x1[E], x2[E];
  float sumsq = 0.f;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    int i = lane * E + e;
    x1[e] = to_f32(src[i]);
    x2[e] = to_f32(src[i + half]);
    sumsq += x1[e] * x1[e] + x2[e] * x2[e];
  }
  const float inv = rsqrtf(warp_sum(sumsq) / float(d) + a.eps);
#pragma unroll
  for (int e = 0; e < E; ++e) {
    int i = lane * E + e;
    // (x·inv)·w as the reference multiplies; w = 1 (v_norm, no weight) leaves the product exact.
    float n1 = rnd<T>(x1[e] * inv * w1[e]), n2 = rnd<T>(x2[e] * inv * w2[e]);
    if (rope && i < a.rotary_pairs) {
      const float inv_freq = a.inv_freq ? freq[e] : 1.0f / powf(a.theta, float(2 * i) / float(a.freq_dim));
      const float ang = float(pos) * inv_freq;
      float s, c;
      sincosf(ang, &s, &c);  // one range reduction for both (the full layers' heads have 256 pairs)
      c = rnd<T>(c), s = rnd<T>(s);
      float y1 = rnd<T>(rnd<T>(n1 * c) + rnd<T>(-n2 * s));
      float y2 = rnd<T>(rnd<T>(n2 * c) + rnd<T>(n1 * s));
      n1 = y1, n2 = y2;
    }
    dst[i] = from_f32<T>(n1);
    dst[i + half] = from_f32<T>(n2);
  }
}

// One table of rope_inv_freq per (device, spec), made on the first call that is not being captured
// (no allocation then; the engine runs every step shape eagerly before it captures it) and kept
// for the process: a few hundred bytes per spec.
const float* inv_freq_table(const RopeSpec& rope, cudaStream_t stream) {
  if (rope.rotary_pairs <= 0) return nullptr;
  int dev = 0;
  GS_CUDA_CHECK(cudaGetDevice(&dev));
  uint32_t theta_bits = 0;
  std::memcpy(&theta_bits, &rope.theta, sizeof theta_bits);
  const auto key = std::make_tuple(theta_bits, rope.rotary_pairs, rope.freq_dim);
  struct Table {
    std::vector<float> host;  // the copy's source, alive until the process ends
    float* device = nullptr;
  };
  // One lock and one map per device: a rank's thread never waits on another rank's lock (the
  // allocation is pool_malloc's, which waits for no other device: device_allocator.h).
  constexpr int kMaxDevices = 64;
  require(dev >= 0 && dev < kMaxDevices, "qkv_prepare: device ", dev, " beyond the ", kMaxDevices,
          " the RoPE tables track");
  static std::mutex mus[kMaxDevices];
  static std::map<decltype(key), Table> per_device[kMaxDevices];
  std::lock_guard<std::mutex> lock(mus[dev]);
  auto& tables = per_device[dev];
  if (auto it = tables.find(key); it != tables.end()) return it->second.device;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  GS_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return nullptr;
  Table t;
  t.host.resize(size_t(rope.rotary_pairs));
  for (int i = 0; i < rope.rotary_pairs; ++i) t.host[size_t(i)] = rope_inv_freq(rope, i);
  GS_CUDA_CHECK(pool_malloc(dev, t.host.size() * sizeof(float), reinterpret_cast<void**>(&t.device)));
  // Once per spec and device, a blocking copy: the kernels read the table before their PDL wait,
  // which orders them after the previous kernel but not necessarily after a copy.
  GS_CUDA_CHECK(cudaMemcpy(t.device, t.host.data(), t.host.size() * sizeof(float), cudaMemcpyHostToDevice));
  // From pageable memory the DMA may still be in flight: wait for the legacy stream only, which
  // non-blocking streams (ours) never join.
  GS_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  return tables.emplace(key, std::move(t)).first->second.device;
}

}  // namespace

void launch_qkv_prepare(const Tensor& qkv, QkvLayout layout, const AttentionParams& p, const RopeSpec& rope,
                        const Tensor& q_norm_w, const Tensor* k_norm_w, float eps, const AttentionBatch& batch,
                        KvGroup group, KvPool& pool, int cache_layer, const Tensor& q_out, cudaStream_t stream) {
  const char* op = "qkv_prepare";
  check_cuda_tensor(qkv, op, "qkv");
  check_cuda_tensor(q_out, op, "q_out");
  check_cuda_tensor(q_norm_w, op, "q_norm weight");
  const int d = p.head_dim, nq = p.num_q_heads, nkv = p.num_kv_heads;
  const int T = int(qkv.rows());
  require(d % 64 == 0 && d >= 64 && d <= 512, op, ": head_dim ", d, " must be a multiple of 64 in [64, 512]");
  require(rope.head_dim == d && rope.rotary_pairs <= d / 2 && rope.freq_dim > 0, op, ": rope spec (head_dim ",
          rope.head_dim, ", pairs ", rope.rotary_pairs, ") does not fit head_dim ", d);
  const bool has_kv = layout != QkvLayout::Q_ONLY;
  int64_t width = int64_t(nq) * d;
  if (layout == QkvLayout::QKV) width += 2 * int64_t(nkv) * d;
  if (layout == QkvLayout::QK_SHARED) width += int64_t(nkv) * d;
  require(qkv.cols() == width, op, ": qkv ", qkv.str(), " must have ", width, " columns for ", nq, " q heads and ",
          nkv, " kv heads of ", d);
  require(q_out.rows() == T && q_out.cols() == int64_t(nq) * d && q_out.dtype == qkv.dtype, op, ": q_out ",
          q_out.str(), " must be [", T, ", ", int64_t(nq) * d, "] of qkv's dtype");
  require(q_norm_w.numel() == d, op, ": q_norm weight ", q_norm_w.str(), " must have ", d, " elements");
  require(batch.positions.defined() && batch.positions.numel() >= T, op, ": batch positions cover ",
          batch.positions.numel(), " rows, qkv has ", T);

  QkvArgs a{};
  a.qkv = qkv.data, a.row_stride = width, a.num_tokens = T, a.nq = nq, a.nkv = nkv, a.d = d;
  a.has_kv = has_kv, a.v_from_k = layout == QkvLayout::QK_SHARED;
  a.q_norm_w = q_norm_w.data, a.q_norm_f32 = q_norm_w.dtype == DType::F32;
  a.eps = eps, a.positions = batch.positions.ptr<int>(), a.q_out = q_out.data;
  a.theta = rope.theta, a.rotary_pairs = rope.rotary_pairs, a.freq_dim = rope.freq_dim;
  if (has_kv) {
    require(k_norm_w && k_norm_w->defined() && k_norm_w->numel() == d, op, ": layers that write K/V need a k_norm ",
            "weight of ", d, " elements");
    check_cuda_tensor(pool.k, op, "cache K");
    require(pool.kv_heads == nkv && pool.head_dim == d && pool.k.dtype == qkv.dtype && pool.v.dtype == qkv.dtype,
            op, ": cache pool (", pool.kv_heads, " heads of ", pool.head_dim, ", ", pool.k.str(),
            ") does not match the layer (", nkv, " heads of ", d, ", ", qkv.str(), ")");
    require(cache_layer >= 0 && cache_layer < pool.cache_layers, op, ": cache layer ", cache_layer,
            " outside the pool's ", pool.cache_layers);
    const Tensor& slots = batch.slot_mapping[int(group)];
    require(slots.defined() && slots.numel() >= T, op, ": slot_mapping of the group covers ", slots.numel(),
            " rows, qkv has ", T);
    a.slots = slots.ptr<int>();
    a.k_norm_w = k_norm_w->data, a.k_norm_f32 = k_norm_w->dtype == DType::F32;
    int64_t layer_elems = int64_t(pool.num_pages) * pool.page_size * nkv * d;
    size_t es = dtype_size(qkv.dtype);
    a.k_cache = static_cast<char*>(pool.k.data) + size_t(cache_layer) * layer_elems * es;
    a.v_cache = static_cast<char*>(pool.v.data) + size_t(cache_layer) * layer_elems * es;
  }
  if (T == 0) return;
  a.inv_freq = inv_freq_table(rope, stream);
  const int jobs = nq + (has_kv ? 2 * nkv : 0);
  const int warps = 4;
  const unsigned grid = unsigned((int64_t(T) * jobs + warps - 1) / warps);
  dispatch_float(qkv.dtype, op, "qkv", [&](auto tag) {
    using T_ = typename decltype(tag)::type;
    switch (d / 64) {
      case 1: launch_pdl("qkv_prepare_kernel", qkv_prepare_kernel<T_, 1>, grid, warps * 32, 0, stream, a); break;
      case 2: launch_pdl("qkv_prepare_kernel", qkv_prepare_kernel<T_, 2>, grid, warps * 32, 0, stream, a); break;
      case 4: launch_pdl("qkv_prepare_kernel", qkv_prepare_kernel<T_, 4>, grid, warps * 32, 0, stream, a); break;
      case 8: launch_pdl("qkv_prepare_kernel", qkv_prepare_kernel<T_, 8>, grid, warps * 32, 0, stream, a); break;
      default: fail(str_cat(op, ": head_dim ", d, " unsupported (64, 128, 256 or 512)"));
    }
    GS_CUDA_LAUNCHED(op);
  });
}

}  // namespace gs::cuda
