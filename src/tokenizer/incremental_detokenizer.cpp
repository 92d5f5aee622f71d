// IncrementalDetokenizer: streaming text for generated tokens.
#include "tokenizer/token_decoder.h"
#include "tokenizer/tokenizer.h"

namespace gs {

IncrementalDetokenizer::IncrementalDetokenizer(std::shared_ptr<const Tokenizer> tok, bool skip_special)
    : tok_(std::move(tok)), skip_special_(skip_special) {}

std::string IncrementalDetokenizer::push(int id) {
  ids_.push_back(id);
  // A byte token may be continued by the next one; a token that decode() drops (skipped special,
  // unknown id) may sit between two byte tokens that decode() then sees as one run. Either way
  // the text is not final yet.
  const bool dropped = id < 0 || id >= tok_->vocab_size() || (skip_special_ && tok_->is_special(id));
  if (dropped || byte_token_value(tok_->token_text(id)) >= 0) return {};
  return take_new_text();
}

std::string IncrementalDetokenizer::flush() {
  std::string rest = take_new_text();
  ids_.clear();
  prefix_offset_ = 0;
  emitted_bytes_ = 0;
  return rest;
}

std::string IncrementalDetokenizer::take_new_text() {
  const std::string text = tok_->decode(ids_, skip_special_);
  std::string piece = text.size() > emitted_bytes_ ? text.substr(emitted_bytes_) : std::string();
  // Slide the window: the ids just emitted become the context of the next piece.
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<long>(prefix_offset_));
  prefix_offset_ = ids_.size();
  emitted_bytes_ = tok_->decode(ids_, skip_special_).size();
  return piece;
}

}  // namespace gs
