// Error checks for every CUDA runtime and cuBLASLt call: a failure becomes a gs::Error that names
// the call, where it was made and what the runtime said, instead of a silent bad result.
// Deliberately free of fmt (core/error.h): nvcc 13 cannot compile fmt 9's headers, so .cu files
// raise errors through these out-of-line functions.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

namespace gs::cuda {

// Throws gs::Error(msg).
[[noreturn]] void fail(const std::string& msg);

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t st, const char* what, const char* file, int line);

// After a kernel launch: reports launch-configuration errors (bad grid, too much shared memory)
// right away. Errors of the kernel's execution surface at the next synchronising call.
void check_launch(const char* kernel, const char* file, int line);

}  // namespace gs::cuda

#define GS_CUDA_CHECK(expr)                                                          \
  do {                                                                               \
    cudaError_t gs_err_ = (expr);                                                    \
    if (gs_err_ != cudaSuccess) ::gs::cuda::throw_cuda_error(gs_err_, #expr, __FILE__, __LINE__); \
  } while (0)

#define GS_CUBLAS_CHECK(expr)                                                        \
  do {                                                                               \
    cublasStatus_t gs_st_ = (expr);                                                  \
    if (gs_st_ != CUBLAS_STATUS_SUCCESS)                                             \
      ::gs::cuda::throw_cublas_error(gs_st_, #expr, __FILE__, __LINE__);             \
  } while (0)

#define GS_CUDA_LAUNCHED(name) ::gs::cuda::check_launch(name, __FILE__, __LINE__)
