// Tile kernels for head dim 256 (one file per head dim so the two compile in parallel).
#include "kernels/cuda/attention_decode.cuh"
#include "kernels/cuda/attention_tile.cuh"

namespace gs::cuda::attn {
namespace {
// 64 rows, 4×2 warps, 64 keys: Q 32 KB + 2 stages × (K 32 KB + V 32 KB) + P 9 KB = 169 KB.
using Wide = TileConfig<256, 4, 2, 64, 2>;
// 64 rows, 4×1 warps, 64 keys: each warp holds 16 × 256 of O (128 registers) and keeps P in
// registers: 160 KB, half the barriers of Wide and no P round trip, but only 4 warps per SM
// (slower than Wide and WideQuad on an H200; kept as a variant for GPUs and shapes it may suit).
using WideSolo = TileConfig<256, 4, 1, 64, 2>;
// As Wide with 4×4 warps (512 threads): O is 16 × 64 per warp, more warps to hide latency
// (the prefill default: fastest on an H200).
using WideQuad = TileConfig<256, 4, 4, 64, 2>;
// 16 rows, 1×4 warps, 32 keys: Q 8 KB + 2 stages × 32 KB = 72 KB, three CTAs per SM.
using Narrow = TileConfig<256, 1, 4, 32, 2>;
// Decode, head dim split over 8 warps (attention_decode.cuh): 86 KB, two CTAs per SM.
using Split8 = DecodeConfig<256, 8, 32, 2>;
}  // namespace

void launch_tile_kernel_hd256(TileKernel k, const TileArgs& a, const TileGrid& g, cudaStream_t stream) {
  switch (k) {
    case TileKernel::Hd256Wide: return launch_tile_config<Wide>(a, g, stream);
    case TileKernel::Hd256WideSolo: return launch_tile_config<WideSolo>(a, g, stream);
    case TileKernel::Hd256Narrow: return launch_tile_config<Narrow>(a, g, stream);
    case TileKernel::Hd256WideQuad: return launch_tile_config<WideQuad>(a, g, stream);
    case TileKernel::Hd256Split8: return launch_decode_config<Split8>(a, g, stream);
    default: fail("attention: tile kernel " + std::to_string(int(k)) + " is not a head-dim 256 kernel");
  }
}

int tile_kernel_occupancy_hd256(TileKernel k) {
  static const int wide = tile_config_occupancy<Wide>();
  static const int solo = tile_config_occupancy<WideSolo>();
  static const int narrow = tile_config_occupancy<Narrow>();
  static const int quad = tile_config_occupancy<WideQuad>();
  static const int split8 = decode_config_occupancy<Split8>();
  switch (k) {
    case TileKernel::Hd256Wide: return wide;
    case TileKernel::Hd256WideSolo: return solo;
    case TileKernel::Hd256WideQuad: return quad;
    case TileKernel::Hd256Split8: return split8;
    default: return narrow;
  }
}

}  // namespace gs::cuda::attn
