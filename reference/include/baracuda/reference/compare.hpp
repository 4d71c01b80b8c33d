// The tolerance policy: how a device result is judged against the oracle.
//
// An element passes when
//   |got - exact| <= k * |naive - exact| + rtol(dtype) * |exact| + atol(dtype) + 4 * eps(compute) * scale
// with k = Result::naive_factor (4 unless the family's reference sets it); with
// Result::naive_tensor_max, |naive - exact| is the largest over the tensor (flash-attention's
// rule, used by SDPA with k = 3).
// exact: the double oracle; naive: the same formula in the kernel's compute precision
// rounded to the output dtype (scales the bound where the math itself cancels); rtol: one
// unit in the last place of f16/bf16 outputs, 8 ulp for f32/f64 (library transcendentals
// are within a few ulp); atol: the dtype's smallest subnormal; scale: sum of |terms| for
// reductions (0 for maps). NaN passes only where exact is NaN, infinities must match, and
// a zero-trust rule fails outputs that are mostly zero where the oracle is not.
// Exact mode (casts, data movement) requires equal values (NaN matches NaN).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/reference/elementwise.hpp"
#include "baracuda/reference/host_tensor.hpp"

namespace baracuda::reference {

struct Tolerance {
  double rtol;
  double atol;
  double eps_compute;
};
Tolerance tolerance_for(DType out);

struct Comparison {
  bool ok = true;
  std::int64_t mismatches = 0;
  std::int64_t checked = 0;
  std::string detail;  // the first mismatches, or the zero-trust verdict
};
Comparison compare(const HostTensor& got, const Result& want, bool exact_only);

// compare()'s rule one element at a time, for oracles computed in pieces (outputs too large
// for one Result: the > 2^31-element GPU tests, tests/gpu/test_huge_gpu.cpp). add() judges an
// element exactly as compare() does; `naive_err` is the element's |naive - exact| unless the
// caller passes a tensor's largest (Result::naive_tensor_max). One judge a thread, combined
// with merge() (the first mismatches by index kept); finish() gives compare()'s verdict, the
// zero-trust rule included. compare() itself is a loop over add().
class ElementJudge {
 public:
  explicit ElementJudge(DType out, double naive_factor = 4, bool exact_only = false);
  // Inline: the > 2^31-element tests judge billions of elements a run.
  bool add(std::int64_t index, double got, double exact, double naive, double scale, double naive_err) {
    ++checked_;
    got_zero_ += got == 0.0;
    want_zero_ += exact == 0.0 || std::fabs(exact) < tol_.atol;  // values the output dtype cannot hold (they flush to 0)
    bool ok;
    if (got == exact) {
      ok = true;  // equal values (matching zeros and infinities included)
    } else if (std::isfinite(got) && std::isfinite(exact)) {
      if (std::isnan(scale)) scale = 0.0;  // 0 * inf in a scale formula (x = -inf) carries no error budget
      const double bound = k_ * naive_err + tol_.rtol * std::fabs(exact) + tol_.atol + 4 * tol_.eps_compute * scale;
      ok = !exact_only_ && std::fabs(got - exact) <= bound;
    } else {
      ok = non_finite_ok(got, exact, naive);
    }
    if (!ok) mismatch(index, got, exact, naive);
    return ok;
  }
  bool add(std::int64_t index, double got, double exact, double naive, double scale) {
    return add(index, got, exact, naive, scale, std::fabs(naive - exact));
  }
  void merge(const ElementJudge& other);
  std::int64_t checked() const { return checked_; }
  std::int64_t mismatches() const { return mismatches_; }
  Comparison finish() const;

 private:
  bool non_finite_ok(double got, double exact, double naive) const;  // got != exact, one of them NaN or inf
  void mismatch(std::int64_t index, double got, double exact, double naive);
  void keep_first(std::int64_t index, std::string text);  // among the kFirst lowest indices
  DType out_;
  Tolerance tol_;
  double k_;
  bool exact_only_;
  std::int64_t checked_ = 0, mismatches_ = 0, got_zero_ = 0, want_zero_ = 0;
  std::vector<std::pair<std::int64_t, std::string>> first_;  // the lowest indices, up to kFirst
  static constexpr std::size_t kFirst = 5;
};

// v with 17 significant digits (round-trips a double), for mismatch messages.
std::string exact_text(double v);
// The verdict of a comparison that counted its mismatches (first ones in `first`) and the
// zeros of the result and the oracle over n elements: fails on any mismatch, then on the
// zero-trust rule (shared by every family's comparison).
void finish_comparison(Comparison& c, std::int64_t n, std::int64_t got_zero, std::int64_t want_zero,
                       const std::string& first);

}  // namespace baracuda::reference
