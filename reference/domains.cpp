#include "baracuda/reference/domains.hpp"

namespace baracuda::reference {

std::pair<double, double> unary_input_range(UnaryKind k) {
  switch (k) {
    case UnaryKind::kSqrt: case UnaryKind::kRsqrt: case UnaryKind::kLog: case UnaryKind::kLog2: case UnaryKind::kLog10:
      return {0.01, 8};
    case UnaryKind::kLog1p: return {-0.99, 8};
    case UnaryKind::kAsin: case UnaryKind::kAcos: case UnaryKind::kAtanh: case UnaryKind::kErfinv: return {-0.999, 0.999};
    case UnaryKind::kAcosh: return {1.001, 8};
    case UnaryKind::kLogit: return {0.001, 0.999};
    case UnaryKind::kTan: return {-1.5, 1.5};
    default: return {-6, 6};
  }
}

}  // namespace baracuda::reference
