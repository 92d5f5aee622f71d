// Encoded image bytes (PNG, JPEG, GIF, BMP, WebP) to 8-bit RGB pixels (stb_image for PNG, GIF and
// BMP; libjpeg-turbo and libwebp, the libraries Pillow uses, for JPEG and WebP), as the reference's
// Image.open(...).convert("RGB") sees them: the format is sniffed from the magic bytes (never from a
// file name or a MIME type a client sent), a GIF gives its first frame, and alpha is dropped, not
// composited. The size limits are checked from the header before any pixel is decoded, so a small
// file that claims a huge canvas costs nothing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gs {

enum class ImageFormat { Unknown, Png, Jpeg, Gif, Bmp, WebP };

const char* image_format_name(ImageFormat f);  // "PNG", "JPEG", ..., "unknown"
ImageFormat sniff_image_format(const uint8_t* data, size_t size);

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // [height, width, 3], row-major
};

struct ImageLimits {
  // Defaults as the server's flags (--max-image-bytes, --max-image-pixels): 20 MiB, and 32 Mpx
  // (a 8192x4096 photo; the decoded RGB of the cap is 96 MiB).
  size_t max_bytes = size_t(20) << 20;
  int64_t max_pixels = int64_t(1) << 25;
};

// Throws gs::Error naming the problem: "unsupported image format", "truncated PNG", "image of
// 20000x20000 pixels exceeds --max-image-pixels 33554432", "image is 30 MB, over --max-image-bytes".
RgbImage decode_image(const uint8_t* data, size_t size, const ImageLimits& limits = {});
inline RgbImage decode_image(const std::string& bytes, const ImageLimits& limits = {}) {
  return decode_image(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), limits);
}

}  // namespace gs
