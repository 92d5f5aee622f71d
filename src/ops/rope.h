// Rotary position embedding as the ops apply it.
#pragma once
#include <cmath>

namespace gs {

// inv_freq[i] = theta^(-2i/freq_dim) for i < rotary_pairs, 0 (identity) for rotary_pairs <= i < head_dim/2.
// Rotate-half pairing (i, i + head_dim/2). Default RoPE: rotary_pairs = head_dim/2, freq_dim = head_dim.
// Proportional RoPE (full layers): rotary_pairs = floor(partial * head_dim / 2), freq_dim = head_dim.
struct RopeSpec {
  float theta = 10000.f;
  int head_dim = 256;
  int rotary_pairs = 128;
  int freq_dim = 256;
};

// The f32 inverse frequency of rotary pair i (< rotary_pairs), as the reference computes it. Both
// backends take it from here (the cuda one as a table made on the host), so they rotate by the
// same frequencies.
inline float rope_inv_freq(const RopeSpec& rope, int i) {
  return 1.0f / std::pow(rope.theta, float(2 * i) / float(rope.freq_dim));
}

}  // namespace gs
