// Preprocessed image pixels from files: FILE.npy holds the processor's pixel values of one image,
// [patches, 768] (real patches only, row-major: patch row outer, patch column inner), as float32
// values in [0, 1] or as uint8 k meaning k · (1/255) (what the reference processor's rescale gives,
// exactly); FILE.json beside it gives the resized "height" and "width" in pixels (multiples of 48)
// and optionally the "budget" of soft tokens. This is how `gemmaserve logits --image-pixels` and
// the parity tests get images without decoding them.
#pragma once
#include <string>

#include "vision/prepared_image.h"

namespace gs {

// Throws gs::Error naming the file for a missing or malformed file or inconsistent sizes.
PreparedImagePtr read_image_pixels(const std::string& npy_path);

}  // namespace gs
