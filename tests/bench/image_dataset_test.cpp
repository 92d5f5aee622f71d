// The random-mm dataset: images added to every request as BMP data: URLs of the drawn sizes, and
// the chat body that carries them as image_url parts.
#include <gtest/gtest.h>

#include "bench/image_dataset.h"
#include "bench/stream_request.h"
#include "core/error.h"

namespace gs::bench {
namespace {

std::string unbase64_prefix(const std::string& url, size_t n) {
  static const std::string a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string b64 = url.substr(url.find(',') + 1, (n + 2) / 3 * 4);
  std::string out;
  for (size_t i = 0; i + 3 < b64.size() + 1 && i < b64.size(); i += 4) {
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v = v << 6 | uint32_t(a.find(b64[i + k]));
    out += char(v >> 16), out += char(v >> 8 & 255), out += char(v & 255);
  }
  return out.substr(0, n);
}

uint32_t le32(const std::string& s, size_t at) {
  return uint8_t(s[at]) | uint8_t(s[at + 1]) << 8 | uint8_t(s[at + 2]) << 16 | uint32_t(uint8_t(s[at + 3])) << 24;
}

TEST(RandomMm, ParsesSizes) {
  auto s = parse_image_sizes("720x1280,256x256");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].height, 720);
  EXPECT_EQ(s[0].width, 1280);
  EXPECT_THROW(parse_image_sizes("720"), Error);
  EXPECT_THROW(parse_image_sizes("720x0"), Error);
  EXPECT_THROW(parse_image_sizes("720x1280x3"), Error);
}

TEST(RandomMm, BmpOfTheDrawnSize) {
  std::string url = random_bmp_data_url(3, 5, 1);
  ASSERT_EQ(url.rfind("data:image/bmp;base64,", 0), 0u);
  std::string head = unbase64_prefix(url, 54);
  EXPECT_EQ(head.substr(0, 2), "BM");
  EXPECT_EQ(le32(head, 18), 5u);  // width
  EXPECT_EQ(le32(head, 22), 3u);  // height
  EXPECT_EQ(le32(head, 2), 54u + 16 * 3);  // rows of 15 bytes padded to 16
  EXPECT_NE(random_bmp_data_url(3, 5, 2), url);
}

TEST(RandomMm, EveryRequestGetsItsImagesInTheChatBody) {
  std::vector<BenchRequest> reqs(3, BenchRequest{"hello", 7, 4, {}});
  RandomMmOptions o;
  o.items_per_request = 2;
  o.sizes = {{4, 4}};
  add_random_images(reqs, o);
  for (const auto& r : reqs) {
    EXPECT_EQ(r.image_urls.size(), 2u);
    EXPECT_EQ(r.prompt_len, 0);  // the server's usage counts the image tokens
  }
  RequestSettings s;
  s.endpoint = ApiEndpoint::ChatCompletions;
  auto body = request_body(s, reqs[0]);
  const auto& content = body["messages"][0]["content"];
  ASSERT_EQ(content.size(), 3u);
  EXPECT_EQ(content[0]["text"], "hello");
  EXPECT_EQ(content[1]["type"], "image_url");
  EXPECT_EQ(content[2]["image_url"]["url"], reqs[0].image_urls[1]);
}

}  // namespace
}  // namespace gs::bench
