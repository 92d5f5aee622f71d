#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"

namespace gs {
namespace {

// Reference bf16 rounding through double arithmetic: nearest representable, ties to even.
float reference_round_bf16(float f) {
  if (std::isnan(f) || std::isinf(f) || f == 0.f) return f;
  int e;
  std::frexp(double(f), &e);         // f = m * 2^e, 0.5 <= |m| < 1
  double ulp = std::ldexp(1.0, e - 8);  // 8 significant bits
  if (e - 8 < -133) ulp = std::ldexp(1.0, -133);  // subnormal bf16 spacing
  double q = double(f) / ulp;
  double r = std::nearbyint(q);  // default rounding mode: ties to even
  return float(r * ulp);
}

TEST(DType, Bf16RoundTripMatchesReferenceRounding) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> mag(-30.f, 30.f);
  for (int i = 0; i < 200000; ++i) {
    float f = std::ldexp(std::uniform_real_distribution<float>(0.5f, 1.f)(rng), int(mag(rng)));
    if (i & 1) f = -f;
    ASSERT_EQ(round_bf16(f), reference_round_bf16(f)) << "f=" << f;
  }
}

TEST(DType, Bf16KnownValues) {
  EXPECT_EQ(round_bf16(std::sqrt(1536.f)), 39.25f);  // Gemma-4 E2B embedding scale
  EXPECT_EQ(round_bf16(std::sqrt(2560.f)), 50.5f);
  EXPECT_EQ(round_bf16(std::sqrt(2816.f)), 53.0f);
  EXPECT_EQ(round_bf16(std::sqrt(5376.f)), 73.5f);
  EXPECT_TRUE(std::isnan(round_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isinf(round_bf16(std::numeric_limits<float>::infinity())));
}

TEST(DType, F16RoundTripIsExactForRepresentableValues) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t x = uint16_t(h);
    float f = f16_to_f32(x);
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), x) << std::hex << h;
  }
}

TEST(DType, F16RoundsToNearest) {
  EXPECT_EQ(round_f16(1.0f + 1.0f / 4096), 1.0f);       // below half an ulp
  EXPECT_EQ(round_f16(1.0f + 3.0f / 2048), 1.0f + 1.0f / 512);  // tie -> even
  EXPECT_TRUE(std::isinf(round_f16(70000.f)));
}

TEST(DType, ConvertBuffers) {
  std::vector<float> src = {1.5f, -2.25f, 3.0e-3f, 65504.f};
  std::vector<uint16_t> buf(src.size());
  std::vector<float> back(src.size());
  convert_from_f32(DType::BF16, src.data(), buf.data(), src.size());
  convert_to_f32(DType::BF16, buf.data(), back.data(), src.size());
  for (size_t i = 0; i < src.size(); ++i) EXPECT_EQ(back[i], round_bf16(src[i]));
  EXPECT_THROW(convert_to_f32(DType::I32, buf.data(), back.data(), 1), Error);
}

TEST(Tensor, ViewAndSlice) {
  Tensor t = host_tensor(DType::F32, {4, 3});
  for (int i = 0; i < 12; ++i) t.ptr<float>()[i] = float(i);
  Tensor s = t.slice(1, 2);
  EXPECT_EQ(s.shape, Shape({2, 3}));
  EXPECT_EQ(s.ptr<float>()[0], 3.f);
  Tensor v = t.view({2, 6});
  EXPECT_EQ(v.rows(), 2);
  EXPECT_EQ(v.cols(), 6);
  EXPECT_THROW(t.view({5, 3}), Error);
  EXPECT_THROW(t.slice(3, 2), Error);
  EXPECT_EQ(t.str(), "f32[4, 3]@cpu");
}

}  // namespace
}  // namespace gs
