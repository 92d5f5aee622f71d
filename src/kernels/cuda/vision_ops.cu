// The vision tower's element-wise and row ops: one thread per output element, consecutive threads
// on consecutive columns (coalesced). Simple on purpose: the tower's time is in its GEMMs and its
// attention.
#include <algorithm>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/vision_ops.h"

namespace gs::cuda {
namespace {

constexpr int kThreads = 256;

bool is_act(const Tensor& t) { return t.dtype == DType::BF16 || t.dtype == DType::F32; }
bool is_weight(const Tensor& t) { return t.dtype == DType::BF16 || t.dtype == DType::F32; }

template <typename T>
__global__ void clamp_kernel(T* x, int64_t n, float lo, float hi) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = from_f32<T>(fminf(fmaxf(to_f32(x[i]), lo), hi));
}

// x[r] += round(table[0, px] + table[1, py]): the two one-hot rows summed in the table's dtype.
template <typename T>
__global__ void position_add_kernel(T* x, const void* table, bool table_f32, const int* pos, int64_t rows, int64_t H,
                                    int64_t P) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= rows * H) return;
  const int64_t r = i / H, c = i % H;
  const float t0 = load_weight(table, table_f32, int64_t(pos[2 * r]) * H + c);
  const float t1 = load_weight(table, table_f32, (P + pos[2 * r + 1]) * H + c);
  const float pe = table_f32 ? t0 + t1 : rnd<bf16>(t0 + t1);
  x[i] = from_f32<T>(to_f32(x[i]) + pe);
}

// One thread per rotated pair: (row, head, axis, i < s/2). cos/sin are computed in f32 and rounded
// to T as the reference's cos/sin tensors are; each product and the sum round as T ops do.
template <typename T>
__global__ void rope_kernel(T* x, const int* pos, int64_t rows, int heads, int head_dim, float theta) {
  const int s = head_dim / 2, half = s / 2;
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= rows * heads * 2 * half) return;
  const int j = int(i % half);
  const int a = int((i / half) % 2);
  const int64_t rh = i / (2 * half);
  const int64_t r = rh / heads;
  const float inv = 1.0f / powf(theta, float(2 * j) / float(s));
  const float ang = float(pos[2 * r + a]) * inv;
  const float c = rnd<T>(cosf(ang)), sn = rnd<T>(sinf(ang));
  T* part = x + rh * head_dim + a * s;
  const float x1 = to_f32(part[j]), x2 = to_f32(part[j + half]);
  part[j] = from_f32<T>(rnd<T>(x1 * c) - rnd<T>(x2 * sn));
  part[j + half] = from_f32<T>(rnd<T>(x2 * c) + rnd<T>(x1 * sn));
}

// out[c] = round(round(Σ_j x[src[c, j]] / k) · scale): the pooler's f32 average, cast back, then
// times sqrt(Hv) in the activation dtype.
template <typename T>
__global__ void pool_kernel(const T* x, const int* src, int k, float scale, T* out, int64_t cells, int64_t H) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= cells * H) return;
  const int64_t c = i / H, e = i % H;
  const float w = 1.0f / float(k);
  float acc = 0.f;
  for (int j = 0; j < k; ++j) acc += w * to_f32(x[int64_t(src[c * k + j]) * H + e]);
  out[i] = from_f32<T>(rnd<T>(acc) * scale);
}

template <typename T>
__global__ void standardize_kernel(T* x, const void* bias, const void* scale, bool w_f32, int64_t n, int64_t H) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const int64_t e = i % H;
  const float centred = rnd<T>(to_f32(x[i]) - load_weight(bias, w_f32, e));
  x[i] = from_f32<T>(centred * load_weight(scale, w_f32, e));
}

template <typename T>
__global__ void scatter_rows_kernel(const T* src, const int* rows, T* dst, int64_t n, int64_t H) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n * H) return;
  dst[int64_t(rows[i / H]) * H + i % H] = src[i];
}

int blocks(int64_t n) { return int(std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t(1) << 30)); }

}  // namespace

void launch_clamp(const Tensor& x, float lo, float hi, cudaStream_t stream) {
  check_cuda_tensor(x, "clamp", "x");
  require(is_act(x), "clamp: x ", x.str(), " must be bf16 or f32");
  const int64_t n = x.numel();
  if (n == 0) return;
  const int grid = int(std::min<int64_t>(blocks(n), 65535));
  if (x.dtype == DType::BF16) clamp_kernel<<<grid, kThreads, 0, stream>>>(x.ptr<bf16>(), n, lo, hi);
  else clamp_kernel<<<grid, kThreads, 0, stream>>>(x.ptr<float>(), n, lo, hi);
  GS_CUDA_LAUNCHED("clamp");
}

void launch_vision_position_add(const Tensor& x, const Tensor& table, const Tensor& pos_xy, cudaStream_t stream) {
  check_cuda_tensor(x, "vision_position_add", "x");
  check_cuda_tensor(table, "vision_position_add", "table");
  check_cuda_tensor(pos_xy, "vision_position_add", "pos_xy");
  check_dtype(pos_xy, DType::I32, "vision_position_add", "pos_xy");
  const int64_t R = x.rows(), H = x.cols();
  require(is_act(x) && is_weight(table) && table.ndim() == 3 && table.dim(0) == 2 && table.dim(2) == H &&
              pos_xy.numel() == 2 * R,
          "vision_position_add: x ", x.str(), ", table ", table.str(), ", pos_xy ", pos_xy.str(), " do not agree");
  if (R * H == 0) return;
  const bool tf = table.dtype == DType::F32;
  if (x.dtype == DType::BF16)
    position_add_kernel<<<blocks(R * H), kThreads, 0, stream>>>(x.ptr<bf16>(), table.data, tf, pos_xy.ptr<int>(), R,
                                                                 H, table.dim(1));
  else
    position_add_kernel<<<blocks(R * H), kThreads, 0, stream>>>(x.ptr<float>(), table.data, tf, pos_xy.ptr<int>(), R,
                                                                 H, table.dim(1));
  GS_CUDA_LAUNCHED("vision_position_add");
}

void launch_vision_rope(const Tensor& x, const Tensor& pos_xy, int heads, int head_dim, float theta,
                        cudaStream_t stream) {
  check_cuda_tensor(x, "vision_rope", "x");
  check_cuda_tensor(pos_xy, "vision_rope", "pos_xy");
  check_dtype(pos_xy, DType::I32, "vision_rope", "pos_xy");
  const int64_t R = x.rows();
  require(is_act(x) && x.cols() == int64_t(heads) * head_dim && head_dim % 4 == 0 && pos_xy.numel() == 2 * R,
          "vision_rope: x ", x.str(), " is not [rows, ", heads, " x ", head_dim, "] or pos_xy ", pos_xy.str(),
          " is not [rows, 2]");
  const int64_t n = R * heads * (head_dim / 2);
  if (n == 0) return;
  if (x.dtype == DType::BF16)
    rope_kernel<<<blocks(n), kThreads, 0, stream>>>(x.ptr<bf16>(), pos_xy.ptr<int>(), R, heads, head_dim, theta);
  else
    rope_kernel<<<blocks(n), kThreads, 0, stream>>>(x.ptr<float>(), pos_xy.ptr<int>(), R, heads, head_dim, theta);
  GS_CUDA_LAUNCHED("vision_rope");
}

void launch_vision_pool(const Tensor& x, const Tensor& src, float scale, const Tensor& out, cudaStream_t stream) {
  check_cuda_tensor(x, "vision_pool", "x");
  check_cuda_tensor(src, "vision_pool", "src");
  check_cuda_tensor(out, "vision_pool", "out");
  check_dtype(src, DType::I32, "vision_pool", "src");
  const int64_t H = x.cols(), C = out.rows();
  require(is_act(x) && x.dtype == out.dtype && out.cols() == H && src.rows() == C && src.cols() > 0,
          "vision_pool: x ", x.str(), ", src ", src.str(), ", out ", out.str(), " do not agree");
  if (C * H == 0) return;
  const int k = int(src.cols());
  if (x.dtype == DType::BF16)
    pool_kernel<<<blocks(C * H), kThreads, 0, stream>>>(x.ptr<bf16>(), src.ptr<int>(), k, scale, out.ptr<bf16>(), C, H);
  else
    pool_kernel<<<blocks(C * H), kThreads, 0, stream>>>(x.ptr<float>(), src.ptr<int>(), k, scale, out.ptr<float>(), C,
                                                        H);
  GS_CUDA_LAUNCHED("vision_pool");
}

void launch_standardize(const Tensor& x, const Tensor& bias, const Tensor& scale, cudaStream_t stream) {
  check_cuda_tensor(x, "standardize", "x");
  check_cuda_tensor(bias, "standardize", "bias");
  check_cuda_tensor(scale, "standardize", "scale");
  const int64_t H = x.cols(), n = x.numel();
  require(is_act(x) && bias.numel() == H && scale.numel() == H && bias.dtype == scale.dtype && is_weight(bias),
          "standardize: x ", x.str(), ", bias ", bias.str(), ", scale ", scale.str(), " do not agree");
  if (n == 0) return;
  const bool wf = bias.dtype == DType::F32;
  if (x.dtype == DType::BF16)
    standardize_kernel<<<blocks(n), kThreads, 0, stream>>>(x.ptr<bf16>(), bias.data, scale.data, wf, n, H);
  else
    standardize_kernel<<<blocks(n), kThreads, 0, stream>>>(x.ptr<float>(), bias.data, scale.data, wf, n, H);
  GS_CUDA_LAUNCHED("standardize");
}

void launch_scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst, cudaStream_t stream) {
  check_cuda_tensor(src, "scatter_rows", "src");
  check_cuda_tensor(rows, "scatter_rows", "rows");
  check_cuda_tensor(dst, "scatter_rows", "dst");
  check_dtype(rows, DType::I32, "scatter_rows", "rows");
  const int64_t H = dst.cols(), n = rows.numel();
  require(is_act(src) && src.dtype == dst.dtype && src.cols() == H && src.rows() == n, "scatter_rows: src ",
          src.str(), " must be [", n, ", ", H, "] of dst's dtype (", dst.str(), ")");
  if (n * H == 0) return;
  if (src.dtype == DType::BF16)
    scatter_rows_kernel<<<blocks(n * H), kThreads, 0, stream>>>(src.ptr<bf16>(), rows.ptr<int>(), dst.ptr<bf16>(), n,
                                                                H);
  else
    scatter_rows_kernel<<<blocks(n * H), kThreads, 0, stream>>>(src.ptr<float>(), rows.ptr<int>(), dst.ptr<float>(), n,
                                                                H);
  GS_CUDA_LAUNCHED("scatter_rows");
}

}  // namespace gs::cuda
