// gemmaserve bench-kernels: achieved TFLOP/s and TB/s of the cuda backend's ops on Gemma-4 shapes,
// next to the H200 ceilings of engine-design.md (793 TFLOP/s bf16, 4.29 TB/s HBM). A benchmark, not
// a test: it measures and reports, it asserts nothing.
//
// Each op runs back to back on the backend's stream after a warm-up; the figure is the median of
// several trials of wall time / repetitions (so it includes launch cost, which is what a step
// pays without graphs). Inputs are random (never zeros: they run faster than real data).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/kernel_policy_option.h"
#include "core/error.h"
#include "kernels/backends.h"
#ifdef GEMMASERVE_HAVE_CUDA
#include "kernels/cuda/attention.h"
#include "kernels/cuda_bench/attention_bench.h"
#include "kernels/cuda_bench/vision_attention_bench.h"
#endif

namespace gs::cli {
namespace {

constexpr double kPeakTflops = 793.0;  // dense bf16, 8192³ through cuBLAS on an H200
constexpr double kPeakTbps = 4.29;     // HBM copy, read + write, H200

struct Row {
  std::string name;
  double ms = 0, tflops = 0, tbps = 0;
};

class Bench {
 public:
  explicit Bench(Backend& b, int reps) : b_(b), reps_(reps) {}

  Tensor random(DType dt, Shape s, float scale = 1.f) {
    Tensor t = b_.empty(dt, s);
    b_.fill_uniform(t, ++seed_, scale);
    return t;
  }
  Tensor ints(Shape s, int hi) {
    std::vector<int> v(size_t(s.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = int((i * 2654435761u) % uint64_t(hi));
    Tensor t = b_.empty(DType::I32, s);
    b_.copy_from_host(t, v.data());
    return t;
  }

  // Median over 5 trials of the time per call of `fn`.
  void time(const std::string& name, double flops, double bytes, const std::function<void()>& fn) {
    fn();
    b_.synchronize();
    std::vector<double> trials;
    for (int trial = 0; trial < 5; ++trial) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < reps_; ++i) fn();
      b_.synchronize();
      trials.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps_);
    }
    std::sort(trials.begin(), trials.end());
    double s = trials[trials.size() / 2];
    rows.push_back({name, s * 1e3, flops / s / 1e12, bytes / s / 1e12});
  }

  std::vector<Row> rows;

 private:
  Backend& b_;
  int reps_;
  uint64_t seed_ = 1000;
};

void bench_gemms(Bench& B, Backend& b) {
  struct G { const char* what; int64_t m, n, k; DType out; };
  const G gemms[] = {
      {"31B gate_up, decode", 1, 43008, 5376, DType::BF16},
      {"31B gate_up, batch 64", 64, 43008, 5376, DType::BF16},
      {"31B gate_up, prefill 4096", 4096, 43008, 5376, DType::BF16},
      {"31B o_proj, prefill 4096", 4096, 5376, 8192, DType::BF16},
      {"E2B qkv, decode", 1, 2560, 1536, DType::BF16},
      {"LM head 31B, decode (f32 out)", 1, 262144, 5376, DType::F32},
      {"square 8192", 8192, 8192, 8192, DType::BF16},
      // Decode shapes at batch 1 and 8: M <= GS_GEMV_MAX_M goes to the GEMV (gemv.h), so running
      // with GS_GEMV_MAX_M=0 gives cuBLASLt's figures for the same rows. One weight per row, so
      // the E2B ones (< 50 MB) run from a warm L2 after the first call.
      {"E2B qkv, decode", 8, 2560, 1536, DType::BF16},
      {"E2B o_proj, decode", 1, 1536, 2048, DType::BF16},
      {"E2B o_proj, decode", 8, 1536, 2048, DType::BF16},
      {"E2B gate_up, decode", 1, 12288, 1536, DType::BF16},
      {"E2B gate_up, decode", 8, 12288, 1536, DType::BF16},
      {"E2B down, decode", 1, 1536, 6144, DType::BF16},
      {"E2B down, decode", 8, 1536, 6144, DType::BF16},
      {"E2B PLE gate, decode", 1, 256, 1536, DType::BF16},
      {"E2B PLE proj, decode", 1, 1536, 256, DType::BF16},
      {"LM head E2B, decode (f32 out)", 1, 262144, 1536, DType::F32},
      {"LM head E2B, decode (f32 out)", 8, 262144, 1536, DType::F32},
      {"31B qkv, decode", 1, 16384, 5376, DType::BF16},
      {"31B qkv, decode", 8, 16384, 5376, DType::BF16},
      {"31B o_proj, decode", 1, 5376, 8192, DType::BF16},
      {"31B gate_up, decode", 8, 43008, 5376, DType::BF16},
      {"31B down, decode", 1, 5376, 21504, DType::BF16},
      {"31B down, decode", 8, 5376, 21504, DType::BF16},
      {"LM head 31B, decode (f32 out)", 8, 262144, 5376, DType::F32},
  };
  for (const G& g : gemms) {
    Tensor x = B.random(DType::BF16, {g.m, g.k}), w = B.random(DType::BF16, {g.n, g.k}, 0.05f);
    Tensor o = b.empty(g.out, {g.m, g.n});
    double bytes = double(g.m * g.k + g.n * g.k) * 2 + double(g.m * g.n) * dtype_size(g.out);
    B.time(fmt::format("matmul {} [{}x{}x{}]", g.what, g.m, g.n, g.k), 2.0 * g.m * g.n * g.k, bytes,
           [&] { b.matmul(x, w, o); });
  }
}

void bench_elementwise(Bench& B, Backend& b) {
  const int64_t T = 8192, H = 5376, I = 21504;
  Tensor x = B.random(DType::BF16, {T, H}), r = B.random(DType::BF16, {T, H}), w = B.random(DType::BF16, {H});
  Tensor o = b.empty(DType::BF16, {T, H});
  B.time("rms_norm [8192x5376]", 0, 2.0 * T * H * 2, [&] { b.rms_norm(x, &w, 1e-6f, o); });
  B.time("residual_add_norm [8192x5376]", 0, 3.0 * T * H * 2, [&] { b.residual_add_norm(r, x, w, 1e-6f, 1.f); });
  B.time("add [8192x5376]", 0, 3.0 * T * H * 2, [&] { b.add(x, r, o); });
  Tensor gu = B.random(DType::BF16, {T, 2 * I}), act = b.empty(DType::BF16, {T, I});
  B.time("gelu_tanh_mul [8192x2x21504]", 0, 3.0 * T * I * 2, [&] { b.gelu_tanh_mul(gu, act); });
  Tensor table = B.random(DType::BF16, {262144, H}), ids = B.ints({T}, 262144);
  B.time("embedding [8192 of 262144x5376]", 0, 2.0 * T * H * 2, [&] { b.embedding(table, ids, 73.5f, o); });
  Tensor logits = B.random(DType::F32, {64, 262144}, 20.f);
  B.time("softcap f32 [64x262144]", 0, 2.0 * 64 * 262144 * 4, [&] { b.softcap(logits, 30.f); });
}

void bench_qkv(Bench& B, Backend& b) {
  // 31B sliding layer: 32 q heads, 16 kv heads of 256, 8192 tokens written into a paged cache.
  const int T = 8192, nq = 32, nkv = 16, d = 256, ps = 16, pages = T / ps;
  Tensor qkv = B.random(DType::BF16, {T, (nq + 2 * nkv) * d}), qn = B.random(DType::BF16, {d});
  Tensor kn = B.random(DType::BF16, {d}), q = b.empty(DType::BF16, {T, nq * d});
  KvPool pool;
  pool.cache_layers = 1, pool.num_pages = pages, pool.page_size = ps, pool.kv_heads = nkv, pool.head_dim = d;
  pool.k = b.empty(DType::BF16, {1, pages, ps, nkv, d});
  pool.v = b.empty(DType::BF16, {1, pages, ps, nkv, d});
  AttentionBatch batch;
  batch.num_tokens = T, batch.num_seqs = 1, batch.page_size = ps;
  std::vector<int> pos(T);
  for (int i = 0; i < T; ++i) pos[size_t(i)] = i;
  batch.positions = b.empty(DType::I32, {T});
  b.copy_from_host(batch.positions, pos.data());
  batch.slot_mapping[0] = batch.positions;
  AttentionParams p;
  p.num_q_heads = nq, p.num_kv_heads = nkv, p.head_dim = d;
  RopeSpec rope{10000.f, d, d / 2, d};
  double bytes = double(T) * (nq + 2 * nkv) * d * 2 * 2;
  B.time("qkv_prepare 31B sliding [8192 tok]", 0, bytes, [&] {
    b.qkv_prepare(qkv, QkvLayout::QKV, p, rope, qn, &kn, 1e-6f, batch, KvGroup::Sliding, pool, 0, q);
  });
}

void bench_moe(Bench& B, Backend& b) {
  const int64_t H = 2816, E = 128, I = 704;
  const int k = 8;
  Tensor gate_up = B.random(DType::BF16, {E, 2 * I, H}, 0.05f), down = B.random(DType::BF16, {E, H, I}, 0.05f);
  Tensor proj = B.random(DType::BF16, {E, H}), scale = B.random(DType::BF16, {H}), pes = B.random(DType::BF16, {E});
  // 1: batch-1 decode on the GEMV path; 8, 64, 128 (a c=100 decode step): the grouped GEMM in
  // 16-row tiles; 512, 1024 (around where the tile size changes) and 4096 (prefill): in 64-row
  // tiles (GS_MOE_PATH forces a path for A/B runs).
  for (int64_t T : {1, 8, 64, 128, 512, 1024, 4096}) {
    Tensor x = B.random(DType::BF16, {T, H}), out = b.empty(DType::BF16, {T, H});
    Tensor ids = b.empty(DType::I32, {T, k}), w = b.empty(DType::F32, {T, k});
    B.time(fmt::format("moe_route 26B [{} tok]", T), 2.0 * T * E * H, double(T * H * 2 + E * H * 2),
           [&] { b.moe_route(x, scale, proj, pes, 0.0188f, 1e-6f, k, ids, w); });
    // Experts the router chose: the bytes the experts op must stream at the least.
    std::vector<int> chosen(size_t(T * k));
    b.copy_to_host(ids, chosen.data());
    std::sort(chosen.begin(), chosen.end());
    const int64_t active = std::unique(chosen.begin(), chosen.end()) - chosen.begin();
    B.time(fmt::format("moe_experts 26B [{} tok, top-8]", T), 2.0 * T * k * 3 * I * H,
           double(active * 3 * I * H * 2 + 2 * T * H * 2), [&] { b.moe_experts(x, ids, w, gate_up, down, out); });
  }
}

void bench_sampling(Bench& B, Backend& b) {
  const int64_t R = 64, V = 262144;
  Tensor logits = B.random(DType::F32, {R, V}, 10.f), ids = b.empty(DType::I32, {R}), lp = b.empty(DType::F32, {R});
  std::vector<SamplingRow> greedy(static_cast<size_t>(R)), filtered(static_cast<size_t>(R));
  for (auto& r : filtered) r.temperature = 1.f, r.top_k = 64, r.top_p = 0.95f, r.seed = 7;
  B.time("sample greedy [64x262144]", 0, double(R * V * 4), [&] { b.sample(logits, greedy, ids, lp); });
  B.time("sample top-k 64 + top-p 0.95 [64x262144]", 0, double(R * V * 4), [&] { b.sample(logits, filtered, ids, lp); });
  // What most OpenAI clients send: top_p alone, so the whole row is a candidate.
  std::vector<SamplingRow> top_p(static_cast<size_t>(R));
  for (auto& r : top_p) r.temperature = 0.8f, r.top_p = 0.95f, r.seed = 7;
  B.time("sample top-p 0.95 [64x262144]", 0, double(R * V * 4), [&] { b.sample(logits, top_p, ids, lp); });
  // A random-weight model's rows: the whole vocabulary within a nat (sampling_window.cuh zooms).
  Tensor dense = B.random(DType::F32, {R, V}, 0.5f);
  B.time("sample top-p 0.95, logits in +-0.5 [64x262144]", 0, double(R * V * 4),
         [&] { b.sample(dense, top_p, ids, lp); });
  // One interactive user: a batch-1 step pays the whole row's sampling alone.
  Tensor one = logits.slice(0, 1), id1 = b.empty(DType::I32, {1}), lp1 = b.empty(DType::F32, {1});
  B.time("sample top-p 0.95 [1x262144]", 0, double(V * 4), [&] { b.sample(one, {top_p[0]}, id1, lp1); });
  Tensor tid = b.empty(DType::I32, {R, 20}), tlp = b.empty(DType::F32, {R, 20});
  B.time("top_logprobs 20 [64x262144]", 0, double(R * V * 4), [&] { b.top_logprobs(logits, 20, tid, tlp); });
}

int run(const std::string& backend_name, const std::string& kernel_policy, const std::string& json_path, int reps,
        bool skip_attention, const std::vector<std::string>& only) {
  std::unique_ptr<Backend> backend = create_backend(backend_name, backend_options(kernel_policy));
  GS_CHECK(backend->device() == Device::CUDA, "bench-kernels measures the cuda backend; got {}", backend->name());
  auto wanted = [&](const char* group) {
    return only.empty() || std::find(only.begin(), only.end(), group) != only.end();
  };
  Bench B(*backend, reps);
  if (wanted("gemm")) bench_gemms(B, *backend);
  if (wanted("elementwise")) bench_elementwise(B, *backend);
  if (wanted("qkv")) bench_qkv(B, *backend);
  if (wanted("moe")) bench_moe(B, *backend);
  if (wanted("sampling")) bench_sampling(B, *backend);
#ifdef GEMMASERVE_HAVE_CUDA
  if (!skip_attention && wanted("attention"))
    for (const auto& a : cuda::bench_attention(reps))
      B.rows.push_back({"attention " + a.name + " (" + a.kernel + ")", a.ms, a.tflops, a.kv_tbytes_per_s});
  if (!skip_attention && (wanted("attention") || wanted("vision")))
    for (const auto& a : cuda::bench_vision_attention(reps))
      B.rows.push_back({"vision_attention " + a.name, a.ms, a.tflops, a.tbytes_per_s});
#endif

  std::printf("%s\n%-58s %10s %9s %7s %8s %7s\n", backend->name().c_str(), "kernel [shape]", "ms", "TFLOP/s",
              "%peak", "TB/s", "%peak");
  nlohmann::json rows = nlohmann::json::array();
  for (const Row& r : B.rows) {
    std::printf("%-58s %10.4f %9.1f %6.1f%% %8.3f %6.1f%%\n", r.name.c_str(), r.ms, r.tflops,
                100 * r.tflops / kPeakTflops, r.tbps, 100 * r.tbps / kPeakTbps);
    rows.push_back({{"name", r.name}, {"ms", r.ms}, {"tflops", r.tflops}, {"tbytes_per_s", r.tbps}});
  }
  if (!json_path.empty()) {
    nlohmann::json j{{"device", backend->name()},
                     {"ceilings", {{"tflops_bf16", kPeakTflops}, {"hbm_tbytes_per_s", kPeakTbps}}},
                     {"reps", reps},
                     {"results", rows}};
    std::ofstream f(json_path);
    GS_CHECK(f.good(), "cannot write {}", json_path);
    f << j.dump(2) << "\n";
  }
  return 0;
}

GS_REGISTER_COMMAND(bench_kernels, "bench-kernels",
                    "Measure the cuda backend's kernels (TFLOP/s, TB/s) against the H200 ceilings",
                    [](CLI::App& app) -> std::function<int()> {
                      auto backend = std::make_shared<std::string>("cuda");
                      auto kernel_policy = std::make_shared<std::string>();
                      auto json = std::make_shared<std::string>();
                      auto reps = std::make_shared<int>(20);
                      auto skip_attention = std::make_shared<bool>(false);
                      app.add_option("--backend", *backend, "cuda or cuda:N")->capture_default_str();
                      add_kernel_policy_option(app, *kernel_policy);
                      app.add_option("--json", *json, "also write the results as JSON to this file");
                      app.add_option("--reps", *reps, "calls per timed trial")->capture_default_str();
                      app.add_flag("--skip-attention", *skip_attention, "leave out the attention kernels");
                      auto only = std::make_shared<std::vector<std::string>>();
                      app.add_option("--only", *only,
                                     "measure only these groups (comma-separated; `attention` includes the vision "
                                     "tower's attention, `vision` is that alone)")
                          ->delimiter(',')
                          ->check(CLI::IsMember(
                              {"gemm", "elementwise", "qkv", "moe", "sampling", "attention", "vision"}));
                      return [=] { return run(*backend, *kernel_policy, *json, *reps, *skip_attention, *only); };
                    });

}  // namespace
}  // namespace gs::cli
