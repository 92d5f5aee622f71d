// gemmaserve bench-allreduce: NCCL against the custom all-reduce on the GPUs of this host
// (parallel/all_reduce_bench.h), for the decode messages of a hidden size and a sweep of sizes.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "parallel/all_reduce_bench.h"

namespace gs::cli {
namespace {

struct Options {
  std::vector<int> ranks{2, 4};
  int hidden = 5376;  // 31B
  std::vector<int> batches{1, 64};
  bool sweep = true;
  int iters = 30, reps = 20;
  std::string json;
};

std::string human_bytes(size_t b) {
  if (b >= (size_t(1) << 20)) return fmt::format("{:.1f} MiB", double(b) / double(size_t(1) << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", double(b) / 1024.0);
  return fmt::format("{} B", b);
}

int run(const Options& o) {
  GS_CHECK(o.hidden > 0 && o.hidden % 8 == 0, "--hidden {} must be a positive multiple of 8", o.hidden);
  GS_CHECK(o.iters > 0 && o.reps > 0, "--iters and --reps must be positive");
  AllReduceBenchOptions b;
  b.ranks = o.ranks;
  b.iters = o.iters;
  b.reps = o.reps;
  for (int batch : o.batches) {
    GS_CHECK(batch > 0, "--batch {} must be positive", batch);
    b.sizes.push_back(size_t(batch) * size_t(o.hidden) * 2);
    b.labels.push_back(fmt::format("decode batch {} x {}", batch, o.hidden));
  }
  if (o.sweep)
    for (size_t s = 1024; s <= (size_t(64) << 20); s *= 4) {
      b.sizes.push_back(s);
      b.labels.push_back("");
    }
  const std::vector<AllReduceBenchRow> rows = run_all_reduce_bench(b);
  std::printf("%-6s %-26s %11s %11s %11s %8s\n", "ranks", "message (bf16)", "bytes", "NCCL us", "custom us", "ratio");
  nlohmann::json out = nlohmann::json::array();
  for (const AllReduceBenchRow& r : rows) {
    const std::string what = r.label.empty() ? human_bytes(r.bytes) : r.label;
    if (r.custom_us >= 0)
      std::printf("%-6d %-26s %11zu %11.2f %11.2f %8.2f\n", r.ranks, what.c_str(), r.bytes, r.nccl_us, r.custom_us,
                  r.custom_us / r.nccl_us);
    else
      std::printf("%-6d %-26s %11zu %11.2f %11s %8s\n", r.ranks, what.c_str(), r.bytes, r.nccl_us, "-", "-");
    out.push_back({{"ranks", r.ranks}, {"bytes", r.bytes}, {"label", r.label}, {"nccl_us", r.nccl_us},
                   {"custom_us", r.custom_us >= 0 ? nlohmann::json(r.custom_us) : nlohmann::json(nullptr)}});
  }
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    GS_CHECK(f.good(), "cannot write {}", o.json);
    f << nlohmann::json{{"hidden", o.hidden}, {"iters", o.iters}, {"reps", o.reps}, {"rows", out}}.dump(2) << "\n";
  }
  return 0;
}

GS_REGISTER_COMMAND(bench_allreduce, "bench-allreduce",
                    "Time the tensor-parallel all-reduce on this host's GPUs: NCCL vs the custom one (GS_TP_ALLREDUCE_PUSH=0: its one-shot kernel alone)",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<Options>();
                      app.add_option("--tensor-parallel-size,--tp", o->ranks,
                                     "group sizes to measure (sizes above the GPU count are skipped)")
                          ->delimiter(',')
                          ->capture_default_str();
                      app.add_option("--hidden", o->hidden, "hidden size of the decode message (31B: 5376)")
                          ->capture_default_str();
                      app.add_option("--batch", o->batches, "decode batch sizes: one message of batch x hidden bf16")
                          ->delimiter(',')
                          ->capture_default_str();
                      app.add_flag("!--no-sweep", o->sweep, "leave out the sweep of sizes 1 KiB..64 MiB");
                      app.add_option("--iters", o->iters, "timed graph replays (median reported)")
                          ->capture_default_str();
                      app.add_option("--reps", o->reps, "all-reduces captured per graph")->capture_default_str();
                      app.add_option("--json", o->json, "also write the results as JSON to this file");
                      return [o] { return run(*o); };
                    });

}  // namespace
}  // namespace gs::cli
