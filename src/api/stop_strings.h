// Stop strings on streamed text. Text that could still become the start of a stop string is held
// back until the next piece decides it, so a stream never shows text that a later stop string
// would cut; the stop string itself is not part of the output. With include_stop_str_in_output it
// is, and then nothing needs holding back (text before a stop string is shown either way).
// When stop strings overlap, the one completed first in the text wins (as when checking after
// every token).
//
// min_tokens (vLLM): text pushed with may_stop = false cannot end the output; a stop string only
// counts when it ends in text pushed with may_stop = true (it may begin earlier).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace gs::api {

class StopStringMatcher {
 public:
  explicit StopStringMatcher(std::vector<std::string> stops, bool include_stop = false);

  struct Result {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string matched; `text` ends right before it (or with it, when included)
  };
  // Feeds the next piece of text. After a stop, further pieces are ignored.
  Result push(std::string_view piece, bool may_stop = true);
  // Releases whatever is held back (the output ended without a stop string).
  std::string flush();
  bool stopped() const { return stopped_; }
  size_t held_bytes() const { return held_.size() - emitted_; }

 private:
  std::vector<std::string> stops_;
  bool include_stop_ = false;
  void drop_front(size_t n);  // forgets held_'s first n bytes

  std::string held_;
  size_t emitted_ = 0;         // with include_stop_: held_'s first bytes, already returned (kept to match across pieces)
  size_t no_stop_before_ = 0;  // no match may end within held_'s first bytes (pushed before min_tokens)
  bool stopped_ = false;
};

}  // namespace gs::api
