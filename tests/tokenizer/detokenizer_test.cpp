// IncrementalDetokenizer on random id streams (byte tokens that form valid, split and invalid
// UTF-8 included): every piece is valid UTF-8 and the pieces add up to decode().
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>

#include "tokenizer/demo_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace gs {
namespace {

std::shared_ptr<const Tokenizer> demo() {
  static const std::shared_ptr<const Tokenizer> tok = [] {
    testing::TempDir dir;
    write_demo_tokenizer(dir.path.string());
    return Tokenizer::load(dir.path.string());
  }();
  return tok;
}

int byte_id(const Tokenizer& tok, int b) { return *tok.token_id(fmt::format("<0x{:02X}>", b)); }

std::string stream(const std::shared_ptr<const Tokenizer>& tok, const std::vector<int>& ids, bool skip,
                   std::vector<std::string>* pieces = nullptr) {
  IncrementalDetokenizer detok(tok, skip);
  std::string all;
  for (int id : ids) {
    std::string p = detok.push(id);
    EXPECT_TRUE(utf8::is_valid(p)) << nlohmann::json(p).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    all += p;
    if (pieces) pieces->push_back(p);
  }
  std::string rest = detok.flush();
  EXPECT_TRUE(utf8::is_valid(rest));
  if (pieces) pieces->push_back(rest);
  return all + rest;
}

TEST(IncrementalDetokenizer, HoldsBytesUntilTheCharacterIsComplete) {
  const auto tok = demo();
  // "€" = E2 82 AC as byte tokens, then a normal token.
  const std::vector<int> ids = {byte_id(*tok, 0xE2), byte_id(*tok, 0x82), byte_id(*tok, 0xAC), *tok->token_id("Hello")};
  std::vector<std::string> pieces;
  EXPECT_EQ(stream(tok, ids, true, &pieces), "\xE2\x82\xAC" "Hello");
  EXPECT_EQ(pieces[0], "");
  EXPECT_EQ(pieces[1], "");
  EXPECT_EQ(pieces[2], "");
  EXPECT_EQ(pieces[3], "\xE2\x82\xAC" "Hello");
}

TEST(IncrementalDetokenizer, InvalidBytesBecomeReplacementCharacters) {
  const auto tok = demo();
  const std::vector<int> ids = {*tok->token_id("Hello"), byte_id(*tok, 0xE2), byte_id(*tok, 0x41)};
  EXPECT_EQ(stream(tok, ids, true), "Hello\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(tok->decode(ids), "Hello\xEF\xBF\xBD\xEF\xBF\xBD");
  // An incomplete character at the very end comes out of flush() as U+FFFD.
  EXPECT_EQ(stream(tok, {byte_id(*tok, 0xF0), byte_id(*tok, 0x9F)}, true), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(IncrementalDetokenizer, SkipsSpecialTokensWhenAsked) {
  const auto tok = demo();
  const std::vector<int> ids = tok->encode("<|turn>model\nHi there<turn|>");
  EXPECT_EQ(stream(tok, ids, true), "model\nHi there");
  EXPECT_EQ(stream(tok, ids, false), "<|turn>model\nHi there<turn|>");
}

TEST(IncrementalDetokenizer, RandomStreamsAddUpToDecode) {
  const auto tok = demo();
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const int first_byte = byte_id(*tok, 0);
  for (int round = 0; round < 300; ++round) {
    std::vector<int> ids;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      // Mostly byte tokens (to build valid and broken characters), the rest anything.
      if (rng() % 3 != 0) {
        static const int kBytes[] = {0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, 0xC3, 0xA9, 0x41, 0xFF, 0x80};
        ids.push_back(first_byte + kBytes[rng() % 12]);
      } else {
        ids.push_back(static_cast<int>(rng() % static_cast<uint32_t>(tok->vocab_size())));
      }
    }
    for (bool skip : {false, true}) EXPECT_EQ(stream(tok, ids, skip), tok->decode(ids, skip));
  }
}

TEST(IncrementalDetokenizer, FlushResetsForTheNextSequence) {
  const auto tok = demo();
  IncrementalDetokenizer detok(tok, true);
  std::string a = detok.push(*tok->token_id("Hello"));
  a += detok.flush();
  std::string b = detok.push(tok->encode(" the").at(0));
  b += detok.flush();
  EXPECT_EQ(a, "Hello");
  EXPECT_EQ(b, " the");
}

}  // namespace
}  // namespace gs
