// One HTTP connection's byte stream, as cpp-httplib's request parser reads and its response
// writer writes it. Unlike httplib's own SocketStream, which is made anew for every request and
// drops what it had read ahead, the read-ahead buffer lives as long as the connection: requests a
// client pipelines (sends before the previous answer arrived) are served in order, not lost.
#pragma once
#include <httplib.h>

#include <chrono>
#include <string>
#include <vector>

namespace gs::server {

class SocketStream final : public httplib::Stream {
 public:
  SocketStream(int fd, std::chrono::microseconds read_timeout, std::chrono::microseconds write_timeout);

  bool is_readable() const override;
  // Writable within the write timeout, and the client has not closed its end.
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

  // Waits up to `timeout` for the start of a next request (true at once when one is buffered).
  bool wait_for_input(std::chrono::milliseconds timeout) const;

 private:
  int fd_;
  std::chrono::microseconds read_timeout_, write_timeout_;
  std::vector<char> buf_;     // read ahead: buf_[off_, len_) is not consumed yet
  size_t off_ = 0, len_ = 0;
};

}  // namespace gs::server
