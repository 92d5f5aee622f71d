// The CPU backend: host memory, f32 activations and KV, weights kept in the checkpoint's dtype.
// Each op forwards to its implementation in the cpu_*.cpp files.
#include "kernels/cpu/cpu_backend.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "kernels/cpu/cpu_ops.h"
#include "ops/sampling_rng.h"

namespace gs {
namespace {

// A /proc/meminfo field in bytes (0 when absent).
size_t meminfo_bytes(const char* key) {
  std::ifstream f("/proc/meminfo");
  std::string line;
  const size_t klen = std::strlen(key);
  while (std::getline(f, line)) {
    if (line.compare(0, klen, key) == 0 && line.size() > klen && line[klen] == ':') {
      std::istringstream is(line.substr(klen + 1));
      size_t kib = 0;
      is >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : pool_(threads > 0 ? threads : cpu::ThreadPool::default_threads()) {}

  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::CPU; }
  DType activation_dtype() const override { return DType::F32; }
  DType kv_dtype() const override { return DType::F32; }
  DType weight_dtype(DType file_dtype) const override {
    GS_CHECK(file_dtype == DType::F32 || file_dtype == DType::BF16 || file_dtype == DType::F16,
             "cpu backend: weights must be f32, bf16 or f16, got {}", dtype_name(file_dtype));
    return file_dtype;
  }

  // ---- memory ---------------------------------------------------------------------------------
  Tensor empty(DType dtype, Shape shape) override { return host_tensor(dtype, shape); }
  void copy_from_host(const Tensor& dst, const void* src) override {
    if (dst.nbytes()) std::memcpy(dst.data, src, dst.nbytes());
  }
  void copy_to_host(const Tensor& src, void* dst) override {
    if (src.nbytes()) std::memcpy(dst, src.data, src.nbytes());
  }
  void copy(const Tensor& dst, const Tensor& src) override {
    GS_CHECK(dst.dtype == src.dtype && dst.numel() == src.numel(), "cpu copy: {} <- {}", dst.str(), src.str());
    if (dst.nbytes() && dst.data != src.data) std::memmove(dst.data, src.data, dst.nbytes());
  }
  Tensor upload_weight(const Tensor& host_src) override {
    weight_dtype(host_src.dtype);
    // A tensor that owns (or shares ownership of) its memory, e.g. a mapped checkpoint, is used
    // in place: weights are never written. Borrowed memory is copied so its owner may go away.
    if (host_src.storage) return host_src;
    Tensor t = host_tensor(host_src.dtype, host_src.shape);
    copy_from_host(t, host_src.data);
    return t;
  }
  void fill_uniform(const Tensor& t, uint64_t seed, float scale) override {
    cpu::check_float("fill_uniform", t, "t");
    pool_.parallel_for(t.numel(), 1 << 14, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) cpu::store(t, i, rng::fill_value(seed, uint64_t(i), scale));
    });
  }
  void fill(const Tensor& t, float value) override {
    if (t.dtype == DType::I32) {
      for (int64_t i = 0; i < t.numel(); ++i) t.ptr<int>()[i] = int(value);
      return;
    }
    cpu::check_float("fill", t, "t");
    for (int64_t i = 0; i < t.numel(); ++i) cpu::store(t, i, value);
  }
  size_t free_memory_bytes() const override { return meminfo_bytes("MemAvailable"); }
  size_t total_memory_bytes() const override { return meminfo_bytes("MemTotal"); }
  void synchronize() override {}
  void scatter_ids(const Tensor& dst, const Tensor& src, const std::vector<std::pair<int, int>>& pairs) override {
    GS_CHECK(dst.dtype == DType::I32 && src.dtype == DType::I32, "scatter_ids: {} <- {} must be i32", dst.str(),
             src.str());
    for (auto [d, s] : pairs) {
      GS_CHECK(d >= 0 && d < dst.numel() && s >= 0 && s < src.numel(), "scatter_ids: pair ({}, {}) outside {} <- {}",
               d, s, dst.str(), src.str());
      dst.ptr<int>()[d] = src.ptr<int>()[s];
    }
  }

  KvCache allocate_kv_cache(const KvLayout& layout, int page_size, const int num_pages[kNumKvGroups]) override {
    GS_CHECK(page_size > 0, "cpu allocate_kv_cache: page size {} must be positive", page_size);
    KvCache cache;
    for (int g = 0; g < kNumKvGroups; ++g) {
      const KvGroupShape& shape = layout.groups[g];
      KvPool& p = cache.pools[g];
      p.page_size = page_size;
      p.num_pages = num_pages[g];
      GS_CHECK(p.num_pages >= 0, "cpu allocate_kv_cache: {} pages", p.num_pages);
      p.cache_layers = shape.cache_layers, p.kv_heads = shape.kv_heads, p.head_dim = shape.head_dim;
      const Shape dims{p.cache_layers, p.num_pages, page_size, p.kv_heads, p.head_dim};
      p.k = host_tensor(DType::F32, dims);
      p.v = host_tensor(DType::F32, dims);
    }
    return cache;
  }

  // ---- dense math -----------------------------------------------------------------------------
  void matmul(const Tensor& x, const Tensor& w, const Tensor& out) override { cpu::matmul(pool_, x, w, out); }
  void embedding(const Tensor& table, const Tensor& ids, float scale, const Tensor& out) override {
    cpu::embedding(pool_, table, ids, scale, out);
  }
  void embedding_rows(const Tensor& table, const Tensor& ids, int64_t first_id, float scale,
                      const Tensor& out) override {
    cpu::embedding_rows(pool_, table, ids, first_id, scale, out);
  }
  void rms_norm(const Tensor& x, const Tensor* weight, float eps, const Tensor& out) override {
    cpu::rms_norm(pool_, x, weight, eps, out);
  }
  void residual_add_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                         float out_scale) override {
    cpu::residual_add_norm(pool_, residual, x, weight, eps, out_scale);
  }
  void add(const Tensor& a, const Tensor& b, const Tensor& out) override { cpu::add(pool_, a, b, out); }
  void scale(const Tensor& x, float s) override { cpu::scale(pool_, x, s); }
  void gelu_tanh_mul(const Tensor& gate_up, const Tensor& out) override { cpu::gelu_tanh_mul(pool_, gate_up, out); }
  void gelu_tanh_mul_pair(const Tensor& a, const Tensor& b, const Tensor& out) override {
    cpu::gelu_tanh_mul_pair(pool_, a, b, out);
  }
  void per_layer_inputs(const Tensor& proj, const Tensor& table, const Tensor& ids, const Tensor& norm_w,
                        float proj_scale, float table_scale, float combine_scale, float eps,
                        const Tensor& out) override {
    cpu::per_layer_inputs(pool_, proj, table, ids, norm_w, proj_scale, table_scale, combine_scale, eps, out);
  }
  void gather_rows(const Tensor& x, const Tensor& rows, const Tensor& out) override { cpu::gather_rows(x, rows, out); }
  void softcap(const Tensor& x, float cap) override { cpu::softcap(pool_, x, cap); }

  // ---- vision tower ---------------------------------------------------------------------------
  void clamp(const Tensor& x, float lo, float hi) override { cpu::clamp(pool_, x, lo, hi); }
  void vision_position_add(const Tensor& x, const Tensor& table, const Tensor& pos_xy) override {
    cpu::vision_position_add(pool_, x, table, pos_xy);
  }
  void vision_rope(const Tensor& x, const Tensor& pos_xy, int heads, int head_dim, float theta) override {
    cpu::vision_rope(pool_, x, pos_xy, heads, head_dim, theta);
  }
  void vision_pool(const Tensor& x, const Tensor& src, float scale, const Tensor& out) override {
    cpu::vision_pool(pool_, x, src, scale, out);
  }
  void standardize(const Tensor& x, const Tensor& bias, const Tensor& scale) override {
    cpu::standardize(pool_, x, bias, scale);
  }
  void scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst) override {
    cpu::scatter_rows(src, rows, dst);
  }
  void vision_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_rows,
                        const std::vector<int>& h_cu_rows, int heads, int head_dim, const Tensor& out) override {
    cpu::vision_attention(pool_, q, k, v, h_cu_rows, heads, head_dim, out);
  }

  // ---- attention ------------------------------------------------------------------------------
  void qkv_prepare(const Tensor& qkv, QkvLayout layout, const AttentionParams& p, const RopeSpec& rope,
                   const Tensor& q_norm_w, const Tensor* k_norm_w, float eps, const AttentionBatch& batch,
                   KvGroup group, KvPool& kv, int cache_layer, const Tensor& q_out) override {
    cpu::qkv_prepare(pool_, qkv, layout, p, rope, q_norm_w, k_norm_w, eps, batch, group, kv, cache_layer, q_out);
  }
  void attention(const Tensor& q, const AttentionBatch& batch, KvGroup group, const KvPool& kv, int cache_layer,
                 const AttentionParams& p, const Tensor& out) override {
    cpu::attention(pool_, q, batch, group, kv, cache_layer, p, out);
  }

  // ---- mixture of experts ---------------------------------------------------------------------
  void moe_route(const Tensor& r, const Tensor& router_scale, const Tensor& router_proj, const Tensor& per_expert_scale,
                 float in_scale, float eps, int top_k, const Tensor& ids, const Tensor& weights) override {
    cpu::moe_route(pool_, r, router_scale, router_proj, per_expert_scale, in_scale, eps, top_k, ids, weights);
  }
  void moe_experts(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                   const Tensor& down, const Tensor& out) override {
    cpu::moe_experts(pool_, x, ids, weights, gate_up, down, out);
  }

  // ---- sampling -------------------------------------------------------------------------------
  void sample(const Tensor& logits, const std::vector<SamplingRow>& rows, const Tensor& out_ids,
              const Tensor& out_logprobs) override {
    cpu::sample(pool_, logits, rows, out_ids, out_logprobs);
  }
  void adjust_logits(const Tensor& logits, const std::vector<LogitAdjustRow>& rows) override {
    cpu::adjust_logits(logits, rows);
  }
  void top_logprobs(const Tensor& logits, int n, const Tensor& ids, const Tensor& logprobs) override {
    cpu::top_logprobs(pool_, logits, n, ids, logprobs);
  }
  void argmax_rows(const Tensor& logits, const Tensor& out_ids) override { cpu::argmax_rows(logits, out_ids); }
  void centroid_head_argmax(const Tensor& d, const Tensor& embed, const Tensor& centroid_scores,
                            const Tensor& token_ordering, int top_k, const Tensor& out_ids) override {
    cpu::centroid_head_argmax(pool_, d, embed, centroid_scores, token_ordering, top_k, out_ids);
  }

 private:
  cpu::ThreadPool pool_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads); }

}  // namespace gs
