#include "tokenizer/tokenizer_json.h"

#include <nlohmann/json.hpp>

#include <filesystem>

#include "core/error.h"
#include "core/read_file.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/tokenizer_json_reader.h"

namespace gs {

namespace {

constexpr long long kMaxTokenId = (1 << 24) - 1;
// Ids may have holes, but not many: a few stray huge ids must not allocate gigabytes.
constexpr long long kMaxIdHoles = 1 << 16;

nlohmann::json parse_json(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for "1e999"
    throw Error("{}: invalid JSON (truncated or corrupt?): {}", source, e.what());
  }
}

std::unique_ptr<BpeModel> parse_model(const TokenizerJsonDoc& doc, const std::string& source) {
  const std::string where = source + ": model";
  const nlohmann::json& root = doc.root;
  GS_CHECK(root.contains("model"), "{}: missing the 'model' section", source);
  const auto& m = json_object(root, "model", source);
  const std::string type = m.contains("type") ? json_string(m, "type", where) : "BPE";
  GS_CHECK(type == "BPE", "{}: model type '{}' is not supported (gemmaserve supports BPE)", where, type);
  GS_CHECK(!m.contains("dropout") || m["dropout"].is_null() || (m["dropout"].is_number() && m["dropout"].get<double>() == 0.0),
           "{}: BPE dropout is not supported", where);
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    GS_CHECK(!m.contains(k) || m[k].is_null() || (m[k].is_string() && m[k].get<std::string>().empty()),
             "{}: '{}' is not supported", where, k);
  }
  GS_CHECK(doc.has_vocab, "{}: missing field 'vocab' (an object of token -> id)", where);

  long long max_id = -1;
  for (const auto& [tok, id] : doc.vocab) {
    GS_CHECK(id >= 0 && id <= kMaxTokenId, "{}: vocab['{}'] = {} is not a token id between 0 and {}", where, tok, id,
             kMaxTokenId);
    GS_CHECK(!tok.empty(), "{}: vocab has an empty token", where);
    max_id = std::max(max_id, id);
  }
  GS_CHECK(max_id < static_cast<long long>(doc.vocab.size()) + kMaxIdHoles,
           "{}: vocab ids go up to {} for only {} tokens (too sparse)", where, max_id, doc.vocab.size());
  std::vector<std::string> id_to_token(static_cast<size_t>(max_id + 1));
  for (const auto& [tok, id] : doc.vocab) {
    auto& slot = id_to_token[static_cast<size_t>(id)];
    GS_CHECK(slot.empty(), "{}: vocab id {} is used by both '{}' and '{}'", where, id, slot, tok);
    slot = tok;
  }

  BpeModel::Options opt;
  if (m.contains("unk_token") && !m["unk_token"].is_null()) opt.unk_token = json_string(m, "unk_token", where);
  opt.fuse_unk = json_bool(m, "fuse_unk", false, where);
  opt.byte_fallback = json_bool(m, "byte_fallback", false, where);
  opt.ignore_merges = json_bool(m, "ignore_merges", false, where);
  auto model = std::make_unique<BpeModel>(std::move(id_to_token), opt, source);
  model->reserve_merges(doc.merges.size());
  for (size_t i = 0; i < doc.merges.size(); ++i) model->add_merge(doc.merges[i].first, doc.merges[i].second, i);
  return model;
}

std::vector<AddedToken> parse_added_tokens(const nlohmann::json& root, const std::string& source) {
  std::vector<AddedToken> out;
  if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return out;
  const auto& list = json_array(root, "added_tokens", source);
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = fmt::format("{}: added_tokens[{}]", source, i);
    const auto& a = list[i];
    AddedToken t;
    t.content = json_string(a, "content", where);
    GS_CHECK(!t.content.empty(), "{}: empty content", where);
    const long long id = json_int(a, "id", where);
    GS_CHECK(id >= 0 && id <= kMaxTokenId, "{}: id {} out of range", where, id);
    t.id = static_cast<int>(id);
    t.special = json_bool(a, "special", false, where);
    t.lstrip = json_bool(a, "lstrip", false, where);
    t.rstrip = json_bool(a, "rstrip", false, where);
    t.single_word = json_bool(a, "single_word", false, where);
    t.normalized = json_bool(a, "normalized", !t.special, where);
    out.push_back(std::move(t));
  }
  return out;
}

// The BOS id that the post-processor puts before a single sequence, or -1.
int post_processor_bos(const nlohmann::json& root, const std::string& source) {
  if (!root.contains("post_processor") || root["post_processor"].is_null()) return -1;
  const std::string where = source + ": post_processor";
  const auto& pp = root["post_processor"];
  const std::string type = json_string(pp, "type", where);
  GS_CHECK(type == "TemplateProcessing", "{}: type '{}' is not supported (gemmaserve supports TemplateProcessing)",
           where, type);
  const auto& single = json_array(pp, "single", where);
  if (single.empty() || !single[0].is_object() || !single[0].contains("SpecialToken")) return -1;
  const std::string name = json_string(single[0]["SpecialToken"], "id", where + ".single[0].SpecialToken");
  const auto& specials = json_object(pp, "special_tokens", where);
  GS_CHECK(specials.contains(name), "{}: special_tokens has no entry '{}'", where, name);
  const auto& ids = json_array(specials[name], "ids", where + ".special_tokens." + name);
  GS_CHECK(ids.size() == 1 && ids[0].is_number_integer(), "{}: special token '{}' must have exactly one id", where, name);
  const long long id = ids[0].get<long long>();
  GS_CHECK(id >= 0 && id <= kMaxTokenId, "{}: special token '{}' has id {}, not a token id", where, name, id);
  return static_cast<int>(id);
}

// tokenizer_config.json names tokens either as strings or as {"content": ...} objects.
std::optional<std::string> config_token(const nlohmann::json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return std::nullopt;
}


}  // namespace

TokenizerParts parse_tokenizer_json(std::string_view json, const std::string& source, std::string_view config,
                                    const std::string& config_source) {
  const TokenizerJsonDoc doc = read_tokenizer_json(json, source);
  const nlohmann::json& root = doc.root;
  GS_CHECK(root.is_object(), "{}: expected a JSON object at the top level", source);
  TokenizerParts p;
  p.source = source;
  p.model = parse_model(doc, source);
  p.added_tokens = parse_added_tokens(root, source);
  p.normalizer = Normalizer::from_json(root.value("normalizer", nlohmann::json()), source);
  p.pre_tokenizer = PreTokenizer::from_json(root.value("pre_tokenizer", nlohmann::json()), source);
  p.decoder = TokenDecoder::from_json(root.value("decoder", nlohmann::json()), source);
  const int pp_bos = post_processor_bos(root, source);

  auto lookup = [&](const std::string& tok) -> int {
    for (const auto& t : p.added_tokens)
      if (t.content == tok) return t.id;
    auto id = p.model->token_to_id(tok);
    return id ? *id : -1;
  };
  p.bos_id = pp_bos >= 0 ? pp_bos : lookup("<bos>");
  p.eos_id = lookup("<eos>");
  p.add_bos = pp_bos >= 0;
  if (!config.empty()) {
    const std::string& cfg_source = config_source;
    const nlohmann::json cfg = parse_json(config, cfg_source);
    GS_CHECK(cfg.is_object(), "{}: expected a JSON object", cfg_source);
    if (auto bos = config_token(cfg, "bos_token")) {
      const int id = lookup(*bos);
      GS_CHECK(id >= 0, "{}: bos_token '{}' is not a token", cfg_source, *bos);
      p.bos_id = id;
    }
    if (auto eos = config_token(cfg, "eos_token")) {
      const int id = lookup(*eos);
      GS_CHECK(id >= 0, "{}: eos_token '{}' is not a token", cfg_source, *eos);
      p.eos_id = id;
    }
    p.add_bos = json_bool(cfg, "add_bos_token", p.add_bos, cfg_source);
  }
  GS_CHECK(!p.add_bos || p.bos_id >= 0, "{}: BOS is to be added but no BOS token is defined", source);
  return p;
}

std::shared_ptr<const Tokenizer> load_tokenizer_json(const std::string& path) {
  const std::string json = read_file(path);
  std::string config;
  const auto cfg_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  if (std::filesystem::exists(cfg_path)) config = read_file(cfg_path.string());
  return std::make_shared<BpeTokenizer>(parse_tokenizer_json(json, path, config, cfg_path.string()));
}

}  // namespace gs
