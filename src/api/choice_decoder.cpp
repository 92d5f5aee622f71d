#include "api/choice_decoder.h"

namespace gs::api {

SpecialMarkers SpecialMarkers::from(const Tokenizer& tok) {
  auto id = [&](const char* s) { return tok.token_id(s).value_or(-1); };
  SpecialMarkers m;
  m.channel_open = id("<|channel>");
  m.channel_close = id("<channel|>");
  m.tool_call_open = id("<|tool_call>");
  m.tool_call_close = id("<tool_call|>");
  m.string_delimiter = id("<|\"|>");
  return m;
}

ChoiceDecoder::ChoiceDecoder(std::shared_ptr<const Tokenizer> tok, SpecialMarkers markers, Options opt)
    : tok_(std::move(tok)),
      m_(markers),
      opt_(std::move(opt)),
      detok_(std::make_unique<IncrementalDetokenizer>(tok_, /*skip_special=*/true)),
      stop_(opt_.stop, opt_.include_stop) {}

void ChoiceDecoder::route(const std::string& text, ChoiceDelta& d) {
  if (text.empty()) return;
  (mode_ == Mode::Reasoning ? d.reasoning : d.content) += text;
}

void ChoiceDecoder::emit_text(const std::string& text, ChoiceDelta& d) {
  if (text.empty() || stop_.stopped()) return;
  if (mode_ == Mode::ToolCall) {
    tool_text_ += text;
    return;
  }
  std::string t = text;
  if (mode_ == Mode::ReasoningHeader) {
    // "<|channel>thought\n...": the first line names the channel and is not shown.
    header_ += t;
    size_t nl = header_.find('\n');
    if (nl == std::string::npos) return;
    t = header_.substr(nl + 1);
    header_.clear();
    mode_ = Mode::Reasoning;
  }
  auto r = stop_.push(t, /*may_stop=*/tokens_ > opt_.min_tokens);
  route(r.text, d);
  d.stopped = r.stopped;
}

void ChoiceDecoder::end_segment(ChoiceDelta& d) {
  emit_text(detok_->flush(), d);
  detok_ = std::make_unique<IncrementalDetokenizer>(tok_, /*skip_special=*/true);
  if (!stop_.stopped()) route(stop_.flush(), d);
}

void ChoiceDecoder::on_marker(int token, ChoiceDelta& d) {
  end_segment(d);
  if (stop_.stopped()) return;
  if (token == m_.channel_open && mode_ == Mode::Content) {
    mode_ = Mode::ReasoningHeader;
    header_.clear();
  } else if (token == m_.channel_close && (mode_ == Mode::Reasoning || mode_ == Mode::ReasoningHeader)) {
    mode_ = Mode::Content;
  } else if (token == m_.tool_call_open && mode_ == Mode::Content) {
    mode_ = Mode::ToolCall;
    tool_text_.clear();
  } else if (token == m_.tool_call_close && mode_ == Mode::ToolCall) {
    mode_ = Mode::Content;
    if (auto call = parse_tool_call(tool_text_)) {
      d.tool_calls.push_back(std::move(*call));
    } else {
      d.content += "<|tool_call>" + tool_text_ + "<tool_call|>";
    }
    tool_text_.clear();
  } else if (token == m_.string_delimiter && mode_ == Mode::ToolCall) {
    tool_text_ += kToolStringDelimiter;
  }
  // A marker out of place (a close without an open, ...) is dropped like any special token.
}

ChoiceDelta ChoiceDecoder::push(int token) {
  ChoiceDelta d;
  if (stop_.stopped()) return d;
  ++tokens_;
  // A model whose vocabulary is larger than the tokenizer's (dummy weights with the demo
  // tokenizer) can produce ids with no text: they count as tokens but show nothing.
  if (token < 0 || token >= tok_->vocab_size()) return d;
  bool structural = opt_.chat && token >= 0 &&
                    (token == m_.channel_open || token == m_.channel_close ||
                     (opt_.parse_tool_calls && (token == m_.tool_call_open || token == m_.tool_call_close ||
                                                token == m_.string_delimiter)));
  if (structural) {
    on_marker(token, d);
  } else if (tok_->is_special(token)) {
    if (!opt_.skip_special) {
      end_segment(d);
      emit_text(std::string(tok_->token_text(token)), d);
    }
  } else {
    emit_text(detok_->push(token), d);
  }
  return d;
}

ChoiceDelta ChoiceDecoder::finish() {
  ChoiceDelta d;
  if (stop_.stopped()) return d;
  end_segment(d);
  if (stop_.stopped()) return d;
  if (mode_ == Mode::ToolCall && !tool_text_.empty()) {
    d.content += "<|tool_call>" + tool_text_;  // cut short (length): show what was written
    tool_text_.clear();
  }
  mode_ = Mode::Content;
  return d;
}

}  // namespace gs::api
