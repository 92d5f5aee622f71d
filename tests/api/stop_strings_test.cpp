// Stop strings on streamed text: the streamed result equals the whole-text result for every way
// of cutting the text into pieces, and nothing past a stop string is ever emitted.
#include <gtest/gtest.h>

#include <random>

#include "api/stop_strings.h"

namespace gs::api {
namespace {

// The whole-text answer, found the slow way: grow the text one byte at a time and stop at the
// first length where some stop string ends (the longest such one, when several do).
// With `include`, the text goes on to the end of the stop string; a stop string ending within the
// first `no_stop_before` bytes (min_tokens) does not count.
std::pair<std::string, bool> reference(const std::string& text, const std::vector<std::string>& stops,
                                       bool include = false, size_t no_stop_before = 0) {
  for (size_t end = no_stop_before + 1; end <= text.size(); ++end) {
    size_t best = std::string::npos;
    for (const auto& s : stops) {
      if (s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0) best = std::min(best, end - s.size());
    }
    if (best != std::string::npos) return {text.substr(0, include ? end : best), true};
  }
  return {text, false};
}

// The first `unarmed` pieces are pushed with may_stop = false.
std::pair<std::string, bool> streamed(const std::vector<std::string>& pieces, const std::vector<std::string>& stops,
                                      const std::string& expected_prefix_of, bool include = false,
                                      size_t unarmed = 0) {
  StopStringMatcher m(stops, include);
  std::string out;
  bool stopped = false;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string& p = pieces[i];
    auto r = m.push(p, /*may_stop=*/i >= unarmed);
    out += r.text;
    // Never emitted beyond what the whole-text answer allows.
    EXPECT_EQ(expected_prefix_of.compare(0, out.size(), out), 0) << "emitted '" << out << "'";
    if (r.stopped) {
      stopped = true;
      break;
    }
  }
  if (!stopped) out += m.flush();
  return {out, stopped};
}

TEST(StopStrings, NoStopsPassesThrough) {
  StopStringMatcher m({});
  EXPECT_EQ(m.push("abc").text, "abc");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopStrings, HoldsBackPartialMatch) {
  StopStringMatcher m({"STOP"});
  auto r = m.push("hello ST");
  EXPECT_EQ(r.text, "hello ");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(m.held_bytes(), 2u);
  r = m.push("OP and more");
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(r.stopped);
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("ignored").text, "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopStrings, ReleasesFalseAlarm) {
  StopStringMatcher m({"STOP"});
  EXPECT_EQ(m.push("ST").text, "");
  EXPECT_EQ(m.push("ART").text, "START");
  EXPECT_EQ(m.push("S").text, "");
  EXPECT_EQ(m.flush(), "S");
}

TEST(StopStrings, FirstCompletedMatchWins) {
  StopStringMatcher m({"world", "lo w"});
  auto r = m.push("hello world");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "hel");
  // "b\nc" would start earlier, but "\n" is complete first.
  StopStringMatcher m2({"b\nc", "\n"});
  r = m2.push("ab\ncd");
  EXPECT_EQ(r.text, "ab");
}

TEST(StopStrings, MultiByteTextIsNeverSplit) {
  // "é" is two bytes; the stop string starts with it, so the held tail starts at a character.
  StopStringMatcher m({"\xC3\xA9t\xC3\xA9"});
  auto r = m.push("caf\xC3\xA9");
  EXPECT_EQ(r.text, "caf");
  r = m.push(" x");
  EXPECT_EQ(r.text, "\xC3\xA9 x");
}

TEST(StopStrings, RandomSplitsMatchWholeText) {
  std::mt19937 rng(std::random_device{}());
  const std::string alphabet = "ab c\n";
  auto rand_str = [&](int min_len, int max_len) {
    std::string s(std::uniform_int_distribution<int>(min_len, max_len)(rng), ' ');
    for (char& c : s) c = alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
    return s;
  };
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text = rand_str(0, 40);
    std::vector<std::string> stops;
    int n = std::uniform_int_distribution<int>(0, 3)(rng);
    for (int i = 0; i < n; ++i) stops.push_back(rand_str(1, 4));
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
      size_t len = std::uniform_int_distribution<size_t>(0, 5)(rng);
      pieces.push_back(text.substr(i, len));
      i += len;
    }
    std::string all_stops;
    for (const auto& s : stops) all_stops += "'" + s + "' ";
    // Plain, keeping the stop string, and with the first pieces unable to stop (min_tokens).
    const size_t unarmed = std::uniform_int_distribution<size_t>(0, pieces.size())(rng);
    size_t unarmed_bytes = 0;
    for (size_t i = 0; i < unarmed; ++i) unarmed_bytes += pieces[i].size();
    for (bool include : {false, true}) {
      for (size_t k : {size_t(0), unarmed}) {
        const size_t no_stop_before = k ? unarmed_bytes : 0;
        auto want = reference(text, stops, include, no_stop_before);
        auto got = streamed(pieces, stops, want.first, include, k);
        ASSERT_EQ(got.first, want.first) << "text '" << text << "' stops " << all_stops << " include " << include
                                         << " unarmed bytes " << no_stop_before;
        ASSERT_EQ(got.second, want.second) << "text '" << text << "'";
      }
    }
  }
}

TEST(StopStrings, IncludedStopStringIsEmittedWithoutHoldingBack) {
  StopStringMatcher m({"STOP"}, /*include_stop=*/true);
  EXPECT_EQ(m.push("hello ST").text, "hello ST");  // nothing to hold back: it is shown either way
  EXPECT_EQ(m.held_bytes(), 0u);
  auto r = m.push("OP and more");
  EXPECT_EQ(r.text, "OP");
  EXPECT_TRUE(r.stopped);
}

TEST(StopStrings, TextBeforeMinTokensCannotStop) {
  StopStringMatcher m({"."});
  EXPECT_EQ(m.push("a.", /*may_stop=*/false).text, "a.");
  auto r = m.push("b.c", /*may_stop=*/true);
  EXPECT_EQ(r.text, "b");
  EXPECT_TRUE(r.stopped);
  // A stop string begun before min_tokens and completed after it counts.
  StopStringMatcher m2({"xy"});
  EXPECT_EQ(m2.push("ax", false).text, "a");
  r = m2.push("yb", true);
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
}

}  // namespace
}  // namespace gs::api
