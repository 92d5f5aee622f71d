// The server's listening TCP socket. It is opened with SO_REUSEADDR only, never SO_REUSEPORT
// (cpp-httplib's default): with SO_REUSEPORT a second server on a taken port binds too and the
// kernel splits connections between the two, so a stale server silently keeps half the traffic.
// SO_REUSEADDR still lets a restarted server bind while connections of the previous one linger
// in TIME_WAIT, and Linux refuses it while another socket listens on the port.
#pragma once
#include <string>

namespace gs::server {

class ListenSocket {
 public:
  ListenSocket() = default;
  // Binds host:port (port 0: any free port) and listens with `backlog` (capped by the kernel's
  // somaxconn). Throws gs::Error naming host:port and the reason (in use, not this machine's
  // address, no permission...).
  static ListenSocket open(const std::string& host, int port, int backlog);
  ~ListenSocket();
  ListenSocket(ListenSocket&& o) noexcept;
  ListenSocket& operator=(ListenSocket&& o) noexcept;
  ListenSocket(const ListenSocket&) = delete;
  ListenSocket& operator=(const ListenSocket&) = delete;

  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  int port() const { return port_; }  // the bound port (the one the kernel chose for port 0)
  // Hands the descriptor over; the caller closes it.
  int release();

 private:
  ListenSocket(int fd, int port) : fd_(fd), port_(port) {}
  int fd_ = -1;
  int port_ = 0;
};

// Whether `host` (a --host value) only accepts connections from this machine: 127.0.0.0/8, ::1
// (also IPv4-mapped, ::ffff:127.x.y.z) and the name localhost (any case, *.localhost as RFC 6761
// reserves it). Everything else, wildcards (0.0.0.0, ::, empty) and other names included, may be
// reachable from other machines.
bool is_loopback_host(const std::string& host);

}  // namespace gs::server
