#include "kernels/cuda/cuda_check.h"

#include <cstring>

#include "core/error.h"

namespace gs::cuda {

static const char* short_file(const char* file) {
  const char* s = std::strstr(file, "src/");
  return s ? s : file;
}

void fail(const std::string& msg) { throw Error(msg); }

void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
  cudaGetLastError();  // clear a sticky launch error so the next call reports its own
  throw Error("CUDA error {} ({}) in {} at {}:{}", cudaGetErrorName(err), cudaGetErrorString(err), what,
              short_file(file), line);
}

void throw_cublas_error(cublasStatus_t st, const char* what, const char* file, int line) {
  throw Error("cuBLASLt error {} ({}) in {} at {}:{}", cublasLtGetStatusName(st), cublasLtGetStatusString(st),
              what, short_file(file), line);
}

void check_launch(const char* kernel, const char* file, int line) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw_cuda_error(err, kernel, file, line);
}

}  // namespace gs::cuda
