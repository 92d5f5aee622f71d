// Which waiting connections the probe lane may answer out of turn: exactly one complete GET or
// HEAD of /health, /metrics or /v1/models; never another route, a body, pipelined requests, or a
// request that has not arrived whole.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "server/probe_request.h"

namespace gs::server {
namespace {

const std::string kHealth = "GET /health HTTP/1.1\r\nHost: x\r\nUser-Agent: kube-probe/1.30\r\n\r\n";

TEST(ProbeRequest, CompleteProbesAreRecognised) {
  EXPECT_EQ(classify_probe_request(kHealth), ProbeCheck::Probe);
  EXPECT_EQ(classify_probe_request("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), ProbeCheck::Probe);
  EXPECT_EQ(classify_probe_request("GET /v1/models HTTP/1.1\r\nAuthorization: Bearer k\r\n\r\n"), ProbeCheck::Probe);
  EXPECT_EQ(classify_probe_request("HEAD /health HTTP/1.1\r\n\r\n"), ProbeCheck::Probe);
  EXPECT_EQ(classify_probe_request("GET /health?verbose=1 HTTP/1.0\r\n\r\n"), ProbeCheck::Probe);
}

TEST(ProbeRequest, EverythingElseKeepsItsPlace) {
  EXPECT_EQ(classify_probe_request("POST /v1/completions HTTP/1.1\r\n"), ProbeCheck::NotProbe);
  EXPECT_EQ(classify_probe_request("POST /health HTTP/1.1\r\n\r\n"), ProbeCheck::NotProbe);
  EXPECT_EQ(classify_probe_request("GET /healthz HTTP/1.1\r\n\r\n"), ProbeCheck::NotProbe);
  EXPECT_EQ(classify_probe_request("GET /v1/models/demo HTTP/1.1\r\n\r\n"), ProbeCheck::NotProbe);
  EXPECT_EQ(classify_probe_request("GET /healthy"), ProbeCheck::NotProbe);  // decided before the line ends
  EXPECT_EQ(classify_probe_request("POS"), ProbeCheck::NotProbe);
  EXPECT_EQ(classify_probe_request("garbage\r\n\r\n"), ProbeCheck::NotProbe);
  // A body, or a second request pipelined behind the probe: the connection's own thread serves
  // all of it, in order.
  EXPECT_EQ(classify_probe_request(kHealth + "GET /health HTTP/1.1\r\n\r\n"), ProbeCheck::NotProbe);
  EXPECT_EQ(classify_probe_request("GET /health HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"), ProbeCheck::NotProbe);
  // A head that never ends is not waited for forever.
  EXPECT_EQ(classify_probe_request("GET /health HTTP/1.1\r\nX: " + std::string(5000, 'a')), ProbeCheck::NotProbe);
}

TEST(ProbeRequest, IncompleteRequestsAreAskedAgain) {
  EXPECT_EQ(classify_probe_request(""), ProbeCheck::NotYet);
  EXPECT_EQ(classify_probe_request("G"), ProbeCheck::NotYet);
  EXPECT_EQ(classify_probe_request("GET /hea"), ProbeCheck::NotYet);
  EXPECT_EQ(classify_probe_request("GET /health HTTP/1.1\r\nHost: x\r\n"), ProbeCheck::NotYet);
  for (size_t n = 0; n < kHealth.size(); ++n) {
    EXPECT_EQ(classify_probe_request(kHealth.substr(0, n)), ProbeCheck::NotYet) << n;
  }
}

TEST(ProbeRequest, PeekingLeavesTheBytesForTheReader) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  EXPECT_EQ(peek_probe_request(sv[0]), ProbeCheck::NotYet);  // nothing sent yet: does not block
  ASSERT_EQ(write(sv[1], kHealth.data(), kHealth.size()), static_cast<ssize_t>(kHealth.size()));
  EXPECT_EQ(peek_probe_request(sv[0]), ProbeCheck::Probe);
  EXPECT_EQ(peek_probe_request(sv[0]), ProbeCheck::Probe);
  std::string got(kHealth.size(), '\0');
  ASSERT_EQ(read(sv[0], got.data(), got.size()), static_cast<ssize_t>(got.size()));
  EXPECT_EQ(got, kHealth);
  close(sv[1]);
  EXPECT_EQ(peek_probe_request(sv[0]), ProbeCheck::NotProbe);  // the client left
  close(sv[0]);
}

}  // namespace
}  // namespace gs::server
