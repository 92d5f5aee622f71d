// Turns the token ids of one choice into what the client sees: detokenized text, split into
// `reasoning_content` (between <|channel> and <channel|>, the channel name line dropped) and
// `content`, tool calls (<|tool_call>...<tool_call|>, when the request gave tools), with stop
// strings applied and other special tokens skipped. The same object serves streaming (call
// push() per token, send each delta) and non-streaming (concatenate the deltas).
//
// Stop strings apply to the generated text in order, reasoning included (as vLLM checks them on
// the raw output before splitting reasoning off); they never span a channel or tool-call marker.
// As in vLLM, they are looked for only once more than min_tokens tokens were generated.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/stop_strings.h"
#include "api/tool_call_parser.h"
#include "tokenizer/tokenizer.h"

namespace gs::api {

// Ids of the Gemma-4 structural tokens (-1 when the vocabulary lacks one).
struct SpecialMarkers {
  int channel_open = -1, channel_close = -1;
  int tool_call_open = -1, tool_call_close = -1;
  int string_delimiter = -1;
  static SpecialMarkers from(const Tokenizer& tok);
};

struct ChoiceDelta {
  std::string reasoning;
  std::string content;
  std::vector<ParsedToolCall> tool_calls;
  bool stopped = false;  // a stop string matched: the choice is over
  bool empty() const { return reasoning.empty() && content.empty() && tool_calls.empty(); }
};

class ChoiceDecoder {
 public:
  struct Options {
    bool chat = true;              // false (/v1/completions): no reasoning or tool-call parsing
    bool parse_tool_calls = false; // chat with tools given
    bool skip_special = true;      // other special tokens are dropped (else written as text)
    std::vector<std::string> stop;
    bool include_stop = false;     // include_stop_str_in_output: the matched stop string stays in the text
    int min_tokens = 0;            // a stop string counts only in text of the tokens after the first min_tokens
  };
  ChoiceDecoder(std::shared_ptr<const Tokenizer> tok, SpecialMarkers markers, Options opt);

  ChoiceDelta push(int token);
  // End of output: releases held-back text; an unfinished reasoning block or tool call is
  // returned as what it is (reasoning text, or the raw tool-call text as content).
  ChoiceDelta finish();
  bool stopped() const { return stop_.stopped(); }

 private:
  enum class Mode { Content, ReasoningHeader, Reasoning, ToolCall };
  void emit_text(const std::string& text, ChoiceDelta& d);   // through stop strings
  void route(const std::string& text, ChoiceDelta& d);       // to the current channel
  void end_segment(ChoiceDelta& d);                          // flush detokenizer + held text
  void on_marker(int token, ChoiceDelta& d);

  std::shared_ptr<const Tokenizer> tok_;
  SpecialMarkers m_;
  Options opt_;
  std::unique_ptr<IncrementalDetokenizer> detok_;
  StopStringMatcher stop_;
  Mode mode_ = Mode::Content;
  std::string header_;     // channel name line being read
  std::string tool_text_;  // tool call being read
  int tokens_ = 0;         // pushed so far
};

}  // namespace gs::api
