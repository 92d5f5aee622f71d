#include "bench/sse_parser.h"

namespace gs::bench {

void SseParser::take_line(std::string_view line, std::vector<std::string>& out) const {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.rfind("data:", 0) != 0) return;  // blank separators, ":" comments, event:/id: fields
  line.remove_prefix(5);
  if (!line.empty() && line.front() == ' ') line.remove_prefix(1);  // the spec drops one space
  out.emplace_back(line);
}

std::vector<std::string> SseParser::feed(std::string_view bytes) {
  std::vector<std::string> out;
  pending_.append(bytes);
  size_t start = 0;
  for (size_t nl = pending_.find('\n'); nl != std::string::npos; nl = pending_.find('\n', start)) {
    take_line(std::string_view(pending_).substr(start, nl - start), out);
    start = nl + 1;
  }
  pending_.erase(0, start);
  return out;
}

std::vector<std::string> SseParser::finish() {
  std::vector<std::string> out;
  if (!pending_.empty()) take_line(pending_, out);
  pending_.clear();
  return out;
}

}  // namespace gs::bench
