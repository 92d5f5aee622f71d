// Greedy token choice on the device for the MTP drafter (greedy_head.cu): the argmax of logits rows,
// and the centroid head's argmax without forming the [R, V] logits. Both write i32 ids that the next
// draft step embeds directly, so a round of draft steps needs no host round trip and can be recorded
// in a CUDA graph. Ties go to the lowest token id, as the sampler's greedy rows do.
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace gs::cuda {

// Scratch bytes for rows x (top_k cluster ids + one packed best key).
size_t greedy_head_scratch_bytes(int64_t rows, int top_k);

// out_ids[r] = argmax_v logits[r, v] (f32 [R, V]).
void launch_argmax_rows(const Tensor& logits, const Tensor& out_ids, void* scratch, cudaStream_t stream);

// For each row r of d [R, H] (bf16/f32): the top_k clusters c by centroid_scores[r, c] (f32 [R, C], ties
// to the lower c), then out_ids[r] = the token t of those clusters (token_ordering i32 [V], cluster c owns
// entries [c*V/C, (c+1)*V/C)) with the largest d[r]·embed[t] (embed [V, H], same dtype as d).
void launch_centroid_head_argmax(const Tensor& d, const Tensor& embed, const Tensor& centroid_scores,
                                 const Tensor& token_ordering, int top_k, const Tensor& out_ids, void* scratch,
                                 cudaStream_t stream);

}  // namespace gs::cuda
