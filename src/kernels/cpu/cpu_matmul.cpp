// out[T,N] = x[T,K] · w[N,K]ᵀ on OpenBLAS. Weights stay in the file's dtype: each task converts a
// block of weight rows to f32 scratch and multiplies it with one single-threaded sgemm, so the
// pool parallelises over output columns and the conversion costs no extra memory.
#include <cblas.h>

#include <algorithm>
#include <mutex>

#include "kernels/cpu/cpu_ops.h"

namespace gs::cpu {

namespace {
void blas_single_threaded() {
  // The pool owns the parallelism; OpenBLAS threads would oversubscribe the cores.
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}
}  // namespace

void matmul(ThreadPool& pool, const Tensor& x, const Tensor& w, const Tensor& out) {
  check_f32("matmul", x, "x");
  check_float("matmul", w, "w");
  check_f32("matmul", out, "out");
  GS_CHECK(w.ndim() == 2, "cpu matmul: w must be 2-D [N, K], got {}", w.str());
  const int64_t T = x.rows(), K = x.cols(), N = w.dim(0);
  GS_CHECK(w.dim(1) == K, "cpu matmul: x {} and w {} disagree on K", x.str(), w.str());
  GS_CHECK(out.rows() == T && out.cols() == N, "cpu matmul: out {} must be [{}, {}]", out.str(), T, N);
  if (T == 0 || N == 0) return;
  blas_single_threaded();
  const float* xp = x.ptr<const float>();
  float* op = out.ptr<float>();
  // Blocks of weight rows: big enough for sgemm to be efficient, small enough to balance threads
  // and keep the converted block in cache (about 256 KiB of f32).
  const int64_t rows_per_block = std::clamp<int64_t>(65536 / std::max<int64_t>(K, 1), 8, 512);
  const int64_t blocks = (N + rows_per_block - 1) / rows_per_block;
  pool.parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t n0 = b * rows_per_block, nb = std::min(rows_per_block, N - n0);
      const float* wb;
      if (w.dtype == DType::F32) {
        wb = w.ptr<const float>() + n0 * K;
      } else {
        float* s = thread_scratch(size_t(nb * K));
        load_row(w, n0 * K, nb * K, s);
        wb = s;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(T), int(nb), int(K), 1.0f, xp, int(K), wb, int(K), 0.0f,
                  op + n0, int(N));
    }
  });
}

}  // namespace gs::cpu
