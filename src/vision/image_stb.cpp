// stb_image's implementation (PNG, GIF, BMP; JPEG is libjpeg-turbo's, image_jpeg.h), compiled here (Debian's libstb-dev header) rather than linked from
// libstb.so: one library less to carry to the GPU machine, and only the decoders the server
// accepts are built. Other files reach it through image_stb.h only.
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_ONLY_GIF
#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
// The decoders' own sanity cap on a side; the server's pixel cap is checked before decoding.
#define STBI_MAX_DIMENSIONS (1 << 16)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
// Reported (by gcc) where stb's reader is inlined into the wrappers below, so the pop is at the end.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <stb/stb_image.h>

#include "vision/image_stb.h"

namespace gs::stb {

bool info(const uint8_t* data, size_t size, int* w, int* h) {
  int comp = 0;
  return stbi_info_from_memory(data, static_cast<int>(size), w, h, &comp) != 0;
}

uint8_t* load_rgb(const uint8_t* data, size_t size, int* w, int* h) {
  int comp = 0;
  return stbi_load_from_memory(data, static_cast<int>(size), w, h, &comp, 3);
}

void free_pixels(uint8_t* p) { stbi_image_free(p); }

const char* failure_reason() {
  const char* r = stbi_failure_reason();
  return r ? r : "unknown error";
}

}  // namespace gs::stb

#pragma GCC diagnostic pop
