// The built-in demo tokenizer: deterministic files, Gemma-4 control tokens at fixed ids, a small
// vocabulary where common words are single tokens, and files the Hugging Face library reads the
// same way gemmaserve does.
#include <gtest/gtest.h>

#include "tokenizer/bpe_trainer.h"
#include "tokenizer/demo_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace gs {
namespace {

TEST(BpeTrainer, MergesMostFrequentPairFirstAndBreaksTiesByText) {
  // Pairs: (a,b) x5, (b,c) x3 -> "ab"; then (ab,c) x2 beats (b,c) x1; then (x,y) and (y,z) tie
  // at 1 and (x,y) sorts first.
  const auto r = train_bpe({{"ab", 3}, {"abc", 2}, {"bc", 1}, {"xyz", 1}}, 10, 1);
  ASSERT_GE(r.merges.size(), 4u);
  EXPECT_EQ(r.merges[0], std::make_pair(std::string("a"), std::string("b")));
  EXPECT_EQ(r.merges[1], std::make_pair(std::string("ab"), std::string("c")));
  EXPECT_EQ(r.new_tokens[1], "abc");
  EXPECT_EQ(r.merges[2], std::make_pair(std::string("b"), std::string("c")));
  EXPECT_EQ(r.merges[3], std::make_pair(std::string("x"), std::string("y")));
  // min_count stops at pairs seen fewer times.
  EXPECT_EQ(train_bpe({{"ab", 3}, {"abc", 2}, {"bc", 1}, {"xyz", 1}}, 10, 2).merges.size(), 2u);
}

TEST(DemoTokenizer, SameBytesEveryTime) {
  testing::TempDir a, b;
  const int n1 = write_demo_tokenizer(a.path.string());
  const int n2 = write_demo_tokenizer(b.path.string());
  EXPECT_EQ(n1, n2);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
    const std::string x = testing::read_text(a.file(f)), y = testing::read_text(b.file(f));
    EXPECT_FALSE(x.empty()) << f;
    EXPECT_EQ(x, y) << f;
  }
}

TEST(DemoTokenizer, VocabularyLayout) {
  testing::TempDir dir;
  const int n = write_demo_tokenizer(dir.path.string());
  EXPECT_GE(n, 2000);
  EXPECT_LE(n, 4000);
  const auto tok = Tokenizer::load(dir.path.string());
  EXPECT_EQ(tok->vocab_size(), n);
  EXPECT_EQ(tok->token_id("<pad>"), DemoTokenIds::kPad);
  EXPECT_EQ(tok->token_id("<eos>"), DemoTokenIds::kEos);
  EXPECT_EQ(tok->token_id("<bos>"), DemoTokenIds::kBos);
  EXPECT_EQ(tok->token_id("<unk>"), DemoTokenIds::kUnk);
  EXPECT_EQ(tok->bos_id(), DemoTokenIds::kBos);
  EXPECT_EQ(tok->eos_id(), DemoTokenIds::kEos);
  EXPECT_TRUE(tok->add_bos_default());
  int prev = DemoTokenIds::kUnk;
  for (const char* t : {"<|tool>", "<tool|>", "<|tool_call>", "<tool_call|>", "<|tool_response>", "<tool_response|>",
                        "<|\"|>", "<|think|>", "<|channel>", "<channel|>", "<|turn>", "<turn|>", "<|image>", "<image|>",
                        "<|image|>", "<|audio>", "<audio|>", "<|audio|>", "<|video|>"}) {
    auto id = tok->token_id(t);
    ASSERT_TRUE(id.has_value()) << t;
    EXPECT_EQ(*id, prev + 1) << t;
    EXPECT_TRUE(tok->is_special(*id)) << t;
    prev = *id;
  }
  EXPECT_EQ(tok->token_id("\n"), prev + 1);
  EXPECT_EQ(tok->token_id("<0x00>"), prev + 2);
  EXPECT_EQ(tok->token_id("<0xFF>"), prev + 257);
  // Common words are single tokens.
  for (const char* w : {"Hello", " the", " you", " help", " model"}) {
    EXPECT_EQ(tok->encode(w).size(), 1u) << w;
  }
}

TEST(DemoTokenizer, EncodesAndDecodesLikeHuggingFace) {
  testing::TempDir dir;
  write_demo_tokenizer(dir.path.string());
  const auto tok = Tokenizer::load(dir.path.string());
  std::vector<std::string> strings = testing::corpus();
  strings.push_back("<|turn>user\nHello, how are you?<turn|>\n<|turn>model\n");
  strings.push_back("<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>");
  testing::Reference ref;
  ASSERT_TRUE(testing::hf_reference(dir.file("tokenizer.json"), strings, &ref));
  for (size_t i = 0; i < strings.size(); ++i) {
    EXPECT_EQ(tok->encode(strings[i]), ref.ids[i]) << nlohmann::json(strings[i]).dump();
    EXPECT_EQ(tok->decode(ref.ids[i]), ref.decoded[i]) << nlohmann::json(strings[i]).dump();
  }
}

}  // namespace
}  // namespace gs
