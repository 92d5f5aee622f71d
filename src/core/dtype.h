// Element types and the scalar conversions every backend agrees on.
#pragma once
#include <cstdint>
#include <cstring>
#include <string_view>

namespace gs {

enum class DType : uint8_t { F32, BF16, F16, I32, I64, U8 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: return 4;
    case DType::BF16: case DType::F16: return 2;
    case DType::I64: return 8;
    case DType::U8: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t);           // "f32", "bf16", ...
bool parse_safetensors_dtype(std::string_view s, DType* out);  // "BF16" -> BF16, ...

// bf16 <-> f32: round-to-nearest-even, NaN stays NaN (what PyTorch does).
inline float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
// Rounds an f32 value to the nearest bf16 and back: the value a bf16 tensor would hold.
inline float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
inline float round_f16(float f) { return f16_to_f32(f32_to_f16(f)); }

// The value a tensor of dtype `t` holds for f (identity for F32).
inline float round_to(DType t, float f) {
  if (t == DType::BF16) return round_bf16(f);
  if (t == DType::F16) return round_f16(f);
  return f;
}

// Converts n elements of src (dtype `from`) to f32.
void convert_to_f32(DType from, const void* src, float* dst, size_t n);
// Converts n f32 elements to dtype `to` (F32, BF16 or F16).
void convert_from_f32(DType to, const float* src, void* dst, size_t n);

}  // namespace gs
