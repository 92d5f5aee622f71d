#include "server/listen_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace gs::server {

namespace {

std::string reason(int err, int port) {
  switch (err) {
    case EADDRINUSE:
      return fmt::format("port {} is already in use (another server, perhaps an earlier gemmaserve, listens there: "
                         "stop it or choose another --port)", port);
    case EADDRNOTAVAIL: return "the address is not one of this machine's (see --host)";
    case EACCES: return fmt::format("permission denied (port {} needs privileges; use a port above 1023)", port);
    default: return std::strerror(err);
  }
}

int bound_port(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return -1;
  if (sa.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(sa).sin_port);
  if (sa.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(sa).sin6_port);
  return -1;
}

}  // namespace

ListenSocket ListenSocket::open(const std::string& host, int port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;  // an empty host means every address
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw Error("cannot listen on {}:{}: {} (--host takes an address or a name of this machine)", host, port,
                gai_strerror(rc));
  }
  int err = EADDRNOTAVAIL;
  int fd = -1;
  // A name may resolve to several addresses (localhost: ::1 and 127.0.0.1): the first that binds
  // is used, as cpp-httplib does.
  for (addrinfo* ai = found; ai && fd < 0; ai = ai->ai_next) {
    int s = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (s < 0) {
      err = errno;
      continue;
    }
    int yes = 1, no = 0;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    // "::" serves IPv4 clients too, like cpp-httplib's sockets.
    if (ai->ai_family == AF_INET6) setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
    if (::bind(s, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(s, backlog) == 0) {
      fd = s;
    } else {
      err = errno;
      ::close(s);
    }
  }
  freeaddrinfo(found);
  if (fd < 0) throw Error("cannot listen on {}:{}: {}", host, port, reason(err, port));
  int p = bound_port(fd);
  if (p <= 0) {
    err = errno;
    ::close(fd);
    throw Error("cannot listen on {}:{}: the bound port is unknown ({})", host, port, std::strerror(err));
  }
  return ListenSocket(fd, p);
}

ListenSocket::~ListenSocket() {
  if (fd_ >= 0) ::close(fd_);
}

ListenSocket::ListenSocket(ListenSocket&& o) noexcept : fd_(o.fd_), port_(o.port_) { o.fd_ = -1; }

ListenSocket& ListenSocket::operator=(ListenSocket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    port_ = o.port_;
    o.fd_ = -1;
  }
  return *this;
}

int ListenSocket::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

bool is_loopback_host(const std::string& host) {
  std::string h = host;
  std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!h.empty() && h.back() == '.') h.pop_back();  // a fully qualified "localhost."
  if (h == "localhost" || (h.size() > 10 && h.compare(h.size() - 10, 10, ".localhost") == 0)) return true;
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace gs::server
