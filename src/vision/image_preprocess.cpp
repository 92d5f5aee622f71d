#include "vision/image_preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "core/error.h"

namespace gs {

namespace {

constexpr int kSide = PreparedImage::kPatch * PreparedImage::kPool;  // 48: resized sides are multiples

// Keys' cubic convolution with a = -0.5, as PIL and torch's antialiased bicubic use.
double cubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}

// One resampling pass along one axis: for output i, taps[i].w (fixed point, `precision` fraction
// bits) weigh the inputs from taps[i].first on.
struct Taps {
  int first = 0;
  std::vector<int32_t> w;
};
struct Pass {
  std::vector<Taps> taps;
  int precision = 0;
};

// torch's uint8 antialiased resampling weights (_compute_index_ranges_int16_weights, PIL's
// scheme): the filter widened by the scale when downscaling, weights normalised in double, then
// scaled to int16 with as many fraction bits as the largest weight leaves.
Pass pass_for(int in, int out) {
  const double scale = double(in) / double(out);
  const double support = scale >= 1.0 ? 2.0 * scale : 2.0;
  const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  std::vector<std::vector<double>> weights(out);
  std::vector<int> first(out);
  double w_max = 0;
  for (int i = 0; i < out; ++i) {
    const double center = scale * (i + 0.5);
    const int xmin = std::max(int(int64_t(center - support + 0.5)), 0);
    const int xmax = std::min(int(int64_t(center + support + 0.5)), in);
    first[i] = xmin;
    double total = 0;
    for (int j = xmin; j < xmax; ++j) {
      weights[i].push_back(cubic((j - center + 0.5) * invscale));
      total += weights[i].back();
    }
    for (double& w : weights[i]) {
      if (total != 0) w /= total;
      w_max = std::max(w_max, w);
    }
  }
  Pass p;
  for (p.precision = 0; p.precision < 22; ++p.precision) {
    if (int(0.5 + w_max * double(1 << (p.precision + 1))) >= (1 << 15)) break;
  }
  p.taps.resize(out);
  for (int i = 0; i < out; ++i) {
    p.taps[i].first = first[i];
    for (double w : weights[i]) {
      const double v = w * double(1 << p.precision);
      p.taps[i].w.push_back(int32_t(v < 0 ? -0.5 + v : 0.5 + v));
    }
  }
  return p;
}

uint8_t clip8(int64_t acc, int precision) { return uint8_t(std::clamp<int64_t>(acc >> precision, 0, 255)); }

// A pass along the width of an RGB image (the contiguous axis).
RgbImage resample_width(const RgbImage& src, int width) {
  const Pass p = pass_for(src.width, width);
  RgbImage dst;
  dst.width = width;
  dst.height = src.height;
  dst.pixels.resize(size_t(width) * src.height * 3);
  const int64_t half = int64_t(1) << (p.precision - 1);
  for (int y = 0; y < src.height; ++y) {
    const uint8_t* row = src.pixels.data() + size_t(y) * src.width * 3;
    uint8_t* out = dst.pixels.data() + size_t(y) * width * 3;
    for (int x = 0; x < width; ++x) {
      const Taps& t = p.taps[x];
      for (int c = 0; c < 3; ++c) {
        int64_t acc = half;
        for (size_t j = 0; j < t.w.size(); ++j) acc += int64_t(row[(t.first + j) * 3 + c]) * t.w[j];
        out[x * 3 + c] = clip8(acc, p.precision);
      }
    }
  }
  return dst;
}

// A pass along the height.
RgbImage resample_height(const RgbImage& src, int height) {
  const Pass p = pass_for(src.height, height);
  RgbImage dst;
  dst.width = src.width;
  dst.height = height;
  const size_t stride = size_t(src.width) * 3;
  dst.pixels.resize(stride * height);
  const int64_t half = int64_t(1) << (p.precision - 1);
  std::vector<int64_t> acc(stride);
  for (int y = 0; y < height; ++y) {
    const Taps& t = p.taps[y];
    std::fill(acc.begin(), acc.end(), half);
    for (size_t j = 0; j < t.w.size(); ++j) {
      const uint8_t* in = src.pixels.data() + (t.first + j) * stride;
      for (size_t k = 0; k < stride; ++k) acc[k] += int64_t(in[k]) * t.w[j];
    }
    uint8_t* out = dst.pixels.data() + y * stride;
    for (size_t k = 0; k < stride; ++k) out[k] = clip8(acc[k], p.precision);
  }
  return dst;
}

// A 64-bit keyed hash (multiply-fold mixing over 16-byte blocks). The key is random per process: the
// hash only has to tell images apart within one server's prefix cache, and a client cannot build two
// images that collide without knowing it.
uint64_t mix(uint64_t a, uint64_t b) {
  __uint128_t r = __uint128_t(a) * b;
  return uint64_t(r) ^ uint64_t(r >> 64);
}

uint64_t process_key() {
  static const uint64_t key = [] {
    std::random_device rd;
    return (uint64_t(rd()) << 32 | rd()) | 1;
  }();
  return key;
}

uint64_t keyed_hash(const uint8_t* p, size_t n, uint64_t seed) {
  constexpr uint64_t k1 = 0xa0761d6478bd642full, k2 = 0xe7037ed1a0b428dbull;
  uint64_t h = seed ^ process_key() ^ mix(n, k1);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint64_t a, b;
    std::memcpy(&a, p + i, 8);
    std::memcpy(&b, p + i + 8, 8);
    h = mix(a ^ k1 ^ h, b ^ k2);
  }
  uint64_t a = 0, b = 0;
  std::memcpy(&a, p + i, std::min<size_t>(8, n - i));
  if (n - i > 8) std::memcpy(&b, p + i + 8, n - i - 8);
  return mix(mix(a ^ k1 ^ h, b ^ k2), k1 ^ n);
}

}  // namespace

bool is_image_budget(int budget) {
  return std::find(kImageBudgets.begin(), kImageBudgets.end(), budget) != kImageBudgets.end();
}

ImageSize image_target_size(int height, int width, int budget) {
  GS_CHECK(height > 0 && width > 0, "image of {}x{} pixels has nothing to resize", width, height);
  const int64_t max_patches = int64_t(budget) * PreparedImage::kPool * PreparedImage::kPool;
  const double target_px = double(max_patches) * PreparedImage::kPatch * PreparedImage::kPatch;
  // Python's math.sqrt(target_px / total_px) and floor(factor * side / 48), in double as it is there.
  const double factor = std::sqrt(target_px / (double(height) * double(width)));
  int64_t th = int64_t(std::floor(factor * height / kSide)) * kSide;
  int64_t tw = int64_t(std::floor(factor * width / kSide)) * kSide;
  const int64_t max_side = (max_patches / (PreparedImage::kPool * PreparedImage::kPool)) * kSide;
  if (th == 0 && tw == 0) throw Error("image of {}x{} pixels cannot be resized to a {}-token budget", width, height, budget);
  if (th == 0) {
    th = kSide;
    tw = std::min(int64_t(std::floor(double(width) / height)) * kSide, max_side);
  } else if (tw == 0) {
    tw = kSide;
    th = std::min(int64_t(std::floor(double(height) / width)) * kSide, max_side);
  }
  if (double(th) * double(tw) > target_px) {
    throw Error("image of {}x{} pixels is too elongated for a {}-token budget (resized {}x{} would exceed it)", width,
                height, budget, tw, th);
  }
  return {int(th), int(tw)};
}

RgbImage resize_bicubic_antialias(const RgbImage& src, int height, int width) {
  // Width first, then height, each rounded back to 8 bits; a side that keeps its size is skipped.
  if (width == src.width && height == src.height) return src;
  if (width == src.width) return resample_height(src, height);
  RgbImage mid = resample_width(src, width);
  return height == src.height ? mid : resample_height(mid, height);
}

PreparedImage prepare_image(const RgbImage& rgb, int budget) {
  if (!is_image_budget(budget)) throw Error("image budget {} is not one of 70, 140, 280, 560, 1120", budget);
  GS_CHECK(rgb.width > 0 && rgb.height > 0 && rgb.pixels.size() == size_t(rgb.width) * rgb.height * 3,
           "image of {}x{} pixels has {} bytes of RGB", rgb.width, rgb.height, rgb.pixels.size());
  const ImageSize ts = image_target_size(rgb.height, rgb.width, budget);
  RgbImage resized;
  const RgbImage* img = &rgb;
  if (ts.height != rgb.height || ts.width != rgb.width) {
    resized = resize_bicubic_antialias(rgb, ts.height, ts.width);
    img = &resized;
  }
  constexpr int P = PreparedImage::kPatch;
  PreparedImage out;
  out.height = ts.height;
  out.width = ts.width;
  out.budget = budget;
  const int gh = ts.height / P, gw = ts.width / P;
  out.soft_tokens = gh * gw / (PreparedImage::kPool * PreparedImage::kPool);
  out.pixels.resize(size_t(gh) * gw * PreparedImage::kPatchValues);
  out.pos_x.resize(size_t(gh) * gw);
  out.pos_y.resize(size_t(gh) * gw);
  // The reference multiplies the uint8 tensor by 1/255 in float32.
  const float rescale = float(1.0 / 255.0);
  float* dst = out.pixels.data();
  for (int py = 0; py < gh; ++py) {
    for (int px = 0; px < gw; ++px) {
      out.pos_x[size_t(py) * gw + px] = px;
      out.pos_y[size_t(py) * gw + px] = py;
      for (int r = 0; r < P; ++r) {
        const uint8_t* src = img->pixels.data() + (size_t(py * P + r) * ts.width + size_t(px) * P) * 3;
        for (int k = 0; k < P * 3; ++k) *dst++ = float(src[k]) * rescale;
      }
    }
  }
  const uint64_t shape = uint64_t(budget) << 40 ^ uint64_t(ts.height) << 20 ^ uint64_t(ts.width);
  out.content_hash = keyed_hash(img->pixels.data(), img->pixels.size(), shape);
  return out;
}

}  // namespace gs
