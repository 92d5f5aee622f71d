#include "server/socket_stream.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace gs::server {

namespace {

constexpr size_t kReadAhead = 16 * 1024;

int to_poll_ms(std::chrono::microseconds t) {
  return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(t + std::chrono::microseconds(999)).count());
}

bool wait_for(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  while (true) {
    int n = poll(&p, 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;  // (restarts the whole wait: fine for these short timeouts)
    return n > 0;
  }
}

// The numeric address text httplib itself reports (ConnectionWatch matches on it).
void endpoint_text(const sockaddr_storage& sa, socklen_t len, std::string& ip, int& port) {
  if (sa.ss_family == AF_INET) port = ntohs(reinterpret_cast<const sockaddr_in&>(sa).sin_port);
  else if (sa.ss_family == AF_INET6) port = ntohs(reinterpret_cast<const sockaddr_in6&>(sa).sin6_port);
  else return;
  std::array<char, NI_MAXHOST> host{};
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&sa), len, host.data(), host.size(), nullptr, 0, NI_NUMERICHOST) == 0) {
    ip = host.data();
  }
}

}  // namespace

SocketStream::SocketStream(int fd, std::chrono::microseconds read_timeout, std::chrono::microseconds write_timeout)
    : fd_(fd), read_timeout_(read_timeout), write_timeout_(write_timeout), buf_(kReadAhead) {}

bool SocketStream::is_readable() const { return off_ < len_ || wait_for(fd_, POLLIN, to_poll_ms(read_timeout_)); }

bool SocketStream::wait_for_input(std::chrono::milliseconds timeout) const {
  return off_ < len_ || wait_for(fd_, POLLIN, static_cast<int>(timeout.count()));
}

bool SocketStream::is_writable() const {
  if (!wait_for(fd_, POLLOUT, to_poll_ms(write_timeout_))) return false;
  // A readable socket is either more input (pipelined requests: alive) or end of input.
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return true;
  char c;
  ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

ssize_t SocketStream::read(char* ptr, size_t size) {
  if (off_ == len_) {
    if (!wait_for(fd_, POLLIN, to_poll_ms(read_timeout_))) return -1;
    // Large reads (request bodies) go straight to the caller; small ones (httplib reads the head
    // a byte at a time) are served from one larger read.
    if (size >= kReadAhead) {
      ssize_t n;
      do n = recv(fd_, ptr, size, 0); while (n < 0 && errno == EINTR);
      return n;
    }
    ssize_t n;
    do n = recv(fd_, buf_.data(), buf_.size(), 0); while (n < 0 && errno == EINTR);
    off_ = 0;
    len_ = n > 0 ? static_cast<size_t>(n) : 0;
    if (n <= 0) return n;
  }
  size_t n = std::min(size, len_ - off_);
  std::memcpy(ptr, buf_.data() + off_, n);
  off_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t SocketStream::write(const char* ptr, size_t size) {
  if (!is_writable()) return -1;
  ssize_t n;
  do n = send(fd_, ptr, size, MSG_NOSIGNAL); while (n < 0 && errno == EINTR);
  return n;
}

void SocketStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&sa), &len) == 0) endpoint_text(sa, len, ip, port);
}

void SocketStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len) == 0) endpoint_text(sa, len, ip, port);
}

}  // namespace gs::server
