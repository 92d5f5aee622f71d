// Reasoning split, tool calls, special tokens and stop strings over token streams.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>

#include "api/choice_decoder.h"
#include "api/fake_tokenizer.h"

namespace gs::api {
namespace {

using gs::testing::FakeTokenizer;

struct Decoded {
  std::string reasoning, content;
  std::vector<ParsedToolCall> calls;
  bool stopped = false;
  std::vector<std::string> content_pieces;  // as streamed
};

class ChoiceDecoderTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeTokenizer> tok = std::make_shared<FakeTokenizer>();

  std::vector<int> seq(std::initializer_list<std::string> parts) {
    std::vector<int> ids;
    for (const auto& p : parts) {
      if (p.size() > 1 && p.front() == '<' && p.back() == '>' && tok->token_id(p)) {
        ids.push_back(tok->id(p));
      } else {
        for (int id : tok->ids(p)) ids.push_back(id);
      }
    }
    return ids;
  }

  Decoded run(const std::vector<int>& ids, ChoiceDecoder::Options opt) {
    ChoiceDecoder d(tok, SpecialMarkers::from(*tok), opt);
    Decoded out;
    auto add = [&](const ChoiceDelta& x) {
      out.reasoning += x.reasoning;
      out.content += x.content;
      if (!x.content.empty()) out.content_pieces.push_back(x.content);
      for (const auto& c : x.tool_calls) out.calls.push_back(c);
      out.stopped = out.stopped || x.stopped;
    };
    for (int id : ids) {
      add(d.push(id));
      if (out.stopped) break;
    }
    if (!out.stopped) add(d.finish());
    return out;
  }
};

TEST_F(ChoiceDecoderTest, MarkersAreFound) {
  SpecialMarkers m = SpecialMarkers::from(*tok);
  EXPECT_EQ(m.channel_open, tok->id("<|channel>"));
  EXPECT_EQ(m.channel_close, tok->id("<channel|>"));
  EXPECT_EQ(m.tool_call_open, tok->id("<|tool_call>"));
  EXPECT_EQ(m.string_delimiter, tok->id("<|\"|>"));
}

TEST_F(ChoiceDecoderTest, PlainContentSkipsSpecialTokens) {
  Decoded d = run(seq({"Hello", " world", "<turn|>", "<eos>"}), {});
  EXPECT_EQ(d.content, "Hello world");
  EXPECT_EQ(d.reasoning, "");
}

TEST_F(ChoiceDecoderTest, ReasoningIsSplitOff) {
  Decoded d = run(seq({"<|channel>", "thought", "\n", "let me think", "<channel|>", "The answer", "<turn|>"}), {});
  EXPECT_EQ(d.reasoning, "let me think");
  EXPECT_EQ(d.content, "The answer");
  for (const auto& p : d.content_pieces) EXPECT_EQ(p.find("think"), std::string::npos);
}

TEST_F(ChoiceDecoderTest, EmptyThoughtChannel) {
  Decoded d = run(seq({"<|channel>", "thought", "\n", "<channel|>", "Hi"}), {});
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "Hi");
}

TEST_F(ChoiceDecoderTest, UnfinishedReasoningStaysReasoning) {
  Decoded d = run(seq({"<|channel>", "thought", "\n", "still thinking"}), {});
  EXPECT_EQ(d.reasoning, "still thinking");
  EXPECT_EQ(d.content, "");
}

TEST_F(ChoiceDecoderTest, CompletionsModeDoesNotSplit) {
  ChoiceDecoder::Options opt;
  opt.chat = false;
  Decoded d = run(seq({"<|channel>", "thought", "\n", "x", "<channel|>", "y"}), opt);
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "thought\nxy");
}

TEST_F(ChoiceDecoderTest, SpecialTokensKeptWhenAsked) {
  ChoiceDecoder::Options opt;
  opt.chat = false;
  opt.skip_special = false;
  Decoded d = run(seq({"a", "<turn|>", "b"}), opt);
  EXPECT_EQ(d.content, "a<turn|>b");
}

TEST_F(ChoiceDecoderTest, ToolCallParsedWhenToolsGiven) {
  ChoiceDecoder::Options opt;
  opt.parse_tool_calls = true;
  Decoded d = run(seq({"ok", "<|tool_call>", "call:", "get_weather", "{city:", "<|\"|>", "Paris", "<|\"|>", ",days:3}",
                       "<tool_call|>"}), opt);
  EXPECT_EQ(d.content, "ok");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(d.calls[0].arguments), (nlohmann::json{{"city", "Paris"}, {"days", 3}}));
}

TEST_F(ChoiceDecoderTest, MalformedToolCallBecomesContent) {
  ChoiceDecoder::Options opt;
  opt.parse_tool_calls = true;
  Decoded d = run(seq({"<|tool_call>", "nonsense", "<tool_call|>"}), opt);
  EXPECT_TRUE(d.calls.empty());
  EXPECT_EQ(d.content, "<|tool_call>nonsense<tool_call|>");
}

TEST_F(ChoiceDecoderTest, StopStringCutsContentAndReportsStop) {
  ChoiceDecoder::Options opt;
  opt.stop = {"wor"};
  Decoded d = run(seq({"Hello", " world", " again"}), opt);
  EXPECT_TRUE(d.stopped);
  EXPECT_EQ(d.content, "Hello ");
}

TEST_F(ChoiceDecoderTest, StopStringInsideReasoning) {
  ChoiceDecoder::Options opt;
  opt.stop = {"XY"};
  Decoded d = run(seq({"<|channel>", "thought", "\n", "abXYcd", "<channel|>", "answer"}), opt);
  EXPECT_TRUE(d.stopped);
  EXPECT_EQ(d.reasoning, "ab");
  EXPECT_EQ(d.content, "");
}

TEST_F(ChoiceDecoderTest, HeldTextIsReleasedBeforeAMarker) {
  ChoiceDecoder::Options opt;
  opt.stop = {"abc"};
  Decoded d = run(seq({"<|channel>", "thought", "\n", "xab", "<channel|>", "c!"}), opt);
  EXPECT_FALSE(d.stopped);  // a stop string never spans a marker
  EXPECT_EQ(d.reasoning, "xab");
  EXPECT_EQ(d.content, "c!");
}

TEST_F(ChoiceDecoderTest, RandomTokenStreamsNeverLeakReasoning) {
  // Whatever order markers and text come in, reasoning text (lower-case here) never reaches
  // content when every channel is closed before content resumes.
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int> ids;
    std::string want_reasoning, want_content;
    int blocks = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int b = 0; b < blocks; ++b) {
      if (rng() % 2) {
        std::string r(std::uniform_int_distribution<int>(0, 6)(rng), 'a');
        for (char& c : r) c = static_cast<char>('a' + rng() % 26);
        for (int id : seq({"<|channel>", "thought", "\n", r, "<channel|>"})) ids.push_back(id);
        want_reasoning += r;
      } else {
        std::string c(std::uniform_int_distribution<int>(0, 6)(rng), 'A');
        for (char& ch : c) ch = static_cast<char>('A' + rng() % 26);
        for (int id : tok->ids(c)) ids.push_back(id);
        want_content += c;
      }
    }
    Decoded d = run(ids, {});
    ASSERT_EQ(d.reasoning, want_reasoning);
    ASSERT_EQ(d.content, want_content);
  }
}

}  // namespace
}  // namespace gs::api
