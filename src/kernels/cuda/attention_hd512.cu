// Tile kernels for head dim 512 (one file per head dim so the two compile in parallel).
#include "kernels/cuda/attention_decode.cuh"
#include "kernels/cuda/attention_tile.cuh"

namespace gs::cuda::attn {
namespace {
// 64 rows, 4×2 warps, 32 keys: Q 64 KB + 2 stages × (K 32 KB + V 32 KB) + P 5 KB = 197 KB.
// (A 16 × 512 O accumulator per warp would be 256 registers, so there is no solo variant.)
using Wide = TileConfig<512, 4, 2, 32, 2>;
// As Wide with 4×4 warps (512 threads, at most 128 registers each): O is 16 × 128 per warp.
using WideQuad = TileConfig<512, 4, 4, 32, 2>;
// 16 rows, 1×4 warps, 32 keys: Q 16 KB + 2 stages × 64 KB = 145 KB, one CTA per SM.
using Narrow = TileConfig<512, 1, 4, 32, 2>;
// As Narrow with 3 stages (209 KB): two tiles (128 KB) in flight while one is computed.
using NarrowDeep = TileConfig<512, 1, 4, 32, 3>;
// Decode, head dim split over 8 warps (attention_decode.cuh).
using Split8 = DecodeConfig<512, 8, 32, 3>;
using Split8Fine = DecodeConfig<512, 8, 16, 6>;
using Split8Pair = DecodeConfig<512, 8, 16, 3>;
using Split8Two = DecodeConfig<512, 8, 32, 2>;
}  // namespace

void launch_tile_kernel_hd512(TileKernel k, const TileArgs& a, const TileGrid& g, cudaStream_t stream) {
  switch (k) {
    case TileKernel::Hd512Wide: return launch_tile_config<Wide>(a, g, stream);
    case TileKernel::Hd512Narrow: return launch_tile_config<Narrow>(a, g, stream);
    case TileKernel::Hd512NarrowDeep: return launch_tile_config<NarrowDeep>(a, g, stream);
    case TileKernel::Hd512WideQuad: return launch_tile_config<WideQuad>(a, g, stream);
    case TileKernel::Hd512Split8: return launch_decode_config<Split8>(a, g, stream);
    case TileKernel::Hd512Split8Fine: return launch_decode_config<Split8Fine>(a, g, stream);
    case TileKernel::Hd512Split8Pair: return launch_decode_config<Split8Pair>(a, g, stream);
    case TileKernel::Hd512Split8Two: return launch_decode_config<Split8Two>(a, g, stream);
    default: fail("attention: tile kernel " + std::to_string(int(k)) + " is not a head-dim 512 kernel");
  }
}

int tile_kernel_occupancy_hd512(TileKernel k) {
  static const int wide = tile_config_occupancy<Wide>();
  static const int narrow = tile_config_occupancy<Narrow>();
  static const int deep = tile_config_occupancy<NarrowDeep>();
  static const int quad = tile_config_occupancy<WideQuad>();
  static const int split8 = decode_config_occupancy<Split8>();
  static const int fine = decode_config_occupancy<Split8Fine>();
  static const int pair = decode_config_occupancy<Split8Pair>();
  static const int two = decode_config_occupancy<Split8Two>();
  switch (k) {
    case TileKernel::Hd512Wide: return wide;
    case TileKernel::Hd512Narrow: return narrow;
    case TileKernel::Hd512WideQuad: return quad;
    case TileKernel::Hd512Split8: return split8;
    case TileKernel::Hd512Split8Fine: return fine;
    case TileKernel::Hd512Split8Pair: return pair;
    case TileKernel::Hd512Split8Two: return two;
    default: return deep;
  }
}

}  // namespace gs::cuda::attn
