// The structure of a Gemma-4 text decoder (or MTP assistant), derived from config.json alone.
// See ../shared/gemma4-architecture.md §1 for every field; per-layer facts are precomputed in
// `layers` so that no other code re-derives them.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "ops/kv_layout.h"
#include "ops/rope.h"

namespace gs {

enum class LayerType { Sliding, Full };

struct LayerSpec {
  LayerType type = LayerType::Sliding;
  int head_dim = 256;
  int num_kv_heads = 1;
  bool k_eq_v = false;       // full layer without v_proj: V = v_norm(raw K projection)
  int intermediate = 0;      // dense MLP width (double on shared layers when use_double_wide_mlp)
  int sliding_window = 0;    // W (keys with q - k < W are visible); 0 for full layers
  RopeSpec rope;
  bool owns_kv = true;       // false: KV-shared layer (or any assistant layer)
  int kv_source = -1;        // layer whose cache it reads (itself when owns_kv; for an assistant,
                             // the index of the target's layer)
  int kv_slot = -1;          // index of the cache layer inside its group's pool
  KvGroup group() const { return type == LayerType::Full ? KvGroup::Full : KvGroup::Sliding; }
};

// The vision tower (`vision_config`, gemma4-architecture.md §1.2 and §4.2). hidden_size 0: none.
struct VisionConfig {
  int hidden_size = 0;               // Hv
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int head_dim = 0;                  // 64 (E2B/E4B) or 72 (26B/31B)
  int patch_size = 16;
  int pooling_kernel_size = 3;
  int position_embedding_size = 10240;
  float rope_theta = 100.f;
  float rms_norm_eps = 1e-6f;
  bool use_clipped_linears = false;  // E2B/E4B towers: every projection clamps its input and output
  bool standardize = false;          // 26B/31B towers: (t - std_bias) * std_scale after pooling
  int default_output_length = 280;   // soft tokens per image by default
  int patch_values() const { return patch_size * patch_size * 3; }
};

// Which text layers let an image's soft tokens see each other (use_bidirectional_attention "vision").
enum class MmOverlay {
  None,             // causal everywhere (E2B/E4B)
  SlidingInWindow,  // sliding layers; the block's earlier keys still within the window (transformers 5.17)
  Sliding,          // sliding layers; the whole block, beyond the window (the release notes, vLLM)
  All,              // every layer, the whole block (newer transformers' create_masks_for_generate)
};
MmOverlay parse_mm_overlay(const std::string& s);  // "none" | "sliding-in-window" | "sliding" | "all"

struct ModelConfig {
  std::string architecture;        // Gemma4ForConditionalGeneration | Gemma4ForCausalLM | Gemma4AssistantForCausalLM
  std::string weight_prefix;       // "model.language_model." or "model."
  bool is_assistant = false;

  int vocab_size = 262144;
  int hidden_size = 0;
  int num_layers = 0;
  int num_q_heads = 0;
  int head_dim = 256;
  int global_head_dim = 512;
  int num_kv_heads = 0;
  int num_global_kv_heads = 0;     // full layers when attention_k_eq_v
  bool attention_k_eq_v = false;
  int intermediate_size = 0;
  bool use_double_wide_mlp = false;
  int sliding_window = 512;
  float rms_norm_eps = 1e-6f;
  float final_logit_softcap = 0.f; // 0: none
  int max_position_embeddings = 131072;
  std::string bidirectional;       // "", "vision" or "all"

  int ple_dim = 0;                 // hidden_size_per_layer_input; 0 disables PLE
  int ple_vocab_size = 0;          // vocab_size_per_layer_input
  int num_kv_shared_layers = 0;
  int first_kv_shared_layer() const { return num_layers - num_kv_shared_layers; }

  bool moe = false;
  int num_experts = 0;
  int top_k_experts = 0;
  int moe_intermediate_size = 0;

  RopeSpec rope_sliding;           // as configured, over head_dim
  RopeSpec rope_full;              // over global_head_dim

  int pad_token_id = 0, bos_token_id = 2;
  std::vector<int> eos_token_ids{1};
  int image_token_id = 258880, video_token_id = 258884, audio_token_id = 258881;
  int boi_token_id = 255999, eoi_token_id = 258882;

  VisionConfig vision;             // hidden_size 0 when the checkpoint has no vision tower
  bool has_vision() const { return vision.hidden_size > 0; }
  MmOverlay mm_overlay = MmOverlay::None;  // from use_bidirectional_attention; switchable (--mm-overlay)

  // Assistant (MTP drafter) only.
  int backbone_hidden_size = 0;
  bool use_ordered_embeddings = false;
  int num_centroids = 0;
  int centroid_top_k = 0;

  std::vector<LayerSpec> layers;

  // Derived.
  int num_cache_layers(KvGroup g) const;           // layers that own a cache in group g
  int kv_heads(KvGroup g) const;                   // KV heads of the cache layers in group g
  int kv_head_dim(KvGroup g) const;                // head dim of group g
  KvLayout kv_layout() const;                      // the caches the backend allocates (owning layers only)
  size_t kv_bytes_per_token(KvGroup g, size_t elem_bytes) const;  // K+V over the group's cache layers
  float embed_scale() const;                       // sqrt(hidden_size), not yet rounded
  long long parameter_count() const;               // text weights the engine loads

  // Parses a config.json (either the flat or the per_layer_config form). Throws gs::Error naming
  // the field on anything missing or inconsistent.
  static ModelConfig from_json(const nlohmann::json& j);
  static ModelConfig from_file(const std::string& config_json_path);
  // For an assistant: bind its layers to the target's caches (kv_source/kv_slot from the target).
  void bind_assistant_to(const ModelConfig& target);
  std::string describe() const;  // multi-line human-readable structure (gemmaserve inspect)
};

}  // namespace gs
