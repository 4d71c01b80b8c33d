// Special functions the C++ library lacks (digamma, trigamma, erfinv), evaluated in the
// type C: in double they are the oracle's truth (accurate to a few 1e-16), in float they
// are the same algorithm a plain float kernel would run.
#include <cmath>
#include <limits>

#include "baracuda/reference/elementwise.hpp"

namespace baracuda::reference {

namespace {

constexpr double kPi = 3.14159265358979323846;
// Below this the recurrences step x up by 1 (the asymptotic series' next term is < 1e-17 here).
constexpr double kAsymptoticFrom = 12.0;

// sum_k (-1)^(k+1) c_k r^k for k = 1..7, nested from the last term (Horner).
template <class C>
C alternating_series(C r, const double (&c)[7]) {
  C acc = C(c[6]);
  for (int i = 5; i >= 0; --i) acc = C(c[i]) - r * acc;
  return r * acc;
}

// psi(x) ~ ln x - 1/(2x) - sum_k B_2k / (2k x^2k), x >= kAsymptoticFrom.
template <class C>
C digamma_asymptotic(C x) {
  // |B_2k| / 2k for k = 1..7 (the Bernoulli numbers alternate in sign)
  static constexpr double kTerms[7] = {1.0 / 12, 1.0 / 120, 1.0 / 252, 1.0 / 240, 1.0 / 132, 691.0 / 32760, 1.0 / 12};
  return std::log(x) - C(0.5) / x - alternating_series(C(1) / (x * x), kTerms);
}

// psi'(x) ~ 1/x + 1/(2x^2) + sum_k B_2k / x^(2k+1), x >= kAsymptoticFrom.
template <class C>
C trigamma_asymptotic(C x) {
  // |B_2k| for k = 1..7
  static constexpr double kTerms[7] = {1.0 / 6, 1.0 / 30, 1.0 / 42, 1.0 / 30, 5.0 / 66, 691.0 / 2730, 7.0 / 6};
  return (C(1) + C(0.5) / x + alternating_series(C(1) / (x * x), kTerms)) / x;
}

// tan(pi x) and sin(pi x) up to sign, from r = x - nearest integer (exact, |r| <= 1/2): the
// rounding of pi * r is then relative to r, which keeps the digits near the poles.
template <class C>
C tan_pi(C x) {
  return std::tan(C(kPi) * (x - std::nearbyint(x)));
}
template <class C>
C sin_pi(C x) {
  return std::sin(C(kPi) * (x - std::nearbyint(x)));  // |sin(pi x)|, signed by the parity of x
}

// Initial guess for erfinv(a), 0 < a < 1: a short Maclaurin series near 0, else Winitzki's
// closed form (relative error ~2e-3); the Halley steps in erfinv do the rest.
template <class C>
C erfinv_initial(C a) {
  if (a < C(0.1)) {
    // sqrt(pi)/2 (a + pi/12 a^3 + 7 pi^2/480 a^5)
    const C a2 = a * a;
    return C(0.88622692545275801365) * a * (C(1) + a2 * (C(kPi / 12) + a2 * C(7 * kPi * kPi / 480)));
  }
  const C kA = C(0.147);
  const C log_term = std::log((C(1) - a) * (C(1) + a));  // ln(1 - a^2), 1 - a exact near 1
  const C t = C(2 / (kPi * 0.147)) + log_term / C(2);
  return std::sqrt(std::sqrt(t * t - log_term / kA) - t);
}

}  // namespace

template <class C>
C digamma(C x) {
  if (std::isnan(x)) return x;
  if (x == C(0)) return std::copysign(std::numeric_limits<C>::infinity(), -x);  // torch: -inf at +0, +inf at -0
  if (x < C(0)) {
    if (x == std::trunc(x)) return std::numeric_limits<C>::quiet_NaN();  // poles, and -inf
    // Reflection psi(x) = psi(1 - x) - pi / tan(pi x)
    return digamma(C(1) - x) - C(kPi) / tan_pi(x);
  }
  if (std::isinf(x)) return x;
  C shift = 0;  // psi(x) = psi(x + 1) - 1/x
  for (; x < C(kAsymptoticFrom); x += C(1)) shift += C(1) / x;
  return digamma_asymptotic(x) - shift;
}

template <class C>
C trigamma(C x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return x > C(0) ? C(0) : std::numeric_limits<C>::quiet_NaN();
  if (x <= C(0)) {
    if (x == std::trunc(x)) return std::numeric_limits<C>::infinity();  // poles 0, -1, -2, ...
    // Reflection psi'(x) + psi'(1 - x) = pi^2 / sin^2(pi x)
    const C s = sin_pi(x);
    return C(kPi * kPi) / (s * s) - trigamma(C(1) - x);
  }
  C shift = 0;  // psi'(x) = psi'(x + 1) + 1/x^2
  for (; x < C(kAsymptoticFrom); x += C(1)) shift += C(1) / (x * x);
  return trigamma_asymptotic(x) + shift;
}

template <class C>
C erfinv(C x) {
  const C a = std::fabs(x);
  if (std::isnan(x) || a > C(1)) return std::numeric_limits<C>::quiet_NaN();
  if (a == C(1)) return std::copysign(std::numeric_limits<C>::infinity(), x);
  if (a == C(0)) return x;  // keeps -0
  C y = erfinv_initial(a);
  for (int step = 0; step < 3; ++step) {
    // Residual of erf(y) = a; above 0.5 written as (1 - a) - erfc(y), where 1 - a is exact,
    // so the tail keeps its digits.
    const C f = a <= C(0.5) ? std::erf(y) - a : (C(1) - a) - std::erfc(y);
    const C u = f / (C(1.12837916709551257390) * std::exp(-y * y));  // f / erf'(y), erf' = 2/sqrt(pi) e^-y^2
    y -= u / (C(1) + y * u);  // Halley's step: erf''(y) = -2 y erf'(y)
  }
  return std::copysign(y, x);
}

template float digamma<float>(float);
template double digamma<double>(double);
template float trigamma<float>(float);
template double trigamma<double>(double);
template float erfinv<float>(float);
template double erfinv<double>(double);

}  // namespace baracuda::reference
