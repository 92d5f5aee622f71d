// The vision tower and prompts with images against transformers (fixtures/vision_golden, made by
// tools/reference/make_vision_golden.py in float32): both tower kinds (clipped linears with bounds
// that clip; standardize), images of three aspect ratios, prompts of 1 and 3 images in prefill and
// in chunks whose text boundaries fall next to images that cross the sliding window.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>

#include "checkpoint/checkpoint.h"
#include "core/npy.h"
#include "kernels/cpu/cpu_backend.h"
#include "model/gemma4_model.h"
#include "model/weight_loader.h"
#include "runner/image_pixels_file.h"
#include "runner/prompt_images.h"
#include "runner/sequence_runner.h"

namespace gs::test {
namespace {

std::string vg_dir() { return std::string(GS_SOURCE_DIR) + "/fixtures/vision_golden"; }

std::vector<float> read_f32(const std::string& path, std::vector<int64_t>* shape = nullptr) {
  NpyArray a = read_npy(path);
  EXPECT_EQ(a.dtype, DType::F32) << path;
  if (shape) *shape = a.shape;
  return std::vector<float>(a.as<float>(), a.as<float>() + a.numel());
}

std::vector<float> to_host(Backend& be, const Tensor& t) {
  std::vector<float> v(size_t(t.numel()));
  be.copy_to_host(t, v.data());
  return v;
}

// max |a - b| / max |b|
double rel_max_err(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, m = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    d = std::max(d, std::fabs(double(a[i]) - b[i]));
    m = std::max(m, std::fabs(double(b[i])));
  }
  return d / std::max(m, 1e-30);
}

struct VisionModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Gemma4Model> model;
};

VisionModel load_vision_model(const std::string& kind, int max_tokens = 256, const char* overlay = nullptr) {
  VisionModel m;
  m.backend = make_cpu_backend(2);
  auto ckpt = Checkpoint::open(vg_dir() + "/" + kind, CheckpointOptions{true});
  ModelConfig cfg = ModelConfig::from_json(ckpt->config_json());
  EXPECT_TRUE(cfg.has_vision());
  if (overlay) cfg.mm_overlay = parse_mm_overlay(overlay);
  ModelWeights w = load_weights(*ckpt, cfg, *m.backend);
  EXPECT_TRUE(w.vision);
  m.model = std::make_unique<Gemma4Model>(cfg, std::move(w), *m.backend);
  m.model->reserve(max_tokens, max_tokens);
  return m;
}

PreparedImagePtr image(const std::string& name) { return read_image_pixels(vg_dir() + "/images/" + name + ".npy"); }

const std::vector<std::string> kKinds{"vision_clipped", "vision_std"};
const std::vector<std::string> kImages{"img0", "img1", "img2"};

class VisionTowerGolden : public testing::TestWithParam<std::string> {};

TEST_P(VisionTowerGolden, EachImageMatchesReference) {
  const std::string kind = GetParam();
  VisionModel m = load_vision_model(kind);
  for (const std::string& name : kImages) {
    PreparedImagePtr im = image(name);
    // The positions we derive are the processor's.
    NpyArray pos = read_npy(vg_dir() + "/images/" + name + "_pos.npy");
    ASSERT_EQ(pos.numel(), 2 * int64_t(im->pos_x.size()));
    for (size_t p = 0; p < im->pos_x.size(); ++p) {
      ASSERT_EQ(pos.as<int32_t>()[2 * p], im->pos_x[p]);
      ASSERT_EQ(pos.as<int32_t>()[2 * p + 1], im->pos_y[p]);
    }
    Tensor soft = m.model->vision_tower()->encode({im.get()});
    const std::vector<float> tower = to_host(*m.backend, m.model->vision_tower()->last_tower_output());
    const std::vector<float> ref_tower = read_f32(vg_dir() + "/" + kind + "/tower_" + name + ".npy");
    ASSERT_EQ(tower.size(), ref_tower.size()) << name;
    EXPECT_LE(rel_max_err(tower, ref_tower), 1e-3) << kind << " " << name << " tower output";
    const std::vector<float> ref_soft = read_f32(vg_dir() + "/" + kind + "/soft_" + name + ".npy");
    const std::vector<float> ours = to_host(*m.backend, soft);
    ASSERT_EQ(ours.size(), ref_soft.size());
    EXPECT_LE(rel_max_err(ours, ref_soft), 1e-3) << kind << " " << name << " soft tokens";
  }
}

TEST_P(VisionTowerGolden, PackedImagesMatchOneByOne) {
  const std::string kind = GetParam();
  VisionModel m = load_vision_model(kind);
  std::vector<PreparedImagePtr> ims;
  std::vector<const PreparedImage*> raw;
  std::vector<float> ref;
  for (const std::string& name : kImages) {
    ims.push_back(image(name));
    raw.push_back(ims.back().get());
    const std::vector<float> r = read_f32(vg_dir() + "/" + kind + "/soft_" + name + ".npy");
    ref.insert(ref.end(), r.begin(), r.end());
  }
  const std::vector<float> ours = to_host(*m.backend, m.model->vision_tower()->encode(raw));
  ASSERT_EQ(ours.size(), ref.size());
  EXPECT_LE(rel_max_err(ours, ref), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Kinds, VisionTowerGolden, testing::ValuesIn(kKinds));

struct PromptCase {
  std::string kind, prompt;
  LogitsMode mode;
  int chunk;
};

std::string prompt_case_name(const testing::TestParamInfo<PromptCase>& info) {
  const PromptCase& c = info.param;
  return c.kind + "_" + c.prompt + (c.mode == LogitsMode::Prefill ? "_prefill" : "_chunked" + std::to_string(c.chunk));
}

class VisionPromptGolden : public testing::TestWithParam<PromptCase> {};

TEST_P(VisionPromptGolden, LogitsAndGreedyMatchReference) {
  const PromptCase& pc = GetParam();
  const std::string dir = vg_dir() + "/" + pc.kind;
  VisionModel m = load_vision_model(pc.kind);
  std::ifstream mf(dir + "/meta.json");
  const nlohmann::json meta = nlohmann::json::parse(mf);
  std::vector<PreparedImagePtr> ims;
  for (const auto& n : meta.at("prompts").at(pc.prompt).at("images")) ims.push_back(image(n.get<std::string>()));
  const std::vector<int> compact = npy_token_ids(read_npy(dir + "/prompt_" + pc.prompt + ".npy"), "prompt");
  const PromptImages p = expand_image_placeholders(compact, m.model->config(), ims);
  EXPECT_EQ(p.tokens, npy_token_ids(read_npy(dir + "/expanded_" + pc.prompt + ".npy"), "expanded"));

  SequenceRunOptions opt;
  opt.mode = pc.mode;
  opt.chunk = pc.chunk;
  opt.page_size = 8;
  std::vector<int64_t> shape;
  const std::vector<float> ref = read_f32(dir + "/logits_" + pc.prompt + ".npy", &shape);
  const std::vector<float> ours = sequence_logits(*m.model, p.tokens, opt, &p);
  ASSERT_EQ(ours.size(), ref.size());
  // Tolerance: the tower matches to ~1e-5 relative (EachImageMatchesReference), but these random
  // towers put out soft tokens of std ~10 into text models whose head_dim-256 attention with scale 1
  // is very peaked, so f32 rounding differences grow more than in the text-only fixtures
  // (observed max |Δlogit| 2.5e-3 to 9e-3, rel L2 ~1e-4; the reference's own bf16 forward is at rel
  // L2 0.45). We assert rel L2 <= 1e-3, max |Δ| <= 2e-2, the top-1 of every row whose reference
  // margin is clear, and the greedy continuation token for token.
  const int V = int(shape[1]);
  double num = 0, den = 0;
  float max_diff = 0;
  int top1_checked = 0;
  for (int t = 0; t < int(shape[0]); ++t) {
    const float* o = ours.data() + size_t(t) * V;
    const float* r = ref.data() + size_t(t) * V;
    for (int v = 0; v < V; ++v) {
      num += double(o[v] - r[v]) * (o[v] - r[v]);
      den += double(r[v]) * r[v];
      max_diff = std::max(max_diff, std::fabs(o[v] - r[v]));
    }
    std::vector<float> sorted(r, r + V);
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
    if (sorted[0] - sorted[1] > 1e-1f) {
      ++top1_checked;
      EXPECT_EQ(std::max_element(o, o + V) - o, std::max_element(r, r + V) - r) << "row " << t;
    }
  }
  EXPECT_LE(std::sqrt(num / den), 1e-3) << "rel L2 over " << shape[0] << " rows";
  EXPECT_LE(max_diff, 2e-2f) << "max |Δlogit| over " << shape[0] << " rows";
  EXPECT_GT(top1_checked, int(shape[0]) / 2);

  std::ifstream gf(dir + "/greedy_" + pc.prompt + ".json");
  const nlohmann::json greedy = nlohmann::json::parse(gf);
  const std::vector<int> want = greedy.at("generated").get<std::vector<int>>();
  EXPECT_EQ(greedy_continuation(*m.model, p.tokens, int(want.size()), opt, &p), want);
}

// Chunks of 7: chunk boundaries fall in the text around every image, each image (60-65 soft
// tokens) is longer than the sliding window (12 and 16) and gets its own step.
INSTANTIATE_TEST_SUITE_P(
    Prompts, VisionPromptGolden,
    testing::Values(PromptCase{"vision_clipped", "p1", LogitsMode::Prefill, 0},
                    PromptCase{"vision_clipped", "p3", LogitsMode::Prefill, 0},
                    PromptCase{"vision_clipped", "p3", LogitsMode::Chunked, 7},
                    PromptCase{"vision_std", "p1", LogitsMode::Prefill, 0},
                    PromptCase{"vision_std", "p1", LogitsMode::Chunked, 7},
                    PromptCase{"vision_std", "p3", LogitsMode::Prefill, 0},
                    PromptCase{"vision_std", "p3", LogitsMode::Chunked, 7}),
    prompt_case_name);

// The overlay's semantics are pinned by the fixture: transformers 5.17 lets an image's earlier soft
// tokens be seen only inside the sliding window; seeing the whole image (the release notes' reading)
// or no overlay at all gives clearly different logits for images longer than the window.
TEST(VisionOverlay, OnlyTheReferenceOverlayMatches) {
  const std::string dir = vg_dir() + "/vision_std";
  std::vector<PreparedImagePtr> ims{image("img1"), image("img0"), image("img2")};
  std::vector<int64_t> shape;
  const std::vector<float> ref = read_f32(dir + "/logits_p3.npy", &shape);
  for (const char* overlay : {"sliding-in-window", "sliding", "none"}) {
    VisionModel m = load_vision_model("vision_std", 256, overlay);
    const PromptImages p =
        expand_image_placeholders(npy_token_ids(read_npy(dir + "/prompt_p3.npy"), "prompt"), m.model->config(), ims);
    SequenceRunOptions opt;
    const std::vector<float> ours = sequence_logits(*m.model, p.tokens, opt, &p);
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      num += double(ours[i] - ref[i]) * (ours[i] - ref[i]);
      den += double(ref[i]) * ref[i];
    }
    const double rel = std::sqrt(num / den);
    if (std::string(overlay) == "sliding-in-window") EXPECT_LE(rel, 1e-3) << overlay;
    else EXPECT_GT(rel, 1e-2) << overlay;
  }
}

}  // namespace
}  // namespace gs::test
