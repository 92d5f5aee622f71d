#include "attention_harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "core/dtype.h"
#include "core/tensor.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_plan.cuh"
#include "runner/batch_builder.h"
#include "kernels/cpu/thread_pool.h"

namespace gs::test {
namespace {

constexpr uint16_t kBf16NaN = 0x7fc0;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

Tensor device_tensor(DType dtype, Shape shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.device = Device::CUDA;
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<size_t>(t.nbytes(), 16)), "cudaMalloc");
  t.storage = std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
  t.data = p;
  return t;
}

template <typename T>
Tensor upload(const std::vector<T>& host, DType dtype, Shape shape) {
  Tensor t = device_tensor(dtype, shape);
  check(cudaMemcpy(t.data, host.data(), t.nbytes(), cudaMemcpyHostToDevice), "upload");
  return t;
}

struct Seq {
  int q0 = 0, q_len = 0, kv_len = 0;
  std::vector<int> table;  // logical page -> physical page or -1
};

}  // namespace

bool cuda_device_present() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

AttnResult run_attention_case(const AttnCase& c, std::mt19937_64& rng) {
  const int d = c.head_dim, nq = c.num_q_heads, nkv = c.num_kv_heads, group = nq / nkv, ps = c.page_size;
  std::uniform_real_distribution<float> unit(-1.f, 1.f);
  AttnResult res;

  // ---- batch layout, positions, page tables ----
  std::vector<Seq> seqs(c.seqs.size());
  std::vector<int> positions, token_seq, q_start{0}, kv_len, mm_block;
  int max_q = 0, max_kv = 0, max_pages = 0, total_pages = 0;
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    const SeqCase& sc = c.seqs[s];
    Seq& q = seqs[s];
    q.q0 = int(positions.size()), q.q_len = sc.q_len, q.kv_len = sc.cached + sc.q_len;
    for (int i = 0; i < sc.q_len; ++i) {
      positions.push_back(sc.positions.empty() ? sc.cached + i : sc.positions[i]);
      token_seq.push_back(int(s));
      mm_block.push_back(sc.mm_block.empty() ? -1 : sc.mm_block[i]);
    }
    q_start.push_back(int(positions.size()));
    kv_len.push_back(q.kv_len);
    max_q = std::max(max_q, q.q_len), max_kv = std::max(max_kv, q.kv_len);
    const int pages = (q.kv_len + ps - 1) / ps;
    max_pages = std::max(max_pages, pages + 1);  // one spare column stays -1
    total_pages += pages;
  }
  const int T = int(positions.size()), S = int(seqs.size());
  const int num_pages = total_pages + 3;  // a few pages nobody owns (NaN)
  std::vector<int> phys(num_pages);
  for (int i = 0; i < num_pages; ++i) phys[i] = i;
  std::shuffle(phys.begin(), phys.end(), rng);
  std::vector<int> table(size_t(S) * max_pages, -1);
  int next = 0;
  for (int s = 0; s < S; ++s) {
    Seq& q = seqs[s];
    const int pages = (q.kv_len + ps - 1) / ps;
    int lowest_visible = 0;  // smallest key any row of this step may see
    if (c.free_below_window && c.window > 0) {
      lowest_visible = q.kv_len;
      for (int i = 0; i < q.q_len; ++i)
        lowest_visible = std::min(lowest_visible, std::max(0, positions[q.q0 + i] - c.window + 1));
      if (c.mm_bidirectional) lowest_visible = std::min(lowest_visible, q.kv_len - q.q_len);
    }
    q.table.assign(pages, -1);
    for (int p = 0; p < pages; ++p) {
      const int page = phys[next++];
      if ((p + 1) * ps <= lowest_visible) {
        ++res.freed_pages;  // the physical page stays NaN: reading it would poison the result
        continue;
      }
      q.table[p] = page;
      table[size_t(s) * max_pages + p] = page;
    }
  }

  // ---- KV pool: NaN everywhere, random values on owned slots of the tested layer ----
  const size_t layer_elems = size_t(num_pages) * ps * nkv * d;
  std::vector<uint16_t> k_pool(layer_elems * c.cache_layers, kBf16NaN), v_pool = k_pool;
  // Logical copies for the reference: [seq][key][kv_head][d], NaN where freed.
  std::vector<std::vector<float>> k_ref(S), v_ref(S);
  for (int s = 0; s < S; ++s) {
    const Seq& q = seqs[s];
    k_ref[s].assign(size_t(q.kv_len) * nkv * d, NAN);
    v_ref[s].assign(size_t(q.kv_len) * nkv * d, NAN);
    for (int key = 0; key < q.kv_len; ++key) {
      const int page = q.table[key / ps];
      if (page < 0) continue;
      for (int e = 0; e < nkv * d; ++e) {
        const uint16_t kb = f32_to_bf16(unit(rng)), vb = f32_to_bf16(unit(rng));
        const size_t slot = size_t(c.cache_layer) * layer_elems + (size_t(page) * ps + key % ps) * nkv * d + e;
        k_pool[slot] = kb, v_pool[slot] = vb;
        k_ref[s][size_t(key) * nkv * d + e] = bf16_to_f32(kb);
        v_ref[s][size_t(key) * nkv * d + e] = bf16_to_f32(vb);
      }
    }
  }
  std::vector<uint16_t> q_host(size_t(T) * nq * d);
  for (auto& x : q_host) x = f32_to_bf16(c.q_amp * unit(rng));

  // ---- device side ----
  KvPool pool;
  pool.cache_layers = c.cache_layers, pool.num_pages = num_pages, pool.page_size = ps;
  pool.kv_heads = nkv, pool.head_dim = d;
  const Shape pool_shape{c.cache_layers, num_pages, ps, nkv, d};
  pool.k = upload(k_pool, DType::BF16, pool_shape);
  pool.v = upload(v_pool, DType::BF16, pool_shape);

  AttentionBatch b;
  b.num_seqs = S, b.num_tokens = T, b.max_q_len = max_q, b.max_kv_len = max_kv, b.page_size = ps;
  b.positions = upload(positions, DType::I32, {T});
  b.token_seq = upload(token_seq, DType::I32, {T});
  b.q_start = upload(q_start, DType::I32, {S + 1});
  b.kv_len = upload(kv_len, DType::I32, {S});
  if (c.mm_bidirectional) b.mm_block = upload(mm_block, DType::I32, {T});
  const KvGroup group_id = c.window > 0 ? KvGroup::Sliding : KvGroup::Full;
  b.page_table[int(group_id)] = upload(table, DType::I32, {S, max_pages});
  b.max_pages[int(group_id)] = max_pages;
  b.h_positions = positions, b.h_token_seq = token_seq, b.h_q_start = q_start, b.h_kv_len = kv_len;
  b.rows_end_context = rows_end_their_context(b);  // as the runner's batch builder sets it
  b.h_mm_block = mm_block, b.h_page_table[int(group_id)] = table;

  const Tensor q_dev = upload(q_host, DType::BF16, {T, int64_t(nq) * d});
  const Tensor out = device_tensor(DType::BF16, {T, int64_t(nq) * d});
  check(cudaMemset(out.data, 0xff, out.nbytes()), "poison out");  // 0xffff: bf16 NaN
  size_t ws_bytes = 0;
  std::shared_ptr<void> ws;
  if (c.use_workspace) {
    ws_bytes = c.workspace_bytes ? c.workspace_bytes : cuda::attention_workspace_bytes(T, S, nq, d);
    void* p = nullptr;
    check(cudaMalloc(&p, ws_bytes), "cudaMalloc workspace");
    ws = std::shared_ptr<void>(p, [](void* x) { cudaFree(x); });
    check(cudaMemset(p, 0xff, ws_bytes), "poison workspace");  // f32 NaN
  }

  AttentionParams p;
  p.num_q_heads = nq, p.num_kv_heads = nkv, p.head_dim = d, p.sliding_window = c.window;
  p.mm_bidirectional = c.mm_bidirectional, p.mm_block_in_window = c.mm_in_window, p.scale = c.scale;
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  const auto forced = cuda::attn::TileKernel(c.force_kernel);
  const cuda::attn::AttentionPlan plan = cuda::attn::plan_attention(
      q_dev, b, group_id, pool, c.cache_layer, p, out, ws.get(), ws_bytes, c.force_kernel >= 0 ? &forced : nullptr);
  res.splits = plan.args.num_splits;
  res.kernel = int(plan.kernel);
  const auto combine = c.separate_combine ? cuda::attn::CombineMode::Separate : cuda::attn::CombineMode::Fused;
  cuda::attn::launch_plan(plan, stream, combine);
  check(cudaStreamSynchronize(stream), "attention kernel");
  std::vector<uint16_t> got(size_t(T) * nq * d);
  check(cudaMemcpy(got.data(), out.data, out.nbytes(), cudaMemcpyDeviceToHost), "download");
  if (c.graph_replays > 0) {
    // The same launch captured once and replayed on a re-poisoned output: the fused combine's
    // counters must be back at zero after every launch, and the result bit-identical each time.
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
    cuda::attn::launch_plan(plan, stream, combine);
    check(cudaStreamEndCapture(stream, &graph), "end capture");
    check(cudaGraphInstantiate(&exec, graph, 0), "instantiate graph");
    std::vector<uint16_t> again(got.size());
    for (int r = 0; r < c.graph_replays; ++r) {
      check(cudaMemsetAsync(out.data, 0xff, out.nbytes(), stream), "poison out");
      check(cudaGraphLaunch(exec, stream), "replay");
      check(cudaStreamSynchronize(stream), "replayed attention");
      check(cudaMemcpy(again.data(), out.data, out.nbytes(), cudaMemcpyDeviceToHost), "download replay");
      for (size_t i = 0; i < got.size(); ++i) res.replay_mismatches += again[i] != got[i];
    }
    check(cudaGraphExecDestroy(exec), "destroy graph exec");
    check(cudaGraphDestroy(graph), "destroy graph");
  }
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");

  // ---- reference (double) and comparison ----
  // Query tokens in parallel. The reference, not the kernel, is where the attention suite spends
  // its time: `WgmmaKernelsOnEveryShapeTheyAccept` took 130 s on the H100 machine and 124 s under
  // memcheck, which slows only the GPU side, while this loop ran on one of its 16 cores. Each
  // token's sums and first bad element are kept apart and merged in token order, so the result
  // does not depend on the split.
  struct TokenCheck {
    double err2 = 0, ref2 = 0;
    int64_t elems = 0, nonfinite = 0, bad = 0;
    std::string first_bad;
  };
  std::vector<TokenCheck> checks(static_cast<size_t>(T));
  auto check_token = [&](int t) {
    TokenCheck& tc = checks[size_t(t)];
    const int s = token_seq[size_t(t)];
    const Seq& sq = seqs[s];
    const int i = t - sq.q0, first_new = sq.kv_len - sq.q_len;
    const int qp = positions[t], qb = c.mm_bidirectional ? mm_block[t] : -1;
    std::vector<double> scores, acc(d);
    for (int h = 0; h < nq; ++h) {
      const int kvh = h / group;
      const uint16_t* qv = &q_host[(size_t(t) * nq + h) * d];
      scores.assign(sq.kv_len, -INFINITY);
      double mx = -INFINITY;
      for (int key = 0; key < sq.kv_len; ++key) {
        const bool causal_ok = key <= qp && (c.window == 0 || qp - key < c.window);
        const bool vision_ok = qb >= 0 && key >= first_new && mm_block[sq.q0 + key - first_new] == qb &&
                               (!c.mm_in_window || c.window == 0 || qp - key < c.window);
        if (!causal_ok && !vision_ok) continue;
        const float* kv = &k_ref[s][(size_t(key) * nkv + kvh) * d];
        if (std::isnan(kv[0])) throw std::logic_error("test case frees a page that a row can see");
        double dot = 0;
        for (int e = 0; e < d; ++e) dot += double(bf16_to_f32(qv[e])) * kv[e];
        scores[key] = dot * c.scale;
        mx = std::max(mx, scores[key]);
      }
      double sum = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int key = 0; key < sq.kv_len; ++key) {
        if (scores[key] == -INFINITY) continue;
        const double w = std::exp(scores[key] - mx);
        sum += w;
        const float* vv = &v_ref[s][(size_t(key) * nkv + kvh) * d];
        for (int e = 0; e < d; ++e) acc[e] += w * vv[e];
      }
      double row_max = 0;
      for (int e = 0; e < d; ++e) acc[e] = sum > 0 ? acc[e] / sum : 0.0, row_max = std::max(row_max, std::abs(acc[e]));
      const uint16_t* o = &got[(size_t(t) * nq + h) * d];
      for (int e = 0; e < d; ++e) {
        const double v = bf16_to_f32(o[e]), r = acc[e];
        ++tc.elems;
        if (!std::isfinite(v)) {
          ++tc.nonfinite;
        } else {
          tc.err2 += (v - r) * (v - r);
        }
        tc.ref2 += r * r;
        if (!(std::abs(v - r) <= 0.02 * std::abs(r) + 0.01 * row_max)) {
          if (tc.bad++ == 0)
            tc.first_bad = "seq " + std::to_string(s) + " row " + std::to_string(i) + " (position " +
                           std::to_string(qp) + ") head " + std::to_string(h) + " dim " + std::to_string(e) +
                           ": got " + std::to_string(v) + ", want " + std::to_string(r);
        }
      }
    }
  };
  static cpu::ThreadPool reference_threads(cpu::ThreadPool::default_threads());
  reference_threads.parallel_for(T, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) check_token(int(t));
  });
  double err2 = 0, ref2 = 0;
  for (const TokenCheck& tc : checks) {
    err2 += tc.err2, ref2 += tc.ref2;
    res.elems += tc.elems, res.nonfinite += tc.nonfinite;
    if (tc.bad > 0 && res.bad_elems == 0) res.first_bad = tc.first_bad;
    res.bad_elems += tc.bad;
  }
  res.rel_err = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  if (res.nonfinite) res.rel_err = INFINITY;
  res.out = std::move(got);
  return res;
}

}  // namespace gs::test
