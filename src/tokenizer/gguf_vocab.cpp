#include "tokenizer/gguf_vocab.h"

#include "core/error.h"
#include "core/mapped_file.h"
#include "tokenizer/gguf_metadata.h"

namespace gs {

namespace {
// llama.cpp's token types (tokenizer.ggml.token_type).
enum TokenType : int64_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
const std::string kSpace = "\xE2\x96\x81";  // U+2581, what spaces become before BPE
}  // namespace

TokenizerParts parse_gguf_vocab(const uint8_t* data, size_t size, const std::string& source) {
  const GgufMetadata meta(data, size, source);
  const std::string model = meta.get_string("tokenizer.ggml.model");
  GS_CHECK(model == "gemma4", "{}: tokenizer.ggml.model '{}' is not supported (gemmaserve reads 'gemma4' vocabularies)",
           source, model);
  std::vector<std::string> tokens = meta.get_string_array("tokenizer.ggml.tokens");
  GS_CHECK(!tokens.empty() && tokens.size() < (1u << 24), "{}: tokenizer.ggml.tokens has {} entries", source,
           tokens.size());
  std::vector<int64_t> types(tokens.size(), kNormal);
  if (meta.has("tokenizer.ggml.token_type")) {
    types = meta.get_int_array("tokenizer.ggml.token_type");
    GS_CHECK(types.size() == tokens.size(), "{}: tokenizer.ggml.token_type has {} entries for {} tokens", source,
             types.size(), tokens.size());
  }
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  auto token_id = [&](const char* key) -> int {
    if (!meta.has(key)) return -1;
    const int64_t id = meta.get_int(key);
    GS_CHECK(id >= 0 && id < n_tokens, "{}: {} = {} is outside the vocabulary", source, key, id);
    return static_cast<int>(id);
  };

  TokenizerParts p;
  p.source = source;
  // Control tokens are special; user-defined ones are added tokens that show up in decoded text.
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (types[i] != kControl && types[i] != kUserDefined) continue;
    GS_CHECK(!tokens[i].empty(), "{}: token {} is empty", source, i);
    AddedToken t;
    t.content = tokens[i];
    t.id = static_cast<int>(i);
    t.special = types[i] == kControl;
    p.added_tokens.push_back(std::move(t));
  }
  BpeModel::Options opt;
  const int unk = token_id("tokenizer.ggml.unknown_token_id");
  if (unk >= 0) opt.unk_token = tokens[static_cast<size_t>(unk)];
  opt.fuse_unk = true;
  opt.byte_fallback = true;
  // Like Gemma's tokenizer.json: merges always run. (No token mixes newlines with other text, so
  // splitting newline runs off first changes nothing, and merging any run of up to 31 newlines
  // ends in the single token for it.)
  opt.ignore_merges = false;
  p.model = std::make_unique<BpeModel>(std::move(tokens), opt, source);

  const std::vector<std::string> merges = meta.get_string_array("tokenizer.ggml.merges");
  p.model->reserve_merges(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& s = merges[i];
    const size_t sp = s.find(' ');
    GS_CHECK(sp != std::string::npos && sp > 0 && sp + 1 < s.size() && s.find(' ', sp + 1) == std::string::npos,
             "{}: tokenizer.ggml.merges[{}] = '{}' is not two tokens separated by one space", source, i, s);
    p.model->add_merge(std::string_view(s).substr(0, sp), std::string_view(s).substr(sp + 1), i);
  }

  std::vector<Normalizer::Step> norm;
  if (meta.has("tokenizer.ggml.add_space_prefix") && meta.get_bool("tokenizer.ggml.add_space_prefix")) {
    norm.push_back({Normalizer::Step::Kind::kPrepend, "", " "});
  }
  norm.push_back({Normalizer::Step::Kind::kReplace, " ", kSpace});
  p.normalizer = Normalizer(std::move(norm));
  PreTokenizer::Split newlines;
  newlines.pattern_kind = PreTokenizer::Split::Pattern::kNewlineRuns;
  newlines.behavior = PreTokenizer::Behavior::kIsolated;
  p.pre_tokenizer = PreTokenizer({newlines});
  using D = TokenDecoder::Step::Kind;
  p.decoder = TokenDecoder({{D::kReplace, kSpace, " "}, {D::kByteFallback, "", ""}, {D::kFuse, "", ""}});

  p.bos_id = token_id("tokenizer.ggml.bos_token_id");
  p.eos_id = token_id("tokenizer.ggml.eos_token_id");
  p.add_bos = meta.has("tokenizer.ggml.add_bos_token") ? meta.get_bool("tokenizer.ggml.add_bos_token") : p.bos_id >= 0;
  GS_CHECK(!p.add_bos || p.bos_id >= 0, "{}: add_bos_token is set but tokenizer.ggml.bos_token_id is missing", source);
  return p;
}

std::shared_ptr<const Tokenizer> load_gguf_tokenizer(const std::string& path) {
  const MappedFile file(path);
  return std::make_shared<BpeTokenizer>(parse_gguf_vocab(file.data(), file.size(), path));
}

}  // namespace gs
