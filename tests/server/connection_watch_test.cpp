// ConnectionWatch on real loopback TCP connections: it finds the accepted socket from the
// addresses an HTTP request reports, and tells a closed client from a quiet or chatty one.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "server/connection_watch.h"

namespace gs::server {
namespace {

using namespace std::chrono_literals;

struct Endpoint {
  std::string addr;
  int port = -1;
};

Endpoint endpoint_of(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) : getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  EXPECT_EQ(rc, 0);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
  return {text, ntohs(a.sin_port)};
}

// A listening socket on a free loopback port, a client connected to it and the accepted end.
class Loopback : public ::testing::Test {
 protected:
  void SetUp() override {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(listener, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(listen(listener, 8), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
    client = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    server = accept(listener, nullptr, nullptr);
    ASSERT_GE(server, 0);
  }
  void TearDown() override {
    for (int fd : {client, server, listener}) {
      if (fd >= 0) close(fd);
    }
  }
  std::optional<ConnectionWatch> watch_server_end() {
    Endpoint local = endpoint_of(server, false), remote = endpoint_of(server, true);
    return ConnectionWatch::find(local.addr, local.port, remote.addr, remote.port);
  }
  int listener = -1, client = -1, server = -1;
};

TEST_F(Loopback, FindsTheAcceptedSocketNotTheClientOne) {
  auto w = watch_server_end();
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->fd(), server);
  // The same 4-tuple seen from the client's side is the client's socket.
  Endpoint local = endpoint_of(client, false), remote = endpoint_of(client, true);
  auto c = ConnectionWatch::find(local.addr, local.port, remote.addr, remote.port);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->fd(), client);
  // Nothing matches a port no socket uses.
  EXPECT_FALSE(ConnectionWatch::find("127.0.0.1", endpoint_of(server, false).port, "127.0.0.1", 1).has_value());
  EXPECT_FALSE(ConnectionWatch::find("127.0.0.1", 0, "127.0.0.1", 0).has_value());
}

TEST_F(Loopback, QuietAndPipeliningClientsAreConnected) {
  auto w = watch_server_end();
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->peer_closed());
  ASSERT_EQ(write(client, "GET / HTTP/1.1\r\n", 16), 16);
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(w->peer_closed());  // unread bytes are not a hang-up
  char buf[16];
  ASSERT_EQ(read(server, buf, sizeof buf), 16);  // and peeking did not consume them
}

// The hang-up reaches the server end asynchronously: poll for up to 0.5 s.
template <typename Watch>
bool noticed_within_half_a_second(Watch& w) {
  for (int i = 0; i < 100; ++i) {
    if (w.peer_closed()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

TEST_F(Loopback, ClosedClientIsNoticed) {
  auto w = watch_server_end();
  ASSERT_TRUE(w);
  close(client);
  client = -1;
  EXPECT_TRUE(noticed_within_half_a_second(*w));
}

TEST_F(Loopback, ClosedClientWithUnreadBytesIsNoticed) {
  auto w = watch_server_end();
  ASSERT_TRUE(w);
  ASSERT_EQ(write(client, "xyz", 3), 3);
  close(client);
  client = -1;
  EXPECT_TRUE(noticed_within_half_a_second(*w));
}

}  // namespace
}  // namespace gs::server
