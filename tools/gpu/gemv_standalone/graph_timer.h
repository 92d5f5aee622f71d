// Timing for the standalone GEMV benches: `body` enqueues `reps` calls, captured once as a CUDA
// graph (so launch gaps and PDL edges are as in a decode step's graph) and replayed; returns
// microseconds per call.
#pragma once
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"

template <typename F>
float time_graph(cudaStream_t st, int reps, F&& body) {
  cudaGraph_t g;
  GS_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < reps; ++i) body();
  GS_CUDA_CHECK(cudaStreamEndCapture(st, &g));
  cudaGraphExec_t ge;
  GS_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t a, b;
  GS_CUDA_CHECK(cudaEventCreate(&a));
  GS_CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) GS_CUDA_CHECK(cudaGraphLaunch(ge, st));
  const int iters = 10;
  GS_CUDA_CHECK(cudaEventRecord(a, st));
  for (int i = 0; i < iters; ++i) GS_CUDA_CHECK(cudaGraphLaunch(ge, st));
  GS_CUDA_CHECK(cudaEventRecord(b, st));
  GS_CUDA_CHECK(cudaStreamSynchronize(st));
  float ms = 0;
  GS_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  GS_CUDA_CHECK(cudaEventDestroy(a));
  GS_CUDA_CHECK(cudaEventDestroy(b));
  GS_CUDA_CHECK(cudaGraphExecDestroy(ge));
  GS_CUDA_CHECK(cudaGraphDestroy(g));
  return ms * 1000.f / (iters * reps);
}
