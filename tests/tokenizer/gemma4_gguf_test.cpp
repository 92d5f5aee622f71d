// The Gemma-4 vocabulary from GGUF metadata against the reference ids shipped with it
// (llama.cpp's test-tokenizer-0 files: .inp holds strings separated by marker lines, .out one
// line of space-separated ids per string).
#include <gtest/gtest.h>

#include <sstream>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace gs {
namespace {

using testing::testdata;

std::vector<std::string> split_inp(const std::string& text) {
  const std::string marker = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(marker, pos);
    if (hit == std::string::npos) break;
    out.push_back(text.substr(pos, hit - pos));
    pos = hit + marker.size();
  }
  out.push_back(text.substr(pos));  // the last string has no marker after it
  return out;
}

std::vector<std::vector<int>> parse_out(const std::string& text) {
  std::vector<std::vector<int>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ids(line);
    std::vector<int> row;
    for (int id; ids >> id;) row.push_back(id);
    out.push_back(std::move(row));
  }
  return out;
}

class Gemma4Gguf : public ::testing::Test {
 protected:
  static std::string path() { return testdata("gemma4/ggml-vocab-gemma-4.gguf"); }
  void SetUp() override {
    if (!std::filesystem::exists(path())) GTEST_SKIP() << "missing " << path() << ": run scripts/fetch-test-data.sh";
    static std::shared_ptr<const Tokenizer> tok = Tokenizer::load(path());
    tok_ = tok;
  }
  std::shared_ptr<const Tokenizer> tok_;
};

TEST_F(Gemma4Gguf, EveryTestStringGivesTheReferenceIds) {
  const auto strings = split_inp(testing::read_text(path() + ".inp"));
  const auto expected = parse_out(testing::read_text(path() + ".out"));
  ASSERT_GT(strings.size(), 20u);
  ASSERT_EQ(strings.size(), expected.size());
  for (size_t i = 0; i < strings.size(); ++i) {
    EXPECT_EQ(tok_->encode(strings[i]), expected[i]) << "string " << i << ": " << nlohmann::json(strings[i]).dump();
  }
}

TEST_F(Gemma4Gguf, VocabularyAndControlTokens) {
  EXPECT_EQ(tok_->vocab_size(), 262144);
  EXPECT_EQ(tok_->bos_id(), 2);
  EXPECT_EQ(tok_->eos_id(), 1);
  EXPECT_TRUE(tok_->add_bos_default());
  for (const char* t : {"<|turn>", "<turn|>", "<|tool>", "<|think|>", "<|image|>"}) {
    auto id = tok_->token_id(t);
    ASSERT_TRUE(id.has_value()) << t;
    EXPECT_TRUE(tok_->is_special(*id)) << t;
    EXPECT_EQ(tok_->encode(std::string("a") + t + "b")[1], *id) << t;
  }
  // User-defined tokens are matched in text but are not special: they survive skip_special.
  const int channel = *tok_->token_id("<|channel>");
  EXPECT_FALSE(tok_->is_special(channel));
  EXPECT_EQ(tok_->decode({channel}, true), "<|channel>");
  EXPECT_EQ(tok_->encode("x", true).front(), 2);
}

TEST_F(Gemma4Gguf, NewlineRunsAreSingleTokens) {
  for (int n = 1; n <= 31; ++n) {
    const std::string run(static_cast<size_t>(n), '\n');
    EXPECT_EQ(tok_->encode(run), std::vector<int>{*tok_->token_id(run)}) << n;
    EXPECT_EQ(tok_->encode("a" + run + "b").size(), 3u) << n;
  }
}

TEST_F(Gemma4Gguf, RoundTripAndStreamingOnTheTestStrings) {
  for (const auto& s : split_inp(testing::read_text(path() + ".inp"))) {
    const auto ids = tok_->encode(s);
    EXPECT_EQ(tok_->decode(ids), s);
    IncrementalDetokenizer detok(tok_, false);
    std::string all;
    for (int id : ids) {
      const std::string piece = detok.push(id);
      EXPECT_TRUE(utf8::is_valid(piece));
      all += piece;
    }
    EXPECT_EQ(all + detok.flush(), s);
  }
}

}  // namespace
}  // namespace gs
