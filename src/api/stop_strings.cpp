#include "api/stop_strings.h"

#include <algorithm>

namespace gs::api {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops, bool include_stop)
    : stops_(std::move(stops)), include_stop_(include_stop) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

StopStringMatcher::Result StopStringMatcher::push(std::string_view piece, bool may_stop) {
  Result r;
  if (stopped_) return r;
  if (stops_.empty()) {
    r.text.assign(piece);
    return r;
  }
  held_.append(piece);
  if (!may_stop) no_stop_before_ = held_.size();
  // The stop string that is completed first wins (at the same end, the longer one): that is the
  // only rule a stream can follow without waiting, so streamed and whole-text results agree.
  size_t cut = std::string::npos, cut_end = std::string::npos;
  for (const auto& s : stops_) {
    // The first occurrence that ends past the text pushed before min_tokens.
    const size_t from = no_stop_before_ >= s.size() ? no_stop_before_ - s.size() + 1 : 0;
    size_t pos = held_.find(s, from);
    if (pos == std::string::npos) continue;
    size_t end = pos + s.size();
    if (end < cut_end || (end == cut_end && pos < cut)) cut = pos, cut_end = end;
  }
  if (cut != std::string::npos) {
    r.text = held_.substr(0, include_stop_ ? cut_end : cut);
    r.stopped = stopped_ = true;
    held_.clear();
    return r;
  }
  // Hold back the longest tail of the buffer that is a proper prefix of some stop string. It
  // starts where a stop string starts, so the cut never splits a UTF-8 character.
  size_t keep = 0;
  for (const auto& s : stops_) {
    size_t max_len = std::min(s.size() - 1, held_.size());
    for (size_t len = max_len; len > keep; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  const size_t emitted = held_.size() - keep;
  r.text = held_.substr(0, emitted);
  held_.erase(0, emitted);
  no_stop_before_ = no_stop_before_ > emitted ? no_stop_before_ - emitted : 0;
  return r;
}

std::string StopStringMatcher::flush() {
  std::string out;
  out.swap(held_);
  return stopped_ ? std::string() : out;
}

}  // namespace gs::api
