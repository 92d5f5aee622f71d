// Hopper wgmma attention kernels (attention_wgmma.cuh) for both head dims.
#include "kernels/cuda/attention_wgmma_pair_persistent.cuh"
#include "kernels/cuda/attention_wgmma_persistent.cuh"

#include <cudaTypedefs.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/kernel_policy.h"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda::attn {

void launch_wgmma_kernel(TileKernel k, const TileArgs& a, const TileGrid& g, cudaStream_t stream) {
  switch (k) {
    case TileKernel::Hd256WgmmaSerial: return launch_wgmma_config<WgConfig<256>>(a, g, stream);
    case TileKernel::Hd512WgmmaSerialTmaPair:
      return launch_wgmma_config<WgConfig<512, true>>(a, g, stream);
    case TileKernel::Hd256WgmmaPersistent: return launch_wgmma_persistent(a, g, stream);
    case TileKernel::Hd512WgmmaPairPersistent: return launch_wgmma_pair_persistent(a, g, stream);
    default: fail("attention: tile kernel " + std::to_string(int(k)) + " is not a wgmma kernel");
  }
}

void launch_wgmma_persistent(const TileArgs& a_in, const TileGrid& g, cudaStream_t stream) {
  using C = WgPersistent;
  // Without a queue (a stream captured before its first launch) the serial kernel runs instead.
  if (!a_in.work_queue) return launch_wgmma_config<WgConfig<256>>(a_in, g, stream);
  TileArgs a = a_in;
  CUtensorMap map_q{}, map_o{};
  prepare_qo_and_keys(a, 256, map_q, map_o);
  a.item_q_tiles = g.q_tiles, a.item_heads = g.kv_heads * a.num_splits, a.item_seqs = g.num_seqs;
  const int64_t items = int64_t(a.item_q_tiles) * a.item_heads * a.item_seqs;
  if (items == 0) return;
  const bool ov = a.mm_block != nullptr;  // the overlay's instantiation only where the launch has it
  const auto kernel = ov ? attention_wgmma_persistent_kernel<true> : attention_wgmma_persistent_kernel<false>;
  allow_smem_on_current_device(reinterpret_cast<const void*>(kernel), C::kSmemBytesP);
  // One CTA per SM (225 KB of shared memory), never more than there are items.
  const int ctas = int(std::min<int64_t>(items, sm_count()));
  kernel<<<ctas, C::kThreads, C::kSmemBytesP, stream>>>(a, map_q, map_o);
  GS_CUDA_LAUNCHED("attention_wgmma_persistent_kernel");
}

void launch_wgmma_pair_persistent(const TileArgs& a_in, const TileGrid& g, cudaStream_t stream) {
  using Plain = WgConfig<512, true>;
  using C = WgPairPersistent;
  const int box = a_in.page_size % 16 == 0 ? 16 : a_in.page_size % 8 == 0 ? 8 : 0;
  // The plain paired kernel where this one has nothing to give: without a queue (a stream
  // captured before its first launch), with pages no TMA box tiles, or with one query tile per
  // head (decode and verify batches: every cluster would carry an idle CTA).
  if (!a_in.work_queue || box == 0 || g.q_tiles < 2) return launch_wgmma_config<Plain>(a_in, g, stream);
  TileArgs a = a_in;
  CUtensorMap map_k{}, map_v{}, map_q{}, map_o{};
  prepare_qo_and_keys(a, 512, map_q, map_o);
  const int64_t tokens = int64_t(a.pool_pages) * a.page_size;
  encode_kv_tensor_map(&map_k, a.k, 512, a.token_stride / 512, tokens, box);
  encode_kv_tensor_map(&map_v, a.v, 512, a.token_stride / 512, tokens, box);
  a.tma_box_rows = box;
  a.item_q_tiles = (g.q_tiles + 1) / 2, a.item_heads = g.kv_heads * a.num_splits, a.item_seqs = g.num_seqs;
  const int64_t units = int64_t(a.item_q_tiles) * a.item_heads * a.item_seqs;
  if (units == 0) return;
  const bool ov = a.mm_block != nullptr;  // the overlay's instantiation only where the launch has it
  const auto pair_kernel =
      ov ? attention_wgmma_pair_persistent_kernel<true> : attention_wgmma_pair_persistent_kernel<false>;
  const void* kernel = reinterpret_cast<const void*>(pair_kernel);
  allow_smem_on_current_device(kernel, C::kSmemBytesP);
  PairClusterLaunch launch(dim3(2 * (sm_count() / 2)), C::kThreads, C::kSmemBytesP, stream);
  // Clusters that fit at once (66 on a 132-SM H200 if every GPC pairs its SMs), once per device.
  static std::atomic<int> fit[64] = {};
  int dev = 0;
  GS_CUDA_CHECK(cudaGetDevice(&dev));
  int clusters = fit[dev & 63].load(std::memory_order_relaxed);
  if (clusters == 0) {
    GS_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch.cfg));
    if (clusters <= 0) fail("attention: the paired persistent kernel fits no cluster on this device");
    fit[dev & 63].store(clusters, std::memory_order_relaxed);
  }
  clusters = int(std::min<int64_t>(units, clusters));
  launch.cfg.gridDim = dim3(2 * clusters);
  GS_CUDA_CHECK(
      cudaLaunchKernelEx(&launch.cfg, pair_kernel, a, map_k, map_v, map_q, map_o));
  GS_CUDA_LAUNCHED("attention_wgmma_pair_persistent_kernel");
}

void encode_kv_tensor_map(CUtensorMap* map, const __nv_bfloat16* base, int head_dim, int kv_heads, int64_t tokens,
                          int box_rows) {
  encode_head_tensor_map(map, base, head_dim, kv_heads, tokens, 1, box_rows);
}

void encode_head_tensor_map(CUtensorMap* map, const __nv_bfloat16* base, int head_dim, int heads, int64_t tokens,
                            int box_heads, int box_tokens) {
  // The driver entry point through the runtime, so nothing links against libcuda.
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    GS_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr) fail("attention: cuTensorMapEncodeTiled not found");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  const cuuint64_t dims[3] = {cuuint64_t(head_dim), cuuint64_t(heads), cuuint64_t(tokens)};
  const cuuint64_t strides[2] = {cuuint64_t(head_dim) * 2, cuuint64_t(heads) * head_dim * 2};  // bytes, dims 1..2
  const cuuint32_t box[3] = {64, cuuint32_t(box_heads), cuuint32_t(box_tokens)};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<__nv_bfloat16*>(base), dims, strides,
                            box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) fail("attention: cuTensorMapEncodeTiled failed with CUresult " + std::to_string(int(r)));
}

bool wgmma_tma_q_enabled() { return kernel_policy().attention.tma_qo; }

int wgmma_key_align() { return kernel_policy().attention.aligned_key_tiles ? 0 : 16; }

bool wgmma_supported() {
  // The kernels exist as sm_90a SASS only; on any other device the build's compute_80 PTX
  // holds an empty body.
  static const bool ok = [] {
    int dev = 0, major = 0, minor = 0;
    GS_CUDA_CHECK(cudaGetDevice(&dev));
    GS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    GS_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    return major == 9 && minor == 0;
  }();
  return ok;
}

}  // namespace gs::cuda::attn
