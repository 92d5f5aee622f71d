// .npy reading and writing: round trips, the layouts NumPy writes, and clear errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "core/error.h"
#include "core/npy.h"

namespace gs {
namespace {

std::string temp_path(const std::string& name) { return testing::TempDir() + "/gs_npy_" + name; }

TEST(Npy, RoundTripsFloatAndIntArrays) {
  std::mt19937 rng(std::random_device{}());
  std::vector<float> f(3 * 7);
  for (float& x : f) x = std::uniform_real_distribution<float>(-5, 5)(rng);
  write_npy(temp_path("f.npy"), DType::F32, {3, 7}, f.data());
  NpyArray a = read_npy(temp_path("f.npy"));
  EXPECT_EQ(a.dtype, DType::F32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(std::vector<float>(a.as<float>(), a.as<float>() + 21), f);

  std::vector<int32_t> ids{2, 5, 511, 0};
  write_npy(temp_path("i.npy"), DType::I32, {4}, ids.data());
  NpyArray b = read_npy(temp_path("i.npy"));
  EXPECT_EQ(b.shape, std::vector<int64_t>{4});
  EXPECT_EQ(npy_token_ids(b, "i.npy"), (std::vector<int>{2, 5, 511, 0}));
}

TEST(Npy, ReadsWhatNumpyWrites) {
  // np.save of np.array([[1, 2, 3]], dtype=np.int64): version 1.0 header padded to 64 bytes.
  std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 3), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + char(0) + header;
  for (int64_t v : {1, 2, 3}) bytes.append(reinterpret_cast<const char*>(&v), 8);
  NpyArray a = parse_npy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "np.npy");
  EXPECT_EQ(a.dtype, DType::I64);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 3}));
  EXPECT_THROW(npy_token_ids(a, "np.npy"), Error);  // token ids must be 1-D
}

TEST(Npy, ClearErrors) {
  EXPECT_THROW(read_npy(temp_path("missing.npy")), Error);
  const std::string not_npy = "hello world, not numpy";
  EXPECT_THROW(parse_npy(reinterpret_cast<const uint8_t*>(not_npy.data()), not_npy.size(), "x"), Error);
  std::vector<float> f{1, 2, 3, 4};
  write_npy(temp_path("t.npy"), DType::F32, {4}, f.data());
  std::ifstream in(temp_path("t.npy"), std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    parse_npy(reinterpret_cast<const uint8_t*>(all.data()), all.size() - 3, "t.npy");
    FAIL() << "a truncated payload must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  NpyArray fl = parse_npy(reinterpret_cast<const uint8_t*>(all.data()), all.size(), "t.npy");
  EXPECT_THROW(npy_token_ids(fl, "t.npy"), Error);  // float ids
}

}  // namespace
}  // namespace gs
