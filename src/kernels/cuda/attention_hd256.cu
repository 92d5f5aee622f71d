// Tile kernels for head dim 256 (one file per head dim so the two compile in parallel).
#include "kernels/cuda/attention_decode.cuh"
#include "kernels/cuda/attention_tile.cuh"

namespace gs::cuda::attn {
namespace {
// 64 rows, 4×4 warps (512 threads), 64 keys: O is 16 × 64 per warp, more warps to hide latency
// (the prefill kernel where the wgmma ones do not run: fastest on an H200, docs/kernel-policy.md).
using WideQuad = TileConfig<256, 4, 4, 64, 2>;
// 16 rows, 1×4 warps, 32 keys: Q 8 KB + 2 stages × 32 KB = 72 KB, three CTAs per SM.
using Narrow = TileConfig<256, 1, 4, 32, 2>;
// Decode, head dim split over 8 warps (attention_decode.cuh): 86 KB, two CTAs per SM.
using Split8 = DecodeConfig<256, 8, 32, 2>;
}  // namespace

void launch_tile_kernel_hd256(TileKernel k, const TileArgs& a, const TileGrid& g, cudaStream_t stream) {
  switch (k) {
    case TileKernel::Hd256Narrow: return launch_tile_config<Narrow>(a, g, stream);
    case TileKernel::Hd256WideQuad: return launch_tile_config<WideQuad>(a, g, stream);
    case TileKernel::Hd256Split8: return launch_decode_config<Split8>(a, g, stream);
    default: fail("attention: tile kernel " + std::to_string(int(k)) + " is not a head-dim 256 kernel");
  }
}

int tile_kernel_occupancy_hd256(TileKernel k) {
  static const int narrow = tile_config_occupancy<Narrow>();
  static const int quad = tile_config_occupancy<WideQuad>();
  static const int split8 = decode_config_occupancy<Split8>();
  switch (k) {
    case TileKernel::Hd256WideQuad: return quad;
    case TileKernel::Hd256Split8: return split8;
    default: return narrow;
  }
}

}  // namespace gs::cuda::attn
