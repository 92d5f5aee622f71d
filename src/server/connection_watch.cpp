#include "server/connection_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>

namespace gs::server {

namespace {

// "address", port of a socket address in the numeric form httplib reports (getnameinfo with
// NI_NUMERICHOST gives the same text as inet_ntop).
bool same_endpoint(const sockaddr_storage& sa, const std::string& addr, int port) {
  char text[INET6_ADDRSTRLEN] = {};
  int p = -1;
  if (sa.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(sa);
    if (!inet_ntop(AF_INET, &a.sin_addr, text, sizeof text)) return false;
    p = ntohs(a.sin_port);
  } else if (sa.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(sa);
    if (!inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text)) return false;
    p = ntohs(a.sin6_port);
  } else {
    return false;
  }
  return p == port && addr == text;
}

bool is_connection(int fd, const std::string& local_addr, int local_port, const std::string& remote_addr,
                   int remote_port) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0 || !same_endpoint(sa, remote_addr, remote_port)) {
    return false;
  }
  len = sizeof sa;
  return getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0 && same_endpoint(sa, local_addr, local_port);
}

}  // namespace

std::optional<ConnectionWatch> ConnectionWatch::find(const std::string& local_addr, int local_port,
                                                     const std::string& remote_addr, int remote_port) {
  if (local_port <= 0 || remote_port <= 0) return std::nullopt;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return std::nullopt;
  std::optional<ConnectionWatch> found;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    if (is_connection(static_cast<int>(fd), local_addr, local_port, remote_addr, remote_port)) {
      found = ConnectionWatch(static_cast<int>(fd));
      break;
    }
  }
  closedir(dir);
  return found;
}

bool ConnectionWatch::peer_closed() const {
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  int n = poll(&p, 1, 0);
  if (n < 0) return errno != EINTR;
  if (n == 0) return false;
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL | POLLRDHUP)) return true;
  // Readable without RDHUP: bytes the client sent after its request (a pipelined request). A
  // zero-byte peek would mean end of input on kernels that do not report RDHUP.
  char c;
  ssize_t r = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace gs::server
