// The GEMM oracle: double products and sums over the stored inputs, the epilogue in double,
// and a per-element error bound from K and the dtypes' unit roundoff (see gemm.hpp).
#include "baracuda/reference/gemm.hpp"

#include "gemm_common.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <thread>

namespace baracuda::reference {

using namespace gemm_detail;

namespace {

double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double gelu_erf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double silu(double x) { return x / (1 + std::exp(-x)); }

// The activation backward's factor act'(x) and the bound of its f32 evaluation.
//  gelu_tanh: t = tanh(k (x + c x^3)) may come from the hardware tanh.approx.f32 (absolute
//    error < 2^-11 since |t| <= 1); d act' / dt = 0.5 - x t k (1 + 3 c x^2), so the error is
//    2^-11 (0.5 + k |x| (1 + 3 c x^2)), plus 2^-21 for the f32 roundings.
//  gelu_erf, silu: erff / expf within 2 ulp and a few f32 roundings: 2^-21 (1 + |x|).
struct ActGrad {
  double value, eval_bound;
};
ActGrad act_grad(GemmActivation a, double x) {
  const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
  switch (a) {
    case GemmActivation::kGeluTanh: {
      const double t = std::tanh(k * (x + c * x * x * x));
      return {0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x),
              std::ldexp(1.0, -11) * (0.5 + k * std::fabs(x) * (1 + 3 * c * x * x)) + std::ldexp(1.0, -21)};
    }
    case GemmActivation::kGeluErf:
      return {0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI),
              std::ldexp(1.0, -21) * (1 + std::fabs(x))};
    default: {  // silu
      const double sg = 1 / (1 + std::exp(-x));
      return {sg * (1 + x * (1 - sg)), std::ldexp(1.0, -21) * (1 + std::fabs(x))};
    }
  }
}

// Element (i, j) of matrix p of a batched operand.
struct MatrixReader {
  const HostTensor& t;
  DType dtype;
  std::int64_t stride, rs, cs;
  MatrixReader(const HostTensor& h, const MatrixLayout& m, std::int64_t batch_stride)
      : t(h), dtype(m.dtype), stride(batch_stride),
        rs(m.order == MatrixOrder::kRowMajor ? m.ld : 1), cs(m.order == MatrixOrder::kRowMajor ? 1 : m.ld) {}
  double operator()(std::int64_t p, std::int64_t i, std::int64_t j) const {
    return load_as_double(dtype, t.data(), p * stride + i * rs + j * cs);
  }
};

}  // namespace

TensorLayout batched_layout(const TensorLayout& v, std::int64_t batch, std::int64_t stride) {
  return gemm_batched_layout(v, batch, stride);
}
TensorLayout batched_layout(const MatrixLayout& m, std::int64_t batch, std::int64_t stride) {
  return batched_layout(m.as_tensor(), batch, stride);
}

Expected<GemmOracle> batched_gemm(const BatchedGemmDescriptor& bd, const HostTensor& a, const HostTensor& b,
                                  const HostTensor* c, const HostTensor* bias, double alpha, double beta, bool tf32,
                                  const HostTensor* aux) {
  const GemmDescriptor& g = bd.gemm;
  const GemmEpilogue& e = g.epilogue;
  if ((g.with_c && !c) || (e.bias && !bias))
    return Status(Code::kInvalidArgument, "reference::batched_gemm: c or bias missing");
  if (e.activation_grad && (!aux || e.activation == GemmActivation::kNone || e.bias || g.with_c))
    return Status(Code::kInvalidArgument, "reference::batched_gemm: activation_grad needs aux and an activation, no bias or C");
  const std::int64_t M = g.m(), N = g.n(), K = g.k(), P = bd.batch;
  const DType out = g.d.dtype;
  const double u = out == DType::kF64 ? unit_roundoff(DType::kF64) : unit_roundoff(DType::kF32);
  const double g_pre = gamma(K + 3, u) + (tf32 ? std::ldexp(1.0, -10) : 0.0);
  const double u_out = unit_roundoff(out), atol = smallest_subnormal(out);
  const bool has_epilogue = e.bias || e.activation != GemmActivation::kNone;
  // the activation backward: cuBLASLt's 16-bit epilogues round first (as measured for the
  // forward), and the cublaslt_dact SKU stores the product in D's dtype before its pass
  const bool rounds_before_epilogue = e.activation_grad || (has_epilogue && (out == DType::kF16 || out == DType::kBF16));
  GemmOracle o;
  o.batch = P;
  o.m = M;
  o.n = N;
  const auto total = static_cast<std::size_t>(P * M * N);
  o.d.resize(total);
  o.d_bound.resize(total);
  o.pre.resize(total);
  o.pre_bound.resize(total);
  MatrixReader ra(a, g.a, bd.stride_a), rb(b, g.b, bd.stride_b);
  std::vector<double> A(static_cast<std::size_t>(M * K)), Bt(static_cast<std::size_t>(N * K));
  for (std::int64_t p = 0; p < P; ++p) {
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t k = 0; k < K; ++k) A[static_cast<std::size_t>(i * K + k)] = ra(p, i, k);
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t j = 0; j < N; ++j) Bt[static_cast<std::size_t>(j * K + k)] = rb(p, k, j);
    parallel_rows(M, N * K, [&](std::int64_t i0, std::int64_t i1) {
      std::optional<MatrixReader> rc;
      if (g.with_c) rc.emplace(*c, g.c, bd.stride_c);
      for (std::int64_t i = i0; i < i1; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
          const double* ar = &A[static_cast<std::size_t>(i * K)];
          const double* br = &Bt[static_cast<std::size_t>(j * K)];
          double s = 0, sa = 0;
          for (std::int64_t k = 0; k < K; ++k) {
            s += ar[k] * br[k];
            sa += std::fabs(ar[k] * br[k]);
          }
          double pre = alpha * s, scale = std::fabs(alpha) * sa;
          if (g.with_c) {
            const double cv = (*rc)(p, i, j);
            pre += beta * cv;
            scale += std::fabs(beta * cv);
          }
          // cuBLASLt rounds alpha * AB + beta * C to D's type before a 16-bit epilogue
          // (measured on the H200, cuBLAS 13.1: up to 1.35 ulp off with a bias, where one
          // final rounding allows 0.5), so the epilogue's input carries that rounding too.
          const double early_rounding = rounds_before_epilogue ? u_out * std::fabs(pre) : 0.0;
          if (e.bias) {
            const double bv = load_as_double(g.bias.dtype, bias->data(), p * bd.stride_bias + j * g.bias.strides[0]);
            pre += bv;
            scale += std::fabs(bv);
          }
          const double pre_err = g_pre * scale + early_rounding;
          double v = pre, err = pre_err;
          if (e.activation_grad) {
            // D = pre .* act'(aux): the relu mask selects exactly; otherwise act'(x) of the
            // stored pre-activation x (exact input) times pre with its error, plus the
            // factor's evaluation error times |pre|
            const std::int64_t at = p * bd.stride_aux + element(g.aux, i, j);
            if (e.activation == GemmActivation::kRelu) {
              const auto* bytes = static_cast<const unsigned char*>(aux->data());
              const bool bit = (bytes[at / 8] >> (at % 8)) & 1;
              v = bit ? pre : 0.0;
              err = bit ? pre_err : 0.0;
            } else {
              const ActGrad f = act_grad(e.activation, load_as_double(g.aux.dtype, aux->data(), at));
              v = pre * f.value;
              err = std::fabs(f.value) * pre_err + f.eval_bound * (std::fabs(pre) + pre_err);
            }
          } else if (e.activation == GemmActivation::kRelu) {
            v = pre > 0 ? pre : 0.0;
          } else if (e.activation == GemmActivation::kGeluTanh) {
            v = gelu_tanh(pre);
            err = 1.13 * pre_err + std::ldexp(1.0, -11) * std::fabs(pre);
          } else if (e.activation == GemmActivation::kGeluErf || e.activation == GemmActivation::kSilu) {
            // composite: the pre-activation is stored to D (its dtype) and read back by our
            // pass, which evaluates in f32 (erff / expf within 2 ulp, a few f32 roundings:
            // 2^-21 |x| in all); |gelu_erf'| <= 1.13, |silu'| <= 1.1
            v = e.activation == GemmActivation::kGeluErf ? gelu_erf(pre) : silu(pre);
            const double stored = pre_err * (1 + u_out) + u_out * std::fabs(pre) + atol;
            err = 1.13 * stored + std::ldexp(1.0, -21) * std::fabs(pre);
          }
          const auto idx = static_cast<std::size_t>((p * M + i) * N + j);
          o.pre[idx] = pre;
          o.pre_bound[idx] = pre_err * (1 + u_out) + u_out * std::fabs(pre) + atol;
          o.d[idx] = v;
          o.d_bound[idx] = err * (1 + u_out) + u_out * std::fabs(v) + atol;
        }
    });
    if (e.bias_grad == GemmBiasGrad::kD) {
      // column sums of D: each element's bound (whether the sum sees D before or after its
      // rounding), the f32 accumulation over M, and the output rounding
      for (std::int64_t j = 0; j < N; ++j) {
        double s = 0, sa = 0, sb = 0;
        for (std::int64_t i = 0; i < M; ++i) {
          const auto idx = static_cast<std::size_t>((p * M + i) * N + j);
          s += o.d[idx];
          sa += std::fabs(o.d[idx]);
          sb += o.d_bound[idx];
        }
        o.bias_grad.push_back(s);
        o.bias_grad_bound.push_back((sb + gamma(M, unit_roundoff(DType::kF32)) * sa) * (1 + u_out) + u_out * std::fabs(s) + atol);
      }
    } else if (e.bias_grad != GemmBiasGrad::kNone) {
      const bool of_a = e.bias_grad == GemmBiasGrad::kA;
      const std::int64_t len = of_a ? M : N;
      for (std::int64_t r = 0; r < len; ++r) {
        const double* row = of_a ? &A[static_cast<std::size_t>(r * K)] : &Bt[static_cast<std::size_t>(r * K)];
        double s = 0, sa = 0;
        for (std::int64_t k = 0; k < K; ++k) {
          s += row[k];
          sa += std::fabs(row[k]);
        }
        o.bias_grad.push_back(s);
        o.bias_grad_bound.push_back(gamma(K, u) * sa * (1 + u_out) + u_out * std::fabs(s) + atol);
      }
    }
  }
  return o;
}

Expected<GemmOracle> gemm(const GemmDescriptor& d, const HostTensor& a, const HostTensor& b, const HostTensor* c,
                          const HostTensor* bias, double alpha, double beta, bool tf32, const HostTensor* aux) {
  BatchedGemmDescriptor bd;
  bd.gemm = d;
  return batched_gemm(bd, a, b, c, bias, alpha, beta, tf32, aux);
}

Expected<GemmOracle> grouped_gemm(const GroupedGemmDescriptor& d, const HostTensor& a, const HostTensor& b, double alpha) {
  GemmOracle o;
  o.batch = 1;
  o.m = d.total_m();
  o.n = d.n;
  std::int64_t row = 0;
  for (std::int64_t g = 0; g < d.groups(); ++g) {
    const GemmDescriptor gd = grouped_gemm_group(d, g, d.alignment);
    const std::int64_t m = gd.m();
    HostTensor ag(gd.a.as_tensor()), bg(gd.b.as_tensor());  // contiguous copies of the group's operands
    for (std::int64_t i = 0; i < m * d.k; ++i)
      ag.set(i, load_as_double(d.dtype, a.data(), row * d.k + i));
    const std::int64_t kn = d.k * d.n;
    for (std::int64_t i = 0; i < kn; ++i) {  // logical (k, j) order on both sides
      const std::int64_t kk = i / d.n, j = i % d.n;
      const std::int64_t off = d.b_order == MatrixOrder::kRowMajor ? kk * d.n + j : j * d.k + kk;
      store_from_double(d.dtype, bg.data(), off, load_as_double(d.dtype, b.data(), g * kn + off));
    }
    row += m;
    if (m == 0 || d.n == 0) continue;
    auto r = gemm(gd, ag, bg, nullptr, nullptr, alpha, 0.0, false);
    if (!r) return r.error();
    for (auto* v : {&o.d, &o.d_bound, &o.pre, &o.pre_bound}) {
      const auto& src = v == &o.d ? r->d : v == &o.d_bound ? r->d_bound : v == &o.pre ? r->pre : r->pre_bound;
      v->insert(v->end(), src.begin(), src.end());
    }
  }
  return o;
}

Expected<GemmBackwardOracle> gemm_backward(const GemmBackwardDescriptor& d, const HostTensor& a, const HostTensor& b,
                                           const HostTensor& grad_d, double alpha) {
  GemmBackwardOracle o;
  if (d.compute_grad_a) {
    auto r = gemm(gemm_backward_grad_a(d), grad_d, b, nullptr, nullptr, alpha, 0.0, false);
    if (!r) return r.error();
    o.grad_a = std::move(r.value());
  }
  if (d.compute_grad_b) {
    auto r = gemm(gemm_backward_grad_b(d), a, grad_d, nullptr, nullptr, alpha, 0.0, false);
    if (!r) return r.error();
    o.grad_b = std::move(r.value());
  }
  return o;
}

namespace {

// got(idx) against want[idx] within bound[idx], idx over the oracle's dense order.
template <class Got>
Comparison compare_dense(std::size_t n, Got&& got, const std::vector<double>& want, const std::vector<double>& bound,
                         const char* what) {
  Comparison c;
  c.checked = static_cast<std::int64_t>(n);
  std::int64_t got_zero = 0, want_zero = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = got(i), e = want[i];
    got_zero += g == 0.0;
    want_zero += e == 0.0;
    const bool ok = !std::isnan(g) && std::fabs(g - e) <= bound[i];
    if (!ok && c.mismatches++ < 5)
      first << "\n  " << what << "[" << i << "] got " << exact_text(g) << ", exact " << exact_text(e) << ", bound " << exact_text(bound[i]);
  }
  finish_comparison(c, static_cast<std::int64_t>(n), got_zero, want_zero, first.str());
  return c;
}

// Offset of dense element idx (batch-major, row-major M x N) in a [batch, M, N] layout.
std::int64_t dense_offset(const TensorLayout& l, const GemmOracle& o, std::size_t idx) {
  const auto i = static_cast<std::int64_t>(idx);
  const std::int64_t p = i / (o.m * o.n), r = (i / o.n) % o.m, col = i % o.n;
  return p * l.strides[0] + r * l.strides[1] + col * l.strides[2];
}

}  // namespace

Comparison compare_gemm_d(const HostTensor& d, const GemmOracle& o) {
  const TensorLayout& l = d.layout();
  return compare_dense(o.d.size(), [&](std::size_t i) { return load_as_double(l.dtype, d.data(), dense_offset(l, o, i)); },
                       o.d, o.d_bound, "d");
}

Comparison compare_gemm_aux_pre(const HostTensor& aux, const GemmOracle& o) {
  const TensorLayout& l = aux.layout();
  return compare_dense(o.pre.size(), [&](std::size_t i) { return load_as_double(l.dtype, aux.data(), dense_offset(l, o, i)); },
                       o.pre, o.pre_bound, "aux");
}

Comparison compare_gemm_relu_mask(const HostTensor& aux, const GemmOracle& o, std::int64_t ld_bits, std::int64_t stride_bits,
                                  bool row_major) {
  Comparison c;
  std::ostringstream first;
  const auto* bytes = static_cast<const unsigned char*>(aux.data());
  std::int64_t decided = 0;
  for (std::size_t idx = 0; idx < o.pre.size(); ++idx) {
    const auto i = static_cast<std::int64_t>(idx);
    const std::int64_t p = i / (o.m * o.n), r = (i / o.n) % o.m, col = i % o.n;
    const std::int64_t bit = p * stride_bits + (row_major ? r * ld_bits + col : r + col * ld_bits);
    const bool got = (bytes[bit / 8] >> (bit % 8)) & 1;
    if (std::fabs(o.pre[idx]) <= o.pre_bound[idx]) continue;  // too close to 0 to decide
    ++decided;
    const bool want = o.pre[idx] > 0;
    if (got != want && c.mismatches++ < 5)
      first << "\n  mask[" << idx << "] (batch " << p << ", " << r << ", " << col << ") got " << got << ", pre-activation "
            << exact_text(o.pre[idx]);
  }
  c.checked = decided;
  if (c.mismatches) {
    c.ok = false;
    c.detail = std::to_string(c.mismatches) + " of " + std::to_string(decided) + " mask bits wrong" + first.str();
  }
  return c;
}

Comparison compare_gemm_bias_grad(const HostTensor& bias_grad, const GemmOracle& o) {
  const TensorLayout& l = bias_grad.layout();  // [batch, len]
  const std::int64_t len = l.shape[1];
  return compare_dense(o.bias_grad.size(),
                       [&](std::size_t i) {
                         const auto k = static_cast<std::int64_t>(i);
                         return load_as_double(l.dtype, bias_grad.data(), (k / len) * l.strides[0] + (k % len) * l.strides[1]);
                       },
                       o.bias_grad, o.bias_grad_bound, "bias_grad");
}

}  // namespace baracuda::reference
