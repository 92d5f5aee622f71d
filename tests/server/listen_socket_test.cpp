// The listening socket: a taken port is an error naming host:port (no silent sharing through
// SO_REUSEPORT), a port whose previous server just stopped can be bound again at once (its
// connections linger in TIME_WAIT), and which --host values count as this machine only.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "core/error.h"
#include "server/listen_socket.h"

namespace gs::server {
namespace {

std::string open_error(const std::string& host, int port) {
  try {
    ListenSocket::open(host, port, 16);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(ListenSocket, ATakenPortIsAnErrorNamingIt) {
  ListenSocket first = ListenSocket::open("127.0.0.1", 0, 16);
  ASSERT_GT(first.port(), 0);
  std::string err = open_error("127.0.0.1", first.port());
  std::string where = "127.0.0.1:" + std::to_string(first.port());
  EXPECT_NE(err.find(where), std::string::npos) << err;
  EXPECT_NE(err.find("already in use"), std::string::npos) << err;
  // Also when the second server asks for every address and the first holds only loopback.
  err = open_error("0.0.0.0", first.port());
  EXPECT_NE(err.find("already in use"), std::string::npos) << err;
}

TEST(ListenSocket, APortIsFreeAgainRightAfterItsServerStopped) {
  int port = 0;
  {
    ListenSocket s = ListenSocket::open("127.0.0.1", 0, 16);
    port = s.port();
    // A connection the server side closes first stays in TIME_WAIT on the server's port.
    int client = connect_to(port);
    ASSERT_GE(client, 0);
    int conn = accept(s.fd(), nullptr, nullptr);
    ASSERT_GE(conn, 0);
    close(conn);
    char c;
    EXPECT_EQ(read(client, &c, 1), 0);
    close(client);
  }
  ListenSocket again = ListenSocket::open("127.0.0.1", port, 16);
  EXPECT_EQ(again.port(), port);
}

TEST(ListenSocket, AnAddressOfAnotherMachineIsNamed) {
  // TEST-NET-1: not an address of this machine (unless the kernel allows non-local binds).
  std::string err = open_error("192.0.2.1", 8123);
  if (err.empty()) GTEST_SKIP() << "this machine lets a socket bind addresses it does not have (ip_nonlocal_bind)";
  EXPECT_NE(err.find("192.0.2.1:8123"), std::string::npos) << err;
  EXPECT_NE(err.find("not one of this machine's"), std::string::npos) << err;
}

TEST(ListenSocket, LoopbackHosts) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "127.255.255.254", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1",
                        "localhost", "LocalHost", "localhost.", "api.localhost"}) {
    EXPECT_TRUE(is_loopback_host(h)) << h;
  }
  for (const char* h : {"0.0.0.0", "::", "", "10.0.0.1", "128.0.0.1", "192.168.1.5", "::ffff:10.0.0.1", "fe80::1",
                        "example.com", "localhost.example.com", "mylocalhost", "126.255.255.255"}) {
    EXPECT_FALSE(is_loopback_host(h)) << h;
  }
}

}  // namespace
}  // namespace gs::server
