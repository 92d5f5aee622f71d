// Small handmade tokenizer.json files that switch on each option gemmaserve implements (added
// token flags, Split behaviors, normalizers, decoders, unknown-token handling), each compared id
// for id and string for string with the Hugging Face library on random text.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>

#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace gs {
namespace {

using json = nlohmann::ordered_json;
const std::string kSpace = "\xE2\x96\x81";

json added(int id, const std::string& content, bool special, bool lstrip = false, bool rstrip = false,
           bool single_word = false, bool normalized = false) {
  return json{{"id", id},         {"content", content},         {"single_word", single_word},
              {"lstrip", lstrip}, {"rstrip", rstrip}, {"normalized", normalized}, {"special", special}};
}

// A byte-fallback BPE over a small alphabet; merges build a few words ("▁the", "hello", "ab").
json base_tokenizer() {
  std::vector<std::string> vocab = {"<pad>", "<eos>", "<bos>", "<unk>", "<sp>", "[M]", "<x>"};
  for (int b = 0; b < 256; ++b) vocab.push_back(fmt::format("<0x{:02X}>", b));
  for (const char* c : {"a", "b", "c", "d", "e", "h", "l", "o", "t", "x", " ", "\n", kSpace.c_str(), ".", "é", "日"}) {
    vocab.emplace_back(c);
  }
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"a", "b"}, {kSpace, "t"}, {"h", "e"}, {"l", "l"}, {kSpace + "t", "he"}, {"he", "ll"}, {"hell", "o"},
      {"ab", "c"}, {kSpace, kSpace}, {"b", "c"}, {"a", "bc"}, {"\n", "\n"}, {"d", "."}, {kSpace, "a"}};
  json m = json::array();
  for (const auto& [l, r] : merges) {
    m.push_back(json::array({l, r}));
    if (std::find(vocab.begin(), vocab.end(), l + r) == vocab.end()) vocab.push_back(l + r);
  }
  json v = json::object();
  for (size_t i = 0; i < vocab.size(); ++i) v[vocab[i]] = i;
  return json{
      {"version", "1.0"},
      {"added_tokens", json::array({added(0, "<pad>", true), added(1, "<eos>", true), added(2, "<bos>", true),
                                    added(3, "<unk>", true), added(5, "[M]", false)})},
      {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}}},
      {"pre_tokenizer",
       {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}}},
      {"post_processor", nullptr},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                                  {{"type", "ByteFallback"}},
                                  {{"type", "Fuse"}}})}}},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", "<unk>"}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", true}, {"byte_fallback", true}, {"ignore_merges", false},
        {"vocab", v}, {"merges", m}}},
  };
}

std::vector<std::string> random_texts(uint32_t seed) {
  const std::vector<std::string> pieces = {"a", "b", "c", "d", ".", "e", "h", "l", "o", "t", "x", " ", "  ", "\n", "\t",
                                           "é", "日", "😀", "ü", "the", "hello", "abc", "<sp>", "<x>", "[M]", "<eos>",
                                           "<bos>", kSpace, "Z", "\xC2\xA0", "d."};
  std::mt19937 rng(seed);
  std::vector<std::string> out = {"", " ", "<sp>", " <sp> ", "a<sp>b", "x<x>x", " <x> ", "hello the abc", "\n\n\n"};
  for (int i = 0; i < 150; ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k) s += pieces[rng() % pieces.size()];
    out.push_back(s);
  }
  return out;
}

void expect_same_as_reference(const json& tokenizer_json, uint32_t seed) {
  testing::TempDir dir;
  const std::string path = dir.file("tokenizer.json");
  testing::write_text(path, tokenizer_json.dump());
  const auto tok = Tokenizer::load(path);
  const auto strings = random_texts(seed);
  testing::Reference ref;
  ASSERT_TRUE(testing::hf_reference(path, strings, &ref));
  for (size_t i = 0; i < strings.size(); ++i) {
    EXPECT_EQ(tok->encode(strings[i]), ref.ids[i]) << nlohmann::json(strings[i]).dump();
    EXPECT_EQ(tok->decode(ref.ids[i]), ref.decoded[i]) << nlohmann::json(strings[i]).dump();
  }
}

class Variants : public ::testing::Test {
 protected:
  // Fresh random text each run; the seed is printed so a failure can be replayed.
  uint32_t seed() {
    const uint32_t s = std::random_device{}();
    RecordProperty("seed", std::to_string(s));
    std::cout << "seed " << s << "\n";
    return s;
  }
};

TEST_F(Variants, Base) { expect_same_as_reference(base_tokenizer(), seed()); }

TEST_F(Variants, AddedTokenStripAndSingleWord) {
  json t = base_tokenizer();
  t["added_tokens"].push_back(added(4, "<sp>", true, /*lstrip=*/true, /*rstrip=*/true));
  t["added_tokens"].push_back(added(6, "<x>", false, false, false, /*single_word=*/true));
  expect_same_as_reference(t, seed());
}

TEST_F(Variants, NormalizedAddedToken) {
  json t = base_tokenizer();
  t["added_tokens"].push_back(added(6, "<x>", false, false, false, false, /*normalized=*/true));
  expect_same_as_reference(t, seed());
}

TEST_F(Variants, SplitBehaviors) {
  for (const char* behavior : {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"}) {
    for (bool invert : {false, true}) {
      SCOPED_TRACE(std::string(behavior) + (invert ? " inverted" : ""));
      json t = base_tokenizer();
      const json split = {{"type", "Split"}, {"pattern", {{"String", kSpace}}}, {"behavior", behavior}, {"invert", invert}};
      t["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", json::array({split})}};
      expect_same_as_reference(t, seed());
    }
  }
}

TEST_F(Variants, PrependNormalizerAndStripDecoder) {
  json t = base_tokenizer();
  t["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", kSpace}},
                                                  {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}}})}};
  t["decoder"]["decoders"].push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  expect_same_as_reference(t, seed());
}

TEST_F(Variants, NoNormalizerNoPreTokenizerNoDecoder) {
  json t = base_tokenizer();
  t["normalizer"] = nullptr;
  t["pre_tokenizer"] = nullptr;
  t["decoder"] = nullptr;
  expect_same_as_reference(t, seed());
}

TEST_F(Variants, UnknownTokensWithoutByteFallback) {
  for (bool fuse : {false, true}) {
    json t = base_tokenizer();
    t["model"]["byte_fallback"] = false;
    t["model"]["fuse_unk"] = fuse;
    expect_same_as_reference(t, seed());
  }
}

TEST_F(Variants, IgnoreMergesAndStringMerges) {
  json t = base_tokenizer();
  t["model"]["ignore_merges"] = true;
  json merges = json::array();
  for (const auto& m : t["model"]["merges"]) merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
  t["model"]["merges"] = merges;
  expect_same_as_reference(t, seed());
}

}  // namespace
}  // namespace gs
