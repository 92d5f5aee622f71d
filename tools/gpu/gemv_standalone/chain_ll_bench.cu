// Experiment (docs/perf/decode.md, "2026-11-27 09:50-10:30Z"): can one persistent kernel cross a
// batch-1 GEMV chain's links cheaper than a PDL kernel boundary (~1.6 us a link over the bytes)?
//
// The 11-25 persistent chain synchronised through counters: a fence after the outputs, a flag,
// then a second round trip for the input; ~5 us a link under load. Here each link's output is
// written in the LL form of NCCL's low-latency protocol: 8-byte words holding two bf16 values
// and a 32-bit flag, stored in one access, so a reader that sees the flag sees the data. No
// fence, no counter: a CTA polls its whole input (its norms could then run locally) and the poll
// is the input load. Each warp streams its items (4 weight rows x C chunks a lane) of every link
// in order through its own ring of D shared-memory slots (cp.async, or TMA bulk copies onto an
// mbarrier a slot), so the next link's first weights are in flight while the CTA polls that
// link's input.
//
// The chain is E2B's per-layer projections (qkv, o_proj, gate_up with the GeLU product, down,
// PLE gate, PLE projection) over its 35 layers (the last 20 double-wide), each link's input the
// previous one's output, against the same chain of the production GEMV launches under PDL in a
// CUDA graph (launch_gemv, launch_gemv_gelu_mul). Both write every link's output, compared
// link by link. The kernel is chain_ll_kernel.cuh. Thread 0 of CTAs 0-3 stamps its clock at the
// phases of each link; every CTA marks the global time of its poll and its stores (the cross-CTA
// timeline). This is the form with a CTA barrier before the stores; 8d9c357 stored from the warp
// that completed a unit and was slower (decode.md).
//
//   chain_ll_bench [layers=35] [tiny|full] [x]     (tools/gpu/gemv_standalone/build.sh OUT builds it)
//     tiny: every link 256 x 256 (the synchronisation alone); x: the ablations of one configuration
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/dtype.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/launch_util.h"
#include "graph_timer.h"
#include "chain_ll_kernel.cuh"

using namespace gs;
using namespace gs::cuda;

namespace {

using namespace chain_ll;

__global__ void bump(uint32_t* e) { *e += 1; }

__global__ void fill_uniform(bf16* p, size_t n, float a, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    p[i] = __float2bfloat16((float(h) * (1.f / 4294967296.f) * 2.f - 1.f) * a);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int layers = argc > 1 ? atoi(argv[1]) : 35;
  const bool tiny = argc > 2 && argv[2][0] == 't';  // every link 256 x 256: the synchronisation alone
  pdl_step_rows = 1;
  cudaStream_t st;
  GS_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  int sms = 0;
  GS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));

  struct Shape { int N, K, gelu; };
  std::vector<Shape> shapes;
  for (int l = 0; l < layers; ++l) {
    const int I = l >= 15 ? 12288 : 6144;
    if (tiny) {
      for (int i = 0; i < 6; ++i) shapes.push_back({256, 256, 0});
      continue;
    }
    shapes.push_back({2560, 1536, 0});
    shapes.push_back({1536, 2048, 0});
    shapes.push_back({2 * I, 1536, 1});
    shapes.push_back({1536, I, 0});
    shapes.push_back({256, 1536, 0});
    shapes.push_back({1536, 256, 0});
  }
  const int n = int(shapes.size());
  size_t wtotal = 0;
  for (auto& s : shapes) wtotal += size_t(s.N) * s.K;
  bf16* wpool;
  GS_CUDA_CHECK(cudaMalloc(&wpool, wtotal * 2));
  std::vector<bf16*> wptr(n), plain(n);
  std::vector<uint2*> ll(n);
  bf16* x0;
  GS_CUDA_CHECK(cudaMalloc(&x0, kMaxK * 2));
  fill_uniform<<<64, 256, 0, st>>>(x0, kMaxK, 1.f, 7);
  size_t off = 0;
  for (int i = 0; i < n; ++i) {
    wptr[i] = wpool + off;
    off += size_t(shapes[i].N) * shapes[i].K;
    fill_uniform<<<1024, 256, 0, st>>>(wptr[i], size_t(shapes[i].N) * shapes[i].K, std::sqrt(3.f / shapes[i].K),
                                       1234u + 977u * i);
    const int outs = shapes[i].gelu ? shapes[i].N / 2 : shapes[i].N;
    GS_CUDA_CHECK(cudaMalloc(&plain[i], outs * 2));
    GS_CUDA_CHECK(cudaMalloc(&ll[i], outs / 2 * 8));
    GS_CUDA_CHECK(cudaMemset(ll[i], 0, outs / 2 * 8));
  }
  uint32_t* epoch;
  GS_CUDA_CHECK(cudaMalloc(&epoch, 4));
  GS_CUDA_CHECK(cudaMemset(epoch, 0, 4));
  GS_CUDA_CHECK(cudaStreamSynchronize(st));
  printf("%d links, %.1f MB of weights, %d SMs; floor at 4.29 TB/s %.1f us\n", n, wtotal * 2 / 1e6, sms,
         wtotal * 2 / 4.29e6);

  // The production chain: one GEMV launch per link under PDL.
  auto pdl_chain = [&] {
    for (int i = 0; i < n; ++i) {
      const bf16* in = i == 0 ? x0 : plain[i - 1];
      const Shape& s = shapes[i];
      if (s.gelu) launch_gemv_gelu_mul(in, wptr[i], plain[i], 1, s.N / 2, s.K, st);
      else launch_gemv(in, wptr[i], plain[i], DType::BF16, 1, s.N, s.K, st);
    }
  };
  const float t_pdl = time_graph(st, 4, pdl_chain);
  printf("PDL chain of launch_gemv: %.1f us (%.2f TB/s, %.2f us a link over the floor)\n", t_pdl,
         wtotal * 2 / t_pdl / 1e6, (t_pdl - wtotal * 2 / 4.29e6) / n);

  using Kern = void (*)(const Link*, int, const uint32_t*, int);
  auto run_ll = [&](Kern kern, int C, int D, int mode) {
    const bool bulk = kern == (Kern)chain_ll_kernel<1, 4, true> || kern == (Kern)chain_ll_kernel<2, 2, true> ||
                      kern == (Kern)chain_ll_kernel<1, 5, true>;
    std::vector<Link> hl(n);
    for (int i = 0; i < n; ++i) {
      const int chunks = shapes[i].K / 8;
      hl[i] = {wptr[i], shapes[i].N, shapes[i].K, shapes[i].gelu, (chunks + 32 * C - 1) / (32 * C), ll[i],
               i == 0 ? x0 : nullptr};
      const int umax = (shapes[i].N / 4 + sms - 1) / sms;
      if (umax > kMaxUnits) { printf("link %d: %d units a CTA > %d\n", i, umax, kMaxUnits); exit(1); }
      if (umax * hl[i].P * hl[i].P >= 32768) { printf("link %d: div_p inexact\n", i); exit(1); }
    }
    Link* dl;
    GS_CUDA_CHECK(cudaMalloc(&dl, n * sizeof(Link)));
    GS_CUDA_CHECK(cudaMemcpy(dl, hl.data(), n * sizeof(Link), cudaMemcpyHostToDevice));
    const int smem = kLinkTableBytes + kWarps * D * C * 4 * 32 * 16;
    if (n > kMaxLinks || sms > kMaxCtas) { printf("more than %d links or %d SMs\n", kMaxLinks, kMaxCtas); exit(1); }
    GS_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaFuncAttributes fa;
    GS_CUDA_CHECK(cudaFuncGetAttributes(&fa, kern));
    auto launch = [&] {
      bump<<<1, 1, 0, st>>>(epoch);
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeCooperative;
      attr[0].val.cooperative = 1;
      cudaLaunchConfig_t cfg{};
      cfg.gridDim = dim3(sms);
      cfg.blockDim = dim3(kThreads);
      cfg.dynamicSmemBytes = smem;
      cfg.stream = st;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      GS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kern, (const Link*)dl, n, (const uint32_t*)epoch, mode));
    };
    const float t = time_graph(st, 4, launch);
    printf("LL persistent, %s C=%d D=%d, mode %d (%d regs, %d B spill): %.1f us (%.2f TB/s, %.2f us a link over the floor)\n",
           bulk ? "TMA" : "cp.async", C, D, mode, fa.numRegs, int(fa.localSizeBytes), t, wtotal * 2 / t / 1e6, (t - wtotal * 2 / 4.29e6) / n);
    static long long hs[kStampCtas][kMaxLinks][6];
    GS_CUDA_CHECK(cudaMemcpyFromSymbol(hs, g_stamps, sizeof(hs)));
    // Mean cycles per phase by link kind over CTAs 0-3 (links a CTA owns no units of are skipped).
    double sum[6][6] = {}, cnt[6] = {};
    for (int c = 0; c < kStampCtas; ++c)
      for (int j = 1; j < n; ++j) {
        if (hl[j].N / 4 * (c + 1) / sms - hl[j].N / 4 * c / sms == 0) continue;
        const long long* a = hs[c][j];
        int jn = j + 1;
        while (jn < n && hl[jn].N / 4 * (c + 1) / sms - hl[jn].N / 4 * c / sms == 0) ++jn;
        sum[j % 6][0] += a[1] - a[0];
        sum[j % 6][1] += a[2] - a[1];
        sum[j % 6][2] += a[5] - a[2];
        sum[j % 6][3] += a[4] - a[5];
        sum[j % 6][4] += a[3] - a[4];
        if (jn < n) sum[j % 6][5] += hs[c][jn][0] - a[3];
        cnt[j % 6] += 1;
      }
    printf("    cycles by link kind (poll / items / sums / epilogue / store / to next link):");
    for (int k = 0; k < 6; ++k)
      if (cnt[k] > 0) printf("  [%d] %.0f/%.0f/%.0f/%.0f/%.0f/%.0f", k, sum[k][0] / cnt[k], sum[k][1] / cnt[k], sum[k][2] / cnt[k],
                                sum[k][3] / cnt[k], sum[k][4] / cnt[k], sum[k][5] / cnt[k]);
    printf("\n");
    {
      static long long cw[kStampCtas][kMaxLinks][kWarps][2];
      GS_CUDA_CHECK(cudaMemcpyFromSymbol(cw, g_copy_wait, sizeof(cw)));
      double f[6] = {}, a[6] = {}, k[6] = {};
      for (int c = 0; c < kStampCtas; ++c)
        for (int j = 1; j < n; ++j) {
          if (hl[j].N / 4 * (c + 1) / sms - hl[j].N / 4 * c / sms == 0) continue;
          for (int w = 0; w < kWarps; ++w) {
            f[j % 6] += double(cw[c][j][w][0]);
            a[j % 6] += double(cw[c][j][w][1]);
          }
          k[j % 6] += kWarps;
        }
      printf("    copy waits a warp, cycles by link kind (first item / all items):");
      for (int i = 0; i < 6; ++i)
        if (k[i] > 0) printf("  [%d] %.0f/%.0f", i, f[i] / k[i], a[i] / k[i]);
      printf("\n");
    }
    if ((mode & 15) == 0) {
      // Per link kind, mean over links (ns): the last producer after the median one, the first
      // and the median consumer's completed poll after the last producer's stores, and the
      // consumers' spread.
      static unsigned long long tl[kMaxLinks][kMaxCtas][2];
      GS_CUDA_CHECK(cudaMemcpyFromSymbol(tl, g_timeline, sizeof(tl)));
      auto active = [&](int j, int c) { return hl[j].N / 4 * (c + 1) / sms - hl[j].N / 4 * c / sms > 0; };
      double acc[6][4] = {}, cnt2[6] = {};
      for (int j = 1; j < n; ++j) {
        std::vector<double> prod, cons;
        for (int c = 0; c < sms; ++c) {
          if (active(j - 1, c)) prod.push_back(double(tl[j - 1][c][1]));
          if (active(j, c)) cons.push_back(double(tl[j][c][0]));
        }
        std::sort(prod.begin(), prod.end());
        std::sort(cons.begin(), cons.end());
        const double pl = prod.back(), pm = prod[prod.size() / 2];
        acc[j % 6][0] += pl - pm;
        acc[j % 6][1] += cons.front() - pl;
        acc[j % 6][2] += cons[cons.size() / 2] - pl;
        acc[j % 6][3] += cons.back() - cons.front();
        cnt2[j % 6] += 1;
      }
      printf("    ns by link kind (last producer - median / first poll done - last producer / median poll - last producer / poll spread):");
      for (int k = 0; k < 6; ++k)
        printf("  [%d] %.0f/%.0f/%.0f/%.0f", k, acc[k][0] / cnt2[k], acc[k][1] / cnt2[k], acc[k][2] / cnt2[k], acc[k][3] / cnt2[k]);
      printf("\n");
    }
    cudaFree(dl);
  };
  struct Cfg { Kern k; int C, D; };  // the last three copy weights by TMA bulk copies
  const Cfg cfgs[] = {{chain_ll_kernel<1, 3, false>, 1, 3}, {chain_ll_kernel<2, 2, false>, 2, 2},
                      {chain_ll_kernel<1, 5, false>, 1, 5}, {chain_ll_kernel<1, 4, true>, 1, 4},
                      {chain_ll_kernel<2, 2, true>, 2, 2}, {chain_ll_kernel<1, 5, true>, 1, 5}};

  auto compare = [&](const char* what) {
    // The LL outputs against the PDL chain's, link by link (relative L2).
    GS_CUDA_CHECK(cudaStreamSynchronize(st));
    double worst_first = 0, last = 0;
    for (int i = 0; i < n; ++i) {
      const int outs = shapes[i].gelu ? shapes[i].N / 2 : shapes[i].N;
      std::vector<uint16_t> a(outs);
      std::vector<uint2> b(outs / 2);
      GS_CUDA_CHECK(cudaMemcpy(a.data(), plain[i], outs * 2, cudaMemcpyDeviceToHost));
      GS_CUDA_CHECK(cudaMemcpy(b.data(), ll[i], outs / 2 * 8, cudaMemcpyDeviceToHost));
      double num = 0, den = 0;
      for (int k = 0; k < outs; ++k) {
        const float ref = bf16_to_f32(a[k]);
        const float got = bf16_to_f32(uint16_t(k & 1 ? b[k / 2].x >> 16 : b[k / 2].x & 0xffff));
        num += double(got - ref) * (got - ref);
        den += double(ref) * ref;
      }
      const double rel = std::sqrt(num / std::max(den, 1e-30));
      if (i < 6) worst_first = std::max(worst_first, rel);
      if (i == n - 1) last = rel;
      if (!(rel < 1.0)) { printf("  %s: link %d relative error %.3g\n", what, i, rel); }
    }
    printf("  %s vs PDL chain: worst relative L2 over the first 6 links %.2e, last link %.2e\n", what, worst_first,
           last);
  };

  if (argc > 3) {  // ablations of C=1 D=3 without waiting: what each part of a link costs
    const Cfg& c = cfgs[0];
    const int vars[] = {0, 2, 4, 8, 16 | 2, 32, 4 | 8 | 32, 4 | 8 | 16 | 32 | 2};
    const char* what[] = {"all", "no stores", "no copy wait", "no FMAs", "no sums, no stores", "no copies",
                          "no copies, waits, FMAs", "only the polls, barriers and cursor"};
    for (int i = 0; i < 8; ++i) {
      printf("  %s\n", what[i]);
      run_ll(c.k, c.C, c.D, 1 | vars[i] << 4);
    }
    return 0;
  }
  for (const Cfg& c : cfgs) {
    run_ll(c.k, c.C, c.D, 0);
    compare("LL");
  }
  printf("  with L2 prefetch of the next items while polling\n");
  for (const Cfg& c : cfgs) {
    run_ll(c.k, c.C, c.D, 128 << 4);
    compare("LL");
  }
  for (const Cfg& c : cfgs) run_ll(c.k, c.C, c.D, 1);
  const float t_pdl2 = time_graph(st, 4, pdl_chain);
  printf("PDL chain again: %.1f us\n", t_pdl2);
  return 0;
}
