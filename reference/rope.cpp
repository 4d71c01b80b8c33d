// CPU oracle of RoPE (see rope.hpp).
#include "baracuda/reference/rope.hpp"

#include <cmath>
#include <limits>

namespace baracuda::reference {

namespace {

// Where the dims of x sit: [B, S, H, D] / [B, H, S, D] (rank 4), [S, H, D] / [B, S, D] (rank 3).
struct Dims4 {
  int b = -1, s = 0, h = -1;
};
Dims4 dims_of(int rank, int seq_axis) {
  Dims4 a;
  a.s = seq_axis;
  if (rank == 4) {
    a.b = 0;
    a.h = 3 - seq_axis;  // seq 1 -> heads at 2, seq 2 -> heads at 1
  } else if (seq_axis == 0) {
    a.h = 1;
  } else {
    a.b = 0;
  }
  return a;
}

struct Tables {
  std::vector<double> inv_freq;  // empty with caches
  double attention = 1.0;
};

// One tensor (x or x2) rotated; `sign` -1 for the backward.
Result rotate(const HostTensor& x, const RopeOptions& o, const RopeInputs& in, const Tables& tab, double sign) {
  const TensorLayout& l = x.layout();
  const Dims4 ax = dims_of(l.rank, o.seq_axis);
  const std::int64_t d = l.shape[l.rank - 1];
  const std::int64_t r = o.rotary_dim ? o.rotary_dim : d;
  const std::int64_t half = r / 2;
  const std::int64_t seq = l.shape[ax.s];
  const bool f64 = l.dtype == DType::kF64;
  const bool neox = o.style == RopeStyle::kNeox;
  const std::int64_t n = l.numel();
  Result res = zero_result(n);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(l.rank));
  for (std::int64_t lin = 0; lin < n; ++lin) {
    std::int64_t rem = lin;
    for (int k = l.rank - 1; k >= 0; --k) {
      idx[static_cast<std::size_t>(k)] = rem % l.shape[k];
      rem /= l.shape[k];
    }
    const std::int64_t e = idx.back();
    const auto u = static_cast<std::size_t>(lin);
    if (e >= r) {  // pass-through
      res.exact[u] = res.naive[u] = x.get(lin);
      continue;
    }
    // pair index i, partner element, and whether e is the first of its pair
    std::int64_t i, partner;
    bool first;
    if (neox) {
      first = e < half;
      i = first ? e : e - half;
      partner = first ? e + half : e - half;
    } else {
      first = e % 2 == 0;
      i = e / 2;
      partner = first ? e + 1 : e - 1;
    }
    const double xv = x.get(lin), pv = x.get(lin - e + partner);
    const std::int64_t b = ax.b >= 0 ? idx[static_cast<std::size_t>(ax.b)] : 0;
    const std::int64_t s = idx[static_cast<std::size_t>(ax.s)];
    std::int64_t pos = o.position_offset + s;
    if (in.position_ids) {
      const HostTensor& ids = *in.position_ids;
      const std::int64_t k = ids.layout().rank == 2 ? b * seq + s : s;
      pos = load_as_int64(ids.layout().dtype, ids.data(), offset_of(ids.layout(), k));
    }
    long double ce, se;  // exact cos / sin
    double cn, sn;       // naive (compute type)
    if (in.cos) {
      const std::int64_t max_pos = in.cos->layout().shape[0];
      if (pos < 0 || pos >= max_pos) {
        res.exact[u] = res.naive[u] = std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      cn = in.cos->get(pos * half + i);
      sn = in.sin->get(pos * half + i);
      ce = cn;
      se = sn;
    } else {
      const long double angle = static_cast<long double>(pos) * static_cast<long double>(tab.inv_freq[static_cast<std::size_t>(i)]);
      ce = std::cos(angle) * static_cast<long double>(tab.attention);
      se = std::sin(angle) * static_cast<long double>(tab.attention);
      if (f64) {
        const double a = static_cast<double>(pos) * tab.inv_freq[static_cast<std::size_t>(i)];
        cn = std::cos(a) * tab.attention;
        sn = std::sin(a) * tab.attention;
      } else {
        const float a = static_cast<float>(pos) * static_cast<float>(tab.inv_freq[static_cast<std::size_t>(i)]);
        const float att = static_cast<float>(tab.attention);
        cn = tab.attention == 1.0 ? std::cos(a) : std::cos(a) * att;
        sn = tab.attention == 1.0 ? std::sin(a) : std::sin(a) * att;
      }
    }
    se *= sign;
    sn *= sign;
    // first: x c - partner s; second: x c + partner s
    const long double pterm = first ? -pv * se : pv * se;
    res.exact[u] = static_cast<double>(xv * ce + pterm);
    res.scale[u] = std::fabs(static_cast<double>(xv * ce)) + std::fabs(static_cast<double>(pterm));
    if (f64) {
      res.naive[u] = first ? xv * cn - pv * sn : xv * cn + pv * sn;
    } else {
      const float xf = static_cast<float>(xv), pf = static_cast<float>(pv), cf = static_cast<float>(cn),
                  sf = static_cast<float>(sn);
      res.naive[u] = round_to(l.dtype, first ? xf * cf - pf * sf : xf * cf + pf * sf);
    }
  }
  return res;
}

Expected<RopeResults> run(const RopeOptions& o, const RopeInputs& in, double sign) {
  if (!in.x) return Status(Code::kInvalidArgument, "reference rope: x is null");
  Tables tab;
  if (!in.cos) {
    const TensorLayout& l = in.x->layout();
    auto inv = rope_inv_freq(o, o.rotary_dim ? o.rotary_dim : l.shape[l.rank - 1]);
    if (!inv) return inv.error();
    tab.inv_freq = std::move(inv.value());
    tab.attention = rope_attention_factor(o);
  }
  RopeResults out;
  out.y = rotate(*in.x, o, in, tab, sign);
  if (in.x2) out.y2 = rotate(*in.x2, o, in, tab, sign);
  return out;
}

}  // namespace

Expected<RopeResults> rope(const RopeDescriptor& d, const RopeInputs& in) { return run(d.options, in, 1.0); }
Expected<RopeResults> rope_backward(const RopeBackwardDescriptor& d, const RopeInputs& in) {
  return run(d.options, in, -1.0);
}

}  // namespace baracuda::reference
