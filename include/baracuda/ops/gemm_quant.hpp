// Quantized GEMMs on cuBLASLt: IntGemmPlan (int8 x int8 -> int32, or scaled to int8 / f16 /
// bf16 / f32) and Fp8GemmPlan (e4m3 / e5m2 inputs, f32 accumulation, bf16 / f16 / f32 / e4m3
// output). Shapes as GemmPlan: A is M x K, B is K x N, D is M x N (docs/gemm.md, "Quantized").
//
// Layouts. The tensor-core paths of cuBLASLt for int8 (IMMA) and fp8 take only the "TN" form:
// in cuBLASLt's column-major frame A transposed and B not, i.e. both operands K-contiguous.
// In our frame that is A row-major (M x K, ld >= K) and B column-major (K x N, ld >= K: the
// N x K row-major buffer of a weight, as torch.nn.Linear holds it); any other order is refused
// at select with a message naming the field. D may be row- or column-major with any ld.
//
// IntGemmPlan. cuBLASLt computes the exact int32 product (CUBLAS_COMPUTE_32I, int32 scale
// type, no overflow for K <= 2^17: |a b| <= 2^14 per term). With d.dtype = i32 it writes D
// directly (no scales, no bias). Otherwise it writes the int32 product to the workspace and
// our epilogue kernel (src/gemm/kernels/int_epilogue.cuh) stores
//     v = f32(acc) * sa * sb + bias[j]       (each operation in f32, round to nearest even,
//                                             no fused multiply-add, in this order)
//     sa = scale_a[0] (kPerTensor) or scale_a[i] (kPerRow, [M]); 1 when kNone
//     sb = scale_b[0] (kPerTensor) or scale_b[j] (kPerColumn, [N]); 1 when kNone
//     d  = v rounded to nearest even into d.dtype; i8 saturates to [-128, 127] (NaN -> 0).
// Scales and bias are f32 device vectors. cuBLASLt's int8 rules (checked at select):
// K % 4 == 0; a.ld and b.ld multiples of 4; a and b 4-byte aligned; the dimension that is
// cuBLASLt's "m" a multiple of 4: N for row-major i32 D, M for column-major i32 D, and for
// the scaled outputs (whose int32 intermediate we lay out) either M or N; i32 D: ld % 4 == 0.
//
// Fp8GemmPlan (sm_89+). D = scale_d * (sa * sb * (A B) + bias[j]) with A, B decoded exactly,
// products summed in f32 by the tensor cores (fast_accum = false: partial sums promoted to
// f32 by cuBLASLt; true: CUBLASLT_MATMUL_DESC_FAST_ACCUM). Scale modes:
//   kPerTensor  one f32 (device pointer) per operand (CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F);
//   kBlock1x128 (A only) one f32 per row and 128-element block of K: [ceil(K/128)] x M,
//               element (kb, i) at kb * M + i (M-contiguous, as torch's BlockWise1x128);
//   kBlock128x128 (B only) one f32 per 128 x 128 block: element (nb, kb) at nb * ldk + kb,
//               ldk = round_up(ceil(K/128), 4) (as torch's BlockWise128x128 of the N x K
//               weight). Block scaling is cuBLASLt's VEC128_32F / BLK128x128_32F, which
//               cuBLAS (12.9+) implements on Hopper (sm_90) only: select refuses it on other
//               devices; both operands block-scaled (A 1x128, B 128x128) or neither; it
//               needs K % 128 == 0 and M % 4 == 0.
// Inputs: (e4m3, e4m3), (e4m3, e5m2), (e5m2, e4m3); e5m2 x e5m2 is refused (cuBLASLt has no
// such kernel). Outputs bf16, f16, f32, or e4m3 with a D scale (saturating to +-448, as
// cuBLASLt stores fp8). Bias [N]: bf16 for bf16 / f32 / e4m3 outputs, f16 for f16 output
// (cuBLASLt's rule), row-major D only (cuBLASLt's bias runs along its
// frame's rows). amax (e4m3 output only): one f32, set to
// max |sa sb (A B) + bias| (before scale_d), as CUBLASLT_MATMUL_DESC_AMAX_D_POINTER.
// fp8 alignment rules (checked at select): K % 16 == 0, cuBLASLt's "m" % 16 == 0 (N for
// row-major D, M for column-major D), every ld a multiple of 16 bytes, every matrix 16-byte
// aligned.
//
// select() queries cuBLASLt's heuristic once and caches the algorithm; workspace_size() is
// cuBLASLt's workspace (+ the int32 intermediate for IntGemmPlan's scaled outputs); run()
// allocates nothing and never synchronizes (graph-capturable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class QuantScale : std::uint8_t { kNone, kPerTensor, kPerRow, kPerColumn, kBlock1x128, kBlock128x128 };
const char* quant_scale_name(QuantScale s) noexcept;

struct IntGemmDescriptor {
  MatrixLayout a;  // M x K, i8, row-major
  MatrixLayout b;  // K x N, i8, column-major
  MatrixLayout d;  // M x N: i32 (exact), or i8 / f16 / bf16 / f32 (scaled)
  QuantScale scale_a = QuantScale::kNone;  // kNone, kPerTensor or kPerRow
  QuantScale scale_b = QuantScale::kNone;  // kNone, kPerTensor or kPerColumn
  bool bias = false;                       // f32 [N] added after the scales

  std::int64_t m() const noexcept { return d.rows; }
  std::int64_t n() const noexcept { return d.cols; }
  std::int64_t k() const noexcept { return a.cols; }
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const IntGemmDescriptor&, const IntGemmDescriptor&) = default;
};

struct IntGemmArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  const float* scale_a = nullptr;  // device: 1 or M values
  const float* scale_b = nullptr;  // device: 1 or N values
  const float* bias = nullptr;     // device: N values
};
using IntGemmPlan = Plan<IntGemmDescriptor, IntGemmArgs>;

struct Fp8GemmDescriptor {
  MatrixLayout a;  // M x K, e4m3 or e5m2, row-major
  MatrixLayout b;  // K x N, e4m3 or e5m2, column-major
  MatrixLayout d;  // M x N: bf16, f16, f32 or e4m3
  QuantScale scale_a = QuantScale::kPerTensor;  // kPerTensor or kBlock1x128
  QuantScale scale_b = QuantScale::kPerTensor;  // kPerTensor or kBlock128x128
  bool bias = false;        // [N], bf16 (f16 for f16 D)
  bool amax = false;        // e4m3 D only: f32 max |D| before scale_d
  bool fast_accum = false;  // cuBLASLt's FP8 fast accumulation (no periodic promotion)

  std::int64_t m() const noexcept { return d.rows; }
  std::int64_t n() const noexcept { return d.cols; }
  std::int64_t k() const noexcept { return a.cols; }
  DType bias_dtype() const noexcept { return d.dtype == DType::kF16 ? DType::kF16 : DType::kBF16; }
  std::size_t hash() const noexcept;
  std::string to_string() const;
  friend bool operator==(const Fp8GemmDescriptor&, const Fp8GemmDescriptor&) = default;
};

struct Fp8GemmArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  const float* scale_a = nullptr;  // device: 1 value, or the 1x128 block scales
  const float* scale_b = nullptr;  // device: 1 value, or the 128x128 block scales
  const float* scale_d = nullptr;  // device: 1 value; e4m3 D only (required there)
  const void* bias = nullptr;      // device: N values of bias_dtype()
  float* amax = nullptr;           // device: 1 value; when amax
};
using Fp8GemmPlan = Plan<Fp8GemmDescriptor, Fp8GemmArgs>;

// Number of f32 block scales of each operand (what the args' scale pointers must hold).
std::int64_t fp8_scale_count_a(const Fp8GemmDescriptor& d) noexcept;
std::int64_t fp8_scale_count_b(const Fp8GemmDescriptor& d) noexcept;

extern template class Plan<IntGemmDescriptor, IntGemmArgs>;
extern template class Plan<Fp8GemmDescriptor, Fp8GemmArgs>;

}  // namespace baracuda
