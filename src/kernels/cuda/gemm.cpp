#include "kernels/cuda/gemm.h"

#include <cstdlib>

#include "core/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kernel_policy.h"

namespace gs::cuda {

namespace {
// Column-major descriptors of out[m,n] = x[m,k]·w[n,k]ᵀ (see gemm.h); destroyed with their owner.
struct Descriptors {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  Descriptors(int64_t m, int64_t n, int64_t k, DType out_dtype) {
    cudaDataType_t ct = out_dtype == DType::F32 ? CUDA_R_32F : CUDA_R_16BF;
    GS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    GS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    GS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    GS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, uint64_t(k), uint64_t(n), k));
    GS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, uint64_t(k), uint64_t(m), k));
    GS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c, ct, uint64_t(n), uint64_t(m), n));
  }
  ~Descriptors() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};
}  // namespace

struct LtGemm::Plan {
  Descriptors d;
  cublasLtMatmulAlgo_t algo{};
  Plan(int64_t m, int64_t n, int64_t k, DType out_dtype) : d(m, n, k, out_dtype) {}
};

// Largest power of two (up to 256) dividing the address: cuBLASLt picks kernels by alignment.
static int alignment_of(const void* p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  int a = 256;
  while (a > 1 && v % a) a /= 2;
  return a;
}

LtGemm::LtGemm(cudaStream_t stream, std::shared_ptr<void> workspace, size_t workspace_bytes)
    : stream_(stream), workspace_(std::move(workspace)), workspace_bytes_(workspace_bytes) {
  GS_CUBLAS_CHECK(cublasLtCreate(&handle_));
}

LtGemm::~LtGemm() {
  plans_.clear();
  if (handle_) cublasLtDestroy(handle_);
}

// Rows up to 64 (decode and small batches: few distinct values, each worth its own tuning) keep
// their exact count; above, the next power of two. The policy's gemm.exact_plans asks the
// heuristic for every row count (A/B runs).
static int64_t row_bucket(int64_t m) {
  if (kernel_policy().gemm.exact_plans || m <= 64) return m;
  int64_t b = 128;
  while (b < m) b *= 2;
  return b;
}


bool LtGemm::heuristic(const Key& key, cublasLtMatmulAlgo_t& algo) {
  const auto [m, n, k, dt, ax, aw, ao] = key;
  Descriptors d(m, n, k, DType(dt));
  cublasLtMatmulPreference_t pref = nullptr;
  GS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = workspace_bytes_;
  uint32_t a_al = uint32_t(aw), b_al = uint32_t(ax), c_al = uint32_t(ao);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &a_al, sizeof(a_al));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &b_al, sizeof(b_al));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &c_al, sizeof(c_al));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &c_al, sizeof(c_al));
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle_, d.desc, d.a, d.b, d.c, d.c, pref, 1, &result, &count);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || count == 0) return false;
  algo = result.algo;
  return true;
}

const cublasLtMatmulAlgo_t* LtGemm::bucket_algo(const Key& bucket_key) {
  auto it = bucket_algos_.find(bucket_key);
  if (it == bucket_algos_.end()) {
    cublasLtMatmulAlgo_t algo{};
    if (!heuristic(bucket_key, algo)) return nullptr;
    it = bucket_algos_.emplace(bucket_key, algo).first;
  }
  return &it->second;
}

bool LtGemm::algo_fits(const Plan& plan, const cublasLtMatmulAlgo_t& algo) const {
  cublasLtMatmulHeuristicResult_t check{};
  const Descriptors& d = plan.d;
  return cublasLtMatmulAlgoCheck(handle_, d.desc, d.a, d.b, d.c, d.c, &algo, &check) == CUBLAS_STATUS_SUCCESS &&
         check.state == CUBLAS_STATUS_SUCCESS && check.workspaceSize <= workspace_bytes_;
}

LtGemm::Plan& LtGemm::plan_for(int64_t m, int64_t n, int64_t k, DType out_dtype, const void* x, const void* w,
                               const void* out) {
  const int ax = alignment_of(x), aw = alignment_of(w), ao = alignment_of(out);
  const Key key{m, n, k, int(out_dtype), ax, aw, ao};
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;

  auto plan = std::make_unique<Plan>(m, n, k, out_dtype);
  // The bucket's algorithm, asked once at the bucket's top row count (so the choice does not depend
  // on which length came first), serves this exact shape when cuBLASLt confirms it fits.
  const int64_t bucket = row_bucket(m);
  const cublasLtMatmulAlgo_t* shared = bucket == m ? nullptr : bucket_algo({bucket, n, k, int(out_dtype), ax, aw, ao});
  if (shared && algo_fits(*plan, *shared))
    plan->algo = *shared;
  else if (!heuristic(key, plan->algo))
    throw Error("matmul: cuBLASLt has no algorithm for [{}, {}] · [{}, {}]ᵀ -> {} (alignments x {}, w {}, out {})",
                m, k, n, k, dtype_name(out_dtype), ax, aw, ao);
  return *plans_.emplace(key, std::move(plan)).first->second;
}

void LtGemm::matmul_raw(const void* x, const void* w, void* out, DType out_dtype, int64_t m, int64_t n, int64_t k) {
  if (m == 0 || n == 0) return;
  Plan& p = plan_for(m, n, k, out_dtype, x, w, out);
  const float alpha = 1.f, beta = 0.f;
  GS_CUBLAS_CHECK(cublasLtMatmul(handle_, p.d.desc, &alpha, w, p.d.a, x, p.d.b, &beta, out, p.d.c, out, p.d.c, &p.algo,
                                 workspace_.get(), workspace_bytes_, stream_));
}

void check_matmul(const Tensor& x, const Tensor& w, const Tensor& out) {
  GS_CHECK(x.device == Device::CUDA && w.device == Device::CUDA && out.device == Device::CUDA,
           "matmul: operands must live on the GPU (x {}, w {}, out {})", x.str(), w.str(), out.str());
  GS_CHECK(x.dtype == DType::BF16 && w.dtype == DType::BF16, "matmul: x {} and w {} must be bf16", x.str(), w.str());
  GS_CHECK(out.dtype == DType::BF16 || out.dtype == DType::F32, "matmul: out {} must be bf16 or f32", out.str());
  GS_CHECK(w.ndim() == 2, "matmul: weight {} must be [N, K]", w.str());
  const int64_t m = x.rows(), k = x.cols(), n = w.dim(0);
  GS_CHECK(w.dim(1) == k, "matmul: x {} has K = {}, weight {} has {}", x.str(), k, w.str(), w.dim(1));
  GS_CHECK(out.rows() == m && out.cols() == n, "matmul: out {} must be [{}, {}]", out.str(), m, n);
}

void LtGemm::matmul(const Tensor& x, const Tensor& w, const Tensor& out) {
  check_matmul(x, w, out);
  matmul_raw(x.data, w.data, out.data, out.dtype, x.rows(), w.dim(0), x.cols());
}

}  // namespace gs::cuda
