#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "checkpoint/safetensors.h"
#include "checkpoint/safetensors_writer.h"
#include "core/error.h"
#include "test_util.h"

namespace gs {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::TempDir;

// A raw safetensors image: length prefix + header text + data bytes.
std::string image(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
  return out + header + data;
}

SafetensorsHeader parse(const std::string& bytes, const std::string& label = "test.safetensors") {
  return parse_safetensors(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), label);
}

std::string error_of(const std::string& bytes) {
  try {
    parse(bytes, "bad.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Safetensors, RoundTripsRandomTensors) {
  uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  const DType dtypes[] = {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64, DType::U8};
  std::vector<TensorDecl> decls;
  for (int i = 0; i < 12; ++i) {
    TensorDecl d{"t." + std::to_string(i), dtypes[rng() % 6], {}};
    int nd = int(rng() % 4);
    for (int k = 0; k < nd; ++k) d.shape.push_back(int64_t(rng() % 7));  // zero-sized dims included
    decls.push_back(d);
  }
  std::map<std::string, std::string> contents;
  auto fill = [&](const TensorDecl& d, uint8_t* dst) {
    std::string& c = contents[d.name];
    c.resize(d.nbytes());
    for (char& ch : c) ch = char(rng());
    std::memcpy(dst, c.data(), c.size());
  };
  TempDir dir;
  write_safetensors(dir / "x.safetensors", decls, fill, {{"format", "pt"}, {"note", "round trip"}});

  SafetensorsFile f(dir / "x.safetensors");
  EXPECT_EQ(f.header().metadata.at("note"), "round trip");
  EXPECT_EQ(f.header().data_start % 8, 0u);
  ASSERT_EQ(f.tensors().size(), decls.size());
  for (const TensorDecl& d : decls) {
    const SafetensorsTensor* t = f.find(d.name);
    ASSERT_NE(t, nullptr) << d.name;
    EXPECT_EQ(t->dtype, d.dtype);
    EXPECT_EQ(t->shape, d.shape);
    ASSERT_EQ(t->nbytes, d.nbytes());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data(*t)), t->nbytes), contents[d.name]) << d.name;
  }
  EXPECT_EQ(f.find("absent"), nullptr);
}

// The filler gets a real buffer or no call at all: an empty tensor first (before any buffer was
// allocated) once handed it nullptr, and memcpy(nullptr, src, 0) is undefined behaviour.
TEST(Safetensors, ZeroByteTensorsAreWrittenWithoutCallingTheFiller) {
  TempDir dir;
  std::vector<TensorDecl> decls = {{"empty", DType::F32, {0}}, {"a", DType::BF16, {3}}, {"empty2", DType::U8, {2, 0}}};
  std::vector<std::string> filled;
  write_safetensors(dir / "z.safetensors", decls, [&](const TensorDecl& d, uint8_t* dst) {
    ASSERT_NE(dst, nullptr) << d.name;
    filled.push_back(d.name);
    std::memset(dst, 7, d.nbytes());
  });
  EXPECT_EQ(filled, std::vector<std::string>{"a"});
  SafetensorsFile f(dir / "z.safetensors");
  for (const TensorDecl& d : decls) {
    const SafetensorsTensor* t = f.find(d.name);
    ASSERT_NE(t, nullptr) << d.name;
    EXPECT_EQ(t->shape, d.shape);
    EXPECT_EQ(t->nbytes, d.nbytes());
  }
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data(*f.find("a"))), 6), std::string(6, '\x07'));
}

TEST(Safetensors, TruncatedDataNamesFileAndTensor) {
  TempDir dir;
  std::vector<TensorDecl> decls = {{"a", DType::F32, {4}}, {"b.weight", DType::BF16, {8, 8}}};
  write_safetensors(dir / "m.safetensors", decls, [](const TensorDecl& d, uint8_t* p) { std::memset(p, 1, d.nbytes()); });
  std::string bytes = testing::read_file(dir / "m.safetensors");
  testing::write_file(dir / "m.safetensors", bytes.substr(0, bytes.size() - 10));
  try {
    SafetensorsFile f(dir / "m.safetensors");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr(dir / "m.safetensors"), HasSubstr("'b.weight'"), HasSubstr("truncated")));
  }
}

TEST(Safetensors, TruncatedInsideHeader) {
  std::string good = image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcd");
  EXPECT_THAT(error_of(good.substr(0, 20)), AllOf(HasSubstr("bad.safetensors"), HasSubstr("corrupt safetensors header length")));
  EXPECT_THAT(error_of(good.substr(0, 5)), HasSubstr("shorter than the 8-byte header length"));
  EXPECT_THAT(error_of(""), HasSubstr("not a safetensors file"));
}

TEST(Safetensors, CorruptHeaderLength) {
  std::string bytes = image("{}", "");
  bytes[7] = char(0x40);  // a length of ~4.6e18 bytes
  EXPECT_THAT(error_of(bytes), AllOf(HasSubstr("bad.safetensors"), HasSubstr("corrupt safetensors header length")));
}

TEST(Safetensors, BadJsonHeader) {
  EXPECT_THAT(error_of(image(R"({"a":{"dtype":"F32",)", "")), AllOf(HasSubstr("bad.safetensors"), HasSubstr("not well-formed JSON")));
  EXPECT_THAT(error_of(image("[1, 2]", "")), HasSubstr("expected an object"));
  EXPECT_THAT(error_of(image(std::string(5000, '[') + std::string(5000, ']'), "")), HasSubstr("nested too deeply"));
  EXPECT_THAT(error_of(image(R"({"__metadata__":{"k":1}})", "")), HasSubstr("'__metadata__' entry 'k' is not a string"));
}

TEST(Safetensors, OverlappingOffsets) {
  std::string h = R"({"first":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"second":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_THAT(error_of(image(h, std::string(12, 'x'))),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("'first'"), HasSubstr("'second'"), HasSubstr("overlap")));
}

TEST(Safetensors, EntryValidation) {
  auto entry = [](const std::string& body, size_t data = 64) {
    return error_of(image(R"({"w":)" + body + "}", std::string(data, '\0')));
  };
  EXPECT_THAT(entry(R"({"dtype":"Q4","shape":[2],"data_offsets":[0,2]})"), AllOf(HasSubstr("'w'"), HasSubstr("unsupported dtype 'Q4'")));
  EXPECT_THAT(entry(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"), AllOf(HasSubstr("'w'"), HasSubstr("needs 12 bytes")));
  EXPECT_THAT(entry(R"({"dtype":"F32","shape":[-3],"data_offsets":[0,8]})"), HasSubstr("negative"));
  EXPECT_THAT(entry(R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,8]})"), HasSubstr("non-integer"));
  EXPECT_THAT(entry(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})"), HasSubstr("overflows"));
  EXPECT_THAT(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})"), HasSubstr("reversed"));
  EXPECT_THAT(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"), HasSubstr("two non-negative integers"));
  EXPECT_THAT(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1})"), HasSubstr("unexpected field 'extra'"));
  EXPECT_THAT(entry(R"({"shape":[2],"data_offsets":[0,8]})"), HasSubstr("missing or non-string 'dtype'"));
  EXPECT_THAT(entry(R"([1])"), HasSubstr("not a JSON object"));
  EXPECT_THAT(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 4), HasSubstr("run past the end"));
}

// Whatever the bytes, the parser either accepts them or throws gs::Error: never another
// exception, never a crash (the fuzz target checks the same under sanitizers, much longer).
TEST(Safetensors, SurvivesRandomCorruption) {
  uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  std::string h = R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"I64","shape":[1],"data_offsets":[12,20]}})";
  const std::string good = image(h, std::string(20, '\x11'));
  ASSERT_EQ(parse(good).tensors.size(), 2u);
  int accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string b = good;
    int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 4) {
        case 0: b[rng() % b.size()] = char(rng()); break;
        case 1: b.resize(rng() % (b.size() + 1)); break;
        case 2:  // JSON punctuation inside the header
          if (b.size() > 8) b[8 + rng() % (b.size() - 8)] = "{}[]\",:0123456789-e"[rng() % 19];
          break;
        case 3: b.insert(rng() % (b.size() + 1), 1, char(rng())); break;
      }
      if (b.empty()) break;
    }
    try {
      parse(b);
      ++accepted;
    } catch (const Error&) {
    } catch (const std::exception& e) {
      FAIL() << "non-gs::Error exception: " << e.what();
    }
  }
  EXPECT_LT(accepted, 3000);
}

}  // namespace
}  // namespace gs
