#include "server/http_listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/log.h"
#include "server/probe_request.h"
#include "server/socket_stream.h"

namespace gs::server {

namespace {

// How often waits (accept, an idle kept-alive connection) look whether the server stopped.
constexpr int kStopCheckMs = 100;

std::chrono::microseconds timeout(time_t sec, time_t usec) {
  return std::chrono::seconds(sec) + std::chrono::microseconds(usec);
}

bool is_transient_accept_error(int err) {
  switch (err) {
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif
    case EINTR:
    case ECONNABORTED:  // the client gave up while queued
    case EPROTO:
    case EPERM:         // refused by a firewall rule
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

}  // namespace

HttpListener::~HttpListener() {
  stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

int HttpListener::adopt(ListenSocket socket) {
  int port = socket.port();
  listen_fd_ = socket.release();
  svr_sock_ = listen_fd_;
  return port;
}

void HttpListener::stop() {
  int fd = svr_sock_.exchange(INVALID_SOCKET);
  // Wakes accept; the port is free for a new server at once. The descriptor is closed by the
  // destructor, after run() has returned.
  if (fd != INVALID_SOCKET) ::shutdown(fd, SHUT_RDWR);
}

void HttpListener::run(size_t max_threads) {
  if (stopped()) return;
  ConnectionThreads threads(
      max_threads, [this](int fd) { serve(fd, keep_alive_max_count_); },
      ConnectionThreads::ProbeLane{peek_probe_request, [this](int fd) { serve(fd, 1); }});
  accept_loop(threads);
  threads.shutdown();  // every connection's loop sees the stop and ends
}

void HttpListener::accept_loop(ConnectionThreads& threads) {
  bool warned_resources = false;
  while (!stopped()) {
    pollfd p{listen_fd_, POLLIN, 0};
    int n = poll(&p, 1, kStopCheckMs);
    if (stopped()) break;
    if (n < 0 && errno != EINTR) {
      log::error("the HTTP listener failed: poll: {}", std::strerror(errno));
      break;
    }
    if (n <= 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (stopped() || is_transient_accept_error(err)) continue;
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        // Out of descriptors or memory: new clients wait in the backlog until some close.
        if (!warned_resources) {
          warned_resources = true;
          log::warn("cannot accept HTTP connections: {} (raise the open-files limit, ulimit -n)", std::strerror(err));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      log::error("the HTTP listener failed: accept: {}", std::strerror(err));
      break;
    }
    warned_resources = false;
    int yes = 1;  // small writes (one SSE event per token) go out at once
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    // A send into a client that stopped reading returns after the write timeout instead of
    // holding the thread for good (SocketStream waits for readiness before every call, but one
    // large send can still block once started).
    timeval rcv{read_timeout_sec_, static_cast<suseconds_t>(read_timeout_usec_)};
    timeval snd{write_timeout_sec_, static_cast<suseconds_t>(write_timeout_usec_)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof rcv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd);
    threads.enqueue(fd);
  }
}

void HttpListener::serve(int fd, size_t max_requests) {
  SocketStream strm(fd, timeout(read_timeout_sec_, read_timeout_usec_), timeout(write_timeout_sec_, write_timeout_usec_));
  for (size_t left = max_requests; left > 0; --left) {
    // Between requests the connection may stay idle for the keep-alive timeout.
    auto idle_limit = std::chrono::steady_clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
    bool more = false;
    while (!stopped() && !(more = strm.wait_for_input(std::chrono::milliseconds(kStopCheckMs))) &&
           std::chrono::steady_clock::now() < idle_limit) {
    }
    if (!more || stopped()) break;
    bool close_connection = left == 1, closed = false;
    if (!process_request(strm, close_connection, closed, nullptr) || closed) break;
  }
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

}  // namespace gs::server
