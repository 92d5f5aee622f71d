// The one random-number generator of the project: a counter-based hash, so every backend (host
// code and CUDA device code alike) draws bit-identical values for the same (seed, stream, index)
// without any generator state. Used for
//   - sampling: token t of a row at decode step `step` gets uniform(seed, step, t);
//   - dummy weights: element i of a tensor filled with seed s gets fill_value(s, i, scale).
//
// Sampling procedure every backend implements (Gumbel-max, so the draw is a pure function of
// (seed, step, logits) and needs no sort or prefix sum to stay identical across backends):
//   1. temperature <= 0: greedy argmax of the raw logits, ties to the lowest id.
//   2. otherwise z_t = logits_t / temperature; the filters top_k, top_p and min_p decide which
//      tokens stay (see sample() in kernels/cpu for the exact rules), and the chosen token is
//        argmax over kept t of  z_t + gumbel(uniform(seed, step, t)),   ties to the lowest id,
//      with gumbel(u) = -log(-log(u)). This draws t with probability softmax(z) renormalised
//      over the kept tokens.
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define GS_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define GS_HOST_DEVICE inline
#endif

namespace gs::rng {

// Stafford's "mix13" finaliser as used by splitmix64: a bijection on 64 bits with full avalanche.
GS_HOST_DEVICE uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// 64 random bits for counter (stream, index) under key `seed`. Each argument passes through its
// own round so that neighbouring seeds, streams and indices give unrelated values.
GS_HOST_DEVICE uint64_t hash3(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t x = mix64(seed + 0x9e3779b97f4a7c15ull);
  x = mix64(x ^ (stream * 0xd1b54a32d192ed03ull + 0x632be59bd9b4e019ull));
  x = mix64(x ^ (index * 0x8cb92ba72f3d8dd7ull + 0x2545f4914f6cdd1dull));
  return x;
}

// Uniform float in the open interval (0, 1): the top 24 bits, offset by half a step, so that
// log(u) and log(-log(u)) are always finite. Exactly representable in f32.
GS_HOST_DEVICE float uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  uint32_t bits = uint32_t(hash3(seed, stream, index) >> 40);  // 24 bits
  return (float(bits) + 0.5f) * (1.0f / 16777216.0f);
}

// The stream of weight filling: a value no decode step reaches, so fills and samples never share
// counters.
constexpr uint64_t kFillStream = ~0ull;

// Element `index` of a tensor filled by fill_uniform(seed, scale): uniform in (-scale, scale).
GS_HOST_DEVICE float fill_value(uint64_t seed, uint64_t index, float scale) {
  return (2.0f * uniform(seed, kFillStream, index) - 1.0f) * scale;
}

// Gumbel noise of a uniform draw. Device code must use the accurate logf (not __logf) so that
// backends agree to the last bit in all but the rarest cases.
GS_HOST_DEVICE float gumbel(float u) {
#ifdef __CUDA_ARCH__
  return -logf(-logf(u));
#else
  return -__builtin_logf(-__builtin_logf(u));
#endif
}

}  // namespace gs::rng
