// The weights of one Gemma-4 text decoder (or assistant) as the model code uses them, already on
// the backend. Projections that run on the same input are fused at load time (q|k|v, gate|up)
// so each is one GEMM.
#pragma once
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "model/vision_weights.h"

namespace gs {

struct LayerWeights {
  Tensor input_norm, post_attn_norm, pre_ffn_norm, post_ffn_norm;  // [H]
  Tensor qkv;            // [(Nq + 2·Nkv)·d, H] | [(Nq + Nkv)·d, H] (k_eq_v) | [Nq·d, H] (KV-shared)
  Tensor q_norm;         // [d]
  Tensor k_norm;         // [d]; undefined for layers that own no KV
  Tensor o_proj;         // [H, Nq·d]
  Tensor gate_up;        // [2·I, H], gate rows first
  Tensor down;           // [H, I]
  float layer_scalar = 1.f;

  // Per-layer embeddings (E2B/E4B).
  Tensor ple_gate;       // [P, H]
  Tensor ple_proj;       // [H, P]
  Tensor ple_post_norm;  // [H]

  // MoE (26B-A4B): dense branch uses gate_up/down above.
  Tensor pre_ffn_norm_2, post_ffn_norm_1, post_ffn_norm_2;  // [H]
  Tensor router_proj;        // [E, H]
  Tensor router_scale;       // [H]
  Tensor per_expert_scale;   // [E]
  Tensor experts_gate_up;    // [E, 2·I_moe, H]
  Tensor experts_down;       // [E, H, I_moe]
};

struct ModelWeights {
  Tensor embed;              // [V, H]; also the tied LM head
  Tensor final_norm;         // [H]
  Tensor ple_table;          // [V_ple, L·P]
  Tensor ple_model_proj;     // [L·P, H]
  Tensor ple_proj_norm;      // [P]
  std::vector<LayerWeights> layers;

  // Assistant (MTP drafter).
  // pre_projection.weight [Hd, 2·Ht] split into its column halves at load, so the draft step
  // needs no concatenated input: z = e·embedᵀ + h·hiddenᵀ.
  Tensor pre_projection_embed;   // [Hd, Ht], applied to the target's scaled token embedding
  Tensor pre_projection_hidden;  // [Hd, Ht], applied to the target's (or the last step's) hidden state
  Tensor post_projection;    // [Ht, Hd]
  Tensor centroids;          // [num_centroids, Hd]
  Tensor token_ordering;     // i32 [V]

  // The vision tower (Gemma4ForConditionalGeneration with multimodal enabled), or null.
  std::shared_ptr<const VisionWeights> vision;

  size_t bytes() const;      // total bytes on the device, the tower's included
};

}  // namespace gs
