// baracuda::reference for CastPlan: the conversion rules of docs/semantics.md ("Cast"),
// element by element on the host, bit-exact (i64 values beyond 2^53 included).
#pragma once

#include <cstdint>

#include "baracuda/ops/elementwise.hpp"
#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

// float -> integer, first step: truncation toward zero; NaN -> 0; beyond the int64 range
// (+-inf included) saturated to INT64_MIN / INT64_MAX. Then i32 saturates to its range,
// i16, i8 and u8 wrap (cast_wrap_int).
std::int64_t cast_float_to_int64(double v);
// integer -> integer dtype t (i64, i32, i16, i8, u8; bool: v != 0): two's complement wrap.
std::int64_t cast_wrap_int(DType t, std::int64_t v);
// v rounded to `bits` significant bits, nearest even, in one step (through an exact
// 64-bit-mantissa long double, not through f32 or f64); the result is a float exactly.
float cast_int_to_float_rounded(std::int64_t v, int bits);

// Converts element `src_off` of `src` (dtype `from`) into element `dst_off` of `dst`.
void cast_element(DType from, const void* src, std::int64_t src_off, DType to, void* dst, std::int64_t dst_off,
                  Fp8Overflow mode);

// y (d.y's layout, storage as the device writes it) = cast(x) with x broadcast into y.
// kInvalidArgument for a dtype cast does not take.
Expected<HostTensor> cast_exact(const CastDescriptor& d, const HostTensor& x);

}  // namespace baracuda::reference
