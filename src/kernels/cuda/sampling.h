// Sampling on the GPU (sampling.cu): the logits never leave the device. The procedure is the one
// ops/sampling_rng.h prescribes and kernels/cpu implements (greedy argmax; or temperature, then
// top_k, top_p, min_p filters, then Gumbel-max with the shared counter-based generator), so a
// seeded row draws the same token on both backends.
#pragma once
#include <cuda_runtime.h>

#include "ops/backend.h"

namespace gs::cuda {

// d_rows: R SamplingRow structs already on the device. scratch: sample_scratch_bytes(R, V) bytes
// of device memory for the per-slice row statistics (the row's max and Σ exp are found by many
// blocks per row, then combined by the sampling kernel).
size_t sample_scratch_bytes(int64_t rows, int64_t vocab);
void launch_sample(const Tensor& logits, const SamplingRow* d_rows, int num_rows, const Tensor& out_ids,
                   const Tensor& out_logprobs, void* scratch, size_t scratch_bytes, cudaStream_t stream);

// Top-n (ties to the lowest id) log-probabilities per row: ids [R, n] i32, logprobs [R, n] f32.
void launch_top_logprobs(const Tensor& logits, int n, const Tensor& ids, const Tensor& logprobs, cudaStream_t stream);

// Backend::adjust_logits on the device: one block per row runs the four steps in order. The host
// flattens each row's tokens into `entries` (row r owns [first, first + count)) and ships the
// presence/frequency amount already evaluated (penalty_delta), so both backends round it once.
struct AdjustEntry {
  int token;
  float bias;
  float subtract;  // 0 when the token was never generated
  int flags;       // kAdjustBanned | kAdjustRepeated
};
constexpr int kAdjustBanned = 1, kAdjustRepeated = 2;
struct AdjustRowInfo {
  int first, count;         // into the entries
  const int* prompt_set;    // device ids the repetition penalty covers besides the entries, or null
  int prompt_set_size;
  float repetition_penalty;
};
void launch_adjust_logits(const Tensor& logits, const AdjustRowInfo* d_rows, const AdjustEntry* d_entries,
                          cudaStream_t stream);

// Largest n top_logprobs supports.
constexpr int kMaxTopLogprobs = 256;

}  // namespace gs::cuda
