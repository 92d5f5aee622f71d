// Notices that the client of a plain (non-streaming) HTTP request went away while the request
// still runs, so its engine request can be aborted and its KV pages returned.
//
// cpp-httplib 0.11 gives a handler no socket and no disconnect callback, and a plain response is
// written only at the end, so no failed write can tell. But the request names its connection:
// the 4-tuple (local address:port, remote address:port) identifies exactly one TCP socket of this
// process. find() locates that socket among the process's descriptors (read-only: it is never
// closed or read here), and peer_closed() polls it for the end of input or an error, which is
// what a client closing its socket or dying produces. The socket stays open for as long as the
// handler runs (httplib closes it after the handler returns), so the descriptor cannot be reused
// under the watch.
#pragma once
#include <optional>
#include <string>

namespace gs::server {

class ConnectionWatch {
 public:
  // The socket connected from remote_addr:remote_port to local_addr:local_port, if one exists.
  static std::optional<ConnectionWatch> find(const std::string& local_addr, int local_port,
                                             const std::string& remote_addr, int remote_port);
  // True once the peer has closed its side (EOF) or the connection failed (reset, error). Data
  // the client sent after its request (a pipelined request) does not count as closing.
  bool peer_closed() const;
  int fd() const { return fd_; }

 private:
  explicit ConnectionWatch(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace gs::server
