// gemmaserve bench-vision: the vision tower's images per second at a soft-token budget, next to
// the floor its FLOPs (at the GPU's dense bf16 tensor-core peak) and its weight bytes (at the HBM
// ceiling) imply. Only the tower's weights are made (dummy, on the device); the text model is not
// loaded. An "image" is a 1280x720 frame of random pixels (a 720p photo's shape) prepared exactly
// as the request path prepares one (resized within the budget, patchified), so a 280-token budget
// resizes it to 1056x576: 264 soft tokens of 9 patches each (2376 patches). Each batch size runs
// its images through one encode() call, as a prefill step that holds them does.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/kernel_policy_option.h"
#include "core/error.h"
#include "core/log.h"
#include "kernels/backends.h"
#include "model/dummy_weights.h"
#include "model/vision_tower.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"

namespace gs::cli {
namespace {

struct BenchVisionOptions {
  std::string model = "31b";
  std::string backend = "cuda";
  std::string kernel_policy;
  std::vector<int> batches = {1, 16};
  int budget = 280;
  int width = 1280, height = 720;
  int iters = 10, warmup = 2;
  double peak_tflops = 989.0;  // H100/H200 SXM dense bf16 tensor-core peak
  double hbm_tb_s = 4.29;      // engine-design.md: H200 copy bandwidth
  std::string json_out;
};

// Multiply-adds of one image through the tower: patch embedding, per layer the four attention
// projections, attention inside the image (QKᵀ and PV over its patches), the gated MLP; then the
// projection of its soft tokens into the text model. Norms, RoPE, pooling: elementwise, left out.
double tower_flops(const ModelConfig& cfg, const PreparedImage& img) {
  const VisionConfig& v = cfg.vision;
  const double P = img.num_patches(), S = img.soft_tokens, Hv = v.hidden_size, I = v.intermediate_size;
  const double qd = double(v.num_heads) * v.head_dim;
  double macs = P * v.patch_values() * Hv;
  macs += v.num_layers * (P * Hv * qd * 4 + 2 * P * P * qd + 3 * P * Hv * I);
  macs += S * Hv * cfg.hidden_size;
  return 2 * macs;
}

RgbImage random_frame(int width, int height) {
  RgbImage img;
  img.width = width, img.height = height;
  img.pixels.resize(size_t(width) * size_t(height) * 3);
  uint32_t x = 2463534242u;
  for (uint8_t& p : img.pixels) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    p = uint8_t(x >> 24);
  }
  return img;
}

int run(const BenchVisionOptions& o) {
  GS_CHECK(!o.batches.empty() && *std::min_element(o.batches.begin(), o.batches.end()) >= 1,
           "bench-vision: --batch wants sizes >= 1");
  GS_CHECK(o.iters >= 1 && o.warmup >= 0, "bench-vision: --iters >= 1 and --warmup >= 0");
  std::unique_ptr<Backend> be = create_backend(o.backend, backend_options(o.kernel_policy));
  const ModelConfig cfg = resolve_dummy_config(o.model);
  GS_CHECK(cfg.has_vision(), "bench-vision: {} has no vision tower", o.model);
  auto weights = make_dummy_vision_weights(cfg, *be);
  const PreparedImage img = prepare_image(random_frame(o.width, o.height), o.budget);
  const int max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  VisionTower tower(cfg, weights, *be);
  tower.reserve(max_batch * img.num_patches(), max_batch * img.soft_tokens);
  const VisionConfig& v = cfg.vision;
  const double weight_bytes = double(weights->bytes());
  log::info("bench-vision: {} tower ({} layers, hidden {}, {} heads x {}) on {}, {:.2f} GB of weights; a {}x{} "
            "frame at budget {}: {}x{} pixels, {} patches, {} soft tokens",
            o.model, v.num_layers, v.hidden_size, v.num_heads, v.head_dim, be->name(), weight_bytes / 1e9, o.width,
            o.height, o.budget, img.width, img.height, img.num_patches(), img.soft_tokens);

  const double flops_per_image = tower_flops(cfg, img);
  std::printf("\n%s vision tower, %s, %dx%d frame at budget %d (%d patches, %d soft tokens), %d iterations after %d "
              "warm-up (peak %.0f TFLOP/s, HBM %.2f TB/s)\n",
              o.model.c_str(), be->name().c_str(), o.width, o.height, o.budget, img.num_patches(), img.soft_tokens,
              o.iters, o.warmup, o.peak_tflops, o.hbm_tb_s);
  std::printf("| images | ms per call | images/s | TFLOP/s | floor ms | call / floor |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
  nlohmann::json rows = nlohmann::json::array();
  for (int b : o.batches) {
    std::vector<const PreparedImage*> images(size_t(b), &img);
    for (int i = 0; i < o.warmup; ++i) tower.encode(images);
    be->synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters; ++i) tower.encode(images);
    be->synchronize();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / o.iters;
    const double flops = flops_per_image * b;
    const double floor_ms = std::max(flops / (o.peak_tflops * 1e12), weight_bytes / (o.hbm_tb_s * 1e12)) * 1e3;
    std::printf("| %d | %.3f | %.1f | %.1f | %.3f | %.2fx |\n", b, ms, b * 1e3 / ms, flops / (ms * 1e9), floor_ms,
                ms / floor_ms);
    rows.push_back({{"model", o.model}, {"backend", be->name()}, {"images", b}, {"budget", o.budget},
                    {"patches_per_image", img.num_patches()}, {"soft_tokens_per_image", img.soft_tokens},
                    {"ms_per_call", ms}, {"images_per_s", b * 1e3 / ms}, {"tflops", flops / (ms * 1e9)},
                    {"gflop_per_image", flops_per_image / 1e9}, {"floor_ms", floor_ms},
                    {"ratio_to_floor", ms / floor_ms}});
  }
  if (!o.json_out.empty()) {
    std::ofstream f(o.json_out);
    GS_CHECK(f.good(), "cannot write {}", o.json_out);
    f << rows.dump(2) << "\n";
  }
  return 0;
}

GS_REGISTER_COMMAND(bench_vision, "bench-vision",
                    "Time the vision tower (images/s) of a model shape against its FLOP and weight floors",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<BenchVisionOptions>();
                      app.add_option("--model", o->model,
                                     "Preset name (e2b, e4b, 26b-a4b, 31b, demo) or model directory (its config)")
                          ->capture_default_str();
                      app.add_option("--backend", o->backend, "cpu, cuda or cuda:N")->capture_default_str();
                      add_kernel_policy_option(app, o->kernel_policy);
                      app.add_option("--batch", o->batches, "Comma-separated images per encode call, e.g. 1,16")
                          ->delimiter(',')
                          ->capture_default_str();
                      app.add_option("--budget", o->budget, "Soft tokens per image at most (70, 140, 280, 560, 1120)")
                          ->capture_default_str();
                      app.add_option("--width", o->width, "Frame width in pixels")->capture_default_str();
                      app.add_option("--height", o->height, "Frame height in pixels")->capture_default_str();
                      app.add_option("--iters", o->iters, "Timed calls per batch size")->capture_default_str();
                      app.add_option("--warmup", o->warmup, "Untimed calls first")->capture_default_str();
                      app.add_option("--peak-tflops", o->peak_tflops, "Dense bf16 peak for the FLOP floor")
                          ->capture_default_str();
                      app.add_option("--hbm-tb-s", o->hbm_tb_s, "Bandwidth ceiling for the weight floor, TB/s")
                          ->capture_default_str();
                      app.add_option("--json", o->json_out, "Also write the results as JSON to this file");
                      return [o] { return run(*o); };
                    });

}  // namespace
}  // namespace gs::cli
