#include "elementwise/checks.hpp"

#include <cstdio>

namespace baracuda::elementwise {

Status check_math_dtype(const TensorLayout& t, const char* field, const char* family) {
  switch (t.dtype) {
    case DType::kF64:
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: return Status::ok();
    default:
      return Status(Code::kInvalidArgument, std::string(field) + ".dtype = " + std::string(dtype_name(t.dtype)) +
                                                " is not supported by " + family + " (f64, f32, f16, bf16)");
  }
}

Status check_same_dtype(const TensorLayout& t, const char* field, const TensorLayout& ref, const char* ref_field) {
  if (t.dtype == ref.dtype) return Status::ok();
  return Status(Code::kInvalidArgument, std::string(field) + ".dtype = " + std::string(dtype_name(t.dtype)) +
                                            " differs from " + ref_field + ".dtype = " + std::string(dtype_name(ref.dtype)) +
                                            " (mixed dtypes are refused; cast first)");
}

Status check_same_shape(const TensorLayout& t, const char* field, const TensorLayout& ref, const char* ref_field) {
  bool same = t.rank == ref.rank;
  for (int i = 0; same && i < t.rank; ++i) same = t.shape[i] == ref.shape[i];
  if (same) return Status::ok();
  return Status(Code::kInvalidArgument, std::string(field) + " = " + t.to_string() + " does not have the shape of " +
                                            ref_field + " = " + ref.to_string());
}

bool dtype_in_classes(DType t, bool floating, bool integer, bool boolean) {
  switch (t) {
    case DType::kF64: case DType::kF32: case DType::kF16: case DType::kBF16: return floating;
    case DType::kI64: case DType::kI32: case DType::kI16: case DType::kI8: case DType::kU8: return integer;
    case DType::kBool: return boolean;
    default: return false;
  }
}

std::string dtype_class_list(bool floating, bool integer, bool boolean) {
  std::string s;
  auto add = [&](const char* t) { s += s.empty() ? t : std::string(", ") + t; };
  if (floating) add("f64, f32, f16, bf16");
  if (integer) add("i64, i32, i16, i8, u8");
  if (boolean) add("bool");
  return s;
}

Status check_dtypes_of_kind(const KindDtypes& k, const TensorLayout& in, const char* in_field, const TensorLayout& out,
                            const char* out_field) {
  const std::string kind = std::string(k.family) + " kind " + k.name;
  const DType t = in.dtype;
  if (!dtype_in_classes(t, k.floating, k.integer, k.boolean))
    return Status(Code::kInvalidArgument, std::string(in_field) + ".dtype = " + std::string(dtype_name(t)) +
                                              " is not supported by " + kind + " (" +
                                              dtype_class_list(k.floating, k.integer, k.boolean) + ")");
  const DType want = k.to_bool ? DType::kBool : t;
  if (out.dtype != want)
    return Status(Code::kInvalidArgument, std::string(out_field) + ".dtype = " + std::string(dtype_name(out.dtype)) +
                                              " must be " + std::string(dtype_name(want)) + " for " + kind);
  return Status::ok();
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

TensorLayout broadcast_or_self(const TensorLayout& t, const TensorLayout& target) {
  auto b = broadcast_to(t, target.rank, target.shape, "operand");
  return b ? b.value() : t;
}

}  // namespace baracuda::elementwise
