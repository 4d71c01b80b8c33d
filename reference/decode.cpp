// baracuda::reference for SdpaDecodePlan and KvCacheAppendPlan (see decode.hpp): attention in
// double over the gathered pages, the naive same-precision twin, the tolerance rule, and the
// append as a host copy.
#include "baracuda/reference/decode.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace baracuda::reference {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The cache geometry of baracuda/ops/decode.hpp: a contiguous cache is page b of S_max rows.
struct Geometry {
  std::int64_t page_size = 0, max_pages = 1, num_pages = 0, capacity = 0;
};
Geometry geometry_of(const TensorLayout& k_cache, const TensorLayout& block_table, std::int64_t batch) {
  Geometry g;
  g.page_size = k_cache.shape[1];
  g.max_pages = block_table.rank ? block_table.shape[1] : 1;
  g.num_pages = block_table.rank ? k_cache.shape[0] : batch;
  g.capacity = g.max_pages * g.page_size;
  return g;
}

std::int64_t seqlen_of(const HostTensor& seqlens, std::int64_t b, std::int64_t capacity) {
  const std::int64_t l = load_as_int64(DType::kI32, seqlens.data(), b * seqlens.layout().strides[0]);
  return std::clamp<std::int64_t>(l, 0, capacity);
}

// Page of position `pos` of sequence b, or -1 (absent: reads as zeros / skipped on write).
std::int64_t page_of(const HostTensor* bt, const Geometry& g, std::int64_t b, std::int64_t pos) {
  if (bt == nullptr) return b;
  const std::int64_t slot = pos / g.page_size;
  if (slot >= g.max_pages) return -1;
  const auto& s = bt->layout().strides;
  const std::int64_t page = load_as_int64(DType::kI32, bt->data(), b * s[0] + slot * s[1]);
  return page >= 0 && page < g.num_pages ? page : -1;
}

double ulp_at(DType t, double x) {
  x = std::fabs(x);
  switch (t) {
    case DType::kBF16: return std::ldexp(1.0, std::ilogb(std::max(x, 1e-30)) - 7);
    case DType::kF16: return std::ldexp(1.0, std::max(std::ilogb(std::max(x, 1e-30)), -14) - 10);
    case DType::kF32: return std::ldexp(1.0, std::ilogb(std::max(x, 1e-30)) - 23);
    default: return 1e-12;
  }
}

}  // namespace

namespace {
TensorLayout cache_layout(const DecodeShape& s) {
  const std::int64_t pages = s.num_pages > 0 ? s.num_pages : s.batch;
  return TensorLayout::contiguous(s.dtype, {pages, s.page_size, s.hkv, s.d});
}
TensorLayout table_layout(const DecodeShape& s) {
  return s.num_pages > 0 ? TensorLayout::contiguous(DType::kI32, {s.batch, s.max_pages}) : TensorLayout{};
}
// The cache-side layouts both descriptors hold: k / v caches, block table (paged), lengths [B].
void set_cache_layouts(const DecodeShape& s, TensorLayout& k, TensorLayout& v, TensorLayout& table, TensorLayout& lens) {
  k = v = cache_layout(s);
  table = table_layout(s);
  lens = TensorLayout::contiguous(DType::kI32, {s.batch});
}
}  // namespace

DecodeShape decode_shape(DType t, std::int64_t batch, std::int64_t sq, std::int64_t hq, std::int64_t hkv, std::int64_t d,
                         std::int64_t page, std::int64_t max_pages, bool paged, std::int64_t spare_pages) {
  DecodeShape s;
  s.dtype = t;
  s.batch = batch;
  s.sq = sq;
  s.hq = hq;
  s.hkv = hkv;
  s.d = d;
  s.page_size = paged ? page : page * max_pages;
  s.max_pages = paged ? max_pages : 1;
  s.num_pages = paged ? batch * max_pages + spare_pages : 0;
  return s;
}

SdpaDecodeDescriptor decode_descriptor(const DecodeShape& s) {
  SdpaDecodeDescriptor d;
  d.q = d.o = TensorLayout::contiguous(s.dtype, {s.batch, s.sq, s.hq, s.d});
  set_cache_layouts(s, d.k_cache, d.v_cache, d.block_table, d.seqlens_k);
  if (s.lse) d.lse = TensorLayout::contiguous(DType::kF32, {s.batch, s.hq, s.sq});
  if (s.alibi == 1) d.alibi_slopes = TensorLayout::contiguous(DType::kF32, {s.hq});
  if (s.alibi == 2) d.alibi_slopes = TensorLayout::contiguous(DType::kF32, {s.batch, s.hq});
  return d;
}

KvCacheAppendDescriptor append_descriptor(const DecodeShape& s) {
  KvCacheAppendDescriptor d;
  d.k_new = d.v_new = TensorLayout::contiguous(s.dtype, {s.batch, s.sq, s.hkv, s.d});
  set_cache_layouts(s, d.k_cache, d.v_cache, d.block_table, d.cache_seqlens);
  return d;
}

Expected<DecodeResult> sdpa_decode(const SdpaDecodeDescriptor& d, const HostTensor& q, const HostTensor& k_cache,
                                   const HostTensor& v_cache, const HostTensor* block_table, const HostTensor& seqlens_k,
                                   const HostTensor* alibi_slopes) {
  if (d.q.rank != 4 || d.k_cache.rank != 4) return Status(Code::kInvalidArgument, "reference sdpa_decode: q and k_cache are rank 4");
  if (d.paged() != (block_table != nullptr))
    return Status(Code::kInvalidArgument, "reference sdpa_decode: block_table given iff the descriptor is paged");
  if ((d.alibi_slopes.rank != 0) != (alibi_slopes != nullptr))
    return Status(Code::kInvalidArgument, "reference sdpa_decode: alibi_slopes given iff the descriptor has them");
  const DType t = d.q.dtype;
  const bool narrow = t == DType::kF16 || t == DType::kBF16;
  const std::int64_t B = d.q.shape[0], Sq = d.q.shape[1], Hq = d.q.shape[2], D = d.q.shape[3];
  const std::int64_t Hkv = d.k_cache.shape[2], group = Hq / Hkv;
  const Geometry g = geometry_of(d.k_cache, d.block_table, B);
  const auto& o_ = d.options;
  const double scale = o_.scale > 0 ? o_.scale : 1.0 / std::sqrt(static_cast<double>(D));
  const float scale_f = static_cast<float>(scale);
  auto rnd = [&](double v) { return narrow ? round_to(t, v) : (t == DType::kF32 ? static_cast<double>(static_cast<float>(v)) : v); };

  DecodeResult r;
  r.o = zero_result(B * Sq * Hq * D);
  r.lse = zero_result(B * Hq * Sq);
  r.empty.assign(static_cast<std::size_t>(B * Sq * Hq), 0);
  const auto& qs = d.q.strides;
  const auto& ks = d.k_cache.strides;
  const auto& vs = d.v_cache.strides;
  std::vector<double> kk, vv;
  std::vector<double> s_ex, s_nv, p_nv;
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t L = seqlen_of(seqlens_k, b, g.capacity);
    for (std::int64_t h = 0; h < Hkv; ++h) {
      // Gather this (sequence, KV head)'s keys and values.
      kk.assign(static_cast<std::size_t>(L * D), 0.0);
      vv.assign(static_cast<std::size_t>(L * D), 0.0);
      for (std::int64_t j = 0; j < L; ++j) {
        const std::int64_t page = page_of(block_table, g, b, j);
        if (page < 0) continue;
        const std::int64_t row = j % g.page_size;
        for (std::int64_t c = 0; c < D; ++c) {
          kk[j * D + c] = load_as_double(t, k_cache.data(), page * ks[0] + row * ks[1] + h * ks[2] + c);
          vv[j * D + c] = load_as_double(t, v_cache.data(), page * vs[0] + row * vs[1] + h * vs[2] + c);
        }
      }
      for (std::int64_t gq = 0; gq < group; ++gq)
        for (std::int64_t tt = 0; tt < Sq; ++tt) {
          const std::int64_t hq = h * group + gq;
          const std::int64_t qpos = L - Sq + tt;
          double slope = 0;
          if (alibi_slopes) {
            const auto& as = d.alibi_slopes.strides;
            const std::int64_t off = d.alibi_slopes.rank == 1 ? hq * as[0] : b * as[0] + hq * as[1];
            slope = load_as_double(DType::kF32, alibi_slopes->data(), off);
          }
          std::vector<double> qv(static_cast<std::size_t>(D));
          for (std::int64_t c = 0; c < D; ++c) qv[c] = load_as_double(t, q.data(), b * qs[0] + tt * qs[1] + hq * qs[2] + c);
          s_ex.assign(static_cast<std::size_t>(L), -kInf);
          s_nv.assign(static_cast<std::size_t>(L), -kInf);
          double m_ex = -kInf, m_nv = -kInf;
          for (std::int64_t j = 0; j < L; ++j) {
            const bool visible = (!o_.causal || j <= qpos) && (o_.window_left < 0 || j >= qpos - o_.window_left);
            if (!visible) continue;
            double dot = 0;
            float dot_f = 0;
            for (std::int64_t c = 0; c < D; ++c) {
              dot += qv[c] * kk[j * D + c];
              dot_f += static_cast<float>(qv[c]) * static_cast<float>(kk[j * D + c]);
            }
            double se = dot * scale;
            double sn = t == DType::kF64 ? se : rnd(static_cast<float>(dot_f) * scale_f);
            const double dist = static_cast<double>(qpos > j ? qpos - j : j - qpos);
            if (o_.softcap > 0) {
              se = o_.softcap * std::tanh(se / o_.softcap);
              if (t != DType::kF64) {
                const float cf = static_cast<float>(o_.softcap);
                sn = rnd(cf * std::tanh(static_cast<float>(sn) / cf));
              } else {
                sn = se;
              }
            }
            if (alibi_slopes) {
              se -= slope * dist;
              sn = t == DType::kF64 ? se : static_cast<double>(static_cast<float>(sn) - static_cast<float>(slope) * static_cast<float>(dist));
            }
            s_ex[j] = se;
            s_nv[j] = sn;
            m_ex = std::max(m_ex, se);
            m_nv = std::max(m_nv, sn);
          }
          const std::int64_t lse_i = (b * Hq + hq) * Sq + tt;
          const std::int64_t o_i = ((b * Sq + tt) * Hq + hq) * D;
          if (m_ex == -kInf) {  // sees no key: o = 0 (already), lse = -inf
            r.lse.exact[lse_i] = r.lse.naive[lse_i] = -kInf;
            r.empty[static_cast<std::size_t>((b * Sq + tt) * Hq + hq)] = 1;
            continue;
          }
          double sum_ex = 0;
          float sum_nv = 0;
          p_nv.assign(static_cast<std::size_t>(L), 0.0);
          for (std::int64_t j = 0; j < L; ++j) {
            if (s_ex[j] == -kInf) continue;
            sum_ex += std::exp(s_ex[j] - m_ex);
            if (t == DType::kF64) continue;
            const float e = std::exp(static_cast<float>(s_nv[j]) - static_cast<float>(m_nv));
            p_nv[j] = e;
            sum_nv += e;
          }
          r.lse.exact[lse_i] = m_ex + std::log(sum_ex);
          r.lse.naive[lse_i] = t == DType::kF64 ? r.lse.exact[lse_i]
                                                : static_cast<double>(static_cast<float>(m_nv) + std::log(sum_nv));
          for (std::int64_t j = 0; j < L; ++j)
            if (s_ex[j] != -kInf && t != DType::kF64) p_nv[j] = rnd(static_cast<float>(p_nv[j]) / sum_nv);
          std::vector<double> acc(static_cast<std::size_t>(D), 0.0);
          std::vector<float> acc_f(static_cast<std::size_t>(D), 0.0f);
          for (std::int64_t j = 0; j < L; ++j) {  // keys in order: each output a sequential sum
            if (s_ex[j] == -kInf) continue;
            const double pe = std::exp(s_ex[j] - m_ex);
            const float pn = static_cast<float>(p_nv[j]);
            for (std::int64_t c = 0; c < D; ++c) {
              acc[c] += pe * vv[j * D + c];
              acc_f[c] += pn * static_cast<float>(vv[j * D + c]);
            }
          }
          for (std::int64_t c = 0; c < D; ++c) {
            r.o.exact[o_i + c] = acc[c] / sum_ex;
            r.o.naive[o_i + c] = t == DType::kF64 ? r.o.exact[o_i + c] : rnd(acc_f[c]);
          }
        }
    }
  }
  return r;
}

namespace {

// max |got - exact| <= 3 max |naive - exact| + atol over the finite exact values; exact
// -inf (lse of an empty row) must be -inf; NaN never passes. Mismatch details appended to `why`.
struct TensorVerdict {
  bool ok = true;
  std::int64_t mismatches = 0, got_zero = 0, want_zero = 0;
};
// `empty` (o only): rows of `row_len` elements that must be exactly 0.
TensorVerdict judge(const HostTensor& got, const Result& want, bool is_lse, DType dt, const std::vector<std::uint8_t>* empty,
                    std::int64_t row_len, std::ostringstream& why, const char* name) {
  TensorVerdict v;
  const std::int64_t n = got.layout().numel();
  double max_exact = 0, err_naive = 0, err_got = 0;
  std::int64_t worst = -1;
  for (std::int64_t i = 0; i < n; ++i) {
    const double e = want.exact[static_cast<std::size_t>(i)];
    if (std::isfinite(e)) {
      max_exact = std::max(max_exact, std::fabs(e));
      err_naive = std::max(err_naive, std::fabs(want.naive[static_cast<std::size_t>(i)] - e));
    }
  }
  double atol;
  if (is_lse) atol = 8 * std::ldexp(1.0, -23) * (1 + max_exact);
  else if (dt == DType::kF64) atol = 1e-12 * (1 + max_exact);
  else atol = ulp_at(dt, 0.3 + max_exact);
  const double bound = 3 * err_naive + atol;
  for (std::int64_t i = 0; i < n; ++i) {
    const double e = want.exact[static_cast<std::size_t>(i)], gv = got.get(i);
    v.got_zero += gv == 0.0;
    v.want_zero += e == 0.0;
    bool ok;
    if (std::isnan(gv)) ok = false;
    else if (!std::isfinite(e)) ok = gv == e;
    else if (empty && (*empty)[static_cast<std::size_t>(i / row_len)]) ok = gv == 0.0;  // a row that sees no key: exactly 0
    else {
      const double err = std::fabs(gv - e);
      ok = err <= bound;
      if (err > err_got) {
        err_got = err;
        worst = i;
      }
    }
    if (!ok && v.mismatches++ < 5)
      why << "\n  " << name << "[" << i << "] got " << exact_text(gv) << ", exact " << exact_text(e) << ", naive "
          << exact_text(want.naive[static_cast<std::size_t>(i)]) << " (bound " << exact_text(bound) << ")";
  }
  if (v.mismatches)
    why << "\n  " << name << ": max error " << exact_text(err_got) << " at " << worst << ", naive max error " << exact_text(err_naive)
        << ", atol " << exact_text(atol);
  v.ok = v.mismatches == 0;
  return v;
}

}  // namespace

Comparison compare_decode(const HostTensor& got_o, const HostTensor* got_lse, const DecodeResult& want) {
  Comparison c;
  const std::int64_t n = got_o.layout().numel();
  if (static_cast<std::int64_t>(want.o.exact.size()) != n) {
    c.ok = false;
    c.detail = "reference has " + std::to_string(want.o.exact.size()) + " outputs, o has " + std::to_string(n);
    return c;
  }
  std::ostringstream why;
  const TensorVerdict vo = judge(got_o, want.o, false, got_o.layout().dtype, &want.empty, got_o.layout().shape[3], why, "o");
  c.checked = n;
  c.mismatches = vo.mismatches;
  if (got_lse) {
    const TensorVerdict vl = judge(*got_lse, want.lse, true, DType::kF32, nullptr, 1, why, "lse");
    c.checked += got_lse->layout().numel();
    c.mismatches += vl.mismatches;
  }
  finish_comparison(c, n, vo.got_zero, vo.want_zero, why.str());
  return c;
}

void fill_block_table(HostTensor& bt, std::int64_t num_pages, std::mt19937_64& rng) {
  std::vector<std::int32_t> pages(static_cast<std::size_t>(num_pages));
  for (std::int64_t i = 0; i < num_pages; ++i) pages[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  std::shuffle(pages.begin(), pages.end(), rng);
  for (std::int64_t i = 0; i < bt.layout().numel(); ++i) bt.set(i, pages[static_cast<std::size_t>(i % num_pages)]);
}

void poison_unused_rows(HostTensor& cache, const HostTensor* bt, const std::vector<std::int32_t>& lens) {
  const TensorLayout& l = cache.layout();
  const std::int64_t batch = static_cast<std::int64_t>(lens.size());
  const Geometry g = geometry_of(l, bt ? bt->layout() : TensorLayout{}, batch);
  const std::int64_t rows = l.shape[0] * g.page_size, row_elems = l.shape[2] * l.shape[3];
  std::vector<std::uint8_t> used(static_cast<std::size_t>(rows), 0);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t j = 0; j < std::min<std::int64_t>(lens[static_cast<std::size_t>(b)], g.capacity); ++j) {
      const std::int64_t page = page_of(bt, g, b, j);
      if (page >= 0) used[static_cast<std::size_t>(page * g.page_size + j % g.page_size)] = 1;
    }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::int64_t r = 0; r < rows; ++r)
    if (!used[static_cast<std::size_t>(r)])
      for (std::int64_t x = 0; x < row_elems; ++x) cache.set(r * row_elems + x, nan);
}

Status kv_cache_append(const KvCacheAppendDescriptor& d, const HostTensor& k_new, const HostTensor& v_new, HostTensor& k_cache,
                       HostTensor& v_cache, const HostTensor* block_table, const HostTensor& cache_seqlens) {
  if (d.paged() != (block_table != nullptr))
    return Status(Code::kInvalidArgument, "reference kv_cache_append: block_table given iff the descriptor is paged");
  const std::int64_t B = d.k_new.shape[0], S = d.k_new.shape[1], H = d.k_new.shape[2], D = d.k_new.shape[3];
  const Geometry g = geometry_of(d.k_cache, d.block_table, B);
  const std::size_t es = dtype_size(d.k_new.dtype);
  const HostTensor* news[2] = {&k_new, &v_new};
  HostTensor* caches[2] = {&k_cache, &v_cache};
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t start = load_as_int64(DType::kI32, cache_seqlens.data(), b * cache_seqlens.layout().strides[0]);
    for (std::int64_t s = 0; s < S; ++s) {
      const std::int64_t pos = start + s;
      if (start < 0 || pos >= g.capacity) continue;
      const std::int64_t page = page_of(block_table, g, b, pos);
      if (page < 0) continue;
      for (int w = 0; w < 2; ++w) {
        const auto& ns = news[w]->layout().strides;
        const auto& cs = caches[w]->layout().strides;
        for (std::int64_t h = 0; h < H; ++h)
          for (std::int64_t c = 0; c < D; ++c) {
            const auto* src = static_cast<const unsigned char*>(news[w]->data()) + (b * ns[0] + s * ns[1] + h * ns[2] + c) * static_cast<std::int64_t>(es);
            auto* dst = static_cast<unsigned char*>(caches[w]->data()) +
                        (page * cs[0] + (pos % g.page_size) * cs[1] + h * cs[2] + c) * static_cast<std::int64_t>(es);
            std::memcpy(dst, src, es);
          }
      }
    }
  }
  return Status::ok();
}

}  // namespace baracuda::reference
