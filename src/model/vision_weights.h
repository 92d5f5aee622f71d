// The weights of the vision tower and its projection into the text model (gemma4-architecture.md
// §4.2, §6), on the backend. Loaded only when multimodal serving is enabled.
#pragma once
#include <limits>
#include <vector>

#include "core/tensor.h"

namespace gs {

// A clipped linear's four bounds (use_clipped_linears towers); ±inf: no clipping.
struct ClipBounds {
  float input_min = -std::numeric_limits<float>::infinity();
  float input_max = std::numeric_limits<float>::infinity();
  float output_min = -std::numeric_limits<float>::infinity();
  float output_max = std::numeric_limits<float>::infinity();
  bool clips_input() const { return input_min > -std::numeric_limits<float>::infinity() ||
                                    input_max < std::numeric_limits<float>::infinity(); }
  bool clips_output() const { return output_min > -std::numeric_limits<float>::infinity() ||
                                     output_max < std::numeric_limits<float>::infinity(); }
};

// One projection of the tower: the Linear ([out, in]) and its bounds.
struct VisionLinear {
  Tensor w;
  ClipBounds clip;
};

struct VisionLayerWeights {
  Tensor input_norm, post_attn_norm, pre_ffn_norm, post_ffn_norm;  // [Hv]
  VisionLinear q, k, v;     // [heads·hd, Hv]
  VisionLinear o;           // [Hv, heads·hd]
  Tensor q_norm, k_norm;    // [hd]
  VisionLinear gate, up;    // [I, Hv]
  VisionLinear down;        // [Hv, I]
};

struct VisionWeights {
  Tensor input_proj;        // [Hv, 768]   patch_embedder.input_proj
  Tensor position_table;    // [2, P, Hv]  patch_embedder.position_embedding_table
  std::vector<VisionLayerWeights> layers;
  Tensor std_bias, std_scale;   // [Hv], standardize towers only
  Tensor embed_projection;  // [H, Hv]     model.embed_vision.embedding_projection
  size_t bytes() const;
};

}  // namespace gs
