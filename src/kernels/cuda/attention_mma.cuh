// The few PTX instructions the attention kernels are built from, wrapped so the kernels read as
// tile algebra: asynchronous 16-byte global->shared copies (cp.async, sm_80+), 8x8 matrix loads
// from shared memory (ldmatrix) and the bf16 tensor-core product m16n8k16 with f32 accumulation
// (mma.sync, sm_80+; also the portable path on sm_90).
//
// Shared-memory tiles of head-dim rows use an XOR swizzle on 16-byte chunks: chunk c of row r is
// stored at chunk position c ^ (r & 7). A row is 512 or 1024 bytes, so without it the 8 rows an
// ldmatrix reads would all start in the same bank; with it they fall on 8 distinct 16-byte slots.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

namespace gs::cuda::attn {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Copies 16 bytes when `valid`, else writes 16 zero bytes without reading `src` (src-size 0).
// Zero fill keeps masked keys finite: exp(-inf) = 0 times a zero V row is 0, never NaN.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// d[4] += a[4] · b[2]: A 16x16 row-major, B 16x8 column-major, bf16 in, f32 accumulate.
// Accumulator layout: d0,d1 at (row lane/4, cols 2·(lane%4)+{0,1}); d2,d3 at row lane/4 + 8.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// Element offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of `kRowElems` bf16 per row.
template <int kRowElems>
__device__ __forceinline__ int swz(int row, int chunk) {
  return row * kRowElems + ((chunk ^ (row & 7)) << 3);
}

}  // namespace gs::cuda::attn
