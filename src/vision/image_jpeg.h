// JPEG decoding with libjpeg-turbo, the library Pillow decodes JPEG with: its integer IDCT and
// fancy chroma upsampling give the reference's pixels exactly, where stb_image's own IDCT is up to
// 3/255 off after the resize.
#pragma once
#include <cstddef>
#include <cstdint>

#include "vision/image_decode.h"

namespace gs {

// Throws gs::Error: "truncated JPEG image", "corrupt JPEG image (...)", the pixel cap (checked
// after the header, before any pixel is decoded), CMYK images.
RgbImage decode_jpeg(const uint8_t* data, size_t size, const ImageLimits& limits);

}  // namespace gs
