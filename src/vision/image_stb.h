// The few stb_image calls the decoder uses (PNG, GIF first frame, BMP), behind a header that
// does not pull stb_image.h's implementation macros into other files.
#pragma once
#include <cstddef>
#include <cstdint>

namespace gs::stb {

// Reads the header only: width and height, or false when stb cannot parse it.
bool info(const uint8_t* data, size_t size, int* w, int* h);
// Decodes to 8-bit RGB (alpha dropped, gray replicated); nullptr on failure. Free with free_pixels.
uint8_t* load_rgb(const uint8_t* data, size_t size, int* w, int* h);
void free_pixels(uint8_t* p);
// Why the last call on this thread failed (stb keeps it thread-local).
const char* failure_reason();

}  // namespace gs::stb
