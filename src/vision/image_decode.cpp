#include "vision/image_decode.h"

#include <webp/decode.h>

#include <cstring>
#include <memory>

#include "core/error.h"
#include "vision/image_jpeg.h"
#include "vision/image_stb.h"

namespace gs {

const char* image_format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::Png: return "PNG";
    case ImageFormat::Jpeg: return "JPEG";
    case ImageFormat::Gif: return "GIF";
    case ImageFormat::Bmp: return "BMP";
    case ImageFormat::WebP: return "WebP";
    case ImageFormat::Unknown: break;
  }
  return "unknown";
}

ImageFormat sniff_image_format(const uint8_t* d, size_t n) {
  auto starts = [&](const char* magic, size_t len, size_t at = 0) {
    return n >= at + len && std::memcmp(d + at, magic, len) == 0;
  };
  if (starts("\x89PNG\r\n\x1a\n", 8)) return ImageFormat::Png;
  if (starts("\xFF\xD8\xFF", 3)) return ImageFormat::Jpeg;
  if (starts("GIF87a", 6) || starts("GIF89a", 6)) return ImageFormat::Gif;
  if (starts("BM", 2)) return ImageFormat::Bmp;
  if (starts("RIFF", 4) && starts("WEBP", 4, 8)) return ImageFormat::WebP;
  return ImageFormat::Unknown;
}

namespace {

std::string megabytes(size_t bytes) { return fmt::format("{:.1f} MB", double(bytes) / 1e6); }

void check_pixels(int w, int h, const ImageLimits& limits) {
  if (w <= 0 || h <= 0) throw Error("image has no pixels ({}x{})", w, h);
  if (int64_t(w) * h > limits.max_pixels) {
    throw Error("image of {}x{} pixels exceeds --max-image-pixels {}", w, h, limits.max_pixels);
  }
}

RgbImage decode_webp(const uint8_t* data, size_t size, const ImageLimits& limits) {
  WebPBitstreamFeatures features;
  VP8StatusCode st = WebPGetFeatures(data, size, &features);
  if (st == VP8_STATUS_NOT_ENOUGH_DATA) throw Error("truncated WebP image");
  if (st != VP8_STATUS_OK) throw Error("corrupt WebP image (header status {})", int(st));
  if (features.has_animation) throw Error("animated WebP images are not supported");
  check_pixels(features.width, features.height, limits);
  RgbImage img;
  img.width = features.width;
  img.height = features.height;
  img.pixels.resize(size_t(img.width) * img.height * 3);
  // RGB output drops alpha un-premultiplied, as Pillow's convert("RGB") does.
  if (!WebPDecodeRGBInto(data, size, img.pixels.data(), img.pixels.size(), img.width * 3)) {
    throw Error("corrupt or truncated WebP image");
  }
  return img;
}

// Width and height from the fixed-offset headers of PNG (IHDR), GIF (logical screen) and BMP
// (BITMAPINFOHEADER): read here because stb's own header parse refuses images over 1 GB of
// pixels as corrupt, which would hide the pixel cap's message. JPEG's size sits in a frame marker
// anywhere in the stream: stb reads it.
bool fixed_header_size(ImageFormat fmt, const uint8_t* d, size_t n, int* w, int* h) {
  auto be32 = [&](size_t at) { return uint32_t(d[at]) << 24 | uint32_t(d[at + 1]) << 16 | uint32_t(d[at + 2]) << 8 | d[at + 3]; };
  auto le16 = [&](size_t at) { return uint32_t(d[at]) | uint32_t(d[at + 1]) << 8; };
  auto le32 = [&](size_t at) { return le16(at) | le16(at + 2) << 16; };
  if (fmt == ImageFormat::Png && n >= 24 && std::memcmp(d + 12, "IHDR", 4) == 0) {
    const uint32_t pw = be32(16), ph = be32(20);
    if (pw > INT32_MAX || ph > INT32_MAX) return false;
    *w = int(pw), *h = int(ph);
    return true;
  }
  if (fmt == ImageFormat::Gif && n >= 10) {
    *w = int(le16(6)), *h = int(le16(8));
    return true;
  }
  if (fmt == ImageFormat::Bmp && n >= 26 && le32(14) >= 40) {
    const int32_t bw = int32_t(le32(18)), bh = int32_t(le32(22));
    if (bw <= 0 || bh == INT32_MIN) return false;
    *w = bw, *h = bh < 0 ? -bh : bh;
    return true;
  }
  return false;
}

RgbImage decode_stb(ImageFormat fmt, const uint8_t* data, size_t size, const ImageLimits& limits) {
  int w = 0, h = 0;
  if (fixed_header_size(fmt, data, size, &w, &h)) check_pixels(w, h, limits);
  if (!stb::info(data, size, &w, &h)) {
    throw Error("corrupt or truncated {} image ({})", image_format_name(fmt), stb::failure_reason());
  }
  check_pixels(w, h, limits);
  std::unique_ptr<uint8_t, void (*)(uint8_t*)> px(stb::load_rgb(data, size, &w, &h), stb::free_pixels);
  if (!px) throw Error("corrupt or truncated {} image ({})", image_format_name(fmt), stb::failure_reason());
  // The header stb read first and the frame it decoded agree for every format it knows; checked
  // anyway, since the buffer below is sized from the decode.
  check_pixels(w, h, limits);
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.assign(px.get(), px.get() + size_t(w) * h * 3);
  return img;
}

}  // namespace

RgbImage decode_image(const uint8_t* data, size_t size, const ImageLimits& limits) {
  if (size == 0) throw Error("image is empty (0 bytes)");
  if (size > limits.max_bytes) {
    throw Error("image is {}, over --max-image-bytes {}", megabytes(size), limits.max_bytes);
  }
  // stb takes an int length.
  if (size > size_t(INT32_MAX)) throw Error("image is {}, too large to decode", megabytes(size));
  ImageFormat fmt = sniff_image_format(data, size);
  switch (fmt) {
    case ImageFormat::WebP: return decode_webp(data, size, limits);
    case ImageFormat::Jpeg: return decode_jpeg(data, size, limits);
    case ImageFormat::Png:
    case ImageFormat::Gif:
    case ImageFormat::Bmp: return decode_stb(fmt, data, size, limits);
    case ImageFormat::Unknown: break;
  }
  throw Error("unsupported image format (expected PNG, JPEG, GIF, BMP or WebP)");
}

}  // namespace gs
