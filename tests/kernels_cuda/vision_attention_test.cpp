// gs::cuda::vision_attention against a double-precision reference computed here from the same
// bf16 inputs: ragged packed images, both tower head dims, q/k/v as column slices of one fused
// qkv buffer (the tower's layout) and as separate tensors. Rows of the output that no image owns
// are NaN-poisoned and must stay NaN (nothing writes outside its image); every owned element must
// be finite and within the paged-attention tests' bound.
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cuda/vision_attention.h"

namespace gs::test {
namespace {

using bf16 = __nv_bfloat16;
using cuda::vattn::VisionTile;

float bits_to_f32(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t f32_to_bits(float f) {  // round to nearest even (inputs are finite)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    if (cudaMalloc(&p, bytes ? bytes : 16) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

struct VisionCase {
  std::vector<int> rows;    // rows of each image
  int heads = 12;
  int head_dim = 64;
  bool fused_qkv = true;    // q, k, v are column slices of one [rows, 3·width + pad] buffer
  int extra_rows = 3;       // poisoned rows after the last image (must stay untouched)
  int tile = -1;            // >= 0: this VisionTile, else the one vision_attention() chooses
};

struct VisionResult {
  int64_t elems = 0, bad = 0, nonfinite = 0, poison_overwritten = 0;
  double rel_err = 0;
  std::string first_bad;
};

class VisionAttentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
    std::random_device rd;
    seed_ = (uint64_t(rd()) << 32) ^ rd();
    rng_.seed(seed_);
    RecordProperty("seed", std::to_string(seed_));
  }

  VisionResult run(const VisionCase& c) {
    std::vector<int> cu(c.rows.size() + 1, 0);
    int max_rows = 0;
    for (size_t i = 0; i < c.rows.size(); ++i) cu[i + 1] = cu[i] + c.rows[i], max_rows = std::max(max_rows, c.rows[i]);
    const int total = cu.back(), alloc_rows = total + c.extra_rows;
    const int64_t width = int64_t(c.heads) * c.head_dim;
    // Fused: [q | k | v | 8 unused] per row, so every view's stride is 3·width + 8.
    const int64_t stride = c.fused_qkv ? 3 * width + 8 : width;
    const int64_t view_elems = int64_t(alloc_rows) * stride;
    const int num_buffers = c.fused_qkv ? 1 : 3;

    // q ~ U(-2, 2), k, v ~ U(-1, 1): scores of a few units, as the tower's normed q/k give.
    std::uniform_real_distribution<float> uq(-2.f, 2.f), ukv(-1.f, 1.f);
    const std::vector<uint16_t> zeros(static_cast<size_t>(view_elems));
    std::vector<std::vector<uint16_t>> host(static_cast<size_t>(num_buffers), zeros);
    for (int b = 0; b < num_buffers; ++b)
      for (int64_t i = 0; i < view_elems; ++i) {
        const int64_t colm = i % stride;
        const bool is_q = c.fused_qkv ? colm < width : b == 0;
        host[size_t(b)][size_t(i)] = f32_to_bits(is_q ? uq(rng_) : ukv(rng_));
      }
    // The values the kernel reads, as floats: qkv[which][(row·heads + head)·head_dim + e].
    std::vector<std::vector<float>> qkv(3, std::vector<float>(static_cast<size_t>(int64_t(alloc_rows) * width)));
    for (int which = 0; which < 3; ++which) {
      const int b = c.fused_qkv ? 0 : which;
      const int64_t off = c.fused_qkv ? which * width : 0;
      for (int64_t r = 0; r < alloc_rows; ++r)
        for (int64_t i = 0; i < width; ++i)
          qkv[size_t(which)][size_t(r * width + i)] = bits_to_f32(host[size_t(b)][size_t(r * stride + off + i)]);
    }
    auto row_of = [&](int which, int row, int head) {
      return &qkv[size_t(which)][size_t((int64_t(row) * c.heads + head) * c.head_dim)];
    };

    std::vector<std::unique_ptr<DeviceBuffer>> dev;
    for (int b = 0; b < num_buffers; ++b) {
      dev.push_back(std::make_unique<DeviceBuffer>(size_t(view_elems) * 2));
      EXPECT_EQ(cudaMemcpy(dev.back()->p, host[size_t(b)].data(), size_t(view_elems) * 2, cudaMemcpyHostToDevice),
                cudaSuccess);
    }
    const bf16* base[3];
    for (int w = 0; w < 3; ++w)
      base[w] = c.fused_qkv ? dev[0]->as<bf16>() + w * width : dev[size_t(w)]->as<bf16>();
    DeviceBuffer out(size_t(alloc_rows) * width * 2), d_cu(cu.size() * 4);
    EXPECT_EQ(cudaMemset(out.p, 0xff, size_t(alloc_rows) * width * 2), cudaSuccess);  // NaN bf16 everywhere
    EXPECT_EQ(cudaMemcpy(d_cu.p, cu.data(), cu.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);

    if (c.tile >= 0)
      cuda::vattn::vision_attention_tile(VisionTile(c.tile), base[0], stride, base[1], stride, base[2], stride,
                                         out.as<bf16>(), d_cu.as<int>(), int(c.rows.size()), max_rows, c.heads,
                                         c.head_dim, nullptr);
    else
      cuda::vision_attention(base[0], stride, base[1], stride, base[2], stride, out.as<bf16>(), d_cu.as<int>(),
                             int(c.rows.size()), max_rows, c.heads, c.head_dim, nullptr);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint16_t> got(static_cast<size_t>(alloc_rows) * width);
    EXPECT_EQ(cudaMemcpy(got.data(), out.p, got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);

    // Reference, one (row, head) per task: softmax over the row's image, in double.
    const int d = c.head_dim;
    std::vector<int> image_of(static_cast<size_t>(total));
    for (size_t i = 0; i + 1 < cu.size(); ++i)
      for (int r = cu[i]; r < cu[i + 1]; ++r) image_of[size_t(r)] = int(i);
    struct Partial {
      int64_t elems = 0, bad = 0, nonfinite = 0;
      double err2 = 0, ref2 = 0;
      std::string first_bad;
    };
    std::vector<Partial> parts(static_cast<size_t>(total));
    auto check_row = [&](int r) {
      Partial& p = parts[size_t(r)];
      const int img = image_of[size_t(r)], k0 = cu[size_t(img)], k1 = cu[size_t(img) + 1];
      std::vector<double> score(static_cast<size_t>(k1 - k0)), acc(static_cast<size_t>(d));
      for (int h = 0; h < c.heads; ++h) {
        double mx = -INFINITY;
        const float* qr = row_of(0, r, h);
        for (int key = k0; key < k1; ++key) {
          const float* kr = row_of(1, key, h);
          double dot = 0;
          for (int e = 0; e < d; ++e) dot += double(qr[e]) * kr[e];
          score[size_t(key - k0)] = dot;  // scale 1.0
          mx = std::max(mx, dot);
        }
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int key = k0; key < k1; ++key) {
          const double w = std::exp(score[size_t(key - k0)] - mx);
          sum += w;
          const float* vr = row_of(2, key, h);
          for (int e = 0; e < d; ++e) acc[size_t(e)] += w * vr[e];
        }
        double row_max = 0;
        for (double& x : acc) x /= sum, row_max = std::max(row_max, std::abs(x));
        for (int e = 0; e < d; ++e) {
          const double v = bits_to_f32(got[size_t(int64_t(r) * width + int64_t(h) * d + e)]), ref = acc[size_t(e)];
          ++p.elems;
          p.ref2 += ref * ref;
          if (!std::isfinite(v)) {
            ++p.nonfinite;
            continue;
          }
          p.err2 += (v - ref) * (v - ref);
          if (!(std::abs(v - ref) <= 0.02 * std::abs(ref) + 0.01 * row_max) && p.bad++ == 0)
            p.first_bad = "image " + std::to_string(img) + " row " + std::to_string(r - k0) + " head " +
                          std::to_string(h) + " dim " + std::to_string(e) + ": got " + std::to_string(v) +
                          ", want " + std::to_string(ref);
        }
      }
    };
    static cpu::ThreadPool threads(cpu::ThreadPool::default_threads());
    threads.parallel_for(total, 1, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) check_row(int(r));
    });

    VisionResult res;
    double err2 = 0, ref2 = 0;
    for (const Partial& p : parts) {
      res.elems += p.elems, res.nonfinite += p.nonfinite;
      if (p.bad && res.bad == 0) res.first_bad = p.first_bad;
      res.bad += p.bad, err2 += p.err2, ref2 += p.ref2;
    }
    res.rel_err = ref2 > 0 ? std::sqrt(err2 / ref2) : 0;
    for (size_t i = size_t(total) * width; i < got.size(); ++i)
      if (!std::isnan(bits_to_f32(got[i]))) ++res.poison_overwritten;
    return res;
  }

  void expect_close(const VisionCase& c) {
    const VisionResult r = run(c);
    SCOPED_TRACE(std::string("seed ") + std::to_string(seed_) + ", head_dim " + std::to_string(c.head_dim) +
                 ", tile " + (c.tile >= 0 ? cuda::vattn::vision_tile_name(VisionTile(c.tile)) : "chosen"));
    EXPECT_GT(r.elems, 0);
    EXPECT_EQ(r.nonfinite, 0);
    EXPECT_EQ(r.bad, 0) << r.first_bad;
    EXPECT_LT(r.rel_err, 1e-2);
    EXPECT_EQ(r.poison_overwritten, 0) << "rows outside every image were written";
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

// The sizes of the brief: one-row and tiny images, a ragged tile tail, a 577-row image (a ViT's
// 24x24 + 1) and a full 280-token image (2520 patches), in one call.
const std::vector<int> kRagged = {1, 7, 2520, 63, 577};

TEST_F(VisionAttentionTest, RaggedImagesHeadDim64FusedQkv) {
  expect_close({kRagged, 12, 64, true});
}

TEST_F(VisionAttentionTest, RaggedImagesHeadDim72FusedQkv) {
  expect_close({kRagged, 16, 72, true});
}

TEST_F(VisionAttentionTest, SeparateContiguousTensors) {
  expect_close({{130, 64, 1, 65}, 3, 64, false});
  expect_close({{130, 64, 1, 65}, 3, 72, false});
}

// Every tile shape the kernel can be built with, so a benchmark's pick is a tested one.
TEST_F(VisionAttentionTest, EveryTileShape) {
  for (VisionTile t : {VisionTile::Rows16Keys64, VisionTile::Rows32Keys32, VisionTile::Rows32Keys64})
    for (int hd : {64, 72}) {
      VisionCase c{{33, 200, 1, 129}, 4, hd, true};
      c.tile = int(t);
      expect_close(c);
    }
}

// Many images in one call (the tower batches every image of a step), each a different size.
TEST_F(VisionAttentionTest, SixtyFourImages) {
  std::vector<int> rows(64);
  for (int i = 0; i < 64; ++i) rows[size_t(i)] = 1 + (i * 37) % 150;
  expect_close({rows, 2, 72, true});
}

// An empty image (no rows) between others contributes nothing and disturbs nothing.
TEST_F(VisionAttentionTest, EmptyImageInTheMiddle) {
  expect_close({{40, 0, 17}, 2, 64, true});
}

TEST_F(VisionAttentionTest, RefusesBadArguments) {
  DeviceBuffer buf(1 << 16), cu(16);
  const bf16* p = buf.as<bf16>();
  bf16* o = buf.as<bf16>();
  auto call = [&](const bf16* q, int64_t stride, int heads, int head_dim) {
    cuda::vision_attention(q, stride, p, stride, p, stride, o, cu.as<int>(), 1, 4, heads, head_dim, nullptr);
  };
  EXPECT_THROW(call(p, 80 * 2, 2, 80), Error);      // head dim no tower has
  EXPECT_THROW(call(p, 100, 2, 64), Error);         // stride below heads·head_dim
  EXPECT_THROW(call(p, 132, 2, 64), Error);         // stride not a multiple of 8
  EXPECT_THROW(call(p + 1, 128, 2, 64), Error);     // q not 16-byte aligned
  EXPECT_THROW(call(p, 128, 0, 64), Error);         // no heads
  try {
    call(p, 80 * 2, 2, 80);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim 80"), std::string::npos) << e.what();
  }
  // Nothing to do is not an error.
  EXPECT_NO_THROW(cuda::vision_attention(p, 128, p, 128, p, 128, o, cu.as<int>(), 0, 0, 2, 64, nullptr));
}

}  // namespace
}  // namespace gs::test
