#include "bench/image_dataset.h"

#include <random>

#include "core/error.h"

namespace gs::bench {

std::vector<ImageSize> parse_image_sizes(const std::string& text) {
  std::vector<ImageSize> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    ImageSize s;
    char x = 0;
    int used = 0;
    if (std::sscanf(item.c_str(), "%d%c%d%n", &s.height, &x, &s.width, &used) != 3 || x != 'x' ||
        used != int(item.size()) || s.height <= 0 || s.width <= 0 || s.height > 16384 || s.width > 16384) {
      throw Error("--random-mm-image-sizes: \"{}\" is not HEIGHTxWIDTH (e.g. 720x1280) with sides in [1, 16384]", item);
    }
    out.push_back(s);
    start = comma + 1;
  }
  return out;
}

std::string random_bmp_data_url(int height, int width, uint64_t seed) {
  const uint32_t row = (uint32_t(width) * 3 + 3) & ~3u;
  const uint32_t data = row * uint32_t(height), file = 54 + data;
  std::string bmp(file, '\0');
  auto put = [&](size_t at, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) bmp[at + i] = char((v >> (8 * i)) & 0xff);
  };
  bmp[0] = 'B', bmp[1] = 'M';
  put(2, file, 4);
  put(10, 54, 4);             // pixel data offset
  put(14, 40, 4);             // BITMAPINFOHEADER
  put(18, uint32_t(width), 4);
  put(22, uint32_t(height), 4);
  put(26, 1, 2);              // planes
  put(28, 24, 2);             // bits per pixel
  put(34, data, 4);
  std::mt19937_64 rng(seed);
  for (size_t i = 54; i < bmp.size(); i += 8) {
    uint64_t v = rng();
    for (size_t k = 0; k < 8 && i + k < bmp.size(); ++k) bmp[i + k] = char(v >> (8 * k));
  }
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "data:image/bmp;base64,";
  out.reserve(out.size() + (bmp.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bmp.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bmp[i])) << 16;
    if (i + 1 < bmp.size()) v |= uint32_t(uint8_t(bmp[i + 1])) << 8;
    if (i + 2 < bmp.size()) v |= uint8_t(bmp[i + 2]);
    out += alphabet[v >> 18 & 63];
    out += alphabet[v >> 12 & 63];
    out += i + 1 < bmp.size() ? alphabet[v >> 6 & 63] : '=';
    out += i + 2 < bmp.size() ? alphabet[v & 63] : '=';
  }
  return out;
}

void add_random_images(std::vector<BenchRequest>& requests, const RandomMmOptions& o) {
  GS_CHECK(o.items_per_request >= 1, "--random-mm-base-items-per-request must be at least 1");
  GS_CHECK(!o.sizes.empty(), "--random-mm-image-sizes: no size given");
  std::mt19937_64 rng(o.seed ^ 0x696d616765ull);
  std::uniform_int_distribution<size_t> pick(0, o.sizes.size() - 1);
  for (BenchRequest& r : requests) {
    for (int i = 0; i < o.items_per_request; ++i) {
      const ImageSize s = o.sizes[pick(rng)];
      r.image_urls.push_back(random_bmp_data_url(s.height, s.width, rng()));
    }
    r.prompt_len = 0;
  }
}

}  // namespace gs::bench
