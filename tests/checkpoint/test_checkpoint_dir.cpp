#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>

#include "checkpoint/checkpoint.h"
#include "checkpoint/safetensors_writer.h"
#include "core/error.h"
#include "test_util.h"

namespace gs {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::TempDir;

// Fills every tensor with bytes derived from its name, so that a lookup can be checked.
void name_fill(const TensorDecl& d, uint8_t* p) {
  for (size_t i = 0; i < d.nbytes(); ++i) p[i] = uint8_t(d.name.size() * 31 + i * 7 + d.name.back());
}

std::string error_opening(const std::string& dir) {
  try {
    Checkpoint::open(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void write_config(const TempDir& dir, const nlohmann::json& cfg = {{"eos_token_id", 1}}) {
  testing::write_file(dir / "config.json", cfg.dump());
}

TEST(CheckpointDir, ShardedWithIndexFindsEveryTensor) {
  uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  TempDir dir;
  write_config(dir);
  std::vector<TensorDecl> decls;
  for (int i = 0; i < 24; ++i)
    decls.push_back({"model.layers." + std::to_string(i) + ".w", DType::BF16, {int64_t(1 + rng() % 16), 32}});
  auto files = write_sharded_safetensors(dir.path(), decls, name_fill, 2048);
  ASSERT_GT(files.size(), 2u);
  EXPECT_EQ(files.back(), "model.safetensors.index.json");

  auto ckpt = Checkpoint::open(dir.path());
  EXPECT_EQ(ckpt->files().size(), files.size() - 1);
  EXPECT_EQ(ckpt->tensors().size(), decls.size());
  for (const TensorDecl& d : decls) {
    const TensorRef& t = ckpt->tensor(d.name);
    EXPECT_EQ(t.shape, d.shape);
    EXPECT_EQ(t.dtype, DType::BF16);
    std::vector<uint8_t> expect(d.nbytes());
    name_fill(d, expect.data());
    EXPECT_EQ(std::memcmp(t.data, expect.data(), expect.size()), 0) << d.name;
  }
}

TEST(CheckpointDir, SingleFileSkipsTowersAndLmHead) {
  TempDir dir;
  write_config(dir);
  std::vector<TensorDecl> decls = {
      {"model.language_model.embed_tokens.weight", DType::BF16, {10, 4}},
      {"model.vision_tower.encoder.layers.0.mlp.up_proj.linear.weight", DType::BF16, {8, 8}},
      {"model.embed_vision.embedding_projection.weight", DType::BF16, {4, 8}},
      {"model.audio_tower.output_proj.bias", DType::F32, {6}},
      {"model.embed_audio.embedding_projection.weight", DType::BF16, {4, 6}},
      {"lm_head.weight", DType::BF16, {10, 4}},
  };
  write_sharded_safetensors(dir.path(), decls, name_fill, size_t(1) << 30);
  auto ckpt = Checkpoint::open(dir.path());
  EXPECT_EQ(ckpt->tensors().size(), 1u);
  EXPECT_NE(ckpt->find("model.language_model.embed_tokens.weight"), nullptr);
  EXPECT_EQ(ckpt->find("lm_head.weight"), nullptr);
  EXPECT_EQ(ckpt->skipped_tensors(), 5);
  EXPECT_EQ(ckpt->skipped_bytes(), size_t(8 * 8 * 2 + 4 * 8 * 2 + 6 * 4 + 4 * 6 * 2 + 10 * 4 * 2));
  EXPECT_EQ(ckpt->loaded_bytes(), size_t(10 * 4 * 2));
}

TEST(CheckpointDir, MissingTensorNamesTensorAndFiles) {
  TempDir dir;
  write_config(dir);
  write_sharded_safetensors(dir.path(), {{"a", DType::F32, {2}}}, name_fill, 1 << 20);
  auto ckpt = Checkpoint::open(dir.path());
  try {
    ckpt->tensor("model.norm.weight");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("'model.norm.weight'"), HasSubstr("not found"), HasSubstr("model.safetensors")));
  }
}

TEST(CheckpointDir, BrokenIndexesAndDirectories) {
  {
    TempDir dir;
    EXPECT_THAT(error_opening(dir.path()), AllOf(HasSubstr("config.json"), HasSubstr("cannot read")));
    write_config(dir);
    EXPECT_THAT(error_opening(dir.path()), HasSubstr("no model.safetensors or model.safetensors.index.json"));
    testing::write_file(dir / "config.json", "{not json");
    EXPECT_THAT(error_opening(dir.path()), AllOf(HasSubstr("config.json"), HasSubstr("not well-formed JSON")));
  }
  EXPECT_THAT(error_opening("/nonexistent/model"), HasSubstr("does not exist"));
  {
    TempDir dir;
    write_config(dir);
    write_safetensors(dir / "s1.safetensors", {{"a", DType::F32, {2}}}, name_fill);
    nlohmann::json idx = {{"weight_map", {{"a", "s1.safetensors"}, {"b", "s1.safetensors"}}}};
    testing::write_file(dir / "model.safetensors.index.json", idx.dump());
    EXPECT_THAT(error_opening(dir.path()), AllOf(HasSubstr("'b'"), HasSubstr("s1.safetensors"), HasSubstr("not stored")));
    idx = {{"weight_map", {{"a", "s2.safetensors"}}}};
    testing::write_file(dir / "model.safetensors.index.json", idx.dump());
    EXPECT_THAT(error_opening(dir.path()), AllOf(HasSubstr("s2.safetensors"), HasSubstr("does not exist")));
    idx = {{"weight_map", {{"a", "../s1.safetensors"}}}};
    testing::write_file(dir / "model.safetensors.index.json", idx.dump());
    EXPECT_THAT(error_opening(dir.path()), HasSubstr("not a file in the model directory"));
    idx = {{"metadata", {}}};
    testing::write_file(dir / "model.safetensors.index.json", idx.dump());
    EXPECT_THAT(error_opening(dir.path()), HasSubstr("missing 'weight_map'"));
    write_safetensors(dir / "s2.safetensors", {{"a", DType::F32, {2}}}, name_fill);
    idx = {{"weight_map", {{"a", "s1.safetensors"}, {"b", "s2.safetensors"}}}};
    testing::write_file(dir / "model.safetensors.index.json", idx.dump());
    EXPECT_THAT(error_opening(dir.path()), AllOf(HasSubstr("'b'"), HasSubstr("not stored")));
  }
  {
    TempDir dir;  // the same tensor in two shards
    write_config(dir);
    write_safetensors(dir / "s1.safetensors", {{"a", DType::F32, {2}}}, name_fill);
    write_safetensors(dir / "s2.safetensors", {{"a", DType::F32, {2}}, {"b", DType::F32, {1}}}, name_fill);
    nlohmann::json idx = {{"weight_map", {{"a", "s1.safetensors"}, {"b", "s2.safetensors"}}}};
    testing::write_file(dir / "model.safetensors.index.json", idx.dump());
    EXPECT_THAT(error_opening(dir.path()), AllOf(HasSubstr("'a'"), HasSubstr("stored twice")));
  }
}

TEST(CheckpointDir, GenerationConfig) {
  TempDir dir;
  write_config(dir, {{"text_config", {{"eos_token_id", 7}}}});
  write_sharded_safetensors(dir.path(), {{"a", DType::F32, {2}}}, name_fill, 1 << 20);
  auto c1 = Checkpoint::open(dir.path());
  EXPECT_FALSE(c1->generation_config().from_file);
  EXPECT_EQ(c1->generation_config().eos_token_ids, std::vector<int>{7});
  EXPECT_FALSE(c1->generation_config().do_sample);

  testing::write_file(dir / "generation_config.json",
                      R"({"do_sample": true, "temperature": 0.7, "top_k": 64, "top_p": 0.95, "eos_token_id": [1, 106, 50]})");
  auto c2 = Checkpoint::open(dir.path());
  const GenerationConfig& g = c2->generation_config();
  EXPECT_TRUE(g.from_file);
  EXPECT_TRUE(g.do_sample);
  EXPECT_FLOAT_EQ(g.temperature, 0.7f);
  EXPECT_EQ(g.top_k, 64);
  EXPECT_FLOAT_EQ(g.top_p, 0.95f);
  EXPECT_EQ(g.eos_token_ids, (std::vector<int>{1, 106, 50}));

  testing::write_file(dir / "generation_config.json", R"({"top_p": 1.5})");
  EXPECT_THAT(error_opening(dir.path()), AllOf(HasSubstr("generation_config.json"), HasSubstr("top_p")));
  testing::write_file(dir / "generation_config.json", R"({"eos_token_id": ["x"]})");
  EXPECT_THAT(error_opening(dir.path()), HasSubstr("eos_token_id"));
}

}  // namespace
}  // namespace gs
