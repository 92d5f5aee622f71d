// bench_vision_attention(): times vision_attention() on the shapes of the two vision towers.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/vision_attention.h"
#include "kernels/cuda_bench/vision_attention_bench.h"

namespace gs::cuda {
namespace {

using bf16 = __nv_bfloat16;

__global__ void fill_uniform(bf16* p, int64_t n, uint64_t seed, float amp) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t x = (uint64_t(i) + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 27, x *= 0x94D049BB133111EBull, x ^= x >> 33;
    p[i] = __float2bfloat16(amp * (float(x >> 40) * (2.f / 16777216.f) - 1.f));
  }
}

std::shared_ptr<void> device_bytes(size_t n) {
  void* p = nullptr;
  GS_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 16)));
  return {p, [](void* q) { cudaFree(q); }};
}

struct Shape {
  const char* tower;
  int heads, head_dim, images, rows;
};

std::vector<VisionAttentionBenchResult> run_shape(const Shape& s, int reps, bool all_tiles) {
  const int64_t width = int64_t(s.heads) * s.head_dim, stride = 3 * width, total = int64_t(s.images) * s.rows;
  auto qkv = device_bytes(size_t(total * stride) * 2), out = device_bytes(size_t(total * width) * 2);
  auto cu = device_bytes(size_t(s.images + 1) * 4);
  fill_uniform<<<1024, 256>>>(static_cast<bf16*>(qkv.get()), total * stride, 11, 2.f);
  GS_CUDA_LAUNCHED("fill_uniform");
  std::vector<int> h_cu(size_t(s.images) + 1);
  for (int i = 0; i <= s.images; ++i) h_cu[size_t(i)] = i * s.rows;
  GS_CUDA_CHECK(cudaMemcpy(cu.get(), h_cu.data(), h_cu.size() * 4, cudaMemcpyHostToDevice));
  const bf16* q = static_cast<const bf16*>(qkv.get());
  const double flops = vision_attention_flops(h_cu.data(), s.images, s.heads, s.head_dim);
  const double bytes = double(total) * width * 2 * 4;

  const vattn::VisionTile chosen = vattn::choose_vision_tile(s.images, s.rows, s.heads, s.head_dim);
  std::vector<vattn::VisionTile> tiles{chosen};
  if (all_tiles)
    for (auto t : {vattn::VisionTile::Rows16Keys64, vattn::VisionTile::Rows32Keys32, vattn::VisionTile::Rows32Keys64})
      if (t != chosen) tiles.push_back(t);
  cudaEvent_t start, stop;
  GS_CUDA_CHECK(cudaEventCreate(&start));
  GS_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<VisionAttentionBenchResult> results;
  for (vattn::VisionTile t : tiles) {
    std::vector<float> times;
    for (int r = 0; r < reps + 3; ++r) {
      GS_CUDA_CHECK(cudaEventRecord(start));
      vattn::vision_attention_tile(t, q, stride, q + width, stride, q + 2 * width, stride,
                                   static_cast<bf16*>(out.get()), static_cast<const int*>(cu.get()), s.images,
                                   s.rows, s.heads, s.head_dim, nullptr);
      GS_CUDA_CHECK(cudaEventRecord(stop));
      GS_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      GS_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (r >= 3) times.push_back(ms);  // three warm-ups
    }
    std::sort(times.begin(), times.end());
    VisionAttentionBenchResult res;
    res.name = std::string(s.tower) + " " + std::to_string(s.images) + "x" + std::to_string(s.rows) + " rows, " +
               std::to_string(s.heads) + "x" + std::to_string(s.head_dim);
    res.tile = std::string(t == chosen ? "chosen: " : "") + vattn::vision_tile_name(t);
    res.ms = times[times.size() / 2];
    res.tflops = flops / (res.ms * 1e-3) / 1e12;
    res.tbytes_per_s = bytes / (res.ms * 1e-3) / 1e12;
    results.push_back(res);
  }
  GS_CUDA_CHECK(cudaEventDestroy(start));
  GS_CUDA_CHECK(cudaEventDestroy(stop));
  return results;
}

}  // namespace

std::vector<VisionAttentionBenchResult> bench_vision_attention(int reps, bool all_tiles) {
  // 2520 rows: one image at the default 280-token budget (280 soft tokens x 9 patches).
  const Shape shapes[] = {
      {"E2B/E4B tower", 12, 64, 1, 2520},
      {"E2B/E4B tower", 12, 64, 16, 2520},
      {"26B/31B tower", 16, 72, 1, 2520},
      {"26B/31B tower", 16, 72, 16, 2520},
  };
  std::vector<VisionAttentionBenchResult> out;
  for (const Shape& s : shapes)
    for (auto& r : run_shape(s, reps, all_tiles)) out.push_back(std::move(r));
  return out;
}

}  // namespace gs::cuda
