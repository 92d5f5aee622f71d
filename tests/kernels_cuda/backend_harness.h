// Shared helpers of the cuda-vs-cpu op tests: both backends, fresh random inputs rounded to bf16
// (so both backends see identical values: f32 activations on cpu, bf16 on cuda), NaN-poisoned
// outputs, and the relative error ||out − ref|| / ||ref|| in double. A NaN anywhere fails.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/kernel_policy.h"
#include "ops/backend.h"

namespace gs::test {

// Tolerance for bf16 results: a few bf16 ulps of relative error over a whole tensor.
constexpr double kBf16Tol = 1e-2;

class CudaVsCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    cpu = make_cpu_backend(2);
    gpu = make_cuda_backend(0);
    std::random_device rd;
    seed = (uint64_t(rd()) << 32) ^ rd();
    rng.seed(seed);
    RecordProperty("seed", std::to_string(seed));
  }
  // The next test starts from the product's kernel policy whatever this one changed.
  void TearDown() override { cuda::set_kernel_policy({}); }

  // Installs the current kernel policy with `change` applied (kernel variants under test).
  static void change_policy(const std::function<void(cuda::KernelPolicy&)>& change) {
    cuda::KernelPolicy p = cuda::kernel_policy();
    change(p);
    cuda::set_kernel_policy(p);
  }

  // n values uniform in [lo, hi], rounded to bf16.
  std::vector<float> random_bf16(int64_t n, float lo = -1.f, float hi = 1.f) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = round_bf16(u(rng));
    return v;
  }
  std::vector<int> random_ints(int64_t n, int lo, int hi) {
    std::uniform_int_distribution<int> u(lo, hi);
    std::vector<int> v(static_cast<size_t>(n));
    for (auto& x : v) x = u(rng);
    return v;
  }

  // The same values on both backends: activations (cpu f32, cuda bf16).
  Tensor cpu_act(const std::vector<float>& v, Shape s) { return cpu_tensor(v, s); }
  Tensor gpu_act(const std::vector<float>& v, Shape s) { return gpu_tensor(v, DType::BF16, s); }
  Tensor cpu_tensor(const std::vector<float>& v, Shape s) {
    Tensor t = cpu->empty(DType::F32, s);
    cpu->copy_from_host(t, v.data());
    return t;
  }
  Tensor gpu_tensor(const std::vector<float>& v, DType dt, Shape s) {
    Tensor t = gpu->empty(dt, s);
    if (dt == DType::F32) {
      gpu->copy_from_host(t, v.data());
    } else {
      std::vector<uint16_t> h(v.size());
      convert_from_f32(dt, v.data(), h.data(), v.size());
      gpu->copy_from_host(t, h.data());
    }
    return t;
  }
  Tensor cpu_ints(const std::vector<int>& v, Shape s) {
    Tensor t = cpu->empty(DType::I32, s);
    cpu->copy_from_host(t, v.data());
    return t;
  }
  Tensor gpu_ints(const std::vector<int>& v, Shape s) {
    Tensor t = gpu->empty(DType::I32, s);
    gpu->copy_from_host(t, v.data());
    return t;
  }
  // A weight uploaded from one bf16 host tensor through each backend's upload_weight.
  std::pair<Tensor, Tensor> weight(const std::vector<float>& v, Shape s) {
    Tensor h = host_tensor(DType::BF16, s);
    convert_from_f32(DType::BF16, v.data(), h.data, v.size());
    return {cpu->upload_weight(h), gpu->upload_weight(h)};
  }

  // Output tensor on the GPU filled with NaN, so an unwritten element fails the comparison.
  Tensor gpu_poisoned(DType dt, Shape s) {
    Tensor t = gpu->empty(dt, s);
    gpu->fill(t, dt == DType::I32 ? -7.f : NAN);
    return t;
  }

  std::vector<float> download(Backend& b, const Tensor& t) {
    std::vector<float> out(size_t(t.numel()));
    if (t.dtype == DType::F32) {
      b.copy_to_host(t, out.data());
    } else if (t.dtype == DType::I32) {
      std::vector<int> v(out.size());
      b.copy_to_host(t, v.data());
      for (size_t i = 0; i < v.size(); ++i) out[i] = float(v[i]);
    } else {
      std::vector<uint16_t> h(out.size());
      b.copy_to_host(t, h.data());
      convert_to_f32(t.dtype, h.data(), out.data(), out.size());
    }
    return out;
  }
  std::vector<int> download_ints(Backend& b, const Tensor& t) {
    std::vector<int> v(size_t(t.numel()));
    b.copy_to_host(t, v.data());
    return v;
  }

  // ||out − ref|| / ||ref||; NaN when out holds a NaN (EXPECT_LE then fails).
  static double rel_error(const std::vector<float>& out, const std::vector<float>& ref) {
    EXPECT_EQ(out.size(), ref.size());
    double num = 0, den = 0;
    for (size_t i = 0; i < out.size() && i < ref.size(); ++i) {
      if (std::isnan(out[i])) return NAN;
      double d = double(out[i]) - double(ref[i]);
      num += d * d;
      den += double(ref[i]) * ref[i];
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  }

  void expect_close(const Tensor& gpu_out, const Tensor& cpu_out, double tol, const std::string& what) {
    double e = rel_error(download(*gpu, gpu_out), download(*cpu, cpu_out));
    EXPECT_LE(e, tol) << what << " (seed " << seed << ")";  // NaN never passes
  }

  std::unique_ptr<Backend> cpu, gpu;
  std::mt19937_64 rng;
  uint64_t seed = 0;
};

}  // namespace gs::test
