#include "runner/image_pixels_file.h"

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "core/npy.h"

namespace gs {

PreparedImagePtr read_image_pixels(const std::string& npy_path) {
  const NpyArray a = read_npy(npy_path);
  std::string json_path = npy_path;
  if (json_path.size() > 4 && json_path.compare(json_path.size() - 4, 4, ".npy") == 0)
    json_path.resize(json_path.size() - 4);
  json_path += ".json";
  const nlohmann::json j = read_json_file(json_path);
  auto dim = [&](const char* key) {
    GS_CHECK(j.is_object() && j.contains(key) && j[key].is_number_integer(), "{}: \"{}\" must be an integer",
             json_path, key);
    return j[key].get<int>();
  };
  auto im = std::make_shared<PreparedImage>();
  im->height = dim("height");
  im->width = dim("width");
  constexpr int kSide = PreparedImage::kPatch * PreparedImage::kPool;
  GS_CHECK(im->height > 0 && im->width > 0 && im->height % kSide == 0 && im->width % kSide == 0,
           "{}: height {} and width {} must be positive multiples of {}", json_path, im->height, im->width, kSide);
  const int n = im->num_patches();
  im->soft_tokens = n / (PreparedImage::kPool * PreparedImage::kPool);
  im->budget = j.contains("budget") ? dim("budget") : im->soft_tokens;
  GS_CHECK(a.shape.size() == 2 && a.shape[0] == n && a.shape[1] == PreparedImage::kPatchValues,
           "{}: pixel values must be [{}, {}] for a {}x{} image, got {} dimensions", npy_path, n,
           PreparedImage::kPatchValues, im->width, im->height, a.shape.size());
  im->pixels.resize(size_t(a.numel()));
  if (a.dtype == DType::U8) {
    const float inv255 = 1.0f / 255.0f;  // the processor's rescale factor, applied in f32
    for (size_t i = 0; i < im->pixels.size(); ++i) im->pixels[i] = float(a.data[i]) * inv255;
  } else {
    GS_CHECK(a.dtype == DType::F32, "{}: pixel values must be float32 or uint8", npy_path);
    for (size_t i = 0; i < im->pixels.size(); ++i) {
      const float v = a.as<float>()[i];
      GS_CHECK(v >= 0.f && v <= 1.f, "{}: pixel value {} at index {} is outside [0, 1]", npy_path, v, i);
      im->pixels[i] = v;
    }
  }
  const int gw = im->width / PreparedImage::kPatch;
  for (int p = 0; p < n; ++p) {
    im->pos_x.push_back(p % gw);
    im->pos_y.push_back(p / gw);
  }
  return im;
}

}  // namespace gs
