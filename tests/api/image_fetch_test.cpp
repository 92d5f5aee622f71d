// http:// image URLs: fetched only from hosts in --allowed-media-domains, within the byte cap,
// without following redirects; served here by a loopback cpp-httplib server.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <thread>

#include "api/image_source.h"
#include "core/error.h"

namespace gs::api {
namespace {

class ImageFetchTest : public ::testing::Test {
 protected:
  httplib::Server server;
  std::thread thread;
  int port = 0;
  MultimodalOptions opts;

  void SetUp() override {
    server.Get("/a.png", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(1000, 'x'), "image/png");
    });
    server.Get("/moved", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/a.png"); });
    port = server.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    thread = std::thread([this] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    opts.allowed_media_domains = {"127.0.0.1"};
    opts.fetch_timeout_s = 5;
  }
  void TearDown() override {
    server.stop();
    thread.join();
  }
  std::string url(const std::string& path) { return "http://127.0.0.1:" + std::to_string(port) + path; }
  std::string error(const std::string& u) {
    try {
      fetch_image_bytes(u, opts);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(ImageFetchTest, FetchesFromAnAllowedHost) { EXPECT_EQ(fetch_image_bytes(url("/a.png"), opts).size(), 1000u); }

TEST_F(ImageFetchTest, RefusesOtherHostsRedirectsMissingFilesAndTheByteCap) {
  opts.allowed_media_domains = {"localhost"};
  EXPECT_NE(error(url("/a.png")).find("not in --allowed-media-domains"), std::string::npos);
  opts.allowed_media_domains = {"127.0.0.1"};
  EXPECT_NE(error(url("/moved")).find("HTTP status 302"), std::string::npos);
  EXPECT_NE(error(url("/nothing")).find("HTTP status 404"), std::string::npos);
  opts.limits.max_bytes = 100;
  EXPECT_NE(error(url("/a.png")).find("over --max-image-bytes 100"), std::string::npos);
  EXPECT_NE(error("http://user:pw@127.0.0.1/a.png").find("credentials"), std::string::npos);
}

}  // namespace
}  // namespace gs::api
