#include "tokenizer/demo_tokenizer.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/demo_corpus.h"
#include "tokenizer/normalizer.h"

namespace gs {

namespace {

using ojson = nlohmann::ordered_json;
const std::string kSpace = "\xE2\x96\x81";  // U+2581
constexpr size_t kTargetVocab = 2048;

// Gemma-4's control tokens, in Gemma-4's id order.
const char* const kControlTokens[] = {
    "<|tool>", "<tool|>", "<|tool_call>", "<tool_call|>", "<|tool_response>", "<tool_response|>", "<|\"|>",
    "<|think|>", "<|channel>", "<channel|>", "<|turn>", "<turn|>", "<|image>", "<image|>", "<|image|>",
    "<|audio>", "<audio|>", "<|audio|>", "<|video|>",
};

// Words of the training text in vocabulary form ("▁" before each word that followed a space).
std::vector<std::pair<std::string, size_t>> training_words() {
  std::map<std::string, size_t> counts;
  const std::string text = replace_all(kDemoTokenizerCorpus, " ", kSpace);
  std::string word;
  auto flush = [&] {
    if (!word.empty()) ++counts[word];
    word.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      flush();
      continue;
    }
    if (text.compare(i, kSpace.size(), kSpace) == 0) {
      flush();
      word = kSpace;
      i += kSpace.size() - 1;
      continue;
    }
    word += text[i];
  }
  flush();
  return {counts.begin(), counts.end()};
}

ojson added_token(int id, const std::string& content) {
  return ojson{{"id", id},       {"content", content}, {"single_word", false}, {"lstrip", false},
               {"rstrip", false}, {"normalized", false}, {"special", true}};
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  GS_CHECK(f.good(), "{}: cannot open for writing", path.string());
  f << text;
  f.close();
  GS_CHECK(f.good(), "{}: write failed", path.string());
}

}  // namespace

int write_demo_tokenizer(const std::string& dir) {
  std::vector<std::string> vocab = {"<pad>", "<eos>", "<bos>", "<unk>"};
  for (const char* t : kControlTokens) vocab.emplace_back(t);
  const size_t n_special = vocab.size();
  vocab.emplace_back("\n");
  for (int b = 0; b < 256; ++b) vocab.push_back(fmt::format("<0x{:02X}>", b));
  vocab.push_back(kSpace);
  for (char c = '!'; c <= '~'; ++c) vocab.emplace_back(1, c);

  std::set<std::string> known(vocab.begin(), vocab.end());
  const BpeTrainingResult trained = train_bpe(training_words(), kTargetVocab, 1);
  ojson merges = ojson::array();
  for (size_t i = 0; i < trained.merges.size() && vocab.size() < kTargetVocab; ++i) {
    const auto& [left, right] = trained.merges[i];
    // Only merges over known symbols (the text's rare characters fall back to bytes instead).
    if (!known.count(left) || !known.count(right)) continue;
    if (known.insert(trained.new_tokens[i]).second) vocab.push_back(trained.new_tokens[i]);
    merges.push_back(ojson::array({left, right}));
  }

  ojson vocab_json = ojson::object();
  for (size_t i = 0; i < vocab.size(); ++i) vocab_json[vocab[i]] = i;
  ojson added = ojson::array();
  for (size_t i = 0; i < n_special; ++i) added.push_back(added_token(static_cast<int>(i), vocab[i]));

  const ojson tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}}},
      {"pre_tokenizer",
       {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", ojson::array({{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"pair", ojson::array({{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}},
                               {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                               {{"SpecialToken", {{"id", "<bos>"}, {"type_id", 1}}}},
                               {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}})},
        {"special_tokens",
         {{"<bos>", {{"id", "<bos>"}, {"ids", ojson::array({DemoTokenIds::kBos})}, {"tokens", ojson::array({"<bos>"})}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders", ojson::array({{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                                   {{"type", "ByteFallback"}},
                                   {{"type", "Fuse"}}})}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", "<unk>"},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", true},
        {"byte_fallback", true},
        {"ignore_merges", false},
        {"vocab", vocab_json},
        {"merges", merges}}},
  };
  const ojson config = {
      {"add_bos_token", true}, {"add_eos_token", false}, {"bos_token", "<bos>"}, {"eos_token", "<eos>"},
      {"pad_token", "<pad>"},  {"unk_token", "<unk>"},   {"model_max_length", 32768},
      {"tokenizer_class", "GemmaTokenizer"}, {"padding_side", "left"},
  };
  const std::filesystem::path d(dir);
  write_file(d / "tokenizer.json", tokenizer.dump(1) + "\n");
  write_file(d / "tokenizer_config.json", config.dump(2) + "\n");
  return static_cast<int>(vocab.size());
}

}  // namespace gs
