#include "vision/image_jpeg.h"

#include <csetjmp>
#include <cstdio>
// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

#include <string>

#include "core/error.h"

namespace gs {

namespace {

struct ErrorManager {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated;
};

// libjpeg's fatal errors must not return: back to decode_jpeg's setjmp with the message.
extern "C" void on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings: a stream that ends early is filled with grey by libjpeg; Pillow refuses such a file
// ("image file is truncated"), so it is an error here too. Other warnings (extra bytes, a bad
// restart marker it recovered from) are ignored as Pillow ignores them.
extern "C" void on_message(j_common_ptr cinfo, int level) {
  auto* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) e->truncated = true;
}

}  // namespace

RgbImage decode_jpeg(const uint8_t* data, size_t size, const ImageLimits& limits) {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  err.truncated = false;
  err.message[0] = '\0';
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = on_error;
  err.mgr.emit_message = on_message;
  RgbImage img;  // declared before setjmp: a longjmp back here skips no destructor
  std::string problem;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    const std::string m = err.message;
    // The memory source ends a short stream with a fake end marker (warning JWRN_JPEG_EOF), so a cut
    // header fails as "contains no image": truncated, not corrupt.
    if (err.truncated || m.find("Premature end") != std::string::npos || m.find("empty") != std::string::npos) {
      throw Error("truncated JPEG image");
    }
    throw Error("corrupt JPEG image ({})", m);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    problem = "CMYK JPEG images are not supported";
  } else if (int64_t(cinfo.image_width) * cinfo.image_height > limits.max_pixels) {
    problem = fmt::format("image of {}x{} pixels exceeds --max-image-pixels {}", cinfo.image_width, cinfo.image_height,
                          limits.max_pixels);
  }
  if (!problem.empty()) {
    jpeg_destroy_decompress(&cinfo);
    throw Error("{}", problem);
  }
  cinfo.out_color_space = JCS_RGB;  // gray is replicated, as convert("RGB") does
  jpeg_start_decompress(&cinfo);
  img.width = int(cinfo.output_width);
  img.height = int(cinfo.output_height);
  img.pixels.resize(size_t(img.width) * img.height * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = img.pixels.data() + size_t(cinfo.output_scanline) * img.width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (err.truncated) throw Error("truncated JPEG image");
  return img;
}

}  // namespace gs
