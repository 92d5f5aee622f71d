// The cuda backend: bf16 activations, KV and weights on one device and one stream. Each op checks
// its arguments on the host and enqueues kernels (the launchers in this folder) or cuBLASLt
// GEMMs; nothing waits for the device except copy_to_host and synchronize.
#include "kernels/cuda/cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/thread_activity.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_allocator.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/host_staging.h"
#include "kernels/cuda/kernel_policy.h"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/moe.h"
#include "kernels/cuda/norms.h"
#include "kernels/cuda/qkv_prepare.h"
#include "kernels/cuda/sampling.h"
#include "kernels/cuda/greedy_head.h"
#include "kernels/cuda/vision_attention.h"
#include "kernels/cuda/scatter_ids.h"
#include "kernels/cuda/vision_ops.h"
#include "kernels/cuda/scratch_arena.h"
#include "ops/logit_adjust.h"

namespace gs {
namespace {

constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;

// The GEMV takes decode-sized matmuls where it streams the weight faster than cuBLASLt; the
// bounds are the kernel policy's (kernel_policy.h; measurements: docs/kernel-policy.md, "GEMV
// routing").
const cuda::GemvPolicy& gemv_policy() { return cuda::kernel_policy().gemv; }
bool gemv_shape_wins(int64_t n, int64_t k) { return n * k * 2 <= gemv_policy().max_weight_bytes || k <= 4096; }

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, const cuda::KernelPolicy& policy) : device_(device), policy_(policy) {
    int count = cuda_device_count();
    GS_CHECK(device >= 0 && device < count, "cuda:{} requested, but {} CUDA device(s) are visible", device, count);
    GS_CUDA_CHECK(cudaSetDevice(device));
    GS_CUDA_CHECK(cudaGetDeviceProperties(&props_, device));
    GS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    alloc_ = std::make_shared<cuda::DeviceAllocator>(device);
    gemm_ = std::make_unique<cuda::LtGemm>(stream_, alloc_->allocate(kGemmWorkspaceBytes), kGemmWorkspaceBytes);
    scratch_ = std::make_unique<cuda::ScratchArena>(alloc_);
    staging_ = std::make_unique<cuda::HostStaging>(alloc_, stream_);
    for (cudaEvent_t& e : fences_) GS_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    log::info("cuda backend: {} (sm_{}{}, {} SMs, {:.1f} GiB)", props_.name, props_.major, props_.minor,
              props_.multiProcessorCount, props_.totalGlobalMem / 1073741824.0);
    cuda::set_kernel_policy(policy_);
    log::info("{}", cuda::kernel_policy().describe());
  }

  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
    for (auto& g : graphs_)
      if (g) cudaGraphExecDestroy(g);
    for (cudaEvent_t e : fences_) cudaEventDestroy(e);
    staging_.reset();
    scratch_.reset();
    gemm_.reset();
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return fmt::format("cuda:{} ({})", device_, props_.name); }
  Device device() const override { return Device::CUDA; }
  DType activation_dtype() const override { return DType::BF16; }
  DType weight_dtype(DType) const override { return DType::BF16; }

  // ---- memory -----------------------------------------------------------------------------------
  Tensor empty(DType dtype, Shape shape) override {
    GS_CHECK(!capturing(), "empty({}{}): no allocation while a CUDA graph is captured", dtype_name(dtype), shape.str());
    Tensor t;
    t.dtype = dtype;
    t.shape = shape;
    t.device = Device::CUDA;
    t.storage = alloc_->allocate(std::max<size_t>(t.nbytes(), 1));
    t.data = t.storage.get();
    return t;
  }

  void copy_from_host(const Tensor& dst, const void* src) override {
    GS_CHECK(dst.device == Device::CUDA, "copy_from_host: destination {} is not on the GPU", dst.str());
    GS_CHECK(!capturing(), "copy_from_host into {}: not allowed while a CUDA graph is captured", dst.str());
    if (dst.nbytes() == 0) return;
    // From pageable memory the call returns once `src` has been staged: the caller may reuse it.
    GS_CUDA_CHECK(cudaMemcpyAsync(dst.data, src, dst.nbytes(), cudaMemcpyHostToDevice, stream_));
  }

  void copy_to_host(const Tensor& src, void* dst) override {
    GS_CHECK(src.device == Device::CUDA, "copy_to_host: source {} is not on the GPU", src.str());
    GS_CHECK(!capturing(), "copy_to_host from {}: not allowed while a CUDA graph is captured", src.str());
    ActivityScope busy("copying to the host (waits for its GPU)");
    if (src.nbytes()) GS_CUDA_CHECK(cudaMemcpyAsync(dst, src.data, src.nbytes(), cudaMemcpyDeviceToHost, stream_));
    GS_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void copy(const Tensor& dst, const Tensor& src) override {
    GS_CHECK(dst.device == Device::CUDA && src.device == Device::CUDA && dst.dtype == src.dtype &&
                 dst.numel() == src.numel(),
             "copy: {} <- {} must be GPU tensors of one dtype and size", dst.str(), src.str());
    if (dst.nbytes()) GS_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, dst.nbytes(), cudaMemcpyDeviceToDevice, stream_));
  }

  Tensor upload_weight(const Tensor& host_src) override {
    GS_CHECK(host_src.device == Device::CPU && host_src.defined(), "upload_weight: source {} must be a host tensor",
             host_src.str());
    GS_CHECK(host_src.dtype == DType::BF16 || host_src.dtype == DType::F16 || host_src.dtype == DType::F32,
             "upload_weight: {} is not a float tensor", host_src.str());
    Tensor w = empty(DType::BF16, host_src.shape);
    if (host_src.dtype == DType::BF16) {
      copy_from_host(w, host_src.data);
    } else {
      Tensor raw = empty(host_src.dtype, host_src.shape);
      copy_from_host(raw, host_src.data);
      cuda::launch_convert_to_bf16(raw.data, raw.dtype, w.data, w.numel(), stream_);
    }  // `raw` goes back to the cache; stream order keeps the conversion ahead of any reuse
    return w;
  }

  void fill_uniform(const Tensor& t, uint64_t seed, float scale) override {
    cuda::launch_fill_uniform(t, seed, scale, stream_);
  }
  void fill(const Tensor& t, float value) override { cuda::launch_fill(t, value, stream_); }

  size_t free_memory_bytes() const override {
    size_t free_b = 0, total_b = 0;
    GS_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    return free_b + alloc_->bytes_cached();  // cached blocks are free for gemmaserve
  }
  size_t total_memory_bytes() const override {
    size_t free_b = 0, total_b = 0;
    GS_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    return total_b;
  }
  void synchronize() override {
    ActivityScope busy("waiting for its GPU (cudaStreamSynchronize)");
    GS_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  KvCache allocate_kv_cache(const KvLayout& layout, int page_size, const int num_pages[kNumKvGroups]) override {
    GS_CHECK(page_size > 0, "allocate_kv_cache: page size {} must be positive", page_size);
    KvCache cache;
    for (int g = 0; g < kNumKvGroups; ++g) {
      const KvGroupShape& shape = layout.groups[g];
      KvPool& pool = cache.pools[g];
      pool.cache_layers = shape.cache_layers, pool.num_pages = num_pages[g], pool.page_size = page_size;
      pool.kv_heads = shape.kv_heads, pool.head_dim = shape.head_dim;
      if (shape.cache_layers == 0 || num_pages[g] <= 0) continue;
      Shape s{shape.cache_layers, num_pages[g], page_size, shape.kv_heads, shape.head_dim};
      pool.k = empty(kv_dtype(), s);
      pool.v = empty(kv_dtype(), s);
    }
    return cache;
  }

  // ---- dense math -------------------------------------------------------------------------------
  void matmul(const Tensor& x, const Tensor& w, const Tensor& out) override {
    cuda::check_matmul(x, w, out);
    const int64_t m = x.rows(), n = w.dim(0), k = x.cols();
    if (gemv_routes(x, w, out)) {
      cuda::launch_gemv(x.data, w.data, out.data, out.dtype, m, n, k, stream_);
    } else {
      if (cuda::kernel_policy().batch_invariant) warn_not_invariant(m, n, k);
      gemm_->matmul_raw(x.data, w.data, out.data, out.dtype, m, n, k);
    }
  }
  // A matmul the batch-invariant GEMV cannot take (K not a multiple of 8, unaligned operands: no
  // Gemma-4 checkpoint has one; tiny test models do) runs on cuBLASLt, whose bits follow the row
  // count. Said once, with the first such shape.
  static void warn_not_invariant(int64_t m, int64_t n, int64_t k) {
    static std::once_flag once;
    std::call_once(once, [&] {
      log::warn("batch invariant: a [{}, {}] x [{}, {}]^T matmul is not one the invariant GEMV takes (K a multiple "
                "of 8, 16-byte aligned); it and any like it run on cuBLASLt, not batch-invariant",
                m, k, n, k);
    });
  }
  // Decode-sized x on a weight the GEMV's FMA kernel streams faster, in a layout it takes
  // (checked operands).
  static bool gemv_fma_routes(const Tensor& x, const Tensor& w, const Tensor& out) {
    return x.rows() <= gemv_policy().max_rows && x.rows() < cuda::kGemvMmaMinRows &&
           gemv_shape_wins(w.dim(0), x.cols()) &&
           (x.rows() == 1 || std::min(w.dim(0), x.cols()) <= gemv_policy().two_row_max_dim) &&
           cuda::gemv_supported(x.rows(), w.dim(0), x.cols(), out.dtype, x.data, w.data);
  }
  // ... or 3-8 rows on a small weight, which its tensor-core variant takes.
  static bool gemv_mma_routes(const Tensor& x, const Tensor& w, const Tensor& out, int64_t max_bytes) {
    const int64_t m = x.rows();
    return m >= cuda::kGemvMmaMinRows && m <= gemv_policy().mma_max_rows && w.dim(0) * x.cols() * 2 <= max_bytes &&
           x.cols() <= gemv_policy().mma_max_k &&
           cuda::gemv_supported(m, w.dim(0), x.cols(), out.dtype, x.data, w.data);
  }
  // Under the batch-invariant policy every matmul the GEMV takes (any row count) goes to it: cuBLASLt
  // picks its kernel and split by M, which would give one token's row other bits in a verify or
  // prefill step than in a decode step.
  static bool gemv_invariant_routes(const Tensor& x, const Tensor& w, const Tensor& out) {
    return cuda::kernel_policy().batch_invariant &&
           cuda::gemv_supported(x.rows(), w.dim(0), x.cols(), out.dtype, x.data, w.data);
  }
  static bool gemv_routes(const Tensor& x, const Tensor& w, const Tensor& out) {
    return gemv_invariant_routes(x, w, out) || gemv_mma_routes(x, w, out, gemv_policy().mma_max_bytes) ||
           gemv_fma_routes(x, w, out);
  }
  // The fused forms run where the GEMV takes them (its bounds for them above), with bf16
  // activations; otherwise the two ops.
  static bool gemv_takes(const Tensor& x, const Tensor& w, const Tensor& out) {
    return x.dtype == DType::BF16 && w.dtype == DType::BF16 && out.dtype == DType::BF16 &&
           (gemv_invariant_routes(x, w, out) || gemv_fma_routes(x, w, out) ||
            gemv_mma_routes(x, w, out, gemv_policy().mma_fused_max_bytes));
  }
  void matmul_gelu_mul(const Tensor& x, const Tensor& w, const Tensor& gate_up, const Tensor& out) override {
    cuda::check_matmul(x, w, gate_up);
    GS_CHECK(out.rows() == x.rows() && 2 * out.cols() == w.dim(0) && out.dtype == gate_up.dtype,
             "matmul_gelu_mul: out {} must be [T, I] for weights {}", out.str(), w.str());
    if (gemv_takes(x, w, out))
      cuda::launch_gemv_gelu_mul(x.data, w.data, out.data, x.rows(), out.cols(), x.cols(), stream_);
    else
      Backend::matmul_gelu_mul(x, w, gate_up, out);
  }
  void matmul_gelu_mul_pair(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out) override {
    cuda::check_matmul(x, w, out);
    GS_CHECK(b.numel() == out.numel() && b.dtype == out.dtype, "matmul_gelu_mul_pair: b {} must match out {}",
             b.str(), out.str());
    if (gemv_takes(x, w, out))
      cuda::launch_gemv_gelu_mul_aux(x.data, w.data, b.data, out.data, x.rows(), out.cols(), x.cols(), stream_);
    else
      Backend::matmul_gelu_mul_pair(x, w, b, out);
  }
  void embedding(const Tensor& table, const Tensor& ids, float scale, const Tensor& out) override {
    cuda::launch_embedding(table, ids, scale, out, stream_);
  }
  void embedding_rows(const Tensor& table, const Tensor& ids, int64_t first_id, float scale,
                      const Tensor& out) override {
    cuda::launch_embedding(table, ids, scale, out, stream_, first_id);
  }
  int device_index() const override { return device_; }
  void* native_stream() override { return stream_; }
  void make_current() override { GS_CUDA_CHECK(cudaSetDevice(device_)); }
  void rms_norm(const Tensor& x, const Tensor* weight, float eps, const Tensor& out) override {
    cuda::launch_rms_norm(x, weight, eps, out, stream_);
  }
  void residual_add_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                         float out_scale) override {
    cuda::launch_residual_add_norm(residual, x, weight, eps, out_scale, stream_);
  }
  void residual_add_norm_then_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                                   float out_scale, const Tensor& next_weight, const Tensor& next_out) override {
    cuda::launch_residual_add_norm(residual, x, weight, eps, out_scale, stream_, &next_weight, &next_out);
  }
  void add(const Tensor& a, const Tensor& b, const Tensor& out) override { cuda::launch_add(a, b, out, stream_); }
  void scale(const Tensor& x, float s) override { cuda::launch_scale(x, s, stream_); }
  void gelu_tanh_mul(const Tensor& gate_up, const Tensor& out) override {
    cuda::launch_gelu_tanh_mul(gate_up, out, stream_);
  }
  void gelu_tanh_mul_pair(const Tensor& a, const Tensor& b, const Tensor& out) override {
    cuda::launch_gelu_tanh_mul_pair(a, b, out, stream_);
  }
  void per_layer_inputs(const Tensor& proj, const Tensor& table, const Tensor& ids, const Tensor& norm_w,
                        float proj_scale, float table_scale, float combine_scale, float eps,
                        const Tensor& out) override {
    cuda::launch_per_layer_inputs(proj, table, ids, norm_w, proj_scale, table_scale, combine_scale, eps, out, stream_);
  }
  void gather_rows(const Tensor& x, const Tensor& rows, const Tensor& out) override {
    cuda::launch_gather_rows(x, rows, out, stream_);
  }
  void softcap(const Tensor& x, float cap) override { cuda::launch_softcap(x, cap, stream_); }

  // ---- vision tower --------------------------------------------------------------------------
  void vision_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_rows,
                        const std::vector<int>& h_cu_rows, int heads, int head_dim, const Tensor& out) override {
    GS_CHECK(q.dtype == DType::BF16 && k.dtype == DType::BF16 && v.dtype == DType::BF16 && out.dtype == DType::BF16,
             "vision_attention: q {} k {} v {} out {} must be bf16", q.str(), k.str(), v.str(), out.str());
    GS_CHECK(h_cu_rows.size() >= 1 && cu_rows.dtype == DType::I32 && cu_rows.numel() == int64_t(h_cu_rows.size()),
             "vision_attention: cu_rows {} for {} host offsets", cu_rows.str(), h_cu_rows.size());
    const int images = int(h_cu_rows.size()) - 1;
    int max_rows = 0;
    for (int i = 0; i < images; ++i) max_rows = std::max(max_rows, h_cu_rows[size_t(i) + 1] - h_cu_rows[size_t(i)]);
    cuda::vision_attention(q.ptr<const __nv_bfloat16>(), q.cols(), k.ptr<const __nv_bfloat16>(), k.cols(),
                           v.ptr<const __nv_bfloat16>(), v.cols(), out.ptr<__nv_bfloat16>(),
                           cu_rows.ptr<const int>(), images, max_rows, heads, head_dim, stream_);
  }
  void clamp(const Tensor& x, float lo, float hi) override { cuda::launch_clamp(x, lo, hi, stream_); }
  void vision_position_add(const Tensor& x, const Tensor& table, const Tensor& pos_xy) override {
    cuda::launch_vision_position_add(x, table, pos_xy, stream_);
  }
  void vision_rope(const Tensor& x, const Tensor& pos_xy, int heads, int head_dim, float theta) override {
    cuda::launch_vision_rope(x, pos_xy, heads, head_dim, theta, stream_);
  }
  void vision_pool(const Tensor& x, const Tensor& src, float scale, const Tensor& out) override {
    cuda::launch_vision_pool(x, src, scale, out, stream_);
  }
  void standardize(const Tensor& x, const Tensor& bias, const Tensor& scale) override {
    cuda::launch_standardize(x, bias, scale, stream_);
  }
  void scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst) override {
    cuda::launch_scatter_rows(src, rows, dst, stream_);
  }

  // ---- attention --------------------------------------------------------------------------------
  void qkv_prepare(const Tensor& qkv, QkvLayout layout, const AttentionParams& p, const RopeSpec& rope,
                   const Tensor& q_norm_w, const Tensor* k_norm_w, float eps, const AttentionBatch& batch,
                   KvGroup group, KvPool& pool, int cache_layer, const Tensor& q_out) override {
    cuda::launch_qkv_prepare(qkv, layout, p, rope, q_norm_w, k_norm_w, eps, batch, group, pool, cache_layer, q_out,
                             stream_);
  }
  void attention(const Tensor& q, const AttentionBatch& batch, KvGroup group, const KvPool& pool, int cache_layer,
                 const AttentionParams& p, const Tensor& out) override {
    size_t ws = cuda::attention_workspace_bytes(batch.num_tokens, batch.num_seqs, p.num_q_heads, p.head_dim);
    void* scratch = scratch_->get(ws, capturing(), "attention");
    // AttentionBatch leaves mm_block undefined when no row is a vision token; the overlay then
    // allows nothing beyond the causal/sliding mask, and the kernels need not look for blocks.
    AttentionParams params = p;
    if (params.mm_bidirectional && !batch.mm_block.defined()) params.mm_bidirectional = false;
    cuda::paged_attention(q, batch, group, pool, cache_layer, params, out, scratch, ws, stream_);
  }

  // ---- mixture of experts -----------------------------------------------------------------------
  void moe_route(const Tensor& r, const Tensor& router_scale, const Tensor& router_proj,
                 const Tensor& per_expert_scale, float in_scale, float eps, int top_k, const Tensor& ids,
                 const Tensor& weights) override {
    void* scratch = scratch_->get(cuda::moe_route_scratch_bytes(r.rows(), router_proj.dim(0)), capturing(), "moe_route");
    cuda::launch_moe_route(r, router_scale, router_proj, per_expert_scale, in_scale, eps, top_k, ids, weights, scratch,
                           cuda::moe_route_scratch_bytes(r.rows(), router_proj.dim(0)), stream_);
  }
  void moe_experts(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                   const Tensor& down, const Tensor& out) override {
    run_moe_experts(x, ids, weights, gate_up, down, out, nullptr);
  }
  // The experts' combine kernel also runs both norms and the add (moe_combine.cuh): three launches
  // fewer per MoE layer.
  void moe_experts_sum(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                       const Tensor& down, const Tensor& dense, const Tensor& dense_norm, const Tensor& experts_norm,
                       float eps, const Tensor& experts, const Tensor& out) override {
    auto bf16 = [](const Tensor& t) { return t.dtype == DType::BF16; };
    if (!cuda::moe_sum_supported(x.cols()) || !bf16(out) || !bf16(dense) ||
        !bf16(dense_norm) || !bf16(experts_norm)) {
      Backend::moe_experts_sum(x, ids, weights, gate_up, down, dense, dense_norm, experts_norm, eps, experts, out);
      return;
    }
    const cuda::MoeSum sum{&dense, &dense_norm, &experts_norm, eps};
    run_moe_experts(x, ids, weights, gate_up, down, out, &sum);
  }

  // ---- sampling ---------------------------------------------------------------------------------
  void sample(const Tensor& logits, const std::vector<SamplingRow>& rows, const Tensor& out_ids,
              const Tensor& out_logprobs) override {
    GS_CHECK(!capturing(), "sample(): host sampling rows cannot be part of a captured CUDA graph");
    GS_CHECK(int64_t(rows.size()) == logits.rows(), "sample: {} sampling rows for logits {}", rows.size(),
             logits.str());
    auto* d_rows = static_cast<const SamplingRow*>(staging_->upload(rows.data(), rows.size() * sizeof(SamplingRow)));
    const size_t need = cuda::sample_scratch_bytes(logits.rows(), logits.cols());
    void* scratch = scratch_->get(need, capturing(), "sample");
    cuda::launch_sample(logits, d_rows, int(rows.size()), out_ids, out_logprobs, scratch, need, stream_);
  }

  void adjust_logits(const Tensor& logits, const std::vector<LogitAdjustRow>& rows) override {
    GS_CHECK(!capturing(), "adjust_logits(): host rows cannot be part of a captured CUDA graph");
    const int64_t R = logits.rows(), V = logits.cols();
    GS_CHECK(int64_t(rows.size()) == R, "adjust_logits: {} logits rows but {} adjustment rows", R, rows.size());
    std::vector<cuda::AdjustRowInfo> infos;
    std::vector<cuda::AdjustEntry> entries;
    bool any = false;
    for (const LogitAdjustRow& a : rows) {
      cuda::AdjustRowInfo info{int(entries.size()), int(a.tokens.size()), nullptr, 0, a.repetition_penalty};
      if (a.prompt_set.defined() && a.repetition_penalty != 1.f) {
        GS_CHECK(a.prompt_set.device == Device::CUDA && a.prompt_set.dtype == DType::I32,
                 "adjust_logits: the prompt set {} must be an i32 tensor on the GPU", a.prompt_set.str());
        info.prompt_set = a.prompt_set.ptr<const int>();
        info.prompt_set_size = int(a.prompt_set.numel());
      }
      for (const LogitAdjustToken& t : a.tokens) {
        GS_CHECK(t.token >= 0 && t.token < V, "adjust_logits: token {} outside the vocabulary [0, {})", t.token, V);
        entries.push_back({t.token, t.bias, t.count > 0 ? penalty_delta(a, t.count) : 0.f,
                           (t.banned ? cuda::kAdjustBanned : 0) | (t.repeated ? cuda::kAdjustRepeated : 0)});
      }
      any |= info.count > 0 || info.prompt_set_size > 0;
      infos.push_back(info);
    }
    if (!any) return;
    auto* d_rows = static_cast<const cuda::AdjustRowInfo*>(
        staging_->upload(infos.data(), infos.size() * sizeof(cuda::AdjustRowInfo)));
    // An upload of 0 bytes may give no buffer; the kernel never reads entries then.
    auto* d_entries = entries.empty() ? nullptr
                                      : static_cast<const cuda::AdjustEntry*>(staging_->upload(
                                            entries.data(), entries.size() * sizeof(cuda::AdjustEntry)));
    cuda::launch_adjust_logits(logits, d_rows, d_entries, stream_);
  }

  void top_logprobs(const Tensor& logits, int n, const Tensor& ids, const Tensor& logprobs) override {
    cuda::launch_top_logprobs(logits, n, ids, logprobs, stream_);
  }

  // ---- graphs -----------------------------------------------------------------------------------
  bool supports_graphs() const override { return true; }
  void set_step_rows(int rows) override { cuda::pdl_step_rows = rows; }

  void begin_capture() override {
    GS_CHECK(!capturing(), "begin_capture: a capture is already in progress");
    // Thread-local mode: other threads' CUDA calls (a tokenizer thread, logging) stay legal.
    GS_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  }

  int end_capture() override {
    GS_CHECK(capturing(), "end_capture: no capture in progress");
    ActivityScope busy("ending a graph capture and instantiating it");
    cudaGraph_t graph = nullptr;
    GS_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    cudaGraphExec_t exec = nullptr;
    cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    GS_CUDA_CHECK(err);
    graphs_.push_back(exec);
    return int(graphs_.size()) - 1;
  }

  void replay(int graph) override {
    GS_CHECK(graph >= 0 && graph < int(graphs_.size()) && graphs_[size_t(graph)], "replay: no graph {}", graph);
    ActivityScope busy("launching a graph (cudaGraphLaunch)");
    GS_CUDA_CHECK(cudaGraphLaunch(graphs_[size_t(graph)], stream_));
  }

  void release_graph(int graph) override {
    GS_CHECK(graph >= 0 && graph < int(graphs_.size()) && graphs_[size_t(graph)], "release_graph: no graph {}", graph);
    GS_CUDA_CHECK(cudaStreamSynchronize(stream_));  // a replay may still be running
    GS_CUDA_CHECK(cudaGraphExecDestroy(graphs_[size_t(graph)]));
    graphs_[size_t(graph)] = nullptr;
  }

  // ---- overlapped steps -------------------------------------------------------------------------
  std::shared_ptr<void> host_buffer(size_t bytes) override {
    void* p = nullptr;
    GS_CUDA_CHECK(cudaMallocHost(&p, std::max<size_t>(bytes, 1)));
    return std::shared_ptr<void>(p, [](void* q) { cudaFreeHost(q); });
  }

  void copy_to_host_async(const Tensor& src, void* dst) override {
    GS_CHECK(src.device == Device::CUDA, "copy_to_host_async: source {} is not on the GPU", src.str());
    GS_CHECK(!capturing(), "copy_to_host_async from {}: not allowed while a CUDA graph is captured", src.str());
    if (src.nbytes()) GS_CUDA_CHECK(cudaMemcpyAsync(dst, src.data, src.nbytes(), cudaMemcpyDeviceToHost, stream_));
  }

  // Fences are a ring of events: a ticket whose event was recorded again since waits for the newer
  // record, which is later on the stream, so the wait is never too short.
  uint64_t record_fence() override {
    const uint64_t ticket = ++last_fence_;
    GS_CUDA_CHECK(cudaEventRecord(fences_[ticket % fences_.size()], stream_));
    return ticket;
  }
  void wait_fence(uint64_t fence) override {
    GS_CHECK(fence <= last_fence_, "wait_fence: fence {} was never recorded (last {})", fence, last_fence_);
    if (fence == 0) return;
    ActivityScope busy("waiting for a step's fence (cudaEventSynchronize)");
    GS_CUDA_CHECK(cudaEventSynchronize(fences_[fence % fences_.size()]));
  }

  void argmax_rows(const Tensor& logits, const Tensor& out_ids) override {
    void* scratch = scratch_->get(cuda::greedy_head_scratch_bytes(logits.rows(), 1), capturing(), "argmax_rows");
    cuda::launch_argmax_rows(logits, out_ids, scratch, stream_);
  }
  void centroid_head_argmax(const Tensor& d, const Tensor& embed, const Tensor& centroid_scores,
                            const Tensor& token_ordering, int top_k, const Tensor& out_ids) override {
    void* scratch =
        scratch_->get(cuda::greedy_head_scratch_bytes(d.rows(), top_k), capturing(), "centroid_head_argmax");
    cuda::launch_centroid_head_argmax(d, embed, centroid_scores, token_ordering, top_k, out_ids, scratch, stream_);
  }

  void scatter_ids(const Tensor& dst, const Tensor& src, const std::vector<std::pair<int, int>>& pairs) override {
    GS_CHECK(!capturing(), "scatter_ids(): host pairs cannot be part of a captured CUDA graph");
    if (pairs.empty()) return;
    std::vector<int> flat;
    flat.reserve(pairs.size() * 2);
    for (auto [d, s] : pairs) {
      GS_CHECK(d >= 0 && d < dst.numel() && s >= 0 && s < src.numel(), "scatter_ids: pair ({}, {}) outside {} <- {}",
               d, s, dst.str(), src.str());
      flat.push_back(d);
      flat.push_back(s);
    }
    auto* d_pairs = static_cast<const int*>(staging_->upload(flat.data(), flat.size() * sizeof(int)));
    cuda::launch_scatter_ids(dst, src, d_pairs, int(pairs.size()), stream_);
  }

 private:
  // moe_experts, or with sum the layer's sum (moe.h), with its scratch from the arena.
  void run_moe_experts(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                       const Tensor& down, const Tensor& out, const cuda::MoeSum* sum) {
    GS_CHECK(gate_up.ndim() == 3 && down.ndim() == 3, "moe_experts: gate_up {} and down {} must be [E, ., .]",
             gate_up.str(), down.str());
    size_t need = cuda::moe_experts_scratch_bytes(x.rows(), ids.cols(), gate_up.dim(0), x.cols(), gate_up.dim(1) / 2);
    void* scratch = scratch_->get(need, capturing(), "moe_experts");
    cuda::launch_moe_experts(x, ids, weights, gate_up, down, out, scratch, need, stream_, sum);
  }

  bool capturing() const {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    GS_CUDA_CHECK(cudaStreamIsCapturing(stream_, &st));
    return st != cudaStreamCaptureStatusNone;
  }

  int device_;
  cuda::KernelPolicy policy_;
  cudaDeviceProp props_{};
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<cuda::DeviceAllocator> alloc_;
  std::unique_ptr<cuda::LtGemm> gemm_;
  std::unique_ptr<cuda::ScratchArena> scratch_;
  std::unique_ptr<cuda::HostStaging> staging_;
  std::vector<cudaGraphExec_t> graphs_;
  std::array<cudaEvent_t, 16> fences_{};
  uint64_t last_fence_ = 0;
};

}  // namespace

int cuda_device_count() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();  // no driver / no device: not an error for callers, just zero devices
    return 0;
  }
  return n;
}

std::unique_ptr<Backend> make_cuda_backend(int device, const cuda::KernelPolicy& policy) {
  return std::make_unique<CudaBackend>(device, policy);
}

}  // namespace gs
