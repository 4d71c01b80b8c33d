// GPU tests with more than 2^31 elements for the memory-bound ops of issue 5: ReducePlan (sum),
// ScanPlan (cumsum), SoftmaxPlan, LayerNormPlan and RMSNormPlan (engineering.md section 4 asks
// for > 2^31 elements for memory-bound ops; ElementwiseHuge is the elementwise family's case).
//
// Each test fills one host input (a seeded xorshift: uniform values plus a block bias, see
// fill_uniform), uploads it once and runs it through views of more than 2^31 elements whose
// row offsets, row lengths or strided columns cross 2^31, forcing every SKU that accepts a
// view in turn (for_each_sku), outputs poisoned (0xFF) between guard bytes before each run.
// Every output element is checked on the host. reference::reduce / scan / softmax /
// norm_forward would hold the whole tensor in doubles (17 GB a copy and minutes a SKU), so the
// oracle is computed here, run by run, with the reference's own formulas: exact in long double,
// the naive twin in f32 in the reference's order, the reference's error scale; each streamed
// oracle is checked against the reference on a slice first (same exact, naive and scale
// values). The verdict is compare()'s rule element by element (reference::ElementJudge, the
// zero-trust rule included; NaN never passes: the oracle has none). Host loops run on every
// core; mismatches are counted and the first ones printed with the seed. HugeOracles (no
// device) checks the streamed oracles and judges against reference:: and compare() on small
// views of the same kinds.
//
// Device memory a test: reduce 4.6 GB, scan 17.7 GB, softmax and the norms 8.9 GB; host memory
// about as much. Run them on at most 4 parallel shards (scripts/devrun: N=4): on 16 shards of
// an 80 GB H100 (session 36) the 11 tests at once ran out of device memory (cudaMalloc failed
// in both ScanHuge tests and in a ReduceGpu test of a neighbouring shard). Host time: one pass over the oracle a
// SKU, ~2e9 elements at 10-30 ns each over the cores (a few seconds a SKU on 16 cores), hence
// one test a view or two. Without a device every test skips.
// Filter: --gtest_filter='ReduceHuge.*:ScanHuge.*:SoftmaxHuge.*:NormHuge.*'
// (`*Huge*` also runs ElementwiseHuge, RopeGpuHuge and AlibiGpuHuge.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "baracuda/reference/compare.hpp"
#include "baracuda/reference/normalization.hpp"
#include "baracuda/reference/reduce.hpp"
#include "baracuda/reference/scan.hpp"
#include "baracuda/reference/softmax.hpp"
#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

using reference::ElementJudge;
using reference::HostTensor;
using reference::Result;

constexpr std::int64_t kTwo31 = std::int64_t{1} << 31;
// The element count of the scan, softmax and norm tests: 2^31 + 2^26 (67 M elements past 2^31).
constexpr std::int64_t kElements = kTwo31 + (std::int64_t{1} << 26);

// ------------------------------------------------------------------ host work on every core

int host_threads(std::int64_t items) {
  const std::int64_t hw = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::clamp<std::int64_t>(items, 1, hw));
}

// f(item, thread) for the items [0, n), handed out in order to host_threads(n) threads.
template <class F>
void parallel_items(std::int64_t n, const F& f) {
  std::atomic<std::int64_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < host_threads(n); ++t)
    pool.emplace_back([&, t] {
      for (std::int64_t i = next++; i < n; i = next++) f(i, t);
    });
  for (auto& th : pool) th.join();
}

// judge(item, judge_of_the_thread) for the items [0, n); the merged verdict.
template <class F>
reference::Comparison judge_items(DType out, std::int64_t n, const F& judge) {
  std::vector<ElementJudge> judges(static_cast<std::size_t>(host_threads(n)), ElementJudge(out));
  parallel_items(n, [&](std::int64_t i, int t) { judge(i, judges[static_cast<std::size_t>(t)]); });
  for (std::size_t t = 1; t < judges.size(); ++t) judges[0].merge(judges[t]);
  return judges[0].finish();
}

::testing::AssertionResult verdict(const reference::Comparison& c, const std::string& what) {
  if (c.ok) return ::testing::AssertionSuccess() << c.checked << " elements";
  return ::testing::AssertionFailure() << what << ": " << c.detail << " (seed " << test_seed() << ")";
}

// The streamed oracle of a slice against the reference's Result for it: exact and scale
// within `rel` relative (0: the same arithmetic, bit for bit), naive identical.
::testing::AssertionResult same_oracle(const Result& mine, const Result& ref, double rel) {
  if (mine.exact.size() != ref.exact.size())
    return ::testing::AssertionFailure() << mine.exact.size() << " oracle values, the reference has " << ref.exact.size();
  auto near = [rel](double a, double b) { return a == b || std::fabs(a - b) <= rel * std::fabs(b); };
  for (std::size_t k = 0; k < ref.exact.size(); ++k)
    if (!near(mine.exact[k], ref.exact[k]) || mine.naive[k] != ref.naive[k] || !near(mine.scale[k], ref.scale[k]))
      return ::testing::AssertionFailure() << "element " << k << ": exact " << reference::exact_text(mine.exact[k]) << " / "
                                           << reference::exact_text(ref.exact[k]) << ", naive " << mine.naive[k] << " / "
                                           << ref.naive[k] << ", scale " << mine.scale[k] << " / " << ref.scale[k]
                                           << " (streamed / reference)";
  return ::testing::AssertionSuccess();
}

// ------------------------------------------------------------------ inputs and device buffers

// x[i] uniform in [lo, hi) plus +-`bias`, whose sign changes pseudo-randomly every kBiasBlock
// elements; a xorshift a block, seeded from test_seed() and `salt`. The bias makes data read
// from the wrong place visible in long sums and scans: an offset wrapped at 2^31 reads
// elements 2^31 earlier, whose blocks carry other signs, and moves a sum by 2^15 a block;
// noise of the same distribution would move it by ~sqrt(count), inside the cumsum's budget
// (4 eps_f32 depth sum |x|: ~2e4 past 2^31 elements).
constexpr std::int64_t kBiasBlock = std::int64_t{1} << 20;
constexpr double kBias = 1.0 / 32;

std::uint64_t mix(std::uint64_t z) {  // splitmix64's finalizer
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <class T>  // float, or std::uint16_t (bf16 bits)
void fill_uniform(T* x, std::int64_t n, double lo, double hi, double bias, std::uint64_t salt) {
  parallel_items((n + kBiasBlock - 1) / kBiasBlock, [&](std::int64_t b, int) {
    std::uint64_t s = mix(test_seed() ^ mix(salt + static_cast<std::uint64_t>(b))) | 1;
    const double shift = (mix(s) & 1) ? bias : -bias;
    for (std::int64_t i = b * kBiasBlock, end = std::min(n, i + kBiasBlock); i < end; ++i) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      const auto v = static_cast<float>(lo + (hi - lo) * std::ldexp(static_cast<double>(s >> 40), -24) + shift);
      if constexpr (std::is_same_v<T, float>) x[i] = v;
      else x[i] = f32_to_bf16_bits(v);
    }
  });
}

double bf(std::uint16_t b) { return bf16_bits_to_f32(b); }
// v rounded to bf16: reference::round_to(kBF16, v) for a float v (the self-checks compare them).
double to_bf16(float v) { return bf16_bits_to_f32(f32_to_bf16_bits(v)); }

const std::uint16_t* bf16_data(const HostTensor& t) { return static_cast<const std::uint16_t*>(t.data()); }
const float* f32_data(const HostTensor& t) { return static_cast<const float*>(t.data()); }

// A device copy of `host` between guard bytes, or a failure naming its size (a cudaMalloc of
// several GB fails where other processes hold the card's memory).
::testing::AssertionResult on_device(std::optional<DeviceTensor>& dev, const HostTensor& host, const char* what) {
  try {
    dev.emplace(host, test_stream());
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "cannot place " << what << " (" << (host.storage_bytes() >> 20)
                                         << " MiB) on the device: " << e.what();
  }
  return ::testing::AssertionSuccess();
}

HostTensor flat(DType t, std::int64_t n) { return HostTensor(TensorLayout::contiguous(t, {n})); }

// A kernel that walks a whole row with one thread (scan / softmax `column`) on rows of
// 2^30 elements and more: minutes of latency-bound loads. It runs on the views with many rows.
std::string one_thread_a_row(const KernelSku& s, std::int64_t len) {
  return s.impl == "column" && len >= kTwo31 / 2 ? "one thread walks each row of " + std::to_string(len) + " elements" : "";
}

// ------------------------------------------------------------------ runs of a flat buffer

// `count` runs of `len` elements, run g's element e at g * gs + e * es: rows (es = 1) or
// columns (gs = 1, es = the row length). Work items: one run, or kBatch adjacent columns (a
// row of the batch shares cache lines); with seg > 0 runs are cut in segments of seg elements
// (one long row over every core).
constexpr std::int64_t kBatch = 64;
struct Runs {
  std::int64_t count, len, gs, es;
  std::int64_t seg = 0;
  std::int64_t batch() const { return es > 1 ? kBatch : 1; }
  std::int64_t segments() const { return seg > 0 ? (len + seg - 1) / seg : 1; }
  std::int64_t items() const { return (count + batch() - 1) / batch() * segments(); }
  struct Item {
    std::int64_t g0, g1, e0, e1, segment;
  };
  Item item(std::int64_t i) const {
    const std::int64_t b = i / segments(), s = i % segments(), sl = seg > 0 ? seg : len;
    return {b * batch(), std::min(count, (b + 1) * batch()), s * sl, std::min(len, (s + 1) * sl), s};
  }
};
// step(k, at) for the item's elements, row by row through its runs (k = run - g0).
template <class F>
void walk(const Runs& r, const Runs::Item& it, const F& step) {
  for (std::int64_t e = it.e0; e < it.e1; ++e)
    for (std::int64_t g = it.g0; g < it.g1; ++g) step(g - it.g0, g * r.gs + e * r.es);
}

// The running sum of the reduce and scan references (reference/reduce.cpp float_group, sum;
// reference/scan.cpp forward_row, cumsum): exact in long double, the naive twin in f32 added
// in order, the error scale sum |x|.
struct RunningSum {
  long double exact = 0;
  float naive = 0;
  double abs = 0;
  void add(double x) {
    exact += x;
    naive += static_cast<float>(x);
    abs += std::fabs(x);
  }
};
double value_of(std::uint16_t b) { return bf(b); }
double value_of(float v) { return v; }
// `a` continued over the n elements x[0], x[es], x[2 es], ... in order. Not inlined: GCC keeps
// the long double of an inlined loop like this in memory (an x87 store and load an element,
// 4x slower) where the caller keeps the sum's address; this loop adds 2.3e9 elements alone.
template <class T>
[[gnu::noinline]] RunningSum continued(RunningSum a, const T* x, std::int64_t n, std::int64_t es) {
  for (std::int64_t e = 0; e < n; ++e) a.add(value_of(x[e * es]));
  return a;
}

// ------------------------------------------------------------------ reduce

// The sums of `r`'s runs of bf16 x, as reference::reduce gives them (y bf16).
Result sum_oracle(const std::uint16_t* x, const Runs& r) {
  Result want;
  want.exact.resize(static_cast<std::size_t>(r.count));
  want.naive.resize(want.exact.size());
  want.scale.resize(want.exact.size());
  parallel_items(r.items(), [&](std::int64_t i, int) {
    const Runs::Item it = r.item(i);
    RunningSum acc[kBatch];
    if (r.batch() == 1) {
      acc[0] = continued(RunningSum{}, x + it.g0 * r.gs + it.e0 * r.es, it.e1 - it.e0, r.es);
    } else {
      walk(r, it, [&](std::int64_t k, std::int64_t at) { acc[k].add(value_of(x[at])); });
    }
    for (std::int64_t g = it.g0; g < it.g1; ++g) {
      const RunningSum& a = acc[g - it.g0];
      const auto u = static_cast<std::size_t>(g);
      want.exact[u] = static_cast<double>(a.exact);
      want.naive[u] = to_bf16(a.naive);
      want.scale[u] = std::isfinite(a.abs) ? a.abs : 0.0;
    }
  });
  return want;
}

// Sum (y bf16: ReducePlan writes x's dtype) of one bf16 buffer of n = 2^31 + 2^27 elements
// (4.6 GB) seen as
//   [2, 2^30 + 2^26] over dim 1   row 1 starts at 1.07e9 and crosses 2^31 (split_row_vec16,
//                                 split_row, block_row_vec16, block_row, generic)
//   [n] over all dims             one group of n > 2^31 elements (the same five)
//   [2^21 + 2^17, 1024] over dim 1  rows past 2^21 start past 2^31 (warp_row_vec16,
//                                 block_row_vec16, block_row, generic)
//   [n / 1032, 1032] over dim 0   columns: element offsets up to n (column_stream_vec16,
//                                 column_vec16, column, generic)
// (the SKUs that accept on sm_90 with 132 SMs; whichever accept on the device run). Index
// paths (read in src/reduce/reduce.cpp, kernels/reduce.cuh,
// elementwise/kernels/column_reduce.cuh): one path, 64-bit: ReduceParams carries groups, n,
// slices and strides in int64 and every kernel (row, split + finish, column, generic,
// column_stream) computes offsets in int64; no SKU has a 32-bit variant or refuses these sizes.
TEST(ReduceHuge, SumBf16Beyond2Pow31Elements) {
  BARACUDA_REQUIRE_GPU();
  const std::int64_t L = (std::int64_t{1} << 30) + (std::int64_t{1} << 26), n = 2 * L;
  HostTensor hx = flat(DType::kBF16, n);
  fill_uniform(static_cast<std::uint16_t*>(hx.data()), n, -2, 2, kBias, 1);
  std::optional<DeviceTensor> dx;
  ASSERT_TRUE(on_device(dx, hx, "x"));
  const std::uint16_t* x = bf16_data(hx);
  const std::int64_t C = 1032, R = n / C;
  struct View {
    std::string name;
    TensorLayout x;
    ReduceAxes axes;
    Runs runs;
  };
  const std::vector<View> views = {
      {"[2, 2^30 + 2^26] dim 1", TensorLayout::contiguous(DType::kBF16, {2, L}), ReduceAxes::of({1}), {2, L, L, 1}},
      {"[2^31 + 2^27] all", TensorLayout::contiguous(DType::kBF16, {n}), ReduceAxes::all(), {1, n, 0, 1}},
      {"[2^21 + 2^17, 1024] dim 1", TensorLayout::contiguous(DType::kBF16, {n / 1024, 1024}), ReduceAxes::of({1}),
       {n / 1024, 1024, 1024, 1}},
      {std::string("[").append(std::to_string(R)).append(", 1032] dim 0"), TensorLayout::contiguous(DType::kBF16, {R, C}),
       ReduceAxes::of({0}), {C, R, 1, C}},
  };
  // the streamed oracle against reference::reduce on the leading [16, 1024] over dim 1 (a
  // run a thread) and [4096, 1032] over dim 0 (the column walk)
  for (const auto& [rows, cols, dim] : {std::tuple{16, 1024, 1}, std::tuple{4096, 1032, 0}}) {
    const auto l = TensorLayout::contiguous(DType::kBF16, {rows, cols});
    ASSERT_LE(l.numel(), n);
    HostTensor h(l);
    std::memcpy(h.data(), x, h.storage_bytes());
    const ReduceAxes a = ReduceAxes::of({dim});
    auto ref = reference::reduce(ReduceDescriptor{.x = l, .y = reduced_layout(l, a, false, DType::kBF16).value(), .axes = a}, h);
    ASSERT_TRUE(ref.has_value()) << ref.error().to_string();
    const Runs r = dim == 1 ? Runs{rows, cols, cols, 1} : Runs{cols, rows, 1, cols};
    ASSERT_TRUE(same_oracle(sum_oracle(x, r), ref.value(), 0)) << l.to_string() << " dim " << dim;
  }
  const Stream& st = test_stream();
  for (const View& v : views) {
    ASSERT_GT(v.x.numel(), kTwo31);
    const TensorLayout yl = reduced_layout(v.x, v.axes, false, DType::kBF16).value();
    const ReduceDescriptor d{.x = v.x, .y = yl, .axes = v.axes};
    const Result want = sum_oracle(x, v.runs);
    HostTensor hy(yl);
    std::optional<DeviceTensor> dy;
    ASSERT_TRUE(on_device(dy, hy, "y"));
    std::string ran;
    for_each_sku<ReducePlan>(
        d, [&] { dy->poison(0xFF, st); },
        [&](const ReducePlan& p, Workspace ws) { return p.run(st, ws, ReduceArgs{.x = dx->data(), .y = dy->data()}); },
        [&](const std::string& sku) {
          ASSERT_TRUE(dy->download(hy, st)) << sku;
          EXPECT_TRUE(check_close(hy, want, sku + " on " + v.name));
          ran += " " + sku;
        });
    std::cout << "  reduce sum " << v.name << ":" << ran << "\n";
  }
}

// ------------------------------------------------------------------ scan

struct Oracle {
  double exact, naive, scale;
};
// cumsum's element in reference/scan.cpp (forward_row; y f32, depth = log2(len + 1) + 2).
Oracle cumsum_value(const RunningSum& s, double depth) {
  return {static_cast<double>(s.exact), static_cast<double>(s.naive), depth * s.abs};
}

// The elements x[at], x[at + es], ... (n of them) of one run continued from `a`, each judged
// against y's. Not inlined, as `continued`.
[[gnu::noinline]] void judge_cumsum_run(RunningSum a, const float* x, const float* y, std::int64_t at, std::int64_t n,
                                        std::int64_t es, double depth, ElementJudge& j) {
  for (std::int64_t e = 0; e < n; ++e, at += es) {
    a.add(x[at]);
    const Oracle o = cumsum_value(a, depth);
    j.add(at, y[at], o.exact, o.naive, o.scale);
  }
}

// Every element of y = cumsum(x) along `r`'s runs; a single run (seg > 0) starts its segments
// from `starts` (the running sums there, taken by one pass in order).
reference::Comparison judge_cumsum(const float* x, const float* y, const Runs& r, const std::vector<RunningSum>& starts) {
  const double depth = std::log2(static_cast<double>(r.len) + 1) + 2;
  return judge_items(DType::kF32, r.items(), [&](std::int64_t i, ElementJudge& j) {
    const Runs::Item it = r.item(i);
    if (r.batch() == 1) {
      const RunningSum a = r.seg > 0 ? starts[static_cast<std::size_t>(it.segment)] : RunningSum{};
      judge_cumsum_run(a, x, y, it.g0 * r.gs + it.e0 * r.es, it.e1 - it.e0, r.es, depth, j);
      return;
    }
    RunningSum acc[kBatch];
    walk(r, it, [&](std::int64_t k, std::int64_t at) {
      acc[k].add(x[at]);
      const Oracle o = cumsum_value(acc[k], depth);
      j.add(at, y[at], o.exact, o.naive, o.scale);
    });
  });
}

// The running sums at the start of each segment of one run of `len` elements from x[0].
std::vector<RunningSum> segment_starts(const float* x, std::int64_t len, std::int64_t seg) {
  std::vector<RunningSum> starts;
  RunningSum acc;
  for (std::int64_t s = 0; s < len; s += seg) {
    starts.push_back(acc);
    acc = continued(acc, x + s, std::min(len, s + seg) - s, 1);
  }
  return starts;
}

// The streamed oracle (cumsum_value) against reference::scan on the first 4 rows of 1024.
::testing::AssertionResult cumsum_oracle_is_the_reference(const float* x) {
  const auto l = TensorLayout::contiguous(DType::kF32, {4, 1024});
  HostTensor h(l);
  std::memcpy(h.data(), x, h.storage_bytes());
  auto ref = reference::scan(ScanDescriptor{.x = l, .y = l, .indices = {}, .axis = 1}, h);
  if (!ref) return ::testing::AssertionFailure() << ref.error().to_string();
  Result mine = reference::zero_result(4 * 1024);
  const double depth = std::log2(1025.0) + 2;
  for (std::int64_t row = 0; row < 4; ++row) {
    RunningSum acc;
    for (std::int64_t e = row * 1024; e < (row + 1) * 1024; ++e) {
      acc.add(x[e]);
      const Oracle o = cumsum_value(acc, depth);
      const auto u = static_cast<std::size_t>(e);
      mine.exact[u] = o.exact, mine.naive[u] = o.naive, mine.scale[u] = o.scale;
    }
  }
  return same_oracle(mine, ref->values, 0);
}

// cumsum of f32 (the f32 cumsum), forward, over one buffer of kElements (8.9 GB in,
// 8.9 GB out) seen as each of `views` (a 2-D shape, the axis); every accepting SKU but
// `column` on a single row (one thread would walk 2.2e9 elements). Index paths (src/scan/scan.cpp,
// kernels/scan.cuh, cub_scan.cu): one path, 64-bit: ScanParams rows / len / strides and
// ScanCtx's offsets are int64 in warp_row, block_row, lookback (64-bit ticket), column and
// column_split; cub passes the int64 length to cub::DeviceScan::InclusiveSum, whose offset
// type is then 64-bit (choose_offset_t); no SKU refuses these sizes.
void run_cumsum_views(const std::vector<std::pair<TensorLayout, int>>& views) {
  const std::int64_t n = kElements;
  HostTensor hx = flat(DType::kF32, n), hy = flat(DType::kF32, n);
  fill_uniform(static_cast<float*>(hx.data()), n, -2, 2, kBias, 2);
  std::optional<DeviceTensor> dx, dy;
  ASSERT_TRUE(on_device(dx, hx, "x"));
  ASSERT_TRUE(on_device(dy, hy, "y"));
  const float* x = f32_data(hx);
  ASSERT_TRUE(cumsum_oracle_is_the_reference(x));
  const Stream& st = test_stream();
  for (const auto& view : views) {
    const TensorLayout& l = view.first;
    const int axis = view.second;
    ASSERT_EQ(l.numel(), n);
    const std::int64_t rows = l.shape[0], cols = l.shape[1];
    Runs r = axis == 1 ? Runs{rows, cols, cols, 1} : Runs{cols, rows, 1, cols};
    std::vector<RunningSum> starts;
    if (r.count == 1) {
      r.seg = std::int64_t{1} << 22;
      starts = segment_starts(x, r.len, r.seg);
    }
    const ScanDescriptor d{.x = l, .y = l, .indices = {}, .axis = axis};
    std::string ran;
    for_each_sku<ScanPlan>(
        d, [&] { dy->poison(0xFF, st); },
        [&](const ScanPlan& p, Workspace ws) { return p.run(st, ws, ScanArgs{.x = dx->data(), .y = dy->data()}); },
        [&](const std::string& sku) {
          ASSERT_TRUE(dy->download(hy, st)) << sku;
          EXPECT_TRUE(verdict(judge_cumsum(x, f32_data(hy), r, starts), sku + " on " + l.to_string()));
          ran += " " + sku;
        },
        [&](const KernelSku& s) { return one_thread_a_row(s, r.len); });
    std::cout << "  cumsum " << l.to_string() << " axis " << axis << ":" << ran << "\n";
  }
}

// One row of 2^31 + 2^26 elements: element indices within the row past 2^31 (cub,
// lookback_vec16, lookback, block_row_vec16, block_row, column_split; `column` not forced).
TEST(ScanHuge, CumsumF32OneRowBeyond2Pow31) {
  BARACUDA_REQUIRE_GPU();
  run_cumsum_views({{TensorLayout::contiguous(DType::kF32, {1, kElements}), 1}});
}

// [2^21 + 2^16, 1024] along dim 1 (rows past 2^21 start past 2^31: warp_row_vec16, warp_row,
// block_row_vec16, block_row, column) and [2^16 + 2^11, 32768] along dim 0 (32768 columns of
// 67584 elements 32768 apart: column_split, column).
TEST(ScanHuge, CumsumF32RowsAndColumnsBeyond2Pow31) {
  BARACUDA_REQUIRE_GPU();
  run_cumsum_views({{TensorLayout::contiguous(DType::kF32, {kElements / 1024, 1024}), 1},
                    {TensorLayout::contiguous(DType::kF32, {kElements / 32768, 32768}), 0}});
}

// ------------------------------------------------------------------ softmax and norms

// Rows of `len` bf16 elements: row r of x at (r / per_outer) * outer_stride + (r % per_outer)
// * len (a [outer, per_outer, len] view with padded outer rows; plain rows: per_outer =
// count), y contiguous (row r at r * len).
struct Rows {
  std::int64_t count, len, per_outer, outer_stride;
  std::int64_t x_at(std::int64_t r) const { return (r / per_outer) * outer_stride + (r % per_outer) * len; }
};
// A problem of softmax / the norms along the last dim: x, y (contiguous) and their rows; seg
// > 0 cuts the rows in segments of seg elements over the cores (long rows).
struct RowProblem {
  TensorLayout x, y;
  Rows rows;
  std::int64_t seg = 0;
};
// [1056, 1024, 2048] with x's outer stride 1024 * 2048 + 64: the kept dims do not collapse
// (two kept dims, each row offset unravelled), 1081344 rows of 4 KiB, 2^31 + 2^26 elements;
// rows past 2^20 start past 2^31.
RowProblem padded_rows_2048() {
  const std::int64_t outer = 1056, per = 1024, len = 2048, stride = per * len + 64;
  return {TensorLayout::strided(DType::kBF16, {outer, per, len}, {stride, len, 1}),
          TensorLayout::contiguous(DType::kBF16, {outer, per, len}), {outer * per, len, per, stride}};
}
// Contiguous [rows, len].
RowProblem plain_rows(std::int64_t rows, std::int64_t len, std::int64_t seg = 0) {
  const auto l = TensorLayout::contiguous(DType::kBF16, {rows, len});
  return {l, l, {rows, len, rows, 0}, seg};
}
// The first `rows` x `len` elements of x as a [rows, len] tensor (the self-checks: rows of
// each problem's formulas, whatever its view).
HostTensor leading_rows(const std::uint16_t* x, std::int64_t rows, std::int64_t len) {
  HostTensor h(TensorLayout::contiguous(DType::kBF16, {rows, len}));
  std::memcpy(h.data(), x, h.storage_bytes());
  return h;
}
// x (filled, with its pads) and y of a problem on the host and the device.
struct RowBuffers {
  HostTensor hx, hy;
  std::optional<DeviceTensor> dx, dy;
  explicit RowBuffers(const RowProblem& p) : hx(p.x), hy(flat(DType::kBF16, p.y.numel())) {}
  const std::uint16_t* x() const { return bf16_data(hx); }
};
::testing::AssertionResult place(RowBuffers& b, std::uint64_t salt) {
  fill_uniform(static_cast<std::uint16_t*>(b.hx.data()), static_cast<std::int64_t>(b.hx.storage_bytes() / 2), -2, 2, kBias, salt);
  auto ok = on_device(b.dx, b.hx, "x");
  return ok ? on_device(b.dy, b.hy, "y") : ok;
}

// Rows, or (seg > 0) segments of rows, as work items: f(row, e0, e1) for item i.
template <class F>
void row_items(const Rows& v, std::int64_t seg, std::int64_t i, const F& f) {
  const std::int64_t segs = seg > 0 ? (v.len + seg - 1) / seg : 1, sl = seg > 0 ? seg : v.len;
  const std::int64_t r = i / segs, e0 = (i % segs) * sl;
  f(r, e0, std::min(v.len, e0 + sl));
}
std::int64_t row_item_count(const Rows& v, std::int64_t seg) { return v.count * (seg > 0 ? (v.len + seg - 1) / seg : 1); }

// Softmax's oracle in the reference's formulas (reference/softmax.cpp forward_row): a row's
// m = max x (exact: a bf16 value) and s = sum exp(x - m) in long double, the naive twin's f32
// sum sc of expf(float(x) - float(m)) in order; element x: exact exp(x - m) / s, naive
// expf(float(x) - float(m)) / sc rounded to bf16, scale |y| (|x - m| + depth), depth =
// log2(len + 1) + 4. The exponentials come from tables over the 65536 bf16 values, one a
// distinct m (a few: the rows' maxima sit near 2): exp in double (the reference's expl is 6x
// slower; the exact values move by < 1e-15 relative, far inside bf16's tolerance, the
// self-check allows 1e-14), expf as the reference calls it. naive_is_exact: long rows, see
// their test.
struct SoftmaxOracle {
  struct Row {
    double m = -std::numeric_limits<double>::infinity();
    long double s = 0;
    float sc = 0;
    std::size_t table = 0;
  };
  std::vector<Row> rows;
  std::vector<std::vector<double>> exps;
  std::vector<std::vector<float>> expfs;
  double depth = 0;
  bool naive_is_exact = false;
  Oracle value(std::int64_t r, std::uint16_t xb) const {
    const Row& w = rows[static_cast<std::size_t>(r)];
    const double e = exps[w.table][xb] / static_cast<double>(w.s);
    const double nv = naive_is_exact ? e : to_bf16(expfs[w.table][xb] / w.sc);
    const double sc = std::fabs(e) * (std::fabs(bf(xb) - w.m) + depth);
    return {e, nv, std::isfinite(sc) ? sc : 0.0};
  }
};

// The oracle of p's rows: maxima, then the tables, then the sums (a thread a row, or for long
// rows segments over the cores, their long double sums added in order; no f32 twin).
SoftmaxOracle softmax_oracle(const std::uint16_t* x, const RowProblem& p) {
  const Rows& v = p.rows;
  SoftmaxOracle o;
  o.rows.resize(static_cast<std::size_t>(v.count));
  o.depth = std::log2(static_cast<double>(v.len) + 1) + 4;
  o.naive_is_exact = p.seg > 0;
  const std::int64_t items = row_item_count(v, p.seg), segs = items / v.count;
  std::vector<double> part_max(static_cast<std::size_t>(items));
  parallel_items(items, [&](std::int64_t i, int) {
    row_items(v, p.seg, i, [&](std::int64_t r, std::int64_t e0, std::int64_t e1) {
      const std::uint16_t* xr = x + v.x_at(r);
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t e = e0; e < e1; ++e) m = std::max(m, bf(xr[e]));
      part_max[static_cast<std::size_t>(i)] = m;
    });
  });
  std::vector<double> maxima;  // one table each
  for (std::int64_t i = 0; i < items; ++i) {
    SoftmaxOracle::Row& w = o.rows[static_cast<std::size_t>(i / segs)];
    w.m = std::max(w.m, part_max[static_cast<std::size_t>(i)]);
    if (i % segs != segs - 1) continue;
    const auto at = std::find(maxima.begin(), maxima.end(), w.m);
    w.table = static_cast<std::size_t>(at - maxima.begin());
    if (at == maxima.end()) maxima.push_back(w.m);
  }
  o.exps.assign(maxima.size(), std::vector<double>(65536));
  o.expfs.assign(maxima.size(), std::vector<float>(65536));
  for (std::size_t t = 0; t < maxima.size(); ++t)
    for (std::uint32_t b = 0; b < 65536; ++b) {
      const double xv = bf(static_cast<std::uint16_t>(b));
      o.exps[t][b] = std::exp(xv - maxima[t]);
      o.expfs[t][b] = std::exp(static_cast<float>(xv) - static_cast<float>(maxima[t]));
    }
  std::vector<long double> part_sum(static_cast<std::size_t>(items));
  parallel_items(items, [&](std::int64_t i, int) {
    row_items(v, p.seg, i, [&](std::int64_t r, std::int64_t e0, std::int64_t e1) {
      SoftmaxOracle::Row& w = o.rows[static_cast<std::size_t>(r)];
      const std::uint16_t* xr = x + v.x_at(r);
      long double sum = 0;
      float sc = 0;
      for (std::int64_t e = e0; e < e1; ++e) {
        sum += o.exps[w.table][xr[e]];
        if (!o.naive_is_exact) sc += o.expfs[w.table][xr[e]];
      }
      part_sum[static_cast<std::size_t>(i)] = sum;
      if (segs == 1) w.sc = sc;
    });
  });
  for (std::int64_t i = 0; i < items; ++i) o.rows[static_cast<std::size_t>(i / segs)].s += part_sum[static_cast<std::size_t>(i)];
  return o;
}

// Every element of y = softmax(x) over p's rows.
reference::Comparison judge_softmax(const std::uint16_t* x, const std::uint16_t* y, const RowProblem& p, const SoftmaxOracle& o) {
  const Rows& v = p.rows;
  return judge_items(DType::kBF16, row_item_count(v, p.seg), [&](std::int64_t i, ElementJudge& j) {
    row_items(v, p.seg, i, [&](std::int64_t r, std::int64_t e0, std::int64_t e1) {
      const std::uint16_t* xr = x + v.x_at(r);
      for (std::int64_t e = e0; e < e1; ++e) {
        const Oracle w = o.value(r, xr[e]);
        j.add(r * v.len + e, bf(y[r * v.len + e]), w.exact, w.naive, w.scale);
      }
    });
  });
}

// The oracle against reference::softmax on the first 3 rows of 2048 elements of x.
::testing::AssertionResult softmax_oracle_is_the_reference(const std::uint16_t* x) {
  const std::int64_t rows = 3, len = 2048;
  const HostTensor h = leading_rows(x, rows, len);
  auto ref = reference::softmax(SoftmaxDescriptor{.x = h.layout(), .y = h.layout()}, h);
  if (!ref) return ::testing::AssertionFailure() << ref.error().to_string();
  const SoftmaxOracle o = softmax_oracle(x, plain_rows(rows, len));
  Result mine = reference::zero_result(rows * len);
  for (std::int64_t e = 0; e < rows * len; ++e) {
    const Oracle w = o.value(e / len, x[e]);
    const auto u = static_cast<std::size_t>(e);
    mine.exact[u] = w.exact, mine.naive[u] = w.naive, mine.scale[u] = w.scale;
  }
  return same_oracle(mine, ref.value(), 1e-14);
}

// Softmax forward along the last dim, bf16, `p` (2^31 + 2^26 elements: x and y 4.4 GB each);
// every accepting SKU but `column` on rows of 2^30 elements. Index paths
// (src/softmax/softmax.cpp, kernels/softmax.cuh, kernels/softmax_tma.cuh): the row kernels
// (warp, block, cluster, split, column) find a row by row_offset, int64; tma_row by
// tma_row_offset (common/tma_rows.cuh): with two kept dims the row is unravelled in 32-bit
// unsigned arithmetic (the plan refuses rows >= 2^31) and the offset summed in int64.
void run_softmax_huge(const RowProblem& p, std::uint64_t salt) {
  ASSERT_EQ(p.y.numel(), kElements);
  RowBuffers b(p);
  ASSERT_TRUE(place(b, salt));
  const std::uint16_t* x = b.x();
  ASSERT_TRUE(softmax_oracle_is_the_reference(x));
  const SoftmaxOracle o = softmax_oracle(x, p);
  const Stream& st = test_stream();
  std::string ran;
  for_each_sku<SoftmaxPlan>(
      SoftmaxDescriptor{.x = p.x, .y = p.y}, [&] { b.dy->poison(0xFF, st); },
      [&](const SoftmaxPlan& plan, Workspace ws) { return plan.run(st, ws, SoftmaxArgs{.x = b.dx->data(), .y = b.dy->data()}); },
      [&](const std::string& sku) {
        ASSERT_TRUE(b.dy->download(b.hy, st)) << sku;
        EXPECT_TRUE(verdict(judge_softmax(x, bf16_data(b.hy), p, o), sku + " on " + p.x.to_string()));
        ran += " " + sku;
      },
      [&](const KernelSku& s) { return one_thread_a_row(s, p.rows.len); });
  std::cout << "  softmax " << p.x.to_string() << ":" << ran << "\n";
}

// Rows of 4 KiB in the padded view: block_row_vec16, block_row, tma_row_vec16 (its 32-bit row
// unravelling past 2^31), cluster_row_vec16, split_row_vec16, split_row, column (the SKUs
// accepting on sm_90 with 132 SMs).
TEST(SoftmaxHuge, PaddedRows2048Beyond2Pow31Elements) {
  BARACUDA_REQUIRE_GPU();
  run_softmax_huge(padded_rows_2048(), 3);
}

// [2^22 + 2^17, 512] contiguous: warp_row_vec16, warp_row, block_row_vec16, block_row,
// cluster_row_vec16, split_row_vec16, split_row, column.
TEST(SoftmaxHuge, Rows512Beyond2Pow31Elements) {
  BARACUDA_REQUIRE_GPU();
  run_softmax_huge(plain_rows(kElements / 512, 512), 4);
}

// [2, 2^30 + 2^25]: two rows of 1.1e9 elements, row 1 crossing 2^31 (split_row_vec16,
// split_row; `column` not forced: a thread a row). Judged without the naive twin's allowance
// (naive := exact, a stricter bound than the family's): the twin's sequential f32 sum of 1.1e9
// exponentials stalls once the sum passes 2^24 (each term rounds away), so its error would
// excuse anything; the bound left, 1 bf16 ulp + 4 eps_f32 |y| (|x - m| + 34), holds f32 tree
// sums with a margin of ~2x.
TEST(SoftmaxHuge, TwoRowsBeyond2Pow31Elements) {
  BARACUDA_REQUIRE_GPU();
  run_softmax_huge(plain_rows(2, kElements / 2, std::int64_t{1} << 22), 5);
}

// A norm row's statistics in the reference's formulas (reference/normalization.cpp
// forward_rows): exact in long double, the naive twin in f32 in order.
struct NormRow {
  long double mean = 0, rstd = 0, sabs = 0;
  float meanc = 0, rstdc = 0;
  double mean_abs = 0, rstd_d = 0;  // double(sabs / n), double(rstd): the scale's terms, once a row
};
NormRow norm_row(const std::uint16_t* h, std::int64_t n, bool layer, double eps) {
  NormRow r;
  long double s = 0;
  float sc = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const double v = bf(h[k]);
    s += layer ? v : static_cast<long double>(v) * v;
    r.sabs += std::fabs(v);
    sc += layer ? static_cast<float>(v) : static_cast<float>(v) * static_cast<float>(v);
  }
  r.mean = layer ? s / n : 0;
  r.meanc = layer ? sc / static_cast<float>(n) : 0.0f;
  long double var = 0;
  float varc = 0;
  if (layer) {
    for (std::int64_t k = 0; k < n; ++k) {
      const double v = bf(h[k]);
      var += (v - r.mean) * (v - r.mean);
      varc += (static_cast<float>(v) - r.meanc) * (static_cast<float>(v) - r.meanc);
    }
    var /= n;
    varc /= static_cast<float>(n);
  } else {
    var = s / n;
    varc = sc / static_cast<float>(n);
  }
  r.rstd = 1.0L / std::sqrt(var + static_cast<long double>(eps));
  r.rstdc = 1.0f / std::sqrt(varc + static_cast<float>(eps));
  r.mean_abs = static_cast<double>(r.sabs / n);
  r.rstd_d = static_cast<double>(r.rstd);
  return r;
}
double finite_or0(double v) { return std::isfinite(v) ? v : 0.0; }
// y's element h of a row (weight wv, bias bv; 0 without), depth = log2(n + 1) + 4.
Oracle norm_value(const NormRow& r, double h, double wv, double bv, double depth) {
  const double e = static_cast<double>((h - r.mean) * r.rstd * wv + bv);
  const double nv = to_bf16((static_cast<float>(h) - r.meanc) * r.rstdc * static_cast<float>(wv) + static_cast<float>(bv));
  const double sc = finite_or0((std::fabs(h) + r.mean_abs) * r.rstd_d * std::fabs(wv) * depth + std::fabs(bv));
  return {e, nv, sc};
}
// The saved mean and rstd of a row (f32).
Oracle mean_value(const NormRow& r, double depth) {
  return {static_cast<double>(r.mean), r.meanc, finite_or0(r.mean_abs * depth)};
}
Oracle rstd_value(const NormRow& r, double depth) {
  return {r.rstd_d, r.rstdc, finite_or0(r.rstd_d * depth * (1 + std::fabs(static_cast<double>(r.mean * r.rstd))))};
}

// The norms' oracle of a problem: the rows' statistics, weight and bias as doubles.
struct NormOracle {
  bool layer;
  std::int64_t len;
  double depth;
  std::vector<double> w, b;
  std::vector<NormRow> rows;
  Oracle y(const NormRow& s, std::uint16_t xb, std::int64_t k) const {  // element k of a row, bf16 bits xb
    const auto u = static_cast<std::size_t>(k);
    return norm_value(s, bf(xb), w[u], b[u], depth);
  }
};
NormOracle norm_oracle(const std::uint16_t* x, const Rows& v, const HostTensor& hw, const HostTensor* hb, bool layer,
                       double eps) {
  NormOracle o{layer, v.len, std::log2(static_cast<double>(v.len) + 1) + 4, {}, {}, {}};
  o.w.assign(static_cast<std::size_t>(v.len), 0.0);
  o.b.assign(o.w.size(), 0.0);
  for (std::int64_t k = 0; k < v.len; ++k) {
    o.w[static_cast<std::size_t>(k)] = bf(bf16_data(hw)[k]);
    if (hb) o.b[static_cast<std::size_t>(k)] = bf(bf16_data(*hb)[k]);
  }
  o.rows.resize(static_cast<std::size_t>(v.count));
  parallel_items(v.count, [&](std::int64_t r, int) { o.rows[static_cast<std::size_t>(r)] = norm_row(x + v.x_at(r), v.len, layer, eps); });
  return o;
}

// Every element of y, mean (LayerNorm; null: not judged) and rstd against the oracle.
struct NormVerdict {
  reference::Comparison y, mean, rstd;
};
NormVerdict judge_norm(const std::uint16_t* x, const std::uint16_t* y, const float* mean, const float* rstd, const Rows& v,
                       const NormOracle& o) {
  NormVerdict out;
  out.y = judge_items(DType::kBF16, v.count, [&](std::int64_t r, ElementJudge& j) {
    const NormRow& s = o.rows[static_cast<std::size_t>(r)];
    const std::uint16_t* xr = x + v.x_at(r);
    for (std::int64_t k = 0; k < v.len; ++k) {
      const Oracle e = o.y(s, xr[k], k);
      j.add(r * v.len + k, bf(y[r * v.len + k]), e.exact, e.naive, e.scale);
    }
  });
  ElementJudge jm(DType::kF32), jr(DType::kF32);
  for (std::int64_t r = 0; r < v.count; ++r) {
    const NormRow& s = o.rows[static_cast<std::size_t>(r)];
    const Oracle m = mean_value(s, o.depth), q = rstd_value(s, o.depth);
    if (mean) jm.add(r, mean[r], m.exact, m.naive, m.scale);
    jr.add(r, rstd[r], q.exact, q.naive, q.scale);
  }
  out.mean = jm.finish();
  out.rstd = jr.finish();
  return out;
}

// The streamed oracle against reference::norm_forward on the first 3 rows of x (d: the
// problem's descriptor, its x and y replaced).
template <class Desc>
::testing::AssertionResult norm_oracle_is_the_reference(Desc d, const std::uint16_t* x, const NormOracle& o,
                                                        const HostTensor& hw, const HostTensor* hb) {
  const std::int64_t rows = 3, len = o.len;
  const HostTensor h = leading_rows(x, rows, len);
  d.x = d.y = h.layout();
  auto ref = reference::norm_forward(d, h, nullptr, &hw, hb);
  if (!ref) return ::testing::AssertionFailure() << ref.error().to_string();
  Result y = reference::zero_result(rows * len), mean = reference::zero_result(rows), rstd = reference::zero_result(rows);
  for (std::int64_t r = 0; r < rows; ++r) {
    const NormRow s = norm_row(x + r * len, len, o.layer, d.eps);
    for (std::int64_t k = 0; k < len; ++k) {
      const Oracle e = o.y(s, x[r * len + k], k);
      const auto i = static_cast<std::size_t>(r * len + k);
      y.exact[i] = e.exact, y.naive[i] = e.naive, y.scale[i] = e.scale;
    }
    const Oracle m = mean_value(s, o.depth), q = rstd_value(s, o.depth);
    const auto u = static_cast<std::size_t>(r);
    mean.exact[u] = m.exact, mean.naive[u] = m.naive, mean.scale[u] = m.scale;
    rstd.exact[u] = q.exact, rstd.naive[u] = q.naive, rstd.scale[u] = q.scale;
  }
  auto same = same_oracle(y, ref->y, 0);
  if (same) same = same_oracle(rstd, ref->rstd, 0);
  if (same && o.layer) same = same_oracle(mean, ref->mean, 0);
  return same;
}

// LayerNorm / RMSNorm forward over `p` (bf16, 2^31 + 2^26 elements; weight [len] in [0.5,
// 1.5), LayerNorm's bias in [-1, 1)), the saved mean (LayerNorm) and rstd (f32 a row) checked
// too; every accepting SKU. Index paths (src/normalization/normalization.cpp,
// kernels/norm*.cuh): the row kernels (warp, block, cluster, split) find a row by row_offset,
// int64; tma_lean and tma_row by tma_row_offset: with two kept dims the row unravelled in
// 32-bit unsigned arithmetic (rows < 2^31, refused otherwise), the offset summed in int64.
template <class PlanT, class Desc>
void run_norm_huge(Desc d, const RowProblem& p, std::uint64_t salt) {
  ASSERT_EQ(p.y.numel(), kElements);
  const bool layer = d.kind == NormKind::kLayerNorm;
  const Rows& v = p.rows;
  const auto wl = TensorLayout::contiguous(DType::kBF16, {v.len});
  const auto sl = TensorLayout::contiguous(DType::kF32, {v.count});
  d.x = p.x;
  d.y = p.y;
  d.normalized_rank = 1;
  d.has_weight = true;
  d.has_bias = layer;
  d.weight = wl;
  if (layer) d.bias = wl;
  d.save_stats = true;
  RowBuffers b(p);
  ASSERT_TRUE(place(b, salt));
  HostTensor hw(wl), hb(wl), hmean(sl), hrstd(sl);
  fill_uniform(static_cast<std::uint16_t*>(hw.data()), v.len, 0.5, 1.5, 0, salt + 100);
  fill_uniform(static_cast<std::uint16_t*>(hb.data()), v.len, -1, 1, 0, salt + 200);
  std::optional<DeviceTensor> dw, db, dmean, drstd;
  ASSERT_TRUE(on_device(dw, hw, "weight"));
  ASSERT_TRUE(on_device(db, hb, "bias"));
  ASSERT_TRUE(on_device(dmean, hmean, "mean"));
  ASSERT_TRUE(on_device(drstd, hrstd, "rstd"));
  const std::uint16_t* x = b.x();
  const HostTensor* bias = layer ? &hb : nullptr;
  const NormOracle o = norm_oracle(x, v, hw, bias, layer, d.eps);
  ASSERT_TRUE(norm_oracle_is_the_reference(d, x, o, hw, bias));
  const Stream& st = test_stream();
  std::string ran;
  for_each_sku<PlanT>(
      d,
      [&] {
        b.dy->poison(0xFF, st);
        dmean->poison(0xFF, st);
        drstd->poison(0xFF, st);
      },
      [&](const PlanT& plan, Workspace ws) {
        return plan.run(st, ws, NormArgs{.x = b.dx->data(), .weight = dw->data(), .bias = layer ? db->data() : nullptr,
                                         .y = b.dy->data(), .mean = layer ? dmean->data() : nullptr, .rstd = drstd->data()});
      },
      [&](const std::string& sku) {
        ASSERT_TRUE(b.dy->download(b.hy, st)) << sku;
        ASSERT_TRUE(dmean->download(hmean, st)) << sku;
        ASSERT_TRUE(drstd->download(hrstd, st)) << sku;
        const NormVerdict c = judge_norm(x, bf16_data(b.hy), layer ? f32_data(hmean) : nullptr, f32_data(hrstd), v, o);
        EXPECT_TRUE(verdict(c.y, sku + " y"));
        EXPECT_TRUE(verdict(c.mean, sku + " mean"));
        EXPECT_TRUE(verdict(c.rstd, sku + " rstd"));
        ran += " " + sku;
      });
  std::cout << "  " << d.to_string() << ":" << ran << "\n";
}

// The padded rows of 2048 (tma_lean_vec16 and tma_row_vec16 with their 32-bit row unravelling
// past 2^31, block_row_vec16, block_row, cluster_row_vec16, split_row_vec16, split_row) and
// contiguous [2^22 + 2^17, 512] (warp_row_vec16, warp_row, block_row_vec16, block_row,
// cluster_row_vec16, split_row_vec16, split_row): the SKUs accepting on sm_90 with 132 SMs.
TEST(NormHuge, LayerNormPaddedRows2048Beyond2Pow31Elements) {
  BARACUDA_REQUIRE_GPU();
  run_norm_huge<LayerNormPlan>(LayerNormDescriptor{}, padded_rows_2048(), 6);
}
TEST(NormHuge, LayerNormRows512Beyond2Pow31Elements) {
  BARACUDA_REQUIRE_GPU();
  run_norm_huge<LayerNormPlan>(LayerNormDescriptor{}, plain_rows(kElements / 512, 512), 7);
}
TEST(NormHuge, RMSNormPaddedRows2048Beyond2Pow31Elements) {
  BARACUDA_REQUIRE_GPU();
  run_norm_huge<RMSNormPlan>(RMSNormDescriptor{}, padded_rows_2048(), 8);
}
TEST(NormHuge, RMSNormRows512Beyond2Pow31Elements) {
  BARACUDA_REQUIRE_GPU();
  run_norm_huge<RMSNormPlan>(RMSNormDescriptor{}, plain_rows(kElements / 512, 512), 9);
}

// ------------------------------------------------------------------ the host side, without a device

// `got` with 4 elements wrong: 3 off by 5% (past every tolerance here) and one NaN.
template <class T>
void corrupt(T* got, std::int64_t n) {
  for (std::int64_t i : {n / 3, n / 2, n - 1}) {
    if constexpr (std::is_same_v<T, float>) got[i] = got[i] * 1.05f + 1e-3f;
    else got[i] = f32_to_bf16_bits(static_cast<float>(bf(got[i]) * 1.05 + 1e-3));
  }
  if constexpr (std::is_same_v<T, float>) got[n / 5] = std::numeric_limits<float>::quiet_NaN();
  else got[n / 5] = 0x7FC0;
}
// The rows of p's x as a contiguous [rows, len] tensor (the reference's input).
HostTensor contiguous_rows(const HostTensor& hx, const Rows& v) {
  HostTensor h(TensorLayout::contiguous(DType::kBF16, {v.count, v.len}));
  for (std::int64_t r = 0; r < v.count; ++r)
    std::memcpy(static_cast<std::uint16_t*>(h.data()) + r * v.len, bf16_data(hx) + v.x_at(r), static_cast<std::size_t>(v.len) * 2);
  return h;
}
// The bf16 values of a Result's exact (a correct output).
void exact_to_bf16(const Result& r, HostTensor& got) {
  for (std::size_t i = 0; i < r.exact.size(); ++i)
    static_cast<std::uint16_t*>(got.data())[i] = f32_to_bf16_bits(static_cast<float>(r.exact[i]));
}
::testing::AssertionResult same_verdict(const reference::Comparison& mine, const reference::Comparison& ref, bool detail = true) {
  if (mine.ok == ref.ok && mine.mismatches == ref.mismatches && mine.checked == ref.checked && (!detail || mine.detail == ref.detail))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "streamed: " << (mine.ok ? "ok" : mine.detail)
                                       << "\ncompare(): " << (ref.ok ? "ok" : ref.detail);
}

// The oracles and judges above on small views of each kind (rows, columns, segments of a long
// row, padded rows) against reference:: and compare(), with outputs of the reference's exact
// values and 4 of them corrupted: the same verdict, count and first mismatches (softmax: the
// count, its exact values differ in the last digits; its long rows, judged without the naive
// allowance, catch all 4 where compare()'s sequential twin may excuse some). No device needed.
TEST(HugeOracles, AgreeWithTheReferenceOnSmallViews) {
  for (const auto& [rows, cols, dim] : {std::tuple{3001, 1032, 0}, std::tuple{3001, 1032, 1}, std::tuple{1, 3001 * 1032, -1}}) {
    const auto l = TensorLayout::contiguous(DType::kBF16, {rows, cols});
    HostTensor h(l);
    fill_uniform(static_cast<std::uint16_t*>(h.data()), rows * cols, -2, 2, kBias, 31);
    const ReduceAxes a = dim < 0 ? ReduceAxes::all() : ReduceAxes::of({dim});
    auto ref = reference::reduce(ReduceDescriptor{.x = l, .y = reduced_layout(l, a, false, DType::kBF16).value(), .axes = a}, h);
    const Runs r = dim == 0 ? Runs{cols, rows, 1, cols} : dim == 1 ? Runs{rows, cols, cols, 1} : Runs{1, rows * cols, 0, 1};
    EXPECT_TRUE(same_oracle(sum_oracle(bf16_data(h), r), ref.value(), 0)) << "sum dim " << dim;
  }
  for (const auto& [rows, cols, axis] : {std::tuple{1, 3 * 4096 + 77, 1}, std::tuple{997, 1024, 1}, std::tuple{1031, 200, 0}}) {
    const auto l = TensorLayout::contiguous(DType::kF32, {rows, cols});
    HostTensor hx(l), hy(l);
    fill_uniform(static_cast<float*>(hx.data()), rows * cols, -2, 2, kBias, 32);
    auto ref = reference::scan(ScanDescriptor{.x = l, .y = l, .indices = {}, .axis = axis}, hx);
    for (std::int64_t i = 0; i < l.numel(); ++i) static_cast<float*>(hy.data())[i] = static_cast<float>(ref->values.exact[static_cast<std::size_t>(i)]);
    corrupt(static_cast<float*>(hy.data()), l.numel());
    Runs r = axis == 1 ? Runs{rows, cols, cols, 1} : Runs{cols, rows, 1, cols};
    std::vector<RunningSum> starts;
    if (rows == 1) {
      r.seg = 4096;
      starts = segment_starts(f32_data(hx), r.len, r.seg);
      EXPECT_TRUE(cumsum_oracle_is_the_reference(f32_data(hx)));
    }
    EXPECT_TRUE(same_verdict(judge_cumsum(f32_data(hx), f32_data(hy), r, starts), reference::compare(hy, ref->values, false)))
        << "cumsum " << l.to_string() << " axis " << axis;
  }
  const RowProblem padded{TensorLayout::strided(DType::kBF16, {3, 7, 2048}, {7 * 2048 + 64, 2048, 1}),
                          TensorLayout::contiguous(DType::kBF16, {3, 7, 2048}), {21, 2048, 7, 7 * 2048 + 64}};
  for (const RowProblem& p : {padded, plain_rows(700, 512), plain_rows(2, 3 * 4096 + 77, 4096)}) {
    HostTensor hx(p.x);
    fill_uniform(static_cast<std::uint16_t*>(hx.data()), static_cast<std::int64_t>(hx.storage_bytes() / 2), -2, 2, kBias, 33);
    const HostTensor xc = contiguous_rows(hx, p.rows);
    auto ref = reference::softmax(SoftmaxDescriptor{.x = xc.layout(), .y = xc.layout()}, xc);
    HostTensor y(xc.layout());
    exact_to_bf16(ref.value(), y);
    const SoftmaxOracle o = softmax_oracle(bf16_data(hx), p);
    if (hx.layout().numel() >= 3 * 2048) {
      EXPECT_TRUE(softmax_oracle_is_the_reference(bf16_data(hx)));
    }
    EXPECT_TRUE(judge_softmax(bf16_data(hx), bf16_data(y), p, o).ok) << "softmax " << p.x.to_string();
    corrupt(static_cast<std::uint16_t*>(y.data()), y.layout().numel());
    const auto mine = judge_softmax(bf16_data(hx), bf16_data(y), p, o);
    if (p.seg == 0) {
      EXPECT_TRUE(same_verdict(mine, reference::compare(y, ref.value(), false), false)) << "softmax " << p.x.to_string();
    } else {
      EXPECT_EQ(mine.mismatches, 4) << mine.detail;
    }
  }
  for (const RowProblem& p : {padded, plain_rows(300, 512)}) {
    for (const bool layer : {true, false}) {
      HostTensor hx(p.x), hw(TensorLayout::contiguous(DType::kBF16, {p.rows.len})), hb(hw.layout());
      fill_uniform(static_cast<std::uint16_t*>(hx.data()), static_cast<std::int64_t>(hx.storage_bytes() / 2), -2, 2, kBias, 34);
      fill_uniform(static_cast<std::uint16_t*>(hw.data()), p.rows.len, 0.5, 1.5, 0, 35);
      fill_uniform(static_cast<std::uint16_t*>(hb.data()), p.rows.len, -1, 1, 0, 36);
      const HostTensor xc = contiguous_rows(hx, p.rows);
      NormDescriptor d = layer ? NormDescriptor(LayerNormDescriptor{}) : NormDescriptor(RMSNormDescriptor{});
      d.x = d.y = xc.layout();
      d.weight = hw.layout();
      if (layer) d.bias = hw.layout();
      const HostTensor* bias = layer ? &hb : nullptr;
      auto ref = reference::norm_forward(d, xc, nullptr, &hw, bias);
      const auto sl = TensorLayout::contiguous(DType::kF32, {p.rows.count});
      HostTensor y(xc.layout()), mean(sl), rstd(sl);
      exact_to_bf16(ref->y, y);
      corrupt(static_cast<std::uint16_t*>(y.data()), y.layout().numel());
      for (std::int64_t r = 0; r < p.rows.count; ++r) {
        static_cast<float*>(mean.data())[r] = static_cast<float>(ref->mean.exact[static_cast<std::size_t>(r)]);
        static_cast<float*>(rstd.data())[r] = static_cast<float>(ref->rstd.exact[static_cast<std::size_t>(r)]) * (r == 1 ? 1.001f : 1.0f);
      }
      const NormOracle o = norm_oracle(bf16_data(hx), p.rows, hw, bias, layer, d.eps);
      EXPECT_TRUE(norm_oracle_is_the_reference(d, bf16_data(hx), o, hw, bias));
      const NormVerdict v = judge_norm(bf16_data(hx), bf16_data(y), layer ? f32_data(mean) : nullptr, f32_data(rstd), p.rows, o);
      const std::string what = std::string(layer ? "layer_norm " : "rms_norm ") + p.x.to_string();
      EXPECT_TRUE(same_verdict(v.y, reference::compare(y, ref->y, false))) << what;
      EXPECT_TRUE(same_verdict(v.rstd, reference::compare(rstd, ref->rstd, false))) << what;
      if (layer) {
        EXPECT_TRUE(same_verdict(v.mean, reference::compare(mean, ref->mean, false))) << what;
      }
    }
  }
}

}  // namespace
}  // namespace baracuda::test
