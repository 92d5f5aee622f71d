// A Backend that only stores tensors in host memory: enough to test loading and dummy weights
// without a compute backend. Every math op throws.
#pragma once
#include <cstring>
#include <stdexcept>

#include "ops/backend.h"
#include "ops/sampling_rng.h"

namespace gs::testing {

class FakeBackend : public Backend {
 public:
  explicit FakeBackend(DType weight_dtype_override = DType::U8) : override_(weight_dtype_override) {}

  std::string name() const override { return "fake"; }
  Device device() const override { return Device::CPU; }
  DType activation_dtype() const override { return DType::F32; }
  DType weight_dtype(DType file_dtype) const override { return override_ == DType::U8 ? file_dtype : override_; }

  Tensor empty(DType dtype, Shape shape) override {
    Tensor t = host_tensor(dtype, shape);
    std::memset(t.data, 0xA5, t.nbytes());  // poison: loaders must write every byte
    return t;
  }
  void copy_from_host(const Tensor& dst, const void* src) override { std::memcpy(dst.data, src, dst.nbytes()); }
  void copy_to_host(const Tensor& src, void* dst) override { std::memcpy(dst, src.data, src.nbytes()); }
  void copy(const Tensor& dst, const Tensor& src) override { std::memcpy(dst.data, src.data, dst.nbytes()); }
  Tensor upload_weight(const Tensor& src) override {
    ++uploads;
    DType to = weight_dtype(src.dtype);
    Tensor t = host_tensor(to, src.shape);
    if (to == src.dtype) {
      std::memcpy(t.data, src.data, src.nbytes());
    } else {
      std::vector<float> f(size_t(src.numel()));
      convert_to_f32(src.dtype, src.data, f.data(), f.size());
      convert_from_f32(to, f.data(), t.data, f.size());
    }
    return t;
  }
  void fill_uniform(const Tensor& t, uint64_t seed, float scale) override {
    ++uniform_fills;
    std::vector<float> f(size_t(t.numel()));
    for (size_t i = 0; i < f.size(); ++i) f[i] = rng::fill_value(seed, i, scale);
    convert_from_f32(t.dtype, f.data(), t.data, f.size());
  }
  void fill(const Tensor& t, float value) override {
    std::vector<float> f(size_t(t.numel()), value);
    convert_from_f32(t.dtype, f.data(), t.data, f.size());
  }
  size_t free_memory_bytes() const override { return size_t(1) << 34; }
  size_t total_memory_bytes() const override { return size_t(1) << 34; }
  void synchronize() override {}
  KvCache allocate_kv_cache(const KvLayout&, int, const int*) override { throw no_op(); }

  void matmul(const Tensor&, const Tensor&, const Tensor&) override { throw no_op(); }
  void embedding(const Tensor&, const Tensor&, float, const Tensor&) override { throw no_op(); }
  void embedding_rows(const Tensor&, const Tensor&, int64_t, float, const Tensor&) override { throw no_op(); }
  void rms_norm(const Tensor&, const Tensor*, float, const Tensor&) override { throw no_op(); }
  void residual_add_norm(const Tensor&, const Tensor&, const Tensor&, float, float) override { throw no_op(); }
  void add(const Tensor&, const Tensor&, const Tensor&) override { throw no_op(); }
  void scale(const Tensor&, float) override { throw no_op(); }
  void gelu_tanh_mul(const Tensor&, const Tensor&) override { throw no_op(); }
  void gelu_tanh_mul_pair(const Tensor&, const Tensor&, const Tensor&) override { throw no_op(); }
  void per_layer_inputs(const Tensor&, const Tensor&, const Tensor&, const Tensor&, float, float, float, float,
                        const Tensor&) override {
    throw no_op();
  }
  void gather_rows(const Tensor&, const Tensor&, const Tensor&) override { throw no_op(); }
  void softcap(const Tensor&, float) override { throw no_op(); }
  void qkv_prepare(const Tensor&, QkvLayout, const AttentionParams&, const RopeSpec&, const Tensor&, const Tensor*,
                   float, const AttentionBatch&, KvGroup, KvPool&, int, const Tensor&) override {
    throw no_op();
  }
  void attention(const Tensor&, const AttentionBatch&, KvGroup, const KvPool&, int, const AttentionParams&,
                 const Tensor&) override {
    throw no_op();
  }
  void moe_route(const Tensor&, const Tensor&, const Tensor&, const Tensor&, float, float, int, const Tensor&,
                 const Tensor&) override {
    throw no_op();
  }
  void moe_experts(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                   const Tensor&) override {
    throw no_op();
  }
  void sample(const Tensor&, const std::vector<SamplingRow>&, const Tensor&, const Tensor&) override { throw no_op(); }
  void adjust_logits(const Tensor&, const std::vector<LogitAdjustRow>&) override { throw no_op(); }
  void top_logprobs(const Tensor&, int, const Tensor&, const Tensor&) override { throw no_op(); }
  void argmax_rows(const Tensor&, const Tensor&) override { throw no_op(); }
  void centroid_head_argmax(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int, const Tensor&) override {
    throw no_op();
  }
  void scatter_ids(const Tensor&, const Tensor&, const std::vector<std::pair<int, int>>&) override { throw no_op(); }

  int uploads = 0;
  int uniform_fills = 0;

 private:
  static std::logic_error no_op() { return std::logic_error("FakeBackend has no math"); }
  DType override_;
};

}  // namespace gs::testing
