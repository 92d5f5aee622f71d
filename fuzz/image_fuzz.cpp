// libFuzzer target for image input: bytes as a client could send them (a data: URL's payload),
// through decode_image (format sniffing, PNG/GIF/BMP with stb_image, JPEG with libjpeg-turbo,
// WebP with libwebp, the header-checked caps) and prepare_image (resize, patchify, hash).
// Decoding may fail only with gs::Error; anything else (a crash, another exception, a prepared
// image whose shape disagrees with itself) is a finding.
#include <cstdint>
#include <cstdlib>

#include "core/error.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Caps far below the server's defaults: the fuzzer should spend its time on parsers, not on
  // resizing a large canvas a 30-byte header claims.
  gs::ImageLimits limits;
  limits.max_bytes = 1 << 20;
  limits.max_pixels = 1 << 20;
  gs::RgbImage rgb;
  try {
    rgb = gs::decode_image(data, size, limits);
  } catch (const gs::Error&) {
    return 0;
  }
  if (rgb.width <= 0 || rgb.height <= 0 || rgb.pixels.size() != size_t(rgb.width) * rgb.height * 3) std::abort();
  // Preprocessing costs the same for any input size (the output is ~160k pixels at the smallest
  // budget, 70): only for small decodes, so most of the fuzzing time goes to the decoders. A long
  // thin image is refused (gs::Error) rather than resized.
  if (int64_t(rgb.width) * rgb.height > 64 * 64) return 0;
  try {
    gs::PreparedImage p = gs::prepare_image(rgb, 70);
    if (p.pixels.size() != size_t(p.num_patches()) * gs::PreparedImage::kPatchValues || p.soft_tokens > 70 ||
        p.soft_tokens * 9 != p.num_patches() || p.pos_x.size() != size_t(p.num_patches()))
      std::abort();
  } catch (const gs::Error&) {
  }
  return 0;
}
