// Broken or unsupported tokenizer files give a gs::Error that names the file and the problem.
#include <gtest/gtest.h>

#include "core/error.h"
#include "gguf_builder.h"
#include "tokenizer/demo_tokenizer.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer_test_util.h"

namespace gs {
namespace {

using json = nlohmann::json;

// The message of the gs::Error thrown by `f`, or "" (and a test failure) when none is thrown.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a gs::Error: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error was thrown";
  return "";
}

class BadTokenizerJson : public ::testing::Test {
 protected:
  void SetUp() override {
    static const std::string good_text = [] {
      testing::TempDir d;
      write_demo_tokenizer(d.path.string());
      return testing::read_text(d.file("tokenizer.json"));
    }();
    testing::write_text(dir_.file("tokenizer.json"), good_text);
    good_ = json::parse(good_text);
  }
  std::string load_error(const json& j) { return load_error_text(j.dump()); }
  std::string load_error_text(const std::string& text) {
    testing::write_text(dir_.file("bad.json"), text);
    return error_of([&] { Tokenizer::load(dir_.file("bad.json")); });
  }
  testing::TempDir dir_;
  json good_;
};

TEST_F(BadTokenizerJson, TheGoodFileLoads) { EXPECT_NO_THROW(Tokenizer::load(dir_.file("tokenizer.json"))); }

TEST_F(BadTokenizerJson, TruncatedJson) {
  const std::string text = good_.dump();
  for (size_t cut : {size_t{0}, size_t{1}, text.size() / 3, text.size() / 2, text.size() - 1}) {
    const std::string msg = load_error_text(text.substr(0, cut));
    EXPECT_NE(msg.find("bad.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
  }
}

TEST_F(BadTokenizerJson, NotAnObject) {
  EXPECT_NE(load_error(json::array()).find("top level"), std::string::npos);
}

TEST_F(BadTokenizerJson, MissingModelSection) {
  json j = good_;
  j.erase("model");
  const std::string msg = load_error(j);
  EXPECT_NE(msg.find("bad.json: missing the 'model' section"), std::string::npos) << msg;
}

TEST_F(BadTokenizerJson, UnknownModelType) {
  json j = good_;
  j["model"]["type"] = "Unigram";
  const std::string msg = load_error(j);
  EXPECT_NE(msg.find("model type 'Unigram' is not supported"), std::string::npos) << msg;
}

TEST_F(BadTokenizerJson, MissingVocab) {
  json j = good_;
  j["model"].erase("vocab");
  EXPECT_NE(load_error(j).find("missing field 'vocab'"), std::string::npos);
}

TEST_F(BadTokenizerJson, RepeatedSection) {
  const std::string msg = load_error_text(R"({"model": {"vocab": {"a": 0}, "merges": [], "vocab": {"b": 0}}})");
  EXPECT_NE(msg.find("bad.json: model.vocab appears twice"), std::string::npos) << msg;
}

TEST_F(BadTokenizerJson, BadVocabEntries) {
  json j = good_;
  j["model"]["vocab"]["zzz"] = "seven";
  EXPECT_NE(load_error(j).find("model.vocab['zzz'] must be a token id"), std::string::npos);
  j = good_;
  j["model"]["vocab"]["zzz"] = 5;  // id 5 already belongs to another token
  EXPECT_NE(load_error(j).find("vocab id 5 is used by both"), std::string::npos);
  j = good_;
  j["model"]["vocab"]["zzz"] = -4;
  EXPECT_NE(load_error(j).find("vocab['zzz'] = -4"), std::string::npos);
}

TEST_F(BadTokenizerJson, BadMergesEntries) {
  const std::vector<std::pair<json, std::string>> cases = {
      {json::array({"a"}), "model.merges[0] must be"},
      {json::array({"a", "b", "c"}), "model.merges[0] must be"},
      {json(17), "model.merges[0] must be"},
      {json("ab"), "model.merges[0] = 'ab' is not two tokens"},
      {json("a  b"), "is not two tokens"},
      {json::array({"a", "\xE2\x96\x81never-a-token"}), "merges[0]: token '\xE2\x96\x81never-a-token' is not in the vocabulary"},
      {json::array({"<0x00>", "<0x01>"}), "merged token '<0x00><0x01>' is not in the vocabulary"},
  };
  for (const auto& [entry, expected] : cases) {
    json j = good_;
    j["model"]["merges"].insert(j["model"]["merges"].begin(), entry);
    const std::string msg = load_error(j);
    EXPECT_NE(msg.find(expected), std::string::npos) << entry.dump() << " -> " << msg;
  }
}

TEST_F(BadTokenizerJson, UnsupportedPipelineKinds) {
  json j = good_;
  j["normalizer"] = {{"type", "NFKC"}};
  EXPECT_NE(load_error(j).find("normalizer: type 'NFKC' is not supported"), std::string::npos);
  j = good_;
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
  EXPECT_NE(load_error(j).find("pre_tokenizer: type 'ByteLevel' is not supported"), std::string::npos);
  j = good_;
  j["decoder"]["decoders"][1] = {{"type", "WordPiece"}};
  EXPECT_NE(load_error(j).find("decoder.decoders[1]: type 'WordPiece' is not supported"), std::string::npos);
  j = good_;
  j["normalizer"]["pattern"] = {{"Regex", "\\s+"}};
  EXPECT_NE(load_error(j).find("Regex patterns are not supported"), std::string::npos);
  j = good_;
  j["model"]["dropout"] = 0.1;
  EXPECT_NE(load_error(j).find("dropout is not supported"), std::string::npos);
  j = good_;
  j["post_processor"] = {{"type", "RobertaProcessing"}};
  EXPECT_NE(load_error(j).find("post_processor: type 'RobertaProcessing'"), std::string::npos);
}

TEST_F(BadTokenizerJson, PostProcessorBosOutsideVocabulary) {
  json j = good_;
  j["post_processor"]["special_tokens"]["<bos>"]["ids"] = json::array({-7});
  EXPECT_NE(load_error(j).find("special token '<bos>' has id -7"), std::string::npos);
  j["post_processor"]["special_tokens"]["<bos>"]["ids"] = json::array({999999});
  EXPECT_NE(load_error(j).find("outside the vocabulary"), std::string::npos);
}

TEST_F(BadTokenizerJson, BadAddedTokens) {
  json j = good_;
  j["added_tokens"][0].erase("content");
  EXPECT_NE(load_error(j).find("added_tokens[0]: missing field 'content'"), std::string::npos);
  j = good_;
  j["added_tokens"][1]["lstrip"] = "yes";
  EXPECT_NE(load_error(j).find("added_tokens[1]: field 'lstrip' must be true or false"), std::string::npos);
}

TEST_F(BadTokenizerJson, BadConfig) {
  testing::write_text(dir_.file("tokenizer_config.json"), "{\"bos_token\": \"<nope>\"}");
  std::string msg = error_of([&] { Tokenizer::load(dir_.path.string()); });
  EXPECT_NE(msg.find("tokenizer_config.json: bos_token '<nope>' is not a token"), std::string::npos) << msg;
  testing::write_text(dir_.file("tokenizer_config.json"), "{\"add_bos_token\": ");
  msg = error_of([&] { Tokenizer::load(dir_.path.string()); });
  EXPECT_NE(msg.find("tokenizer_config.json: invalid JSON"), std::string::npos) << msg;
  // A number no double holds: nlohmann reports it as out_of_range, not parse_error.
  testing::write_text(dir_.file("tokenizer_config.json"), "{\"model_max_length\": 1e999}");
  msg = error_of([&] { Tokenizer::load(dir_.path.string()); });
  EXPECT_NE(msg.find("tokenizer_config.json: invalid JSON"), std::string::npos) << msg;
}

TEST(BadTokenizerPath, MissingFileOrDirectory) {
  testing::TempDir dir;
  EXPECT_NE(error_of([&] { Tokenizer::load(dir.file("nothing.json")); }).find("no such file"), std::string::npos);
  EXPECT_NE(error_of([&] { Tokenizer::load(dir.path.string()); }).find("has no tokenizer.json"), std::string::npos);
}

TEST(GgufVocab, TinyVocabularyWorks) {
  testing::TempDir dir;
  const auto bytes = testing::tiny_gemma4_vocab().bytes();
  testing::write_text(dir.file("v.gguf"), std::string(bytes.begin(), bytes.end()));
  const auto tok = Tokenizer::load(dir.file("v.gguf"));
  EXPECT_EQ(tok->encode("hi hi"), (std::vector<int>{267, 268}));
  EXPECT_EQ(tok->encode("h\n\n\ni"), (std::vector<int>{262, 266, 265, 263}));  // "\n\n" + "\n"
  EXPECT_EQ(tok->encode("<|turn>x", true), (std::vector<int>{2, 4, 6 + 'x'}));  // x: byte fallback
  EXPECT_TRUE(tok->is_special(4));
  EXPECT_FALSE(tok->is_special(5));
}

TEST(GgufVocab, EveryTruncationIsAClearError) {
  const auto bytes = testing::tiny_gemma4_vocab().bytes();
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    const std::string msg = error_of([&] { parse_gguf_vocab(bytes.data(), cut, "cut.gguf"); });
    EXPECT_EQ(msg.rfind("cut.gguf: ", 0), 0u) << cut << ": " << msg;
    const bool explained = msg.find("truncated") != std::string::npos || msg.find("bad magic") != std::string::npos;
    EXPECT_TRUE(explained) << cut << ": " << msg;
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(GgufVocab, WrongContents) {
  auto g = testing::tiny_gemma4_vocab();
  g.add_string("tokenizer.ggml.pre", "x");
  auto bytes = g.bytes();
  EXPECT_NO_THROW(parse_gguf_vocab(bytes.data(), bytes.size(), "ok.gguf"));

  testing::GgufBuilder llama;
  llama.add_string("tokenizer.ggml.model", "llama");
  bytes = llama.bytes();
  EXPECT_NE(error_of([&] { parse_gguf_vocab(bytes.data(), bytes.size(), "l.gguf"); })
                .find("l.gguf: tokenizer.ggml.model 'llama' is not supported"),
            std::string::npos);

  testing::GgufBuilder empty;
  bytes = empty.bytes();
  EXPECT_NE(error_of([&] { parse_gguf_vocab(bytes.data(), bytes.size(), "e.gguf"); })
                .find("e.gguf: missing GGUF metadata 'tokenizer.ggml.model'"),
            std::string::npos);

  auto dup = testing::tiny_gemma4_vocab();
  dup.add_u32("tokenizer.ggml.bos_token_id", 3);
  bytes = dup.bytes();
  EXPECT_NE(error_of([&] { parse_gguf_vocab(bytes.data(), bytes.size(), "d.gguf"); }).find("appears twice"),
            std::string::npos);

  auto bad_bos = testing::tiny_gemma4_vocab();
  bytes = bad_bos.bytes();
  // Patch the version to 1.
  bytes[4] = 1;
  EXPECT_NE(error_of([&] { parse_gguf_vocab(bytes.data(), bytes.size(), "v.gguf"); }).find("GGUF version 1"),
            std::string::npos);
}

}  // namespace
}  // namespace gs
