// baracuda::reference for PackPlan / UnpackPlan (rules in baracuda/ops/pack.hpp): element
// by element through the layouts' element offsets (a packed element at offset e sits at bit
// e * bits of the buffer).
#pragma once

#include "baracuda/ops/pack.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

// Packed code (low `bits` bits) of value v for a packed dtype, saturated: s4 [-8, 7],
// u4 [0, 15], bit v != 0.
unsigned pack_saturate(DType packed, std::int64_t v);
// Value of a packed code (s4 sign-extended).
std::int64_t unpack_code(DType packed, unsigned code);

// y's storage as PackPlan writes it: every byte of y's span, padding elements 0.
Expected<HostTensor> pack(const PackDescriptor& d, const HostTensor& x);
Expected<HostTensor> unpack(const UnpackDescriptor& d, const HostTensor& x);

}  // namespace baracuda::reference
