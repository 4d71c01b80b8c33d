// Int4GemmPlan's stream-K decode kernel (SKU w4a16_streamk): Y[M, N] = X[M, K] * dequant(W)^T
// for M <= 16 and group sizes that are multiples of 128 (or K), built so that the packed
// weight streams at memory speed on every shape.
//
// What: y[m, n] = RN(sum_g s(n, g) * (sum_{k in g} x[m, k] (q(n, k) - z(n, g))) (+ bias[n])),
// f32 throughout. Each product x (q - z) is exact (a 16-bit float times an integer of at most 5
// bits), the tensor cores sum them per 128-k chunk in f32, and the group scale multiplies the
// chunk's f32 sum once; so the dequantized weight is never rounded to the activation dtype (the
// oracle of baracuda/reference/gemm_int4.hpp is exact, and this is closer to it than
// RN((q - z) s) per weight; a weight equal to its zero point still contributes exactly 0).
// Parallel scheme:
//  * fragments as int4_gemv.cuh: mma.sync m16n8k16 with 16 weight rows as the mma's M and 8
//    activation rows as its N (NT = 1 tile for M <= 8, 2 for M <= 16); lane (g, t) loads the
//    16-byte vector k = chunk + 32t .. + 31 of rows g and g + 8 of a 16-row tile, X staged in
//    shared memory in the permuted K order of int4_stage_x;
//  * dequantization without the scale: pair j of a word (elements j and j + 4) is one shift,
//    one LOP3 ((w >> 4j) & 0x000F000F, OR the exponent of B = 1024 / 128, XOR 8 for s4) and
//    one packed subtraction of B + z: q - z exactly;
//  * stream-K work split: the units (16-row tile, 128-k chunk) of a K slice are numbered tile
//    major, and warp j of the slice's W warps takes the contiguous range
//    [j U / W, (j + 1) U / W): every warp streams the same number of bytes, whatever N, K
//    and the SM count. A warp's range crosses tile boundaries; at each boundary (and at the end
//    of its range) it stores its f32 sums of the tile to partial slot j - owner(first unit of
//    the tile), and int4_streamk_reduce_kernel adds, per output, the slots of each slice in
//    order (deterministic) + bias and rounds once;
//  * each warp streams its range through its own D-deep ring in shared memory: lane l copies
//    its two 16-byte vectors of a unit with cp.async (one commit group per unit) and later reads
//    back only what it copied itself, so no barrier is needed; the units' scale (and zero) bits
//    ride along in a register ring of the same depth. The ring runs across tile boundaries (no
//    drain at a tile change) and keeps D KiB per warp in flight without registers. The weight
//    copies carry an L2 evict-first policy (read once: the partial slots, scales and X stay in
//    the L2 instead; H100 session 22: M = 1 / 8 / 16 -7% / -10% / -7%), and the reduction
//    discards the slots' L2 lines once read (no write-back of dead partials: M = 16 -3% more);
//  * blocks of kInt4StreamKWarps warps, one resident per SM, one K slice each
//    (blockIdx.x % splits): the slice's X in shared memory is shared by all tiles the block's
//    warps visit. The launch shape (Int4StreamKConfig) is fixed at select.
// Weights row-major or tiled (kTiled, from wt.tiled: each unit's 1 KiB contiguous, the units of
// a tile in K order; only the cursor's addresses differ).
// Preconditions (select checks them): M <= 16, K % 32 == 0, group_size % 128 == 0 or
// group_size == K, rows 16-byte aligned, kslice % 128 == 0, W <= U for every slice, smem_bytes
// = int4_streamk_smem_bytes(M, kslice, D).
// Speed: bench lines gemm.w4a16.* (M in {1, 16}, 28672 x 8192 and 4096 x 4096).
#pragma once

#include <type_traits>
#include <utility>

#include "common/cp_async.cuh"
#include "common/pdl.cuh"
#include "gemm/kernels/int4_gemv.cuh"

namespace baracuda::gemm::kernels {

// The scale and zero-point bits of one unit for rows g (low half) and g + 8 (high half).
struct Int4StreamKGroupBits {
  unsigned short s[2], z[2];  // kept apart until the unit is consumed: merging them at the load
                              // would wait for the loads there (ncu, session 10: 13% of stalls)
};

// Where a warp's loads stand: unit (tile, chunk) of its slice and the two row pointers.
struct Int4StreamKCursor {
  std::int64_t tile;
  int chunk;
  const uint4* w[2];             // row g / g + 8, at the lane's vector of `chunk`
  const unsigned short* s[2];    // the rows' scales
  int gi_first, gi_last;         // the slice's first and last group
};

__device__ __forceinline__ void int4_streamk_prefetch_l1(const void* p) {
  asm volatile("prefetch.global.L1 [%0];\n" ::"l"(p));
}

// A row's zero points sit at this offset (in elements) from its scales.
__device__ __forceinline__ std::ptrdiff_t int4_streamk_zero_offset(const Int4Weights& wt) {
  return static_cast<const unsigned short*>(wt.zeros) - static_cast<const unsigned short*>(wt.scales);
}

// On entering a tile, the rows' scale (and zero) bytes of the slice's first and last group are
// prefetched into the L1, D units before the first of them is read (ptxas places the scale
// loads just ahead of their use: ncu, M = 16, 12% of stall samples waited for them). Part of
// the session-24 set with plain X loads, X staged 4 vectors at a time and the one-wave
// reduction (H100: tiled M = 16 0.0532 -> 0.0513 ms; docs/gemm.md).
template <bool kTiled, bool kSigned>
__device__ __forceinline__ void int4_streamk_seek(Int4StreamKCursor& c, const Int4Weights& wt, std::int64_t k0, int g,
                                                  int t) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    std::int64_t row = c.tile * 16 + g + 8 * h;
    row = row < wt.n ? row : wt.n - 1;  // rows past N read row N - 1; their sums are never read
    const auto* base = static_cast<const unsigned char*>(wt.w);
    c.w[h] = kTiled  // the unit's 1 KiB: (tile, chunk) in K order, rows g / g + 8 at 64 g + 512 h, vector t
                 ? reinterpret_cast<const uint4*>(base + (c.tile * (wt.k / 128) + k0 / 128 + c.chunk) * 1024) + 32 * h +
                       4 * g + t
                 : reinterpret_cast<const uint4*>(base + row * wt.ld_bytes + k0 / 2) + 4 * c.chunk + t;
    c.s[h] = static_cast<const unsigned short*>(wt.scales) + row * wt.groups;
    int4_streamk_prefetch_l1(c.s[h] + c.gi_first);
    if (c.gi_last != c.gi_first) int4_streamk_prefetch_l1(c.s[h] + c.gi_last);
    if constexpr (!kSigned) {
      const std::ptrdiff_t zoff = int4_streamk_zero_offset(wt);
      int4_streamk_prefetch_l1(c.s[h] + zoff + c.gi_first);
      if (c.gi_last != c.gi_first) int4_streamk_prefetch_l1(c.s[h] + zoff + c.gi_last);
    }
  }
}

// Issues the unit's copies (the lane's vectors of rows g, g + 8 into its ring slot `dst`) and
// loads its group bits. 32-bit slice offsets: klen = k1 - k0, chunk0 = k0 / 128, chunk_shift =
// log2(group_size / 128) (31 for group_size = K: every chunk in group 0).
template <bool kSigned, int kL2Prefetch>
__device__ __forceinline__ Int4StreamKGroupBits int4_streamk_load(uint4* dst, const Int4StreamKCursor& c,
                                                                  const Int4Weights& wt, int klen, int chunk0,
                                                                  int t, int chunk_shift) {
  const bool valid = 128 * c.chunk + 32 * t < klen;  // the lane's 32 k lie in the slice (K % 32 == 0); past K: zeros
  const unsigned long long evict_first = baracuda::kernels::l2_evict_first_policy();
  baracuda::kernels::cp_async16_hint<kL2Prefetch>(dst, c.w[0], valid, evict_first);
  baracuda::kernels::cp_async16_hint<kL2Prefetch>(dst + 32, c.w[1], valid, evict_first);
  const int gi = static_cast<int>(static_cast<unsigned>(chunk0 + c.chunk) >> chunk_shift);
  Int4StreamKGroupBits b;
  b.s[0] = __ldg(c.s[0] + gi);
  b.s[1] = __ldg(c.s[1] + gi);
  b.z[0] = b.z[1] = 0;
  if constexpr (!kSigned) {
    const std::ptrdiff_t zoff = int4_streamk_zero_offset(wt);
    b.z[0] = __ldg(c.s[0] + zoff + gi);
    b.z[1] = __ldg(c.s[1] + zoff + gi);
  }
  return b;
}

template <bool kTiled, bool kSigned>
__device__ __forceinline__ void int4_streamk_advance(Int4StreamKCursor& c, const Int4Weights& wt, std::int64_t k0,
                                                     int chunks, int g, int t) {
  if (++c.chunk == chunks) {
    c.chunk = 0;
    ++c.tile;
    int4_streamk_seek<kTiled, kSigned>(c, wt, k0, g, t);
  } else {
    constexpr int step = kTiled ? 64 : 4;  // the next chunk: 1 KiB on (tiled) or 64 bytes along the row
    c.w[0] += step;
    c.w[1] += step;
  }
}

// (w >> 4j) & 0x000F000F as the numbers B + q (u4) or B + (q ^ 8) (s4) in both halves.
template <class T, bool kSigned>
__device__ __forceinline__ std::uint32_t int4_streamk_bits(std::uint32_t w, int j) {
  constexpr std::uint32_t c = Int4Act<T>::kMagic | (kSigned ? 0x00080008u : 0u);
  std::uint32_t d;
  const std::uint32_t v = w >> (4 * j);  // (the shifts as IMAD.HI on the FMA pipe: 12% slower, session 10)
  asm("lop3.b32 %0, %1, %2, %3, 0x6a;" : "=r"(d) : "r"(v), "r"(0x000F000Fu), "r"(c));  // (a & b) ^ c
  return d;
}

template <class T>
__device__ __forceinline__ void mma_16816_zero_c(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                 std::uint32_t b1);
template <>
__device__ __forceinline__ void mma_16816_zero_c<__nv_bfloat16>(float (&c)[4], const std::uint32_t (&a)[4],
                                                                std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};\n"
      : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
}
template <>
__device__ __forceinline__ void mma_16816_zero_c<__half>(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                                         std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};\n"
      : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
}

// The lane's X operand of word i of a chunk (X slots as int4_stage_x): x_addr[nt] is the shared
// address of its vector for word 0 of token tile nt (token row, chunk and t folded in), word i
// 64 bytes on. Lanes of tokens >= M read row M - 1 instead (x_addr clamped by the caller):
// their mma columns are never read, so the loads need no predicate and no register copies.
template <int NT>
__device__ __forceinline__ void int4_streamk_x_frag(uint4 (&b)[NT], const std::uint32_t (&x_addr)[NT], int i) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(b[nt].x), "=r"(b[nt].y), "=r"(b[nt].z), "=r"(b[nt].w)
                 : "r"(x_addr[nt] + 64 * i));
}

// acc += s * (the unit's sums of x (q - z)), lane (g, t); x_addr: the lane's X vectors of word 0
// of the unit's chunk, one per token tile. Two mma chains (k16 steps 0 and 1 of each word) halve
// the dependent tensor-core latency.
template <class T, int NT, bool kSigned>
__device__ __forceinline__ void int4_streamk_unit(float (&acc)[NT][4], const uint4 (&q)[2], Int4StreamKGroupBits gb,
                                                  const std::uint32_t (&x_addr)[NT]) {
  using A = Int4Act<T>;
  using T2 = typename A::T2;
  T2 zb[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const unsigned short zbits = gb.z[h];
    zb[h] = kSigned ? as_pair<T2>(A::kMagic | 0x00080008u)
                    : A::splat(A::kBase + A::to_float(*reinterpret_cast<const T*>(&zbits)));
  }
  uint4 b[4][NT];
#pragma unroll
  for (int i = 0; i < 4; ++i) int4_streamk_x_frag<NT>(b[i], x_addr, i);
  float part[2][NT][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t wa = reinterpret_cast<const std::uint32_t*>(&q[0])[i];
    const std::uint32_t wb = reinterpret_cast<const std::uint32_t*>(&q[1])[i];
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const std::uint32_t a[4] = {
          as_u32(__hsub2(as_pair<T2>(int4_streamk_bits<T, kSigned>(wa, 2 * hh)), zb[0])),
          as_u32(__hsub2(as_pair<T2>(int4_streamk_bits<T, kSigned>(wb, 2 * hh)), zb[1])),
          as_u32(__hsub2(as_pair<T2>(int4_streamk_bits<T, kSigned>(wa, 2 * hh + 1)), zb[0])),
          as_u32(__hsub2(as_pair<T2>(int4_streamk_bits<T, kSigned>(wb, 2 * hh + 1)), zb[1]))};
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const std::uint32_t b0 = hh == 0 ? b[i][nt].x : b[i][nt].z, b1 = hh == 0 ? b[i][nt].y : b[i][nt].w;
        if (i == 0)
          mma_16816_zero_c<T>(part[hh][nt], a, b0, b1);
        else
          mma_16816<T>(part[hh][nt], a, b0, b1);
      }
    }
  }
  const unsigned short s0b = gb.s[0], s1b = gb.s[1];
  const float s0 = A::to_float(*reinterpret_cast<const T*>(&s0b));
  const float s1 = A::to_float(*reinterpret_cast<const T*>(&s1b));
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    acc[nt][0] = fmaf(s0, part[0][nt][0] + part[1][nt][0], acc[nt][0]);
    acc[nt][1] = fmaf(s0, part[0][nt][1] + part[1][nt][1], acc[nt][1]);
    acc[nt][2] = fmaf(s1, part[0][nt][2] + part[1][nt][2], acc[nt][2]);
    acc[nt][3] = fmaf(s1, part[0][nt][3] + part[1][nt][3], acc[nt][3]);
  }
}

// The warp that owns unit u of a slice of U units split over W warps: the largest j with
// floor(j U / W) <= u, i.e. j U < (u + 1) W. A floating-point estimate, corrected with exact
// 64-bit products (no 64-bit division).
__device__ __forceinline__ std::int64_t int4_streamk_owner(std::int64_t u, std::int64_t units, std::int64_t warps) {
  const std::int64_t lim = (u + 1) * warps;
  std::int64_t j = static_cast<std::int64_t>(static_cast<double>(lim) / static_cast<double>(units));
  while (j > 0 && j * units >= lim) --j;
  while ((j + 1) * units < lim) ++j;
  return j;
}

// Chunks of slice `split` (the last one may be shorter).
__device__ __forceinline__ int int4_streamk_chunks(const Int4GemvParams& p, int split) {
  const std::int64_t k0 = split * p.cfg.kslice;
  const std::int64_t k1 = k0 + p.cfg.kslice < p.wt.k ? k0 + p.cfg.kslice : p.wt.k;
  return static_cast<int>((k1 - k0 + 127) / 128);
}

// partial[((split tiles + tile) slots + slot) 16 M + row M + m]
__device__ __forceinline__ std::int64_t int4_streamk_slot_base(const Int4StreamKParams& P, int split, std::int64_t tile,
                                                               std::int64_t slot) {
  return ((split * P.k.tiles + tile) * P.k.slots + slot) * 16 * P.g.m;
}

// Stores the warp's f32 sums of a tile to its partial slot and clears them; at the tile's last
// unit (last = true) lane 0 also records the tile's slot count (slot + 1) for the reduction.
template <int NT>
__device__ __forceinline__ void int4_streamk_flush(const Int4StreamKParams& P, float (&acc)[NT][4], int split,
                                                   std::int64_t tile, std::int64_t slot, bool last, int g, int t) {
  float* dst = P.g.partial + int4_streamk_slot_base(P, split, tile, slot);
  const std::int64_t M = P.g.m;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const std::int64_t m = 8 * nt + 2 * t + (e & 1);
      if (m < M) dst[(g + 8 * (e >> 1)) * M + m] = acc[nt][e];
      acc[nt][e] = 0.0f;
    }
  if (last && g == 0 && t == 0) P.counts[split * P.k.tiles + tile] = static_cast<int>(slot + 1);
}

// One warp's walk over its range of a K slice's units, shared by the stream-K and the one-pass
// kernels: units [first_tile * chunks + first_chunk, + n_units) of slice [k0, k1) (`chunks`
// chunks a tile), streamed through the lane's ring slots `ring` (slot s at ring + 64 s), X's
// slice staged into xs by the whole block on the way (all warps must call this: it holds a
// block barrier). At the end of each tile, and at the range's end, it calls
// finish(acc, tile, whole_tile_end) with the warp's f32 sums of that tile (finish clears them).
template <class T, int NT, bool kSigned, bool kTiled, int D, int kL2Prefetch, class Finish>
__device__ __forceinline__ void int4_streamk_warp_run(const Int4GemvParams& p, T* xs, uint4* ring, std::int64_t k0,
                                                      std::int64_t k1, int chunks, std::int64_t first_tile,
                                                      int first_chunk, int n_units, Finish&& finish) {
  const Int4Weights& wt = p.wt;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const std::int64_t rs = p.cfg.kslice + 32;
  const int klen = static_cast<int>(k1 - k0), chunk0 = static_cast<int>(k0 / 128);
  const int chunk_shift = p.cfg.group_shift - 7 < 31 ? p.cfg.group_shift - 7 : 31;

  // The first D units' copies go out before X is staged.
  Int4StreamKCursor ld;
  ld.tile = first_tile;
  ld.chunk = first_chunk;
  ld.gi_first = static_cast<int>(static_cast<unsigned>(chunk0) >> chunk_shift);
  ld.gi_last = static_cast<int>(static_cast<unsigned>(chunk0 + chunks - 1) >> chunk_shift);
  int4_streamk_seek<kTiled, kSigned>(ld, wt, k0, g, t);
  Int4StreamKGroupBits gb[D];
#pragma unroll
  for (int s = 0; s < D; ++s) {
    if (s < n_units) {
      gb[s] = int4_streamk_load<kSigned, kL2Prefetch>(ring + s * 64, ld, wt, klen, chunk0, t, chunk_shift);
      int4_streamk_advance<kTiled, kSigned>(ld, wt, k0, chunks, g, t);
    }
    baracuda::kernels::cp_async_commit();  // one group per slot, empty or not
  }
  // X's slice: 4 vectors a thread in flight at once (M = 16's 64 KB slice is 8 a thread; one
  // at a time, ncu showed 90 instructions and an exposed L2 round trip per vector).
  int4_stage_x<T, 4>(p, xs, k0, k1);
  __syncthreads();

  // The lane's X vectors of word 0 of chunk 0: token row 8 nt + g (M - 1 past M) of tile nt.
  std::uint32_t x_base[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int row = 8 * nt + g < p.m ? 8 * nt + g : static_cast<int>(p.m) - 1;
    x_base[nt] = static_cast<std::uint32_t>(__cvta_generic_to_shared(xs)) +
                 static_cast<std::uint32_t>(row * rs * 2 + t * 16);
  }
  float acc[NT][4] = {};
  std::int64_t tile = first_tile;
  int chunk = first_chunk;
  // One unit of ring slot s at unit u + s of the range. kTail: the range may end inside this
  // D-group and the slot's refill may lie past it (the last two groups); in the steady state
  // neither can happen, so those checks are compiled out.
  auto step = [&](auto tail, int u, auto slot_index) {
    constexpr bool kTail = decltype(tail)::value;
    constexpr int s = decltype(slot_index)::value;
    if (kTail && u + s >= n_units) return;  // warp-uniform
    baracuda::kernels::cp_async_wait<D - 1>();  // slot s (the oldest group) has landed
    const uint4 q[2] = {ring[s * 64], ring[s * 64 + 32]};
    std::uint32_t x_addr[NT];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) x_addr[nt] = x_base[nt] + 256u * static_cast<unsigned>(chunk);
    int4_streamk_unit<T, NT, kSigned>(acc, q, gb[s], x_addr);
    if (!kTail || u + s + D < n_units) {
      gb[s] = int4_streamk_load<kSigned, kL2Prefetch>(ring + s * 64, ld, wt, klen, chunk0, t, chunk_shift);
      int4_streamk_advance<kTiled, kSigned>(ld, wt, k0, chunks, g, t);
    }
    baracuda::kernels::cp_async_commit();
    const bool tile_end = ++chunk == chunks;
    if (tile_end || (kTail && u + s + 1 == n_units)) {
      finish(acc, tile, tile_end);
      chunk = 0;
      ++tile;
    }
  };
  int u = 0;
  for (; u + 2 * D <= n_units; u += D)
    [&]<int... S>(std::integer_sequence<int, S...>) {
      (step(std::false_type{}, u, std::integral_constant<int, S>{}), ...);
    }(std::make_integer_sequence<int, D>{});
  for (; u < n_units; u += D)
    [&]<int... S>(std::integer_sequence<int, S...>) {
      (step(std::true_type{}, u, std::integral_constant<int, S>{}), ...);
    }(std::make_integer_sequence<int, D>{});
}

template <class T, int NT, bool kSigned, bool kTiled, int D, int kL2Prefetch>
__global__ void __launch_bounds__(kInt4StreamKWarps * 32, 1) int4_streamk_kernel(const Int4StreamKParams P) {
  extern __shared__ uint4 smem_raw[];
  const Int4GemvParams& p = P.g;
  const Int4Weights& wt = p.wt;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  T* xs = reinterpret_cast<T*>(smem_raw);
  // This lane's slots of the warp's ring: slot s holds rows g / g + 8 at [s * 64 + {0, 32} + lane].
  uint4* ring = smem_raw + P.k.ring_offset / 16 + warp * D * 64 + lane;
  const int split = static_cast<int>(blockIdx.x % P.g.cfg.splits);
  const std::int64_t k0 = split * p.cfg.kslice, k1 = k0 + p.cfg.kslice < wt.k ? k0 + p.cfg.kslice : wt.k;
  const int chunks = int4_streamk_chunks(p, split);
  const std::int64_t units = P.k.tiles * chunks, W = P.k.warps_per_split;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x / P.g.cfg.splits) * kInt4StreamKWarps + warp;
  const std::int64_t u0 = j * units / W;
  const int n_units = static_cast<int>((j + 1) * units / W - u0);
  const std::int64_t first_tile = u0 / chunks;
  std::int64_t slot = j - int4_streamk_owner(first_tile * chunks, units, W);
  int4_streamk_warp_run<T, NT, kSigned, kTiled, D, kL2Prefetch>(
      p, xs, ring, k0, k1, chunks, first_tile, static_cast<int>(u0 - first_tile * chunks), n_units,
      [&](float (&acc)[NT][4], std::int64_t tile, bool tile_end) {
        int4_streamk_flush<NT>(P, acc, split, tile, slot, tile_end, g, t);
        slot = 0;  // a later tile starts inside this warp's range: the warp owns its first unit
      });
  baracuda::kernels::pdl_trigger();
}

// y[m, n] = RN(sum over slices s, then over the slice's warps in order, of their partial sums
// (+ bias[n])). Thread idx covers the 4 outputs o = 4 idx' .. + 3 (o = row M + m) of tile
// idx' / (4 M), the partials' own order (16-byte reads of each slot); the slot count of each
// (slice, tile) is the one its last warp recorded. tiles * 16 * M < 2^31 (select checks).
// Latency: the counts of kSliceBatch slices are read at once, then the first kSlotBatch slots
// of each of them at once (two dependent reads, not one per slot); the sums still run over
// the slices and slots in order (deterministic, as before).
// Blocks of kInt4StreamKReduceThreads, at most 72 registers: 7 blocks a SM, so M = 16 on 28672
// rows (896 blocks) is one wave on 132 SMs (75 registers gave 6 blocks a SM and 1.13 waves;
// 64 registers spill).
inline constexpr int kInt4StreamKReduceThreads = 128;
template <class T>
__global__ void __launch_bounds__(kInt4StreamKReduceThreads, 7) int4_streamk_reduce_kernel(const Int4StreamKParams P) {
  constexpr int kSliceBatch = 4, kSlotBatch = 2;
  baracuda::kernels::pdl_wait();
  const Int4GemvParams& p = P.g;
  const unsigned M = static_cast<unsigned>(p.m), per_tile4 = 4 * M;
  const unsigned total4 = static_cast<unsigned>(P.k.tiles) * per_tile4;
  const int splits = P.g.cfg.splits;
  T* y = static_cast<T*>(p.y);
  const T* bias = static_cast<const T*>(p.bias);
  for (unsigned idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total4; idx += gridDim.x * blockDim.x) {
    const unsigned tile = idx / per_tile4, o = 4 * (idx - tile * per_tile4);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    auto add = [&v](const float4 w) {
      v.x = __fadd_rn(v.x, w.x);
      v.y = __fadd_rn(v.y, w.y);
      v.z = __fadd_rn(v.z, w.z);
      v.w = __fadd_rn(v.w, w.w);
    };
    for (int s0 = 0; s0 < splits; s0 += kSliceBatch) {
      int cnt[kSliceBatch];
      const float4* src[kSliceBatch];
#pragma unroll
      for (int b = 0; b < kSliceBatch; ++b) {
        const int s = s0 + b < splits ? s0 + b : splits - 1;
        cnt[b] = s0 + b < splits ? P.counts[s * P.k.tiles + tile] : 0;
        src[b] = reinterpret_cast<const float4*>(p.partial + int4_streamk_slot_base(P, s, tile, 0) + o);
      }
      float4 w[kSliceBatch][kSlotBatch];
#pragma unroll
      for (int b = 0; b < kSliceBatch; ++b)
#pragma unroll
        for (int jj = 0; jj < kSlotBatch; ++jj)
          if (jj < cnt[b]) w[b][jj] = src[b][jj * per_tile4];
#pragma unroll
      for (int b = 0; b < kSliceBatch; ++b) {
#pragma unroll
        for (int jj = 0; jj < kSlotBatch; ++jj)
          if (jj < cnt[b]) add(w[b][jj]);
        for (int jj = kSlotBatch; jj < cnt[b]; ++jj) add(src[b][jj * per_tile4]);  // many slots: rare
      }
      // The slots just read are dead: drop their L2 lines without a write-back to DRAM. Even M
      // only: a slot is 64 M bytes, so its lines are whole and read by the 8 lanes of one
      // 128-byte line each (idx % 8 == 0 leads), all of them done once the warp syncs.
      if ((M & 1u) == 0) {
        __syncwarp(__activemask());
        if ((threadIdx.x & 7) == 0)
          for (int b = 0; b < kSliceBatch; ++b)
            for (int jj = 0; jj < cnt[b]; ++jj)
              asm volatile("discard.global.L2 [%0], 128;\n" ::"l"(src[b] + jj * per_tile4) : "memory");
      }
    }
    const float r[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const unsigned oe = o + e, row = oe / M, m = oe - row * M;
      const std::int64_t n = static_cast<std::int64_t>(tile) * 16 + row;
      if (n >= p.wt.n) continue;
      float ve = r[e];
      if (bias) ve = __fadd_rn(ve, Int4Act<T>::to_float(bias[n]));
      y[m * p.ldy + n] = Int4Act<T>::from_float(ve);
    }
  }
}

}  // namespace baracuda::gemm::kernels
