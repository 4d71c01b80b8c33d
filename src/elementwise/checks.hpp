// Descriptor checks shared by the elementwise plans.
#pragma once

#include <string>

#include "baracuda/core/tensor.hpp"

namespace baracuda::elementwise {

// dtype in {f64, f32, f16, bf16}
Status check_math_dtype(const TensorLayout& t, const char* field, const char* family);
Status check_same_dtype(const TensorLayout& t, const char* field, const TensorLayout& ref, const char* ref_field);
Status check_same_shape(const TensorLayout& t, const char* field, const TensorLayout& ref, const char* ref_field);
// The dtype classes a kind accepts (as in UnaryKindInfo / BinaryKindInfo): whether t is in
// one of them, and their list for messages ("f64, f32, f16, bf16, i64, i32, i16, i8, u8").
bool dtype_in_classes(DType t, bool floating, bool integer, bool boolean);
std::string dtype_class_list(bool floating, bool integer, bool boolean);
// The dtypes a kind takes, as its UnaryKindInfo / BinaryKindInfo says: `in` must be in one
// of the classes; `out` must be in's dtype, or bool for a bool-valued kind. The messages
// name the field, the dtype and "<family> kind <name>".
struct KindDtypes {
  const char* family;  // "unary", "binary"
  const char* name;
  bool floating, integer, boolean, to_bool;
};
Status check_dtypes_of_kind(const KindDtypes& k, const TensorLayout& in, const char* in_field, const TensorLayout& out,
                            const char* out_field);
// A scalar parameter as messages and to_string() print it (%.17g: round-trips a double).
std::string number_text(double v);
// `t` broadcast to `target`'s shape; the message names `field`.
TensorLayout broadcast_or_self(const TensorLayout& t, const TensorLayout& target);

}  // namespace baracuda::elementwise
