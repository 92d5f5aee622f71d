// config.json -> ModelConfig. Field names, defaults and derivation rules follow the Hugging Face
// Gemma-4 configuration classes (gemma4-architecture.md §1): what a published checkpoint omits
// takes the class default; what it states is checked for consistency.
#include "model/model_config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

#include "checkpoint/checkpoint.h"
#include "checkpoint/generation_config.h"
#include "core/error.h"

namespace gs {

using nlohmann::json;

namespace {

// Typed access to one JSON object whose path ("text_config") appears in every error.
struct Fields {
  const json& j;
  std::string path;

  std::string name(const char* key) const { return path.empty() ? key : path + "." + key; }
  const json* get(const char* key) const {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }
  long long integer(const char* key, const json* v) const {
    if (!v->is_number_integer()) throw Error("config: {} must be an integer, got {}", name(key), v->dump());
    return v->get<long long>();
  }
  int req_int(const char* key, int min = 1) const {
    const json* v = get(key);
    if (!v) throw Error("config: required field {} is missing", name(key));
    return checked(key, integer(key, v), min);
  }
  int opt_int(const char* key, int dflt, int min = 0) const {
    const json* v = get(key);
    return v ? checked(key, integer(key, v), min) : dflt;
  }
  int checked(const char* key, long long x, int min) const {
    if (x < min || x > INT32_MAX) throw Error("config: {} = {} is out of range (must be >= {})", name(key), x, min);
    return int(x);
  }
  float opt_float(const char* key, float dflt) const {
    const json* v = get(key);
    if (!v) return dflt;
    if (!v->is_number()) throw Error("config: {} must be a number, got {}", name(key), v->dump());
    return v->get<float>();
  }
  bool opt_bool(const char* key, bool dflt) const {
    const json* v = get(key);
    if (!v) return dflt;
    if (!v->is_boolean()) throw Error("config: {} must be true or false, got {}", name(key), v->dump());
    return v->get<bool>();
  }
  std::string opt_str(const char* key, const std::string& dflt) const {
    const json* v = get(key);
    if (!v) return dflt;
    if (!v->is_string()) throw Error("config: {} must be a string, got {}", name(key), v->dump());
    return v->get<std::string>();
  }
};

const char* type_key(LayerType t) { return t == LayerType::Full ? "full_attention" : "sliding_attention"; }

// RoPE of one layer type over head dim d (§2.6). "default" rotates every pair; "proportional"
// rotates floor(f·d/2) pairs with the exponent's denominator kept at d.
RopeSpec rope_for(const json* rope_params, LayerType t, int d) {
  json p = json::object();
  if (rope_params) {
    if (!rope_params->is_object()) throw Error("config: text_config.rope_parameters must be an object");
    if (auto it = rope_params->find(type_key(t)); it != rope_params->end() && !it->is_null()) p = *it;
  }
  Fields f{p, std::string("text_config.rope_parameters.") + type_key(t)};
  if (!p.is_object()) throw Error("config: {} must be an object", f.path);
  bool full = t == LayerType::Full;
  std::string type = f.opt_str("rope_type", full ? "proportional" : "default");
  RopeSpec r;
  r.theta = f.opt_float("rope_theta", full ? 1e6f : 1e4f);
  r.head_dim = d;
  r.freq_dim = d;
  if (!(r.theta > 0)) throw Error("config: {}.rope_theta must be positive", f.path);
  if (f.opt_float("factor", 1.f) != 1.f) throw Error("config: {}.factor: RoPE scaling is not supported", f.path);
  float partial = f.opt_float("partial_rotary_factor", 1.f);
  if (type == "default") {
    if (partial != 1.f)
      throw Error("config: {}.partial_rotary_factor {} with rope_type 'default' is not supported", f.path, partial);
    r.rotary_pairs = d / 2;
  } else if (type == "proportional") {
    if (!(partial > 0 && partial <= 1))
      throw Error("config: {}.partial_rotary_factor must be in (0, 1], got {}", f.path, partial);
    r.rotary_pairs = int(std::floor(double(partial) * d / 2.0));
  } else {
    throw Error("config: {}.rope_type '{}' is not supported (expected default or proportional)", f.path, type);
  }
  return r;
}

// Per-layer overrides of the newer config form: {"5": {"head_dim": 512, "num_key_value_heads": 2}}.
struct LayerOverride {
  int head_dim = 0, kv_heads = 0;
};

std::vector<LayerOverride> layer_overrides(const json& pl, int num_layers, int num_q_heads) {
  std::vector<LayerOverride> out(num_layers);
  if (!pl.is_object()) throw Error("config: text_config.per_layer_config must be an object keyed by layer index");
  for (auto it = pl.begin(); it != pl.end(); ++it) {
    const std::string& k = it.key();
    int idx = -1;
    if (!k.empty() && k.size() < 8 && k.find_first_not_of("0123456789") == std::string::npos) idx = std::stoi(k);
    if (idx < 0 || idx >= num_layers)
      throw Error("config: text_config.per_layer_config key '{}' is not a layer index below {}", k, num_layers);
    if (!it->is_object()) throw Error("config: text_config.per_layer_config.{} must be an object", k);
    Fields f{*it, "text_config.per_layer_config." + k};
    for (auto o = it->begin(); o != it->end(); ++o)
      if (o.key() != "head_dim" && o.key() != "num_key_value_heads" && o.key() != "num_attention_heads")
        throw Error("config: {}.{} is not a supported per-layer override", f.path, o.key());
    out[idx].head_dim = f.opt_int("head_dim", 0, 2);
    out[idx].kv_heads = f.opt_int("num_key_value_heads", 0, 1);
    if (f.opt_int("num_attention_heads", num_q_heads, 1) != num_q_heads)
      throw Error("config: {}.num_attention_heads differs from num_attention_heads = {} (unsupported)", f.path,
                  num_q_heads);
  }
  return out;
}

// Cache ownership: a KV-shared layer of type T reads the last non-shared layer of type T;
// kv_slot numbers the cache-owning layers of each group in order (§1.7, §2.9).
void assign_kv_sources(ModelConfig& c) {
  int next_slot[kNumKvGroups] = {0, 0};
  int last_owner[kNumKvGroups] = {-1, -1};
  const int first_shared = c.first_kv_shared_layer();
  for (int i = 0; i < c.num_layers; ++i) {
    LayerSpec& l = c.layers[i];
    int g = int(l.group());
    if (c.is_assistant) {
      l.owns_kv = false;  // bound to the target's caches by bind_assistant_to
      l.kv_source = l.kv_slot = -1;
    } else if (i < first_shared) {
      l.owns_kv = true;
      l.kv_source = i;
      l.kv_slot = next_slot[g]++;
      last_owner[g] = i;
    } else {
      if (last_owner[g] < 0)
        throw Error("config: num_kv_shared_layers = {}: KV-shared layer {} ({}) has no earlier {} layer to read",
                    c.num_kv_shared_layers, i, type_key(l.type), type_key(l.type));
      const LayerSpec& src = c.layers[last_owner[g]];
      if (src.head_dim != l.head_dim || src.num_kv_heads != l.num_kv_heads)
        throw Error("config: KV-shared layer {} (head_dim {}, {} KV heads) cannot read layer {} (head_dim {}, {})", i,
                    l.head_dim, l.num_kv_heads, last_owner[g], src.head_dim, src.num_kv_heads);
      l.owns_kv = false;
      l.kv_source = last_owner[g];
      l.kv_slot = src.kv_slot;
    }
  }
}

// vision_config (§1.2): the class defaults for what a checkpoint omits; the tower kinds differ in
// use_clipped_linears (E2B/E4B) and standardize (26B/31B).
VisionConfig parse_vision_config(const json& vj) {
  if (!vj.is_object()) throw Error("config: vision_config must be an object");
  Fields f{vj, "vision_config"};
  VisionConfig v;
  v.hidden_size = f.opt_int("hidden_size", 768, 1);
  v.intermediate_size = f.opt_int("intermediate_size", 3072, 1);
  v.num_layers = f.opt_int("num_hidden_layers", 16, 1);
  v.num_heads = f.opt_int("num_attention_heads", 12, 1);
  v.head_dim = f.opt_int("head_dim", 64, 4);
  if (f.opt_int("num_key_value_heads", v.num_heads, 1) != v.num_heads)
    throw Error("config: vision_config.num_key_value_heads must equal num_attention_heads (the tower is plain MHA)");
  if (v.head_dim % 4)
    throw Error("config: vision_config.head_dim {} must be a multiple of 4 (2-D RoPE rotates half pairs of each half)",
                v.head_dim);
  v.patch_size = f.opt_int("patch_size", 16, 1);
  v.pooling_kernel_size = f.opt_int("pooling_kernel_size", 3, 1);
  v.position_embedding_size = f.opt_int("position_embedding_size", 10240, 1);
  v.rms_norm_eps = f.opt_float("rms_norm_eps", 1e-6f);
  v.use_clipped_linears = f.opt_bool("use_clipped_linears", false);
  v.standardize = f.opt_bool("standardize", false);
  v.default_output_length = f.opt_int("default_output_length", 280, 1);
  if (const json* rp = f.get("rope_parameters")) {
    if (!rp->is_object()) throw Error("config: vision_config.rope_parameters must be an object");
    v.rope_theta = Fields{*rp, "vision_config.rope_parameters"}.opt_float("rope_theta", 100.f);
  }
  if (!(v.rope_theta > 0)) throw Error("config: vision_config.rope_parameters.rope_theta must be positive");
  if (v.patch_size != 16 || v.pooling_kernel_size != 3)
    throw Error("config: vision_config patch_size {} / pooling_kernel_size {}: only 16 / 3 (every Gemma-4 tower) are "
                "supported",
                v.patch_size, v.pooling_kernel_size);
  return v;
}

}  // namespace

MmOverlay parse_mm_overlay(const std::string& s) {
  if (s == "none") return MmOverlay::None;
  if (s == "sliding-in-window") return MmOverlay::SlidingInWindow;
  if (s == "sliding") return MmOverlay::Sliding;
  if (s == "all") return MmOverlay::All;
  throw Error("--mm-overlay '{}' is not one of none, sliding-in-window, sliding, all", s);
}

ModelConfig ModelConfig::from_json(const json& top) {
  if (!top.is_object()) throw Error("config: expected a JSON object");
  ModelConfig c;
  Fields root{top, ""};
  if (const json* a = root.get("architectures")) {
    if (!a->is_array() || a->empty() || !(*a)[0].is_string())
      throw Error("config: architectures must be a non-empty list of names");
    c.architecture = (*a)[0].get<std::string>();
  } else {
    std::string mt = root.opt_str("model_type", "");
    if (mt == "gemma4") c.architecture = "Gemma4ForConditionalGeneration";
    else if (mt == "gemma4_text") c.architecture = "Gemma4ForCausalLM";
    else if (mt == "gemma4_assistant") c.architecture = "Gemma4AssistantForCausalLM";
    else throw Error("config: no architectures and model_type '{}' is not a Gemma-4 type", mt);
  }
  if (c.architecture == "Gemma4ForConditionalGeneration") {
    c.weight_prefix = "model.language_model.";
  } else if (c.architecture == "Gemma4ForCausalLM") {
    c.weight_prefix = "model.";
  } else if (c.architecture == "Gemma4AssistantForCausalLM") {
    c.weight_prefix = "model.";
    c.is_assistant = true;
  } else {
    throw Error("config: architecture '{}' is not supported (expected Gemma4ForConditionalGeneration, "
                "Gemma4ForCausalLM or Gemma4AssistantForCausalLM)",
                c.architecture);
  }
  const json* tc = root.get("text_config");
  if (!tc && c.architecture != "Gemma4ForCausalLM") throw Error("config: required field text_config is missing");
  if (tc && !tc->is_object()) throw Error("config: text_config must be an object");
  Fields t{tc ? *tc : top, tc ? "text_config" : ""};

  c.vocab_size = t.req_int("vocab_size");
  c.hidden_size = t.req_int("hidden_size");
  c.num_layers = t.req_int("num_hidden_layers");
  c.num_q_heads = t.req_int("num_attention_heads");
  c.num_kv_heads = t.req_int("num_key_value_heads");
  c.head_dim = t.req_int("head_dim", 2);
  c.intermediate_size = t.req_int("intermediate_size");
  c.rms_norm_eps = t.opt_float("rms_norm_eps", 1e-6f);
  c.sliding_window = t.opt_int("sliding_window", 512, 1);
  c.max_position_embeddings = t.opt_int("max_position_embeddings", 131072, 1);
  c.final_logit_softcap = t.opt_float("final_logit_softcapping", 0.f);
  if (c.final_logit_softcap < 0) throw Error("config: {} must be positive", t.name("final_logit_softcapping"));
  c.bidirectional = t.opt_str("use_bidirectional_attention", "");
  if (c.bidirectional == "all")
    throw Error("config: {} = \"all\" (a non-causal model) is not supported", t.name("use_bidirectional_attention"));
  if (!c.bidirectional.empty() && c.bidirectional != "vision")
    throw Error("config: {} must be null, \"vision\" or \"all\"", t.name("use_bidirectional_attention"));
  c.attention_k_eq_v = t.opt_bool("attention_k_eq_v", false);
  c.use_double_wide_mlp = t.opt_bool("use_double_wide_mlp", false);
  c.ple_dim = t.opt_int("hidden_size_per_layer_input", c.is_assistant ? 0 : 256);
  c.ple_vocab_size = c.ple_dim ? t.opt_int("vocab_size_per_layer_input", 262144, 1) : 0;
  c.num_kv_shared_layers = t.opt_int("num_kv_shared_layers", 0);
  c.moe = t.opt_bool("enable_moe_block", false);
  if (c.moe) {
    c.num_experts = t.req_int("num_experts");
    c.top_k_experts = t.req_int("top_k_experts");
    c.moe_intermediate_size = t.req_int("moe_intermediate_size");
    if (c.top_k_experts > c.num_experts)
      throw Error("config: {} = {} exceeds num_experts = {}", t.name("top_k_experts"), c.top_k_experts, c.num_experts);
  }
  if (c.is_assistant) {
    if (c.ple_dim) throw Error("config: {} must be 0 for an assistant", t.name("hidden_size_per_layer_input"));
    if (c.moe) throw Error("config: {} must be false for an assistant", t.name("enable_moe_block"));
    if (c.use_double_wide_mlp) throw Error("config: {} must be false for an assistant", t.name("use_double_wide_mlp"));
    if (c.num_kv_shared_layers == 0) c.num_kv_shared_layers = c.num_layers;
    if (c.num_kv_shared_layers != c.num_layers)
      throw Error("config: {} = {}: every assistant layer reads the target's KV (expected {})",
                  t.name("num_kv_shared_layers"), c.num_kv_shared_layers, c.num_layers);
    c.backbone_hidden_size = root.req_int("backbone_hidden_size");
    c.use_ordered_embeddings = root.opt_bool("use_ordered_embeddings", false);
    c.num_centroids = root.opt_int("num_centroids", 2048, 1);
    c.centroid_top_k = root.opt_int("centroid_intermediate_top_k", 32, 1);
    if (c.use_ordered_embeddings && c.vocab_size % c.num_centroids != 0)
      throw Error("config: vocab_size {} is not a multiple of num_centroids {}", c.vocab_size, c.num_centroids);
  } else if (c.num_kv_shared_layers >= c.num_layers) {
    throw Error("config: {} = {} leaves no layer that computes K/V", t.name("num_kv_shared_layers"),
                c.num_kv_shared_layers);
  }

  // Layer types: explicit, or every sixth layer full; the last layer is always full.
  std::vector<LayerType> types(c.num_layers, LayerType::Sliding);
  if (const json* lt = t.get("layer_types")) {
    if (!lt->is_array() || int(lt->size()) != c.num_layers)
      throw Error("config: {} must list {} layer types", t.name("layer_types"), c.num_layers);
    for (int i = 0; i < c.num_layers; ++i) {
      const json& v = (*lt)[i];
      if (v == "full_attention") types[i] = LayerType::Full;
      else if (v != "sliding_attention")
        throw Error("config: {}[{}] = {} (expected sliding_attention or full_attention)", t.name("layer_types"), i,
                    v.dump());
    }
  } else {
    for (int i = 0; i < c.num_layers; ++i) types[i] = (i + 1) % 6 == 0 ? LayerType::Full : LayerType::Sliding;
  }
  types.back() = LayerType::Full;

  // Full-layer head dim and KV heads: flat fields (older form) or per_layer_config (newer form).
  std::vector<LayerOverride> over(c.num_layers);
  if (const json* pl = t.get("per_layer_config")) {
    over = layer_overrides(*pl, c.num_layers, c.num_q_heads);
  } else {
    int gd = t.opt_int("global_head_dim", 512, 2);
    int gkv = t.opt_int("num_global_key_value_heads", 0, 1);
    for (int i = 0; i < c.num_layers; ++i) {
      if (types[i] != LayerType::Full) continue;
      over[i].head_dim = gd;
      if (c.attention_k_eq_v) over[i].kv_heads = gkv;
    }
  }
  const json* rope = t.get("rope_parameters");
  const int first_shared = c.first_kv_shared_layer();
  c.layers.resize(c.num_layers);
  c.global_head_dim = 0;
  c.num_global_kv_heads = 0;
  for (int i = 0; i < c.num_layers; ++i) {
    LayerSpec& l = c.layers[i];
    l.type = types[i];
    l.head_dim = over[i].head_dim ? over[i].head_dim : c.head_dim;
    l.num_kv_heads = over[i].kv_heads ? over[i].kv_heads : c.num_kv_heads;
    l.k_eq_v = l.type == LayerType::Full && c.attention_k_eq_v;
    bool shared = i >= first_shared;
    l.intermediate = c.intermediate_size * (shared && c.use_double_wide_mlp ? 2 : 1);
    l.sliding_window = l.type == LayerType::Sliding ? c.sliding_window : 0;
    if (l.head_dim % 2) throw Error("config: layer {} has an odd head_dim {}", i, l.head_dim);
    if (c.num_q_heads % l.num_kv_heads)
      throw Error("config: layer {}: num_attention_heads {} is not a multiple of its {} KV heads", i, c.num_q_heads,
                  l.num_kv_heads);
    l.rope = rope_for(rope, l.type, l.head_dim);
    if (l.type == LayerType::Full) {
      if (c.global_head_dim && c.global_head_dim != l.head_dim)
        throw Error("config: full-attention layers disagree on head_dim ({} vs {})", c.global_head_dim, l.head_dim);
      c.global_head_dim = l.head_dim;
      if (l.k_eq_v) c.num_global_kv_heads = l.num_kv_heads;
    } else if (l.head_dim != c.head_dim) {
      throw Error("config: sliding layer {} overrides head_dim to {} (unsupported)", i, l.head_dim);
    }
  }
  c.rope_sliding = rope_for(rope, LayerType::Sliding, c.head_dim);
  c.rope_full = rope_for(rope, LayerType::Full, c.global_head_dim);
  assign_kv_sources(c);

  // Token ids: the top level (multimodal wrapper) wins over text_config.
  auto token = [&](const char* key, int dflt) {
    if (root.get(key)) return root.opt_int(key, dflt);
    return t.opt_int(key, dflt);
  };
  c.pad_token_id = token("pad_token_id", 0);
  c.bos_token_id = token("bos_token_id", 2);
  if (const json* e = root.get("eos_token_id")) c.eos_token_ids = parse_token_id_list(*e, "config: eos_token_id");
  else if (const json* e2 = t.get("eos_token_id"))
    c.eos_token_ids = parse_token_id_list(*e2, "config: " + t.name("eos_token_id"));
  c.image_token_id = root.opt_int("image_token_id", c.image_token_id);
  c.video_token_id = root.opt_int("video_token_id", c.video_token_id);
  c.audio_token_id = root.opt_int("audio_token_id", c.audio_token_id);
  c.boi_token_id = root.opt_int("boi_token_id", c.boi_token_id);
  c.eoi_token_id = root.opt_int("eoi_token_id", c.eoi_token_id);
  if (const json* vj = root.get("vision_config"); vj && c.architecture == "Gemma4ForConditionalGeneration")
    c.vision = parse_vision_config(*vj);
  // transformers 5.17 (the golden fixtures' reference): sliding layers only, AND(window, OR(causal, block)).
  c.mm_overlay = c.bidirectional == "vision" ? MmOverlay::SlidingInWindow : MmOverlay::None;
  return c;
}

ModelConfig ModelConfig::from_file(const std::string& path) {
  json j = read_json_file(path);
  try {
    return from_json(j);
  } catch (const Error& e) {
    throw Error("{}: {}", path, e.what());
  }
}

void ModelConfig::bind_assistant_to(const ModelConfig& target) {
  GS_CHECK(is_assistant, "bind_assistant_to: {} is not an assistant", architecture);
  GS_CHECK(!target.is_assistant, "bind_assistant_to: the target must be a full model, not an assistant");
  GS_CHECK(backbone_hidden_size == target.hidden_size,
           "assistant backbone_hidden_size {} does not match the target's hidden_size {}", backbone_hidden_size,
           target.hidden_size);
  for (int i = 0; i < num_layers; ++i) {
    LayerSpec& l = layers[i];
    int src = -1;
    for (int j = 0; j < target.num_layers; ++j)
      if (target.layers[j].owns_kv && target.layers[j].type == l.type) src = j;
    GS_CHECK(src >= 0, "assistant layer {} ({}) has no {} layer in the target to read", i, type_key(l.type),
             type_key(l.type));
    const LayerSpec& s = target.layers[src];
    GS_CHECK(s.head_dim == l.head_dim && s.num_kv_heads == l.num_kv_heads,
             "assistant layer {} (head_dim {}, {} KV heads) does not match target layer {} (head_dim {}, {} KV heads)",
             i, l.head_dim, l.num_kv_heads, src, s.head_dim, s.num_kv_heads);
    l.kv_source = src;
    l.kv_slot = s.kv_slot;
  }
}

}  // namespace gs
