#include "server/probe_request.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <string>

namespace gs::server {

namespace {

// Cheap answers that never touch the engine's queue; a load balancer or Kubernetes asks them.
constexpr std::array<std::string_view, 3> kProbePaths = {"/health", "/metrics", "/v1/models"};
constexpr std::array<std::string_view, 2> kProbeMethods = {"GET", "HEAD"};
// A probe's request head is small; one that is still incomplete after this much is not a probe.
constexpr size_t kMaxHead = 4096;

bool is_probe_line(std::string_view method, std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  bool method_ok = false, path_ok = false;
  for (auto m : kProbeMethods) method_ok |= method == m;
  for (auto p : kProbePaths) path_ok |= path == p;
  return method_ok && path_ok;
}

// Whether an incomplete request line could still turn out to be a probe's.
bool could_become_probe(std::string_view partial) {
  for (auto m : kProbeMethods) {
    for (auto p : kProbePaths) {
      std::string line = std::string(m) + " " + std::string(p);
      size_t n = std::min(line.size(), partial.size());
      if (partial.compare(0, n, line, 0, n) != 0) continue;
      if (partial.size() <= line.size()) return true;
      char next = partial[line.size()];
      if (next == ' ' || next == '?') return true;
    }
  }
  return false;
}

}  // namespace

ProbeCheck classify_probe_request(std::string_view head) {
  size_t eol = head.find("\r\n");
  if (eol == std::string_view::npos) {
    if (head.size() >= kMaxHead) return ProbeCheck::NotProbe;
    return could_become_probe(head) ? ProbeCheck::NotYet : ProbeCheck::NotProbe;
  }
  std::string_view line = head.substr(0, eol);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || !is_probe_line(line.substr(0, sp1), line.substr(sp1 + 1, sp2 - sp1 - 1))) {
    return ProbeCheck::NotProbe;
  }
  size_t end = head.find("\r\n\r\n", eol);
  if (end == std::string_view::npos) return head.size() >= kMaxHead ? ProbeCheck::NotProbe : ProbeCheck::NotYet;
  // Bytes after the head belong to a body or to pipelined requests: the connection's own thread
  // serves those, in order (answering only the first here would lose the rest).
  return end + 4 == head.size() ? ProbeCheck::Probe : ProbeCheck::NotProbe;
}

ProbeCheck peek_probe_request(int fd) {
  std::array<char, kMaxHead + 1> buf;
  ssize_t n = recv(fd, buf.data(), buf.size(), MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? ProbeCheck::NotYet : ProbeCheck::NotProbe;
  if (n == 0) return ProbeCheck::NotProbe;
  return classify_probe_request(std::string_view(buf.data(), static_cast<size_t>(n)));
}

}  // namespace gs::server
