// Tile kernels for head dim 256 (one file per head dim so the two compile in parallel).
#include "kernels/cuda/attention_tile.cuh"

namespace gs::cuda::attn {
namespace {
// Wide: 64 rows, 4×2 warps, 64 keys per tile: Q 32 KB + two K/V stages of 32 KB each = 160 KB.
using Wide = TileConfig<256, 4, 2, 64, 2>;
// Narrow: 16 rows, 1×4 warps, 32 keys: 72 KB, so three CTAs share an SM.
using Narrow = TileConfig<256, 1, 4, 32, 2>;
static_assert(Wide::kBlockM == tile_rows(TileShape::Wide) && Wide::kBlockN == tile_keys(256, TileShape::Wide));
static_assert(Narrow::kBlockM == tile_rows(TileShape::Narrow) && Narrow::kBlockN == tile_keys(256, TileShape::Narrow));
}  // namespace

void launch_tiles_hd256(TileShape shape, const TileArgs& a, const TileGrid& g, cudaStream_t stream) {
  if (shape == TileShape::Wide) launch_tile_config<Wide>(a, g, stream);
  else launch_tile_config<Narrow>(a, g, stream);
}

int tiles_per_sm_hd256(TileShape shape) {
  static const int wide = tile_config_occupancy<Wide>();
  static const int narrow = tile_config_occupancy<Narrow>();
  return shape == TileShape::Wide ? wide : narrow;
}

}  // namespace gs::cuda::attn
