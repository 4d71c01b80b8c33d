// Flash SDPA forward on sm_90a (wgmma), head dims 64 and 128: EXPERIMENTAL, written without a
// GPU to run it; the candidate table orders it after flash_mma until the H200 tests pass.
//
// What: the forward of flash_fwd.cuh (same score path, masks, dropout, varlen, GQA, outputs),
// with the two GEMMs on Hopper's warpgroup MMA.
//
// Tiling: 2 warpgroups (8 warps, 256 threads), each owning 64 of the CTA's 128 query rows; key
// tiles of 128. S = Q K^T is wgmma.m64n128k16 with both operands in shared memory (K-major,
// 128-byte swizzle); P stays in registers (the accumulator fragment repacked as the A operand)
// and O += P V is wgmma.m64n{D}k16 with V read MN-major from the same swizzled tile layout (no
// transpose). The accumulator fragment of m64nNk16 gives each warp 16 rows in the mma.m16n8
// C layout, so the online softmax is flash_fwd.cuh's.
//
// Shared memory: every tile is [rows][D] stored as D / 64 column chunks of [rows][64] (128-byte
// rows), each 16-byte chunk c of row r at chunk c ^ (r % 8) (Swizzle<3,4,3>), tile bases 1024-byte
// aligned. Descriptors: K-major (Q, K): SBO = 1024 (8 rows), k16 steps advance the start by 32
// bytes inside a chunk; MN-major (V): LBO = rows * 128 (next 64 columns), SBO = 1024 (next 8
// keys), k16 steps advance by 2048 bytes.
//
// Pipeline: cp.async double buffering of K / V as in flash_fwd.cuh (every thread loads), then
// fence.proxy.async so the tensor cores see the copies; one wgmma group per GEMM (commit, wait).
// No TMA and no warp specialization yet: those, and ping-pong scheduling of the two
// warpgroups, are the next steps (docs/flash-attention.md).
//
// Preconditions: those of flash_fwd.cuh, D in {64, 128}, sm_90a (arch-specific SKU); the SKU
// takes no softcap / bias / ALiBi / dropout (kExtras stays instantiable but unused).
#pragma once

#include "attention/kernels/flash_fwd.cuh"

namespace baracuda::attention::kernels {

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define BARACUDA_FLASH_SM90 1
#endif

// ---------------------------------------------------------------- wgmma wrappers (sm_90a)
#if defined(BARACUDA_FLASH_SM90)
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Shared-memory matrix descriptor, 128-byte swizzle.
__device__ __forceinline__ std::uint64_t sw128_desc(const void* smem, std::uint32_t lbo_bytes, std::uint32_t sbo_bytes) {
  const std::uint64_t addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  std::uint64_t d = (addr >> 4) & 0x3FFF;
  d |= static_cast<std::uint64_t>((lbo_bytes >> 4) & 0x3FFF) << 16;
  d |= static_cast<std::uint64_t>((sbo_bytes >> 4) & 0x3FFF) << 32;
  d |= std::uint64_t{1} << 62;
  return d;
}

__device__ __forceinline__ void wgmma_ss_n128_bf16(float (&d)[64], std::uint64_t da, std::uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_rs_n128_mn_bf16(float (&d)[64], const std::uint32_t (&a)[4], std::uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_rs_n64_mn_bf16(float (&d)[32], const std::uint32_t (&a)[4], std::uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_ss_n128_f16(float (&d)[64], std::uint64_t da, std::uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_rs_n128_mn_f16(float (&d)[64], const std::uint32_t (&a)[4], std::uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_rs_n64_mn_f16(float (&d)[32], const std::uint32_t (&a)[4], std::uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

template <class T>
__device__ __forceinline__ void wgmma_s(float (&d)[64], std::uint64_t da, std::uint64_t db, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) wgmma_ss_n128_bf16(d, da, db, scale_d);
  else wgmma_ss_n128_f16(d, da, db, scale_d);
}
template <class T, int D>
__device__ __forceinline__ void wgmma_pv(float (&d)[D / 2], const std::uint32_t (&a)[4], std::uint64_t db) {
  if constexpr (D == 128) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) wgmma_rs_n128_mn_bf16(d, a, db);
    else wgmma_rs_n128_mn_f16(d, a, db);
  } else {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) wgmma_rs_n64_mn_bf16(d, a, db);
    else wgmma_rs_n64_mn_f16(d, a, db);
  }
}
#endif  // BARACUDA_FLASH_SM90

struct FlashSm90Config {
  static constexpr int kM = 128, kN = 128, kThreads = 256;
  template <int D>
  static constexpr int smem_bytes() { return (kM + 4 * kN) * D * 2 + 1024; }  // + alignment slack
};

// Copies rows [0, kRows) x D into the swizzled chunk layout, zero-filling rows >= valid_rows.
template <int kRows, int D, int kThreads, class T>
__device__ __forceinline__ void load_tile_sw128(T* smem, const T* gbase, std::int64_t row_stride, int valid_rows,
                                                int tid) {
  load_rows_async<kRows, D, kThreads>(gbase, row_stride, valid_rows, tid, [&](int r, int ch) {
    return smem + (ch >> 3) * kRows * 64 + r * 64 + (((ch & 7) ^ (r & 7)) << 3);
  });
}

template <class T, int D, bool kExtras>
__global__ void __launch_bounds__(256, 1) flash_fwd_sm90_kernel(const FlashFwdParams p) {
#if defined(BARACUDA_FLASH_SM90)
  using Cfg = FlashSm90Config;
  constexpr int kM = Cfg::kM, kN = Cfg::kN, kThreads = Cfg::kThreads;
  static_assert(D == 64 || D == 128);
  static_assert((kM * D) % (kThreads * 8) == 0 && (kN * D) % (kThreads * 8) == 0);
  extern __shared__ unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  T* sK = sQ + kM * D;      // [2][kN * D]
  T* sV = sK + 2 * kN * D;  // [2][kN * D]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
  const int g = lane >> 2, t = lane & 3;
  QueryBlock<T> qb;
  if (!query_block<kM, kN>(p, qb)) return;
  const SeqInfo& si = qb.si;
  const int b = qb.b, h = qb.h, m0 = qb.m0, valid_q = qb.valid_q, n_begin = qb.n_begin, n_end = qb.n_end;
  const T *qg = qb.q, *kg = qb.k, *vg = qb.v;
  T* og = qb.o;
  const int row_local[2] = {warp * 16 + g, warp * 16 + g + 8};  // warp w of the CTA owns rows 16w..
  if (n_end <= n_begin) {
    write_empty_rows<D, kM, kThreads>(p, og, valid_q, b, h, si.start_q + m0, tid);
    return;
  }

  auto load_kv = [&](int nb, int stage) {
    const std::int64_t j = static_cast<std::int64_t>(nb) * kN;
    load_tile_sw128<kN, D, kThreads>(sK + stage * kN * D, kg + j * p.k_s, p.k_s, si.sk - nb * kN, tid);
    load_tile_sw128<kN, D, kThreads>(sV + stage * kN * D, vg + j * p.v_s, p.v_s, si.sk - nb * kN, tid);
  };
  load_tile_sw128<kM, D, kThreads>(sQ, qg, p.q_s, valid_q, tid);
  load_kv(n_begin, 0);
  cp_async_commit();

  float slope = 0.f, acc_o[D / 8][4], row_max[2], row_sum[2];
  DropKey drop{};
  start_rows<kExtras>(p, b, h, slope, drop, acc_o, row_max, row_sum);

  for (int nb = n_begin; nb < n_end; ++nb) {
    const int stage = (nb - n_begin) & 1;
    if (nb + 1 < n_end) {
      load_kv(nb + 1, stage ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    fence_proxy_async();  // the cp.async writes, seen by the tensor cores' async proxy
    __syncthreads();
    const T* cK = sK + stage * kN * D;
    const T* cV = sV + stage * kN * D;

    // S = Q K^T: this warpgroup's 64 rows x 128 keys.
    float s[kN / 8][4];
    float (&s_flat)[kN / 2] = reinterpret_cast<float (&)[kN / 2]>(s);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const std::uint64_t da = sw128_desc(sQ + (kk >> 2) * kM * 64 + wg * 64 * 64 + (kk & 3) * 16, 16, 1024);
      const std::uint64_t db = sw128_desc(cK + (kk >> 2) * kN * 64 + (kk & 3) * 16, 16, 1024);
      wgmma_s<T>(s_flat, da, db, kk > 0 ? 1 : 0);
    }
    wgmma_commit();
    wgmma_wait_all();

    const int j0 = nb * kN;
    online_softmax_tile<T, D, kN, kExtras>(p, si, s, acc_o, row_max, row_sum, m0, row_local, j0,
                                           tile_needs_mask(p, si, m0, kM, j0, kN), b, h, slope, drop, t);

    // O += P V (P from registers, V MN-major).
    // (every A fragment is packed before the fence, so no wgmma waits on register writes)
    std::uint32_t pa[kN / 16][4];
#pragma unroll
    for (int k16 = 0; k16 < kN / 16; ++k16) acc_to_a<T>(pa[k16], s, k16);
    float (&o_flat)[D / 2] = reinterpret_cast<float (&)[D / 2]>(acc_o);
    wgmma_fence();
#pragma unroll
    for (int k16 = 0; k16 < kN / 16; ++k16)
      wgmma_pv<T, D>(o_flat, pa[k16], sw128_desc(cV + k16 * 16 * 64, kN * 128, 1024));
    wgmma_commit();
    wgmma_wait_all();
    __syncthreads();  // this stage is refilled by the next iteration's prefetch
  }

  float lse_v[2];
  finish_rows<D, kExtras>(p, acc_o, row_max, row_sum, lse_v);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row_local[r];
    if (row < valid_q) {
#pragma unroll
      for (int d8 = 0; d8 < D / 8; ++d8)
        *reinterpret_cast<std::uint32_t*>(og + row * p.o_s + d8 * 8 + 2 * t) =
            pack2f<T>(acc_o[d8][2 * r], acc_o[d8][2 * r + 1]);
      if (p.lse != nullptr && t == 0)
        p.lse[b * p.lse_b + h * p.lse_h + static_cast<std::int64_t>(si.start_q + m0 + row) * p.lse_s] = lse_v[r];
    }
  }
#endif  // BARACUDA_FLASH_SM90
}

// Host launcher (flash_fwd_sm90_d<D>.cu).
template <int D>
Status launch_flash_fwd_sm90_impl(const FlashFwdParams& p, cudaStream_t stream) {
  using Cfg = FlashSm90Config;
  const dim3 grid(static_cast<unsigned>((p.seqlen_q + Cfg::kM - 1) / Cfg::kM), static_cast<unsigned>(p.heads_q),
                  static_cast<unsigned>(p.batch));
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return Status::ok();
  // The SKU takes no softcap / bias / ALiBi / dropout (flash_mma does): the fast score path only.
  void (*kernel)(const FlashFwdParams) =
      p.bf16 ? flash_fwd_sm90_kernel<__nv_bfloat16, D, false> : flash_fwd_sm90_kernel<__half, D, false>;
  constexpr int kSmem = Cfg::smem_bytes<D>();
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem) != cudaSuccess)
    return gemm::kernel_launch_status("sdpa flash_wgmma forward (shared memory attribute)");
  kernel<<<grid, Cfg::kThreads, kSmem, stream>>>(p);
  return gemm::kernel_launch_status("sdpa flash_wgmma forward");
}

}  // namespace baracuda::attention::kernels
