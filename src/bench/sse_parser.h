// Server-sent events as OpenAI-compatible servers stream them: "data: {json}" lines separated by
// blank lines, ending with "data: [DONE]". Bytes arrive in arbitrary pieces; complete data lines
// are handed out as they become whole. Comment lines (":" keep-alives) and other fields are skipped.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace gs::bench {

class SseParser {
 public:
  // Feeds bytes; returns the payloads of the data lines completed by them ("[DONE]" included).
  std::vector<std::string> feed(std::string_view bytes);
  // Whatever is left without a final newline (a server that closes without one).
  std::vector<std::string> finish();

 private:
  void take_line(std::string_view line, std::vector<std::string>& out) const;
  std::string pending_;
};

}  // namespace gs::bench
