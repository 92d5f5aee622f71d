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
    r.text = include_stop_ ? held_.substr(emitted_, cut_end - emitted_) : held_.substr(0, cut);
    r.stopped = stopped_ = true;
    held_.clear();
    emitted_ = 0;
    return r;
  }
  if (include_stop_) {
    // Nothing is cut, so nothing waits: emit it all and keep only enough text behind to
    // complete a stop string that has begun.
    r.text = held_.substr(emitted_);
    size_t longest = 0;
    for (const auto& s : stops_) longest = std::max(longest, s.size());
    drop_front(held_.size() - std::min(held_.size(), longest - 1));
    emitted_ = held_.size();
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
  r.text = held_.substr(0, held_.size() - keep);
  drop_front(held_.size() - keep);
  return r;
}

void StopStringMatcher::drop_front(size_t n) {
  held_.erase(0, n);
  no_stop_before_ = no_stop_before_ > n ? no_stop_before_ - n : 0;
}

std::string StopStringMatcher::flush() {
  std::string out = stopped_ ? std::string() : held_.substr(emitted_);
  held_.clear();
  emitted_ = 0;
  return out;
}

}  // namespace gs::api
