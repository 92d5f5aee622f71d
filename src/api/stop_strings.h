// Stop strings on streamed text. Text that could still become the start of a stop string is held
// back until the next piece decides it, so a stream never shows text that a later stop string
// would cut; the stop string itself is never part of the output. When stop strings overlap, the
// one completed first in the text wins (as when checking after every token).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace gs::api {

class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stops);

  struct Result {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string matched; `text` ends right before it
  };
  // Feeds the next piece of text. After a stop, further pieces are ignored.
  Result push(std::string_view piece);
  // Releases whatever is held back (the output ended without a stop string).
  std::string flush();
  bool stopped() const { return stopped_; }
  size_t held_bytes() const { return held_.size(); }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace gs::api
