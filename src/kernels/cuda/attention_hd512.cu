// Tile kernels for head dim 512 (one file per head dim so the two compile in parallel).
#include "kernels/cuda/attention_decode.cuh"
#include "kernels/cuda/attention_tile.cuh"

namespace gs::cuda::attn {
namespace {
// 64 rows, 4×2 warps, 32 keys: Q 64 KB + 2 stages × (K 32 KB + V 32 KB) + P 5 KB = 197 KB.
// (A 16 × 512 O accumulator per warp would be 256 registers, so there is no solo variant.)
using Wide = TileConfig<512, 4, 2, 32, 2>;
// Decode, head dim split over 8 warps (attention_decode.cuh): 16 keys, 3 stages, two CTAs per SM.
using Split8Pair = DecodeConfig<512, 8, 16, 3>;
}  // namespace

void launch_tile_kernel_hd512(TileKernel k, const TileArgs& a, const TileGrid& g, cudaStream_t stream) {
  switch (k) {
    case TileKernel::Hd512Wide: return launch_tile_config<Wide>(a, g, stream);
    case TileKernel::Hd512Split8Pair: return launch_decode_config<Split8Pair>(a, g, stream);
    default: fail("attention: tile kernel " + std::to_string(int(k)) + " is not a head-dim 512 kernel");
  }
}

int tile_kernel_occupancy_hd512(TileKernel k) {
  static const int wide = tile_config_occupancy<Wide>();
  static const int pair = decode_config_occupancy<Split8Pair>();
  return k == TileKernel::Hd512Wide ? wide : pair;
}

}  // namespace gs::cuda::attn
