// bench_attention(): times paged_attention on the shapes issue 3 sets targets for, on random data
// in a paged cache whose pages are shuffled (a serving cache is fragmented, not contiguous).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <utility>

#include "kernels/cuda/attention.h"
#include "kernels/cuda_bench/attention_bench.h"
#include "kernels/cuda/attention_plan.cuh"
#include "kernels/cuda/cuda_check.h"

namespace gs::cuda {
namespace {

// Uniform values in [-amp, amp] from a counter hash: reproducible, no host staging of gigabytes.
__global__ void fill_uniform_bf16(__nv_bfloat16* p, int64_t n, uint64_t seed, float amp) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t x = (uint64_t(i) + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 27, x *= 0x94D049BB133111EBull, x ^= x >> 33;
    p[i] = __float2bfloat16(amp * (float(x >> 40) * (2.f / 16777216.f) - 1.f));
  }
}

struct DeviceMemory {
  std::vector<std::shared_ptr<void>> blocks;
  Tensor tensor(DType dt, Shape shape) {
    Tensor t;
    t.dtype = dt, t.shape = shape, t.device = Device::CUDA;
    void* p = nullptr;
    GS_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(t.nbytes(), 16)));
    blocks.emplace_back(p, [](void* q) { cudaFree(q); });
    t.data = p;
    return t;
  }
  Tensor upload(const std::vector<int>& v, Shape shape) {
    Tensor t = tensor(DType::I32, shape);
    GS_CUDA_CHECK(cudaMemcpy(t.data, v.data(), t.nbytes(), cudaMemcpyHostToDevice));
    return t;
  }
};

struct BenchShape {
  const char* name;
  int head_dim, nq, nkv, window;
  int seqs, q_len, kv_len;  // every sequence alike
  int images = 0;           // 280-token image blocks spread over each sequence's rows (vision overlay on)
};

// The fallback the dispatcher used for batches with the vision overlay before the wgmma kernels
// had it: timed next to the dispatcher's choice on the image shapes.
attn::TileKernel overlay_fallback(int head_dim) {
  return head_dim == 256 ? attn::TileKernel::Hd256WideQuad : attn::TileKernel::Hd512Wide;
}

void fill(const Tensor& t, uint64_t seed, float amp) {
  fill_uniform_bf16<<<1024, 256>>>(t.ptr<__nv_bfloat16>(), t.numel(), seed, amp);
  GS_CUDA_LAUNCHED("fill_uniform_bf16");
}

// Times the shape with the dispatcher's kernel and, when `all_kernels`, every other kernel of its
// head dim.
std::vector<AttentionBenchResult> run_shape(const BenchShape& s, int reps, bool all_kernels) {
  constexpr int kPageSize = 16;
  DeviceMemory mem;
  const int pages_per_seq = (s.kv_len + kPageSize - 1) / kPageSize;
  const int num_pages = pages_per_seq * s.seqs;
  KvPool pool;
  pool.cache_layers = 1, pool.num_pages = num_pages, pool.page_size = kPageSize;
  pool.kv_heads = s.nkv, pool.head_dim = s.head_dim;
  pool.k = mem.tensor(DType::BF16, {1, num_pages, kPageSize, s.nkv, s.head_dim});
  pool.v = mem.tensor(DType::BF16, {1, num_pages, kPageSize, s.nkv, s.head_dim});
  fill(pool.k, 1, 1.f), fill(pool.v, 2, 1.f);

  const int T = s.seqs * s.q_len;
  std::vector<int> positions(T), token_seq(T), q_start(s.seqs + 1), kv_len(s.seqs, s.kv_len);
  for (int i = 0; i < s.seqs; ++i) {
    q_start[i] = i * s.q_len;
    for (int j = 0; j < s.q_len; ++j)
      positions[i * s.q_len + j] = s.kv_len - s.q_len + j, token_seq[i * s.q_len + j] = i;
  }
  q_start[s.seqs] = T;
  std::vector<int> table(num_pages);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937(7));

  AttentionBatch b;
  b.num_seqs = s.seqs, b.num_tokens = T, b.max_q_len = s.q_len, b.max_kv_len = s.kv_len, b.page_size = kPageSize;
  b.positions = mem.upload(positions, {T});
  b.token_seq = mem.upload(token_seq, {T});
  b.q_start = mem.upload(q_start, {s.seqs + 1});
  b.kv_len = mem.upload(kv_len, {s.seqs});
  const KvGroup g = s.window ? KvGroup::Sliding : KvGroup::Full;
  b.page_table[int(g)] = mem.upload(table, {s.seqs, pages_per_seq});
  b.max_pages[int(g)] = pages_per_seq;
  b.h_positions = positions, b.h_token_seq = token_seq, b.h_q_start = q_start, b.h_kv_len = kv_len;
  b.h_page_table[int(g)] = table;
  b.rows_end_context = true;  // row j of every sequence sits at kv_len - q_len + j (positions above)
  // Images: block i covers 280 rows starting at (i + 0.5)·q_len/images (text between them).
  std::vector<int> mm_block;
  if (s.images > 0) {
    mm_block.assign(size_t(T), -1);
    for (int i = 0; i < s.seqs; ++i)
      for (int img = 0; img < s.images; ++img) {
        const int first = int((img + 0.5) * s.q_len / s.images) - 140;
        for (int j = std::max(0, first); j < std::min(s.q_len, first + 280); ++j)
          mm_block[size_t(i * s.q_len + j)] = img;
      }
    b.mm_block = mem.upload(mm_block, {T});
    b.h_mm_block = mm_block;
  }

  const Tensor q = mem.tensor(DType::BF16, {T, int64_t(s.nq) * s.head_dim});
  const Tensor out = mem.tensor(DType::BF16, {T, int64_t(s.nq) * s.head_dim});
  fill(q, 3, 0.5f);
  const size_t ws_bytes = attention_workspace_bytes(T, s.seqs, s.nq, s.head_dim);
  void* ws = mem.tensor(DType::U8, {int64_t(ws_bytes)}).data;

  AttentionParams p;
  p.num_q_heads = s.nq, p.num_kv_heads = s.nkv, p.head_dim = s.head_dim, p.sliding_window = s.window;
  p.mm_bidirectional = s.images > 0;

  // Visible (query row, key) pairs per query head, and visible keys per (sequence, KV head).
  double pairs = 0;
  for (int j = 0; j < s.q_len; ++j) {
    const int pos = s.kv_len - s.q_len + j;
    pairs += s.window ? std::min(pos + 1, s.window) : pos + 1;
    if (!mm_block.empty() && mm_block[size_t(j)] >= 0)  // + the block's keys the base mask hides
      for (int k = 0; k < s.q_len; ++k) {
        const int kp = s.kv_len - s.q_len + k;
        const bool base = kp <= pos && (s.window == 0 || pos - kp < s.window);
        pairs += !base && mm_block[size_t(k)] == mm_block[size_t(j)];
      }
  }
  const int first = s.kv_len - s.q_len;
  const double keys_read = s.window ? s.kv_len - std::max(0, first - s.window + 1) : s.kv_len;

  std::vector<const attn::TileKernel*> choices{nullptr};
  static attn::TileKernel kernels[attn::kNumTileKernels];
  for (int k = 0; k < attn::kNumTileKernels; ++k) {
    kernels[k] = attn::TileKernel(k);
    if (attn::is_wgmma_kernel(kernels[k]) && !attn::wgmma_supported()) continue;  // sm_90a only
    // The split-d decode kernels take 16 rows per CTA: timed on decode shapes only.
    if (attn::is_split_d_kernel(kernels[k]) && int64_t(s.q_len) * (s.nq / s.nkv) > 16) continue;
    if (all_kernels && attn::tile_kernel_info(kernels[k]).head_dim == s.head_dim) choices.push_back(&kernels[k]);
    else if (s.images > 0 && kernels[k] == overlay_fallback(s.head_dim)) choices.push_back(&kernels[k]);
  }
  // Rewritten before every timed call so no K/V stays in L2 (60 MB on an H200) from the last one:
  // the sliding decode shape reads only ~67 MB.
  const Tensor l2_flush = mem.tensor(DType::U8, {256ll << 20});
  cudaEvent_t start, stop;
  GS_CUDA_CHECK(cudaEventCreate(&start));
  GS_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<AttentionBenchResult> results;
  attn::TileKernel chosen{};
  // The dispatcher's choice is timed twice when it splits the keys: as it merges them, and the
  // other way (split combine fused into the kernel, or the separate combine kernel).
  using attn::CombineMode;
  std::vector<std::pair<const attn::TileKernel*, bool>> runs;  // (kernel, other combine)
  for (const attn::TileKernel* force : choices) {
    runs.emplace_back(force, false);
    if (!force) runs.emplace_back(force, true);
  }
  for (const auto& [force, other] : runs) {
    const attn::AttentionPlan plan = attn::plan_attention(q, b, g, pool, 0, p, out, ws, ws_bytes, force);
    if (!force) chosen = plan.kernel;
    else if (*force == chosen) continue;  // the dispatcher's own choice, timed already
    const bool auto_fused = attn::fuses_combine(plan);
    if (other && (plan.args.num_splits == 1 || attn::is_wgmma_kernel(plan.kernel))) continue;
    const CombineMode mode = !other ? CombineMode::Auto : auto_fused ? CombineMode::Separate : CombineMode::Fused;
    const bool fused = attn::fuses_combine(plan, mode);
    std::vector<float> times;
    for (int r = 0; r < reps + 3; ++r) {
      GS_CUDA_CHECK(cudaMemsetAsync(l2_flush.data, r & 0xff, l2_flush.nbytes()));
      GS_CUDA_CHECK(cudaEventRecord(start));
      attn::launch_plan(plan, nullptr, mode);
      GS_CUDA_CHECK(cudaEventRecord(stop));
      GS_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      GS_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (r >= 3) times.push_back(ms);  // three warm-ups
    }
    std::sort(times.begin(), times.end());
    AttentionBenchResult res;
    res.name = s.name;
    res.kernel = std::string(force ? "" : "auto: ") + attn::tile_kernel_info(plan.kernel).name +
                 (plan.args.num_splits == 1 ? "" : fused ? " (fused combine)" : " +combine kernel");
    res.splits = plan.args.num_splits;
    res.ms = times[times.size() / 2];
    res.tflops = pairs * s.seqs * s.nq * 4.0 * s.head_dim / (res.ms * 1e-3) / 1e12;
    res.kv_tbytes_per_s = keys_read * s.seqs * s.nkv * 2.0 * s.head_dim * 2 / (res.ms * 1e-3) / 1e12;
    results.push_back(res);
  }
  GS_CUDA_CHECK(cudaEventDestroy(start));
  GS_CUDA_CHECK(cudaEventDestroy(stop));
  return results;
}

}  // namespace

std::vector<AttentionBenchResult> bench_attention(int reps, bool all_kernels, const std::string& only) {
  // Shapes of Gemma-4 31B (full: 32 q / 4 kv heads, d 512; sliding: 32 / 16, d 256, W 1024) and
  // E2B (8 / 1, group 8).
  const BenchShape shapes[] = {
      {"prefill 8k hd512 causal (31B full)", 512, 32, 4, 0, 1, 8192, 8192},
      {"prefill 8k hd256 sliding W1024 (31B)", 256, 32, 16, 1024, 1, 8192, 8192},
      {"prefill 8k hd512 causal (E2B full)", 512, 8, 1, 0, 1, 8192, 8192},
      // Not a Gemma-4 layer: the sliding heads without their window, so each CTA walks ~8x the
      // key tiles. Against the W1024 row it shows what a CTA's fixed costs (start, Q load,
      // epilogue) take of the windowed one.
      {"prefill 8k hd256 causal (31B sliding heads, no window)", 256, 32, 16, 0, 1, 8192, 8192},
      {"decode b64 ctx4k hd512 (31B full)", 512, 32, 4, 0, 64, 1, 4096},
      {"decode b64 ctx4k hd512 (E2B full)", 512, 8, 1, 0, 64, 1, 4096},
      {"decode b64 ctx4k hd256 W1024 (31B sliding)", 256, 32, 16, 1024, 64, 1, 4096},
      {"decode b1 ctx4k hd512 (31B full)", 512, 32, 4, 0, 1, 1, 4096},
      {"decode b1 ctx4k hd256 W1024 (31B sliding)", 256, 32, 16, 1024, 1, 1, 4096},
      {"decode b1 ctx1k hd512 (E2B full)", 512, 8, 1, 0, 1, 1, 1024},
      {"decode b1 ctx1k hd256 W512 (E2B sliding)", 256, 8, 1, 512, 1, 1, 1024},
      {"verify b64 q4 ctx4k hd512 (31B full)", 512, 32, 4, 0, 64, 4, 4096},
      // A 4k-token prompt holding four 280-token images: the 31B sliding layer with the overlay
      // (the default), and a full layer with it as the params may ask (vision on all layers).
      {"prefill 4k 4 images hd256 W1024 overlay (31B sliding)", 256, 32, 16, 1024, 1, 4096, 4096, 4},
      {"prefill 4k 4 images hd512 causal overlay (31B full, all layers)", 512, 32, 4, 0, 1, 4096, 4096, 4},
  };
  std::vector<AttentionBenchResult> out;
  for (const BenchShape& s : shapes) {
    if (!only.empty() && !std::strstr(s.name, only.c_str())) continue;
    for (auto& r : run_shape(s, reps, all_kernels)) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gs::cuda
