#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/scatter_ids.h"

namespace gs::cuda {
namespace {

__global__ void scatter_ids_kernel(int* dst, const int* src, const int* pairs, int num_pairs) {
  pdl_enter();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < num_pairs) dst[pairs[2 * i]] = src[pairs[2 * i + 1]];
}

}  // namespace

void launch_scatter_ids(const Tensor& dst, const Tensor& src, const int* d_pairs, int num_pairs, cudaStream_t stream) {
  require(dst.dtype == DType::I32 && src.dtype == DType::I32, "scatter_ids: ", dst.str(), " <- ", src.str(),
          " must be i32");
  if (num_pairs == 0) return;
  constexpr int kThreads = 128;
  launch_pdl("scatter_ids_kernel", scatter_ids_kernel, (num_pairs + kThreads - 1) / kThreads, kThreads, 0, stream,
             dst.ptr<int>(), src.ptr<int>(), d_pairs, num_pairs);
  GS_CUDA_LAUNCHED("scatter_ids");
}

}  // namespace gs::cuda
