#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/tool_call_parser.h"

namespace gs::api {
namespace {

using nlohmann::json;

json args_of(const std::string& text) {
  auto c = parse_tool_call(text);
  EXPECT_TRUE(c) << text;
  return c ? json::parse(c->arguments) : json();
}

TEST(ToolCallParser, ScalarsStringsAndNesting) {
  auto c = parse_tool_call("call:search{query:<|\"|>a, b {c}<|\"|>,limit:5,exact:true,x:null,ratio:0.5}");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "search");
  EXPECT_EQ(json::parse(c->arguments),
            (json{{"query", "a, b {c}"}, {"limit", 5}, {"exact", true}, {"x", nullptr}, {"ratio", 0.5}}));
  EXPECT_EQ(args_of("call:f{a:{b:[1,2,<|\"|>x<|\"|>]},c:[]}"), (json{{"a", {{"b", {1, 2, "x"}}}}, {"c", json::array()}}));
  EXPECT_EQ(args_of("call:f{}"), json::object());
  EXPECT_EQ(args_of("  call:f{ a : 1 }"), (json{{"a", 1}}));
}

TEST(ToolCallParser, RejectsWhatIsNotACall) {
  for (const char* s : {"", "call:", "call:{a:1}", "f{a:1}", "call:f{a:1", "call:f{a:<|\"|>x}", "call:f{a:1}junk",
                        "call:bad name{a:1}", "call:f{:1}", "call:f{a:[1,2}"}) {
    EXPECT_FALSE(parse_tool_call(s)) << s;
  }
}

}  // namespace
}  // namespace gs::api
