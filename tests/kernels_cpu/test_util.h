// Helpers of the CPU kernel tests: fresh random inputs (the seed is printed with every failure),
// host tensors in any float dtype, and double-precision reference pieces.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
#include "kernels/cpu/cpu_backend.h"

namespace gs::test {

// A random engine seeded from std::random_device; SCOPED_TRACE it so failures name the seed.
struct Rng {
  unsigned seed;
  std::mt19937_64 gen;
  Rng() : seed(std::random_device{}()), gen(seed) {}
  std::string trace() const { return "random seed " + std::to_string(seed); }
  float uniform(float lo = -1.f, float hi = 1.f) { return std::uniform_real_distribution<float>(lo, hi)(gen); }
  int integer(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); }  // inclusive
  float normal() { return std::normal_distribution<float>(0.f, 1.f)(gen); }
};

// A host tensor of `dtype` holding random values in [lo, hi] (rounded to the dtype).
inline Tensor random_tensor(Rng& rng, DType dtype, Shape shape, float lo = -1.f, float hi = 1.f) {
  Tensor t = host_tensor(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = rng.uniform(lo, hi);
    if (dtype == DType::F32) t.ptr<float>()[i] = v;
    else if (dtype == DType::BF16) t.ptr<uint16_t>()[i] = f32_to_bf16(v);
    else t.ptr<uint16_t>()[i] = f32_to_f16(v);
  }
  return t;
}

// An f32 tensor filled with NaN, so an op that skips an element is caught.
inline Tensor poisoned(Shape shape) {
  Tensor t = host_tensor(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = std::nanf("");
  return t;
}

inline double value(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::F32: return t.ptr<float>()[i];
    case DType::BF16: return bf16_to_f32(t.ptr<uint16_t>()[i]);
    case DType::F16: return f16_to_f32(t.ptr<uint16_t>()[i]);
    default: return 0;
  }
}

inline Tensor i32_tensor(const std::vector<int>& v) {
  Tensor t = host_tensor(DType::I32, Shape{int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.ptr<int>()[i] = v[i];
  return t;
}

// Expects |got - want| <= atol + rtol·|want| for every element, and no NaN.
inline void expect_close(const Tensor& got, const std::vector<double>& want, double atol, double rtol,
                         const std::string& what) {
  ASSERT_EQ(got.numel(), int64_t(want.size())) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = value(got, i), w = want[size_t(i)];
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      if (++bad <= 5) ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << w;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.numel() << " elements off";
}

inline std::vector<double> rms_norm_ref(const double* x, int n, const Tensor* w, double eps) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  const double inv = 1.0 / std::sqrt(ss / n + eps);
  std::vector<double> y(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) y[size_t(i)] = x[i] * inv * (w ? value(*w, i) : 1.0);
  return y;
}

inline double gelu_ref(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

}  // namespace gs::test
