#include "api/stop_strings.h"

#include <algorithm>

namespace gs::api {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

StopStringMatcher::Result StopStringMatcher::push(std::string_view piece) {
  Result r;
  if (stopped_) return r;
  if (stops_.empty()) {
    r.text.assign(piece);
    return r;
  }
  held_.append(piece);
  // The stop string that is completed first wins (at the same end, the longer one): that is the
  // only rule a stream can follow without waiting, so streamed and whole-text results agree.
  size_t cut = std::string::npos, cut_end = std::string::npos;
  for (const auto& s : stops_) {
    size_t pos = held_.find(s);
    if (pos == std::string::npos) continue;
    size_t end = pos + s.size();
    if (end < cut_end || (end == cut_end && pos < cut)) cut = pos, cut_end = end;
  }
  if (cut != std::string::npos) {
    r.text = held_.substr(0, cut);
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
  r.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return r;
}

std::string StopStringMatcher::flush() {
  std::string out;
  out.swap(held_);
  return stopped_ ? std::string() : out;
}

}  // namespace gs::api
