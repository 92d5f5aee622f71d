// Where cpp-httplib's request handling meets our own sockets and threads. httplib::Server parses
// each request, routes it and writes the answer (Server::process_request); this subclass owns
// what is around that: the listening socket (see listen_socket.h), the accept loop, the threads
// (connection_threads.h) and each connection's keep-alive loop over a stream that keeps what it
// read ahead (socket_stream.h). httplib's own accept loop hands its task queue opaque closures,
// which would hide the waiting sockets from the probe lane, and its per-request stream loses
// pipelined requests (both in Debian's 0.11.4, which we build against, where the connection loop
// is private); process_request, which reads, routes and answers one request, is protected and so
// open to a subclass.
#pragma once
#include <httplib.h>

#include <cstddef>

#include "server/connection_threads.h"
#include "server/listen_socket.h"

namespace gs::server {

class HttpListener : public httplib::Server {
 public:
  HttpListener() = default;
  ~HttpListener() override;

  // Takes over an open listening socket; returns its port.
  int adopt(ListenSocket socket);
  // Accepts connections until stop(), serving each on ConnectionThreads(max_threads); returns
  // once every connection has ended. Returns at once when stop() came first.
  void run(size_t max_threads);
  // Stops accepting; kept-alive connections end after their current request. Any thread.
  void stop();

 private:
  void accept_loop(ConnectionThreads& threads);
  // Serves up to `max_requests` requests of connection `fd`, then closes it.
  void serve(int fd, size_t max_requests);
  bool stopped() const { return svr_sock_ == INVALID_SOCKET; }

  // The listening descriptor, closed only here: svr_sock_ (which httplib's response writer also
  // reads to notice a shutdown) is cleared by stop() while accept may still be using the number.
  int listen_fd_ = -1;
};

}  // namespace gs::server
