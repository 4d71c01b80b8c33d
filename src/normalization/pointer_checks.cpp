// Run-time pointer checks shared by the normalization plans (pointer_checks.hpp).
#include "normalization/pointer_checks.hpp"

#include "elementwise/map_family.hpp"

#include <cstdint>
#include <string>

namespace baracuda::norm {
Status check_operand_pointers(const std::vector<PtrOperand>& ops) {
  for (const auto& o : ops) {
    if (o.layout.numel() == 0) continue;
    if (o.ptr == nullptr) return Status(Code::kInvalidArgument, std::string("args.") + o.field + " is null");
    if (reinterpret_cast<std::uintptr_t>(o.ptr) % static_cast<std::uintptr_t>(o.layout.alignment) != 0)
      return Status(Code::kMisaligned, std::string("args.") + o.field + " = " + elementwise::hex_ptr(o.ptr) + " is not aligned to " +
                                           o.field + ".alignment = " + std::to_string(o.layout.alignment) + " bytes");
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].output || ops[i].layout.numel() == 0) continue;
    for (std::size_t j = 0; j < ops.size(); ++j) {
      if (j == i || ops[j].layout.numel() == 0) continue;
      if (ops[j].output && j < i) continue;  // each pair of outputs once
      if (!byte_ranges_overlap(ops[i].ptr, ops[i].layout, ops[j].ptr, ops[j].layout)) continue;
      if (ops[j].output)
        return Status(Code::kInvalidArgument, std::string("args.") + ops[i].field + " and args." + ops[j].field +
                                                  " overlap (outputs must be distinct)");
      if (!(ops[i].in_place_ok && ops[j].in_place_ok && ops[i].ptr == ops[j].ptr && ops[i].layout == ops[j].layout))
        return Status(Code::kInvalidArgument,
                      std::string("args.") + ops[i].field + " overlaps args." + ops[j].field +
                          (ops[i].in_place_ok && ops[j].in_place_ok
                               ? " without the identical layout (unsafe aliasing; in-place needs the same pointer, "
                                 "dtype and strides)"
                               : " (unsafe aliasing: per-channel arrays and statistics share memory with nothing)"));
    }
  }
  return Status::ok();
}

Status check_unused_pointer(const void* p, const TensorLayout& t, const char* field) {
  if (p != nullptr && t.rank == 0)
    return Status(Code::kInvalidArgument, std::string("args.") + field + " is set but the descriptor has no " + field);
  return Status::ok();
}

}  // namespace baracuda::norm
