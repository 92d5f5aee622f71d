// Quantities derived from a parsed ModelConfig: KV geometry per cache group, parameter count,
// and the human-readable structure `gemmaserve inspect` prints.
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "model/model_config.h"

namespace gs {

namespace {

// The layers whose geometry defines group g: its cache owners, or (for an assistant, which owns
// none) the layers of that type that will read the target's cache.
template <typename F>
void for_group(const ModelConfig& c, KvGroup g, F f) {
  bool any_owner = false;
  for (const LayerSpec& l : c.layers) any_owner |= l.owns_kv && l.group() == g;
  for (const LayerSpec& l : c.layers)
    if (l.group() == g && (l.owns_kv || !any_owner)) f(l);
}

}  // namespace

int ModelConfig::num_cache_layers(KvGroup g) const {
  int n = 0;
  for (const LayerSpec& l : layers) n += l.owns_kv && l.group() == g;
  return n;
}

int ModelConfig::kv_heads(KvGroup g) const {
  int h = 0;
  for_group(*this, g, [&](const LayerSpec& l) { h = l.num_kv_heads; });
  return h;
}

int ModelConfig::kv_head_dim(KvGroup g) const {
  int d = 0;
  for_group(*this, g, [&](const LayerSpec& l) { d = l.head_dim; });
  return d;
}

KvLayout ModelConfig::kv_layout() const {
  KvLayout out;
  for (const LayerSpec& l : layers) {
    if (!l.owns_kv) continue;
    KvGroupShape& g = out.groups[int(l.group())];
    if (g.cache_layers > 0 && (g.kv_heads != l.num_kv_heads || g.head_dim != l.head_dim))
      throw Error("config: cache layers of one KV group disagree on KV heads x head dim ({}x{} vs {}x{})", g.kv_heads,
                  g.head_dim, l.num_kv_heads, l.head_dim);
    g.kv_heads = l.num_kv_heads;
    g.head_dim = l.head_dim;
    ++g.cache_layers;
  }
  return out;
}

size_t ModelConfig::kv_bytes_per_token(KvGroup g, size_t elem_bytes) const {
  size_t n = 0;
  for (const LayerSpec& l : layers)
    if (l.owns_kv && l.group() == g) n += 2 * size_t(l.num_kv_heads) * size_t(l.head_dim) * elem_bytes;
  return n;
}

float ModelConfig::embed_scale() const { return std::sqrt(float(hidden_size)); }

long long ModelConfig::parameter_count() const {
  const long long H = hidden_size, Nq = num_q_heads;
  long long n = (long long)vocab_size * H + H;  // embed_tokens (= tied head), final norm
  if (ple_dim) n += (long long)ple_vocab_size * num_layers * ple_dim + (long long)num_layers * ple_dim * H + ple_dim;
  for (const LayerSpec& l : layers) {
    const long long d = l.head_dim, kv = l.num_kv_heads;
    n += 4 * H + 1;                    // four norms, layer_scalar
    n += 2 * Nq * d * H + d;           // q_proj, o_proj, q_norm
    if (l.owns_kv) n += (l.k_eq_v ? 1 : 2) * kv * d * H + d;  // k_proj (+ v_proj), k_norm
    n += 3 * (long long)l.intermediate * H;                   // gate, up, down
    if (ple_dim) n += 2LL * ple_dim * H + H;
    if (moe) {
      const long long E = num_experts, I = moe_intermediate_size;
      n += E * H + H + E + 3 * H + E * 3 * I * H;  // router, three extra norms, experts
    }
  }
  if (is_assistant) {
    n += (long long)H * 2 * backbone_hidden_size + (long long)backbone_hidden_size * H;
    if (use_ordered_embeddings) n += (long long)num_centroids * H;
  }
  return n;
}

std::string ModelConfig::describe() const {
  std::string s = fmt::format("{} ({}weights under '{}')\n", architecture, is_assistant ? "assistant, " : "",
                              weight_prefix);
  s += fmt::format("  hidden {}  layers {}  query heads {}  vocab {}  max positions {}\n", hidden_size, num_layers,
                   num_q_heads, vocab_size, max_position_embeddings);
  s += fmt::format("  sliding window {}  final soft-cap {}  rms eps {:g}  bidirectional {}\n", sliding_window,
                   final_logit_softcap > 0 ? fmt::format("{:g}", final_logit_softcap) : "none", rms_norm_eps,
                   bidirectional.empty() ? "none" : bidirectional);
  s += fmt::format("  rope sliding: theta {:g}, {}/{} pairs; full: theta {:g}, {}/{} pairs (freq dim {})\n",
                   rope_sliding.theta, rope_sliding.rotary_pairs, rope_sliding.head_dim / 2, rope_full.theta,
                   rope_full.rotary_pairs, rope_full.head_dim / 2, rope_full.freq_dim);
  if (ple_dim) s += fmt::format("  per-layer embeddings: {} per layer, table {} x {}\n", ple_dim, ple_vocab_size,
                                num_layers * ple_dim);
  if (moe) s += fmt::format("  MoE: {} experts, top-{}, expert width {} (plus the dense MLP)\n", num_experts,
                            top_k_experts, moe_intermediate_size);
  if (num_kv_shared_layers)
    s += fmt::format("  KV-shared layers: {} (from layer {})\n", num_kv_shared_layers, first_kv_shared_layer());
  if (is_assistant)
    s += fmt::format("  assistant: backbone hidden {}, {}\n", backbone_hidden_size,
                     use_ordered_embeddings
                         ? fmt::format("centroid head ({} centroids, top-{})", num_centroids, centroid_top_k)
                         : std::string("dense head"));
  if (has_vision()) {
    const char* overlay[] = {"none", "sliding layers, inside the window", "sliding layers, whole image", "all layers"};
    s += fmt::format("  vision tower: hidden {}  layers {}  heads {} x {}  mlp {}  {}; image overlay: {}\n",
                     vision.hidden_size, vision.num_layers, vision.num_heads, vision.head_dim, vision.intermediate_size,
                     vision.use_clipped_linears ? "clipped linears" : vision.standardize ? "standardize" : "plain",
                     overlay[int(mm_overlay)]);
  }
  s += "  layer  type     head_dim  kv_heads  k_eq_v  mlp     window  kv\n";
  for (int i = 0; i < num_layers; ++i) {
    const LayerSpec& l = layers[i];
    std::string kv = l.owns_kv ? fmt::format("own (slot {})", l.kv_slot)
                     : l.kv_source >= 0
                         ? fmt::format("{} layer {} (slot {})", is_assistant ? "target" : "reads", l.kv_source,
                                       l.kv_slot)
                         : std::string("target (unbound)");
    s += fmt::format("  {:>5}  {:<7}  {:>8}  {:>8}  {:<6}  {:>6}  {:>6}  {}\n", i,
                     l.type == LayerType::Full ? "full" : "sliding", l.head_dim, l.num_kv_heads,
                     l.k_eq_v ? "yes" : "no", l.intermediate, l.sliding_window ? std::to_string(l.sliding_window) : "-",
                     kv);
  }
  return s;
}

}  // namespace gs
