// The Gemma-3 tokenizer.json against the Hugging Face `tokenizers` library, id for id, on a
// corpus of diverse strings; decoding, round trips and streaming decoding on the same corpus.
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace gs {
namespace {

using testing::corpus;
using testing::testdata;

class Gemma3Tokenizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(path())) return;
    tok_ = Tokenizer::load(path());
  }
  static void TearDownTestSuite() { tok_.reset(); }
  // The reference runs once for the suite (node loads the 33 MB file in about a second).
  static const testing::Reference* reference() {
    static testing::Reference ref;
    static bool ok = testing::hf_reference(path(), corpus(), &ref);
    return ok ? &ref : nullptr;
  }
  static std::string path() { return testdata("gemma3/tokenizer.json"); }
  void SetUp() override {
    if (!tok_) GTEST_SKIP() << "missing " << path() << ": run scripts/fetch-test-data.sh";
  }
  static std::shared_ptr<const Tokenizer> tok_;
};
std::shared_ptr<const Tokenizer> Gemma3Tokenizer::tok_;

std::string show(const std::string& s) { return nlohmann::json(s).dump(); }

TEST_F(Gemma3Tokenizer, IdsEqualHuggingFaceOnCorpus) {
  const auto strings = corpus();
  ASSERT_GE(strings.size(), 200u);
  const testing::Reference* ref = reference();
  ASSERT_NE(ref, nullptr);
  ASSERT_EQ(ref->ids.size(), strings.size());
  int mismatches = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    const auto ids = tok_->encode(strings[i]);
    EXPECT_EQ(ids, ref->ids[i]) << "string " << i << ": " << show(strings[i]);
    mismatches += ids != ref->ids[i];
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_F(Gemma3Tokenizer, DecodeEqualsHuggingFaceAndRoundTrips) {
  const auto strings = corpus();
  const testing::Reference* ref = reference();
  ASSERT_NE(ref, nullptr);
  for (size_t i = 0; i < strings.size(); ++i) {
    EXPECT_EQ(tok_->decode(ref->ids[i]), ref->decoded[i]) << "string " << i << ": " << show(strings[i]);
    // "▁" is how Gemma writes a space inside tokens, so it decodes to " ": the one lossy case.
    std::string expected = strings[i];
    for (size_t p; (p = expected.find("\xE2\x96\x81")) != std::string::npos;) expected.replace(p, 3, " ");
    EXPECT_EQ(tok_->decode(tok_->encode(strings[i])), expected) << "string " << i << ": " << show(strings[i]);
  }
}

TEST_F(Gemma3Tokenizer, StreamingPiecesConcatenateToDecodeAndAreValidUtf8) {
  for (const auto& s : corpus()) {
    const auto ids = tok_->encode(s);
    for (bool skip : {false, true}) {
      IncrementalDetokenizer detok(tok_, skip);
      std::string all;
      for (int id : ids) {
        const std::string piece = detok.push(id);
        EXPECT_TRUE(utf8::is_valid(piece)) << show(s);
        all += piece;
      }
      all += detok.flush();
      EXPECT_EQ(all, tok_->decode(ids, skip)) << show(s);
    }
  }
}

TEST_F(Gemma3Tokenizer, BosAndSpecialTokens) {
  EXPECT_TRUE(tok_->add_bos_default());
  EXPECT_EQ(tok_->bos_id(), 2);
  EXPECT_EQ(tok_->eos_id(), *tok_->token_id("<end_of_turn>"));  // tokenizer_config's eos_token
  EXPECT_EQ(tok_->vocab_size(), 262145);  // 262144 model tokens + <image_soft_token>
  const auto with_bos = tok_->encode("Hi", true);
  ASSERT_FALSE(with_bos.empty());
  EXPECT_EQ(with_bos.front(), 2);
  EXPECT_EQ(tok_->encode("Hi", false), std::vector<int>(with_bos.begin() + 1, with_bos.end()));
  const int sot = *tok_->token_id("<start_of_turn>");
  EXPECT_TRUE(tok_->is_special(sot));
  EXPECT_FALSE(tok_->is_special(*tok_->token_id("<unused0>")));
  EXPECT_FALSE(tok_->is_special(*tok_->token_id("Hello")));
  EXPECT_EQ(tok_->token_text(sot), "<start_of_turn>");
  EXPECT_EQ(tok_->decode({sot, *tok_->token_id("Hello")}, true), "Hello");
  EXPECT_EQ(tok_->decode({sot, *tok_->token_id("Hello")}, false), "<start_of_turn>Hello");
}

TEST_F(Gemma3Tokenizer, LongDocumentEncodesLineByLine) {
  // "\n" is an added token, so a document of lines joined by single newlines must encode as its
  // lines do, with the newline id between them (also exercises a ~10 KB input).
  const int newline = *tok_->token_id("\n");
  std::string doc;
  std::vector<int> expected;
  std::vector<std::string> lines;
  for (const auto& s : corpus()) {
    if (!s.empty() && s.find('\n') == std::string::npos) lines.push_back(s);
  }
  for (size_t i = 0; i < 2 * lines.size(); ++i) {
    const std::string& s = lines[(i * 7) % lines.size()];  // a shuffled order, twice over
    if (!doc.empty()) {
      doc += "\n";
      expected.push_back(newline);
    }
    doc += s;
    const auto ids = tok_->encode(s);
    expected.insert(expected.end(), ids.begin(), ids.end());
  }
  ASSERT_GT(doc.size(), 8000u);
  EXPECT_EQ(tok_->encode(doc), expected);
}

}  // namespace
}  // namespace gs
