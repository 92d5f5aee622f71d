// A CUPTI injection library that records every kernel a process runs, graph-replayed ones
// included, with the GPU's start and end timestamps, and writes them as CSV when the process
// exits. Inside a replayed decode graph no profiler we have shows per-kernel times without
// changing them (ncu serialises kernels and starts each from a cold L2); CUPTI's concurrent-kernel
// records do not serialise, so with PDL the records overlap as the kernels did.
//
//   CUDA_INJECTION64_PATH=/path/libkernel_trace.so GS_KERNEL_TRACE=out.csv gemmaserve bench-decode ...
//   python3 tools/gpu/kernel_trace.py out.csv
//
// Build: tools/gpu/kernel_trace/build.sh OUT_DIR (g++ and the toolkit's CUPTI).
#include <cupti.h>
#include <cxxabi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct KernelRecord {
  uint64_t start, end, graph_node;
  uint32_t graph_id, stream, cluster;
  int32_t grid, block, dyn_smem;
  std::string name;
};

std::mutex g_mu;
std::vector<KernelRecord> g_records;
bool g_written = false;

// "void gs::cuda::(anonymous namespace)::gemv_kernel<1, 4, ...>(...)" -> "gemv_kernel<1, 4, ...>"
std::string short_name(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : mangled;
  std::free(d);
  // Cut the argument list: the last '(' at template depth 0.
  int depth = 0;
  size_t cut = std::string::npos;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    else if (s[i] == '>') --depth;
    else if (s[i] == '(' && depth == 0 && s.compare(i, 21, "(anonymous namespace)") != 0) cut = i;
  }
  if (cut != std::string::npos) s.resize(cut);
  for (const char* drop : {"void ", "gs::cuda::", "(anonymous namespace)::", "attn::", "__nv_bfloat16"}) {
    for (size_t p; (p = s.find(drop)) != std::string::npos;)
      s.replace(p, std::strlen(drop), std::strcmp(drop, "__nv_bfloat16") == 0 ? "bf16" : "");
  }
  for (char& c : s)
    if (c == ',') c = ';';  // CSV
  return s;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = size_t(8) << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    g_records.push_back({k->start, k->end, k->graphNodeId, k->graphId, k->streamId, k->clusterX,
                         k->gridX * k->gridY * k->gridZ, k->blockX * k->blockY * k->blockZ, k->dynamicSharedMemory,
                         short_name(k->name)});
  }
  std::free(buffer);
}

void write_records() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_written) return;
  g_written = true;
  const char* path = std::getenv("GS_KERNEL_TRACE");
  FILE* f = std::fopen(path && *path ? path : "kernel_trace.csv", "w");
  if (!f) {
    std::perror("kernel_trace: cannot write the trace");
    return;
  }
  std::fprintf(f, "start_ns,end_ns,graph_id,graph_node,stream,grid,block,cluster,dyn_smem,name\n");
  for (const KernelRecord& r : g_records)
    std::fprintf(f, "%llu,%llu,%u,%llu,%u,%d,%d,%u,%d,%s\n", (unsigned long long)r.start, (unsigned long long)r.end,
                 r.graph_id, (unsigned long long)r.graph_node, r.stream, r.grid, r.block, r.cluster, r.dyn_smem,
                 r.name.c_str());
  std::fclose(f);
  std::fprintf(stderr, "kernel_trace: %zu kernels -> %s\n", g_records.size(), path && *path ? path : "kernel_trace.csv");
}

}  // namespace

// Called by the CUDA driver when CUDA_INJECTION64_PATH names this library.
extern "C" int InitializeInjection(void) {
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "kernel_trace: CUPTI refused the kernel activity\n");
    return 0;
  }
  std::atexit(write_records);
  return 1;
}
