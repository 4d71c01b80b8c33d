// RoPE forward / backward kernels (RopePlan, RopeBackwardPlan; seam: attention/rope_params.hpp).
//
// What: y = R(t) x on the pairs of the first rotary_dim elements of every head vector (neox
// pairs (i, i + R/2) or interleaved pairs (2i, 2i + 1)), t = pos * inv_freq[i] or the caller's
// cos / sin cache; R(-t) for the backward; the other elements copied (skipped in place).
// Parallel scheme: one block per (batch, seq) position (grid-stride when there are more
// positions than blocks), block = units x heads threads: threadIdx.x picks a unit of the row
// (a slice of pairs, or of pass-through elements) and computes its cos / sin once; threadIdx.y
// walks the heads of x and then of x2 two at a time (both loads in flight before the stores),
// reusing them. So the trig work is per position, not per
// element, and each element is read once and written once (one pass).
// Preconditions (checked at select): kVec16: head dim unit-stride in every tensor, every other
// stride a multiple of V = 16 / sizeof(T), R / 2 (neox) or R (interleaved) a multiple of V,
// 16-byte aligned pointers; rotary_dim <= 512.
// Numerics: arithmetic in Compute<T> (f32; f64 for f64); angle = float(pos) * float(inv_freq)
// (one rounding) and sincosf / sincos (accurate, not __sinf); y_a = x_a c - x_b s with the
// FMA contraction nvcc applies; one rounding to T. A cached position outside [0, max_pos)
// gives NaN. Speed: bench `baracuda-bench --suite attention --op rope` (bf16 [8,4096,32,128]).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "attention/rope_params.hpp"
#include "common/device_types.cuh"
#include "common/vec_io.cuh"

namespace baracuda::rope::kernels {

using baracuda::kernels::Compute;
using baracuda::kernels::from_compute;
using baracuda::kernels::to_compute;

template <class C>
__device__ __forceinline__ void sincos_of(C a, C* s, C* c) {
  if constexpr (sizeof(C) == 8) ::sincos(a, s, c);
  else ::sincosf(a, s, c);
}

// V elements at p with element stride sd (one 16-byte vector when kVec).
template <class T, int V, bool kVec>
__device__ __forceinline__ void load_unit(const T* p, std::int64_t sd, Compute<T> (&v)[V]) {
  if constexpr (kVec) {
    const auto r = baracuda::kernels::load_vec<T, V>(p);
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = to_compute(r.v[k]);
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = to_compute(p[k * sd]);
  }
}
template <class T, int V, bool kVec>
__device__ __forceinline__ void store_unit(T* p, std::int64_t sd, const Compute<T> (&v)[V]) {
  if constexpr (kVec) {
    baracuda::kernels::Vec<T, V> r;
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = from_compute<T>(v[k]);
    baracuda::kernels::store_vec<T, V>(p, r);
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) p[k * sd] = from_compute<T>(v[k]);
  }
}

template <class T>
__device__ __forceinline__ Compute<T> load_cache(const void* base, bool f32, std::int64_t off) {
  if (f32) return static_cast<Compute<T>>(static_cast<const float*>(base)[off]);
  return to_compute(static_cast<const T*>(base)[off]);
}

// P pairs starting at pair `first`: cos / sin of the position (NaN for a cached position out of
// range), times the attention factor, sin negated for the backward.
template <class T, int P>
__device__ __forceinline__ void pair_trig(const RopeParams& p, std::int64_t position, std::int64_t first,
                                          Compute<T> (&c)[P], Compute<T> (&s)[P]) {
  using C = Compute<T>;
  if (p.cos != nullptr) {
    const bool bad = position < 0 || position >= p.max_pos;
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const std::int64_t i = first + k;
      if (bad) {
        c[k] = s[k] = C(NAN);
      } else {
        c[k] = load_cache<T>(p.cos, p.cache_f32, position * p.cache_stride[0][0] + i * p.cache_stride[0][1]);
        s[k] = load_cache<T>(p.sin, p.cache_f32, position * p.cache_stride[1][0] + i * p.cache_stride[1][1]);
      }
    }
  } else {
    const C pos = static_cast<C>(position);
    const C scale = static_cast<C>(p.attention_factor);
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const C angle = pos * static_cast<C>(p.inv_freq[first + k]);
      sincos_of(angle, &s[k], &c[k]);
      if (p.attention_factor != 1.0) {
        c[k] *= scale;
        s[k] *= scale;
      }
    }
  }
  if (p.inverse) {
#pragma unroll
    for (int k = 0; k < P; ++k) s[k] = -s[k];
  }
}

// One head vector of x (x2): its input / output rows and head-dim strides.
template <class T>
struct RowRef {
  const T* in;
  T* out;
  std::int64_t sdi, sdo;
  bool in_place;
};
template <class T>
__device__ __forceinline__ RowRef<T> row_of(const RopeParams& p, std::int64_t b, std::int64_t sq, std::int64_t h) {
  const int k = h < p.t[0].heads ? 0 : 1;
  const RopeTensor& t = p.t[k];
  const std::int64_t hh = h - (k ? p.t[0].heads : 0);
  return {static_cast<const T*>(p.in[k]) + b * t.in_stride[0] + sq * t.in_stride[1] + hh * t.in_stride[2],
          static_cast<T*>(p.out[k]) + b * t.out_stride[0] + sq * t.out_stride[1] + hh * t.out_stride[2], t.in_stride[3],
          t.out_stride[3], p.out[k] == p.in[k]};
}

// Pass-through elements e .. e + V - 1 (clipped to D), skipped in place.
template <class T, int V, bool kVec>
__device__ __forceinline__ void copy_unit(const RowRef<T>& r, std::int64_t e, std::int64_t d) {
  if (r.in_place) return;
  if (kVec || e + V <= d) {
    Compute<T> v[V];
    load_unit<T, V, kVec>(r.in + e * r.sdi, r.sdi, v);
    store_unit<T, V, kVec>(r.out + e * r.sdo, r.sdo, v);
  } else {
    for (std::int64_t j = e; j < d; ++j) r.out[j * r.sdo] = r.in[j * r.sdi];
  }
}

// Rotation unit u: neox reads V elements of each half (a, b), interleaved V elements (a). Kept
// in the storage type until the rotation (half the registers of f32 for 16-bit inputs).
template <class T, int V, bool kVec>
__device__ __forceinline__ baracuda::kernels::Vec<T, V> load_raw(const T* p, std::int64_t sd) {
  if constexpr (kVec) {
    return baracuda::kernels::load_vec<T, V>(p);
  } else {
    baracuda::kernels::Vec<T, V> r;
#pragma unroll
    for (int k = 0; k < V; ++k) r.v[k] = p[k * sd];
    return r;
  }
}
template <class T, int V, bool kVec, bool kInterleaved>
__device__ __forceinline__ void load_rot(const RowRef<T>& r, std::int64_t u, std::int64_t half,
                                         baracuda::kernels::Vec<T, V>& a, baracuda::kernels::Vec<T, V>& b) {
  a = load_raw<T, V, kVec>(r.in + u * V * r.sdi, r.sdi);
  if constexpr (!kInterleaved) b = load_raw<T, V, kVec>(r.in + (half + u * V) * r.sdi, r.sdi);
}
template <class T, int V, bool kVec, bool kInterleaved, int P>
__device__ __forceinline__ void store_rot(const RowRef<T>& r, std::int64_t u, std::int64_t half,
                                          const baracuda::kernels::Vec<T, V>& a, const baracuda::kernels::Vec<T, V>& b,
                                          const Compute<T> (&cs)[P], const Compute<T> (&sn)[P]) {
  Compute<T> ra[V], rb[V];
  if constexpr (kInterleaved) {
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const Compute<T> x0 = to_compute(a.v[2 * q]), x1 = to_compute(a.v[2 * q + 1]);
      ra[2 * q] = x0 * cs[q] - x1 * sn[q];
      ra[2 * q + 1] = x1 * cs[q] + x0 * sn[q];
    }
    store_unit<T, V, kVec>(r.out + u * V * r.sdo, r.sdo, ra);
  } else {
#pragma unroll
    for (int q = 0; q < V; ++q) {
      const Compute<T> x0 = to_compute(a.v[q]), x1 = to_compute(b.v[q]);
      ra[q] = x0 * cs[q] - x1 * sn[q];
      rb[q] = x1 * cs[q] + x0 * sn[q];
    }
    store_unit<T, V, kVec>(r.out + u * V * r.sdo, r.sdo, ra);
    store_unit<T, V, kVec>(r.out + (half + u * V) * r.sdo, r.sdo, rb);
  }
}

template <class T, int V, bool kVec, bool kInterleaved>
__global__ void __launch_bounds__(kRopeMaxThreads) rope_kernel(const __grid_constant__ RopeParams p) {
  using C = Compute<T>;
  constexpr int P = kInterleaved ? V / 2 : V;  // pairs per rotation unit
  const std::int64_t positions = p.batch * p.seq;
  const std::int64_t units = p.rot_units + p.pass_units;
  const std::int64_t heads = p.t[0].heads + (p.num_tensors > 1 ? p.t[1].heads : 0);
  const std::int64_t half = p.rotary_dim / 2;
  for (std::int64_t ps = blockIdx.x; ps < positions; ps += gridDim.x) {
    const std::int64_t b = ps / p.seq, sq = ps - b * p.seq;
    std::int64_t position;
    if (p.position_ids != nullptr) {
      const std::int64_t off = b * p.pos_stride[0] + sq * p.pos_stride[1];
      position = p.pos_i64 ? static_cast<const std::int64_t*>(p.position_ids)[off]
                           : static_cast<std::int64_t>(static_cast<const std::int32_t*>(p.position_ids)[off]);
    } else {
      position = p.position_offset + sq;
    }
    for (std::int64_t u = threadIdx.x; u < units; u += blockDim.x) {
      const bool rot = u < p.rot_units;
      C cs[P], sn[P];
      if (rot) pair_trig<T, P>(p, position, u * P, cs, sn);
      // two heads per step: both heads' loads are issued before either's stores
      for (std::int64_t h = threadIdx.y; h < heads; h += 2 * static_cast<std::int64_t>(blockDim.y)) {
        const bool two = h + blockDim.y < heads;
        const RowRef<T> r0 = row_of<T>(p, b, sq, h);
        const RowRef<T> r1 = two ? row_of<T>(p, b, sq, h + blockDim.y) : r0;
        if (!rot) {  // pass-through elements R + (u - rot_units) * V ..: copied unless in place
          const std::int64_t e = p.rotary_dim + (u - p.rot_units) * V;
          copy_unit<T, V, kVec>(r0, e, p.head_dim);
          if (two) copy_unit<T, V, kVec>(r1, e, p.head_dim);
          continue;
        }
        baracuda::kernels::Vec<T, V> a0, b0, a1, b1;
        load_rot<T, V, kVec, kInterleaved>(r0, u, half, a0, b0);
        if (two) load_rot<T, V, kVec, kInterleaved>(r1, u, half, a1, b1);
        store_rot<T, V, kVec, kInterleaved, P>(r0, u, half, a0, b0, cs, sn);
        if (two) store_rot<T, V, kVec, kInterleaved, P>(r1, u, half, a1, b1, cs, sn);
      }
    }
  }
}

template <class T, int V, bool kVec, bool kInterleaved>
Status launch_one(const RopeParams& p, cudaStream_t s) {
  const dim3 block(static_cast<unsigned>(p.block_x), static_cast<unsigned>(p.block_y));
  rope_kernel<T, V, kVec, kInterleaved><<<static_cast<unsigned>(p.grid), block, 0, s>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status(Code::kCudaError, std::string("rope launch: ") + cudaGetErrorString(e), StatusSource::kCuda, e);
  return Status::ok();
}

// vec16: V = 16 / sizeof(T); strided: V = 1 (neox) or 2 (interleaved; for f64 that equals the
// vector width, hence the separate flag).
template <class T>
Status launch_rope_dtype(const RopeParams& p, cudaStream_t s) {
  if (p.grid == 0) return Status::ok();
  constexpr int kV = static_cast<int>(16 / sizeof(T));
  if (p.vec16) return p.interleaved ? launch_one<T, kV, true, true>(p, s) : launch_one<T, kV, true, false>(p, s);
  return p.interleaved ? launch_one<T, 2, false, true>(p, s) : launch_one<T, 1, false, false>(p, s);
}

}  // namespace baracuda::rope::kernels
