// Run-time pointer checks of the normalization plans (LayerNorm / RMSNorm and the channel
// norms), also used by the attention plans: null, declared alignment and aliasing, before any
// launch.
#pragma once

#include <vector>

#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda::norm {

struct PtrOperand {
  const void* ptr;
  TensorLayout layout;
  const char* field;  // named in the errors as args.<field>
  bool output;
  // An output may be the same tensor as an input (same pointer, identical layout) only when
  // both allow it; per-channel arrays and statistics that other blocks read or write at other
  // times set false and must share memory with nothing.
  bool in_place_ok = true;
};

// Empty operands are skipped; outputs never overlap each other; any other overlap of an
// output with an input is refused unless in place as above.
Status check_operand_pointers(const std::vector<PtrOperand>& ops);

// An optional operand the descriptor leaves out (rank 0) must not be passed: a set pointer
// would be ignored silently ("args.<field> is set but the descriptor has no <field>").
Status check_unused_pointer(const void* p, const TensorLayout& t, const char* field);

}  // namespace baracuda::norm
