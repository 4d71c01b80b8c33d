// Warp-level tensor-core pieces for sm_80+ attention kernels: 16-byte cp.async copies (zero
// fill; optional L2 prefetch hint; common/cp_async.cuh), ldmatrix x4 / x4.trans, mma.sync m16n8k16 (f16 / bf16 in,
// f32 accumulate), and the fragment loads of a [rows][kStride] shared-memory tile.
//
// Fragments of mma.m16n8k16 (g = lane / 4, t = lane % 4): A a0 = (row g, k 2t..2t+1),
// a1 = (row g + 8, k 2t..), a2 = (row g, k 2t + 8..), a3 = (row g + 8, k 2t + 8..); B b0 =
// (k 2t..2t+1, col g), b1 = (k 2t + 8.., col g); C c0, c1 = (row g, cols 2t, 2t + 1), c2, c3 =
// (row g + 8, cols 2t, 2t + 1). A pair of n8 accumulator tiles (k 16) is the A fragment of
// the next product once rounded (P = softmax(S) feeds P V from registers).
// Shared-memory rows must be 16-byte aligned; a row stride of D + 8 elements (4 words mod 32
// for D in {64, 128, 256}) keeps the 8 row addresses of one 8x8 matrix on distinct banks.
//
// Users: the decode kernel (decode_mma.cuh) and the flash kernels (through flash_common.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/cp_async.cuh"

namespace baracuda::attention::kernels {

using baracuda::kernels::cp_async16;  // common/cp_async.cuh
using baracuda::kernels::cp_async_commit;
using baracuda::kernels::cp_async_wait;

__device__ __forceinline__ void ldsm_x4(std::uint32_t (&r)[4], const void* p) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}
__device__ __forceinline__ void ldsm_x4_t(std::uint32_t (&r)[4], const void* p) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

// c += a b (16 x 16 times 16 x 8), T = __half or __nv_bfloat16.
template <class T>
__device__ __forceinline__ void mma16816(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to T, the lower index in the low half: one 32-bit fragment register.
template <class T>
__device__ __forceinline__ std::uint32_t pack2f(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&v);
  }
}

// Fragment loads from a row-major shared tile with row stride kStride (elements):
// the A fragment (rows row0 .. +15, k k0 .. +15);
template <int kStride, class T>
__device__ __forceinline__ void frag_a(std::uint32_t (&a)[4], const T* tile, int row0, int k0, int lane) {
  ldsm_x4(a, tile + (row0 + (lane & 15)) * kStride + k0 + (lane >> 4) * 8);
}
// the B fragments of the two n8 blocks n0, n0 + 8 (b[0], b[1]; b[2], b[3]) x k 16 of a tile
// stored [n][k] (K for S = Q K^T);
template <int kStride, class T>
__device__ __forceinline__ void frag_b_nk(std::uint32_t (&b)[4], const T* tile, int n0, int k0, int lane) {
  ldsm_x4(b, tile + (n0 + (lane & 7) + ((lane >> 4) << 3)) * kStride + k0 + ((lane >> 3) & 1) * 8);
}
// the same from a tile stored [k][n], through the transposing load (V for O = P V).
template <int kStride, class T>
__device__ __forceinline__ void frag_b_kn(std::uint32_t (&b)[4], const T* tile, int k0, int n0, int lane) {
  ldsm_x4_t(b, tile + (k0 + (lane & 7) + ((lane >> 3) & 1) * 8) * kStride + n0 + (lane >> 4) * 8);
}

}  // namespace baracuda::attention::kernels
