#include "model/presets.h"

#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "tokenizer/demo_tokenizer.h"

namespace gs {

using nlohmann::json;

namespace {

// The text_config fields every Gemma-4 preset states, in the older flat form
// (global_head_dim / num_global_key_value_heads), with the released models' RoPE.
struct TextShape {
  int hidden, layers, intermediate, q_heads, kv_heads, global_kv_heads;  // global_kv_heads 0: null
  bool k_eq_v;
  int window, ple_dim, kv_shared;
  bool double_wide;
  int max_positions;
  int vocab = 262144;
  std::vector<std::string> layer_types{};  // empty: every sixth layer full
  bool moe = false;
  float softcap = 30.f;                  // 0: null
  std::string bidirectional{};           // "": null
};

json text_config(const TextShape& s) {
  json t = {
      {"model_type", "gemma4_text"},
      {"vocab_size", s.vocab},
      {"hidden_size", s.hidden},
      {"intermediate_size", s.intermediate},
      {"num_hidden_layers", s.layers},
      {"num_attention_heads", s.q_heads},
      {"num_key_value_heads", s.kv_heads},
      {"num_global_key_value_heads", s.global_kv_heads ? json(s.global_kv_heads) : json(nullptr)},
      {"head_dim", 256},
      {"global_head_dim", 512},
      {"attention_k_eq_v", s.k_eq_v},
      {"hidden_activation", "gelu_pytorch_tanh"},
      {"max_position_embeddings", s.max_positions},
      {"rms_norm_eps", 1e-6},
      {"sliding_window", s.window},
      {"final_logit_softcapping", s.softcap > 0 ? json(s.softcap) : json(nullptr)},
      {"use_bidirectional_attention", s.bidirectional.empty() ? json(nullptr) : json(s.bidirectional)},
      {"hidden_size_per_layer_input", s.ple_dim},
      {"vocab_size_per_layer_input", s.ple_dim ? s.vocab : 0},
      {"num_kv_shared_layers", s.kv_shared},
      {"use_double_wide_mlp", s.double_wide},
      {"enable_moe_block", s.moe},
      {"num_experts", s.moe ? json(128) : json(nullptr)},
      {"top_k_experts", s.moe ? json(8) : json(nullptr)},
      {"moe_intermediate_size", s.moe ? json(704) : json(nullptr)},
      {"tie_word_embeddings", true},
      {"attention_bias", false},
      {"pad_token_id", 0},
      {"bos_token_id", 2},
      {"eos_token_id", 1},
      {"rope_parameters",
       {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
        {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1e6}}}}},
  };
  std::vector<std::string> types = s.layer_types;
  if (types.empty())
    for (int i = 0; i < s.layers; ++i) types.push_back((i + 1) % 6 == 0 ? "full_attention" : "sliding_attention");
  t["layer_types"] = types;
  return t;
}

std::vector<std::string> pattern(int repeats, int sliding) {
  std::vector<std::string> out;
  for (int r = 0; r < repeats; ++r) {
    for (int i = 0; i < sliding; ++i) out.push_back("sliding_attention");
    out.push_back("full_attention");
  }
  return out;
}

// The vision towers (gemma4-architecture.md §1.2, §4.2): E2B/E4B's 16-layer tower with clipped
// linears (hidden 768, head_dim 64) and 26B/31B's 27-layer tower with standardize (hidden 1152,
// head_dim 72). The demo's is a tiny clipped-linear tower of the same structure.
enum class Tower { Small, Large, Demo };

json vision_config(Tower t) {
  const bool large = t == Tower::Large, demo = t == Tower::Demo;
  return {{"model_type", "gemma4_vision"},
          {"hidden_size", demo ? 32 : large ? 1152 : 768},
          {"intermediate_size", demo ? 64 : large ? 4304 : 3072},
          {"num_hidden_layers", demo ? 2 : large ? 27 : 16},
          {"num_attention_heads", demo ? 2 : large ? 16 : 12},
          {"num_key_value_heads", demo ? 2 : large ? 16 : 12},
          {"head_dim", demo ? 16 : large ? 72 : 64},
          {"hidden_activation", "gelu_pytorch_tanh"},
          {"rms_norm_eps", 1e-6},
          {"patch_size", 16},
          {"pooling_kernel_size", 3},
          {"position_embedding_size", 10240},
          {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 100.0}}},
          {"use_clipped_linears", !large},
          {"standardize", large},
          {"default_output_length", 280}};
}

json multimodal_wrapper(json text, const std::vector<int>& eos, json vision = nullptr) {
  return {{"architectures", {"Gemma4ForConditionalGeneration"}},
          {"model_type", "gemma4"},
          {"text_config", std::move(text)},
          {"vision_config", std::move(vision)},
          {"audio_config", nullptr},
          {"eos_token_id", eos},
          {"boi_token_id", 255999},
          {"eoi_token_id", 258882},
          {"image_token_id", 258880},
          {"video_token_id", 258884},
          {"boa_token_id", 256000},
          {"eoa_token_index", 258883},
          {"audio_token_id", 258881},
          {"tie_word_embeddings", true}};
}

// Assistant trunk (§1.6): 4 layers S,S,S,F, every one reading the target's KV; no PLE, no MoE.
json assistant(int backbone, int hidden, int intermediate, int q_heads, int kv_heads, int global_kv, bool k_eq_v,
               int window, bool ordered) {
  TextShape s{hidden, 4, intermediate, q_heads, kv_heads, global_kv, k_eq_v, window, 0, 4, false, 131072};
  s.layer_types = pattern(1, 3);
  s.softcap = 0;
  return {{"architectures", {"Gemma4AssistantForCausalLM"}},
          {"model_type", "gemma4_assistant"},
          {"backbone_hidden_size", backbone},
          {"use_ordered_embeddings", ordered},
          {"num_centroids", 2048},
          {"centroid_intermediate_top_k", 32},
          {"tie_word_embeddings", true},
          {"eos_token_id", {1, 106}},
          {"text_config", text_config(s)}};
}

}  // namespace

const DemoVocab& demo_vocab() {
  static DemoVocab v;
  static std::once_flag once;
  std::call_once(once, [] {
    namespace fs = std::filesystem;
    std::string tmpl = (fs::temp_directory_path() / "gemmaserve-demo-vocab-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw Error("cannot create a scratch directory under {}", fs::temp_directory_path().string());
    struct Cleanup {
      std::string dir;
      ~Cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
      }
    } cleanup{tmpl};
    v.vocab_size = write_demo_tokenizer(tmpl);
    json tok = read_json_file(tmpl + "/tokenizer.json");
    auto id_of = [&](const std::string& content) {
      if (tok.contains("added_tokens") && tok["added_tokens"].is_array())
        for (const json& a : tok["added_tokens"])
          if (a.value("content", "") == content) return a.value("id", -1);
      if (tok.contains("model") && tok["model"].contains("vocab") && tok["model"]["vocab"].contains(content))
        return tok["model"]["vocab"][content].get<int>();
      return -1;
    };
    v.eos_id = id_of("<eos>");
    v.bos_id = id_of("<bos>");
    v.pad_id = id_of("<pad>");
    v.end_of_turn_id = id_of("<turn|>");
    GS_CHECK(v.vocab_size > 0 && v.eos_id >= 0 && v.bos_id >= 0 && v.pad_id >= 0 && v.end_of_turn_id >= 0,
             "the demo tokenizer lacks <eos>, <bos>, <pad> or <turn|> (vocab size {})", v.vocab_size);
  });
  return v;
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = {"demo",          "demo-assistant", "e2b",           "e4b",
                                                 "26b-a4b",       "31b",           "e2b-assistant",
                                                 "e4b-assistant", "26b-a4b-assistant", "31b-assistant"};
  return names;
}

bool is_preset(const std::string& name) {
  for (const auto& n : preset_names())
    if (n == name) return true;
  return false;
}

bool preset_is_real_size(const std::string& name) { return name != "demo" && name != "demo-assistant"; }

std::string preset_target(const std::string& name) {
  const std::string suffix = "-assistant";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return name.substr(0, name.size() - suffix.size());
  return "";
}

json preset_config_json(const std::string& name) {
  const std::vector<int> it_eos = {1, 106};
  if (name == "demo") {
    const DemoVocab& v = demo_vocab();
    TextShape s{128, 6, 256, 2, 1, 0, false, 64, 16, 2, true, 4096};
    s.vocab = v.vocab_size;
    s.layer_types = {"sliding_attention", "sliding_attention", "full_attention",
                     "sliding_attention", "sliding_attention", "full_attention"};
    json t = text_config(s);
    t["pad_token_id"] = v.pad_id;
    t["bos_token_id"] = v.bos_id;
    t["eos_token_id"] = v.eos_id;
    return multimodal_wrapper(t, {v.eos_id, v.end_of_turn_id}, vision_config(Tower::Demo));
  }
  if (name == "e2b") {
    TextShape s{1536, 35, 6144, 8, 1, 0, false, 512, 256, 20, true, 131072};
    s.layer_types = pattern(7, 4);
    return multimodal_wrapper(text_config(s), it_eos, vision_config(Tower::Small));
  }
  if (name == "e4b")
    return multimodal_wrapper(text_config({2560, 42, 10240, 8, 2, 0, false, 512, 256, 18, false, 131072}), it_eos,
                              vision_config(Tower::Small));
  if (name == "26b-a4b") {
    TextShape s{2816, 30, 2112, 16, 8, 2, true, 1024, 0, 0, false, 262144};
    s.moe = true;
    s.bidirectional = "vision";
    return multimodal_wrapper(text_config(s), it_eos, vision_config(Tower::Large));
  }
  if (name == "31b") {
    TextShape s{5376, 60, 21504, 32, 16, 4, true, 1024, 0, 0, false, 262144};
    s.bidirectional = "vision";
    return multimodal_wrapper(text_config(s), it_eos, vision_config(Tower::Large));
  }
  if (name == "demo-assistant") {
    // A drafter for the demo model: four Q-only layers over its KV, the dense head.
    const DemoVocab& v = demo_vocab();
    json a = assistant(128, 64, 128, 2, 1, 0, false, 64, false);
    a["text_config"]["vocab_size"] = v.vocab_size;
    a["text_config"]["max_position_embeddings"] = 4096;
    a["text_config"]["pad_token_id"] = v.pad_id;
    a["text_config"]["bos_token_id"] = v.bos_id;
    a["text_config"]["eos_token_id"] = v.eos_id;
    a["eos_token_id"] = {v.eos_id, v.end_of_turn_id};
    return a;
  }
  if (name == "e2b-assistant") return assistant(1536, 256, 2048, 4, 1, 0, false, 512, true);
  if (name == "e4b-assistant") return assistant(2560, 256, 2048, 4, 2, 0, false, 512, true);
  if (name == "26b-a4b-assistant") return assistant(2816, 1024, 8192, 16, 8, 2, true, 1024, false);
  if (name == "31b-assistant") return assistant(5376, 1024, 8192, 32, 16, 4, true, 1024, false);
  std::string known;
  for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown model preset '{}' (known presets: {})", name, known);
}

json preset_generation_config_json(const std::string& name) {
  json cfg = preset_config_json(name);
  std::vector<int> eos = cfg["eos_token_id"].get<std::vector<int>>();
  if (preset_is_real_size(name) && preset_target(name).empty()) eos.push_back(50);  // <|tool_response>, §7
  return {{"do_sample", true},     {"temperature", 1.0}, {"top_k", 64},
          {"top_p", 0.95},         {"eos_token_id", eos}, {"bos_token_id", cfg.contains("text_config") ? cfg["text_config"].value("bos_token_id", 2) : 2},
          {"pad_token_id", cfg.contains("text_config") ? cfg["text_config"].value("pad_token_id", 0) : 0}};
}

ModelConfig preset_config(const std::string& name) {
  json j = preset_config_json(name);
  try {
    return ModelConfig::from_json(j);
  } catch (const Error& e) {
    throw Error("preset {}: {}", name, e.what());
  }
}

}  // namespace gs
