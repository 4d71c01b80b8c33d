// Host-side repacking of GPTQ / AWQ checkpoints into Int4GemmPlan's layout, and of its
// row-major packing into the tiled one (formats in baracuda/ops/gemm_int4.hpp). Plain loops
// over host memory: run once at model load.
#include <array>
#include <cstring>
#include <string>

#include "baracuda/core/numeric.hpp"
#include "baracuda/ops/gemm_int4.hpp"

namespace baracuda {

const char* int4_checkpoint_format_name(Int4CheckpointFormat f) noexcept {
  return f == Int4CheckpointFormat::kGptq ? "gptq" : "awq";
}

std::size_t int4_packed_bytes(std::int64_t n, std::int64_t k) noexcept {
  return n > 0 && k > 0 ? static_cast<std::size_t>(n) * static_cast<std::size_t>((k + 1) / 2) : 0;
}

std::size_t int4_group_count(std::int64_t n, std::int64_t k, std::int64_t group_size) noexcept {
  return n > 0 && k > 0 && group_size > 0 ? static_cast<std::size_t>(n * (k / group_size)) : 0;
}

const char* int4_weight_layout_name(Int4WeightLayout l) noexcept {
  return l == Int4WeightLayout::kRowMajor ? "row_major" : "tiled16x128";
}

Status int4_tile_weights(const std::uint8_t* row_major, std::int64_t n, std::int64_t k, std::int64_t ld_elems,
                         std::uint8_t* tiled) {
  auto bad = [](const std::string& msg) { return Status(Code::kInvalidArgument, "int4_tile_weights: " + msg); };
  if (n <= 0 || n % 16 != 0) return bad("n = " + std::to_string(n) + " is not a positive multiple of 16");
  if (k <= 0 || k % 128 != 0) return bad("k = " + std::to_string(k) + " is not a positive multiple of 128");
  if (ld_elems < k || ld_elems % 32 != 0)
    return bad("ld_elems = " + std::to_string(ld_elems) + " is below k = " + std::to_string(k) +
               " or not a multiple of 32");
  if (row_major == nullptr) return bad("row_major is null");
  if (tiled == nullptr) return bad("tiled is null");
  const std::size_t src_bytes = static_cast<std::size_t>((n - 1) * (ld_elems / 2) + k / 2);
  const std::size_t dst_bytes = static_cast<std::size_t>(n * (k / 2));
  const auto src = reinterpret_cast<std::uintptr_t>(row_major), dst = reinterpret_cast<std::uintptr_t>(tiled);
  if (dst < src + src_bytes && src < dst + dst_bytes) return bad("tiled overlaps row_major");
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < k; c += 32)
      std::memcpy(tiled + int4_tiled_offset(r, c, k), row_major + r * (ld_elems / 2) + c / 2, 16);
  return Status::ok();
}

Int4GemmDescriptor int4_repacked_descriptor(const Int4RepackSource& src, std::int64_t m) {
  Int4GemmDescriptor d;
  d.x = MatrixLayout{src.scale_dtype, m, src.k, src.k, MatrixOrder::kRowMajor, 16};
  d.w = MatrixLayout{DType::kU4, src.n, src.k, src.k, MatrixOrder::kRowMajor, 16};
  d.y = MatrixLayout{src.scale_dtype, m, src.n, src.n, MatrixOrder::kRowMajor, 16};
  d.group_size = src.group_size;
  d.zeros = true;
  return d;
}

namespace {

Status bad(const std::string& msg) { return Status(Code::kInvalidArgument, "int4_repack: " + msg); }
std::string s64(std::int64_t v) { return std::to_string(v); }

// AWQ packs column 8c + kAwqOrder[i] into nibble i of word c.
constexpr std::array<int, 8> kAwqOrder = {0, 2, 4, 6, 1, 3, 5, 7};

unsigned nibble(std::int32_t word, int i) { return (static_cast<std::uint32_t>(word) >> (4 * i)) & 0xFu; }

Status check_source(const Int4RepackSource& s, const Int4RepackTarget& t) {
  const char* f = int4_checkpoint_format_name(s.format);
  if (s.format != Int4CheckpointFormat::kGptq && s.format != Int4CheckpointFormat::kAwq)
    return bad("format = " + s64(static_cast<int>(s.format)) + " is not gptq or awq");
  if (s.scale_dtype != DType::kF16 && s.scale_dtype != DType::kBF16)
    return bad("scale_dtype = " + std::string(dtype_name(s.scale_dtype)) + ": scales are f16 or bf16");
  if (s.k <= 0 || s.k % 32 != 0) return bad("k = " + s64(s.k) + " is not a positive multiple of 32");
  if (s.n <= 0 || s.n % 8 != 0) return bad("n = " + s64(s.n) + " is not a positive multiple of 8 (" + f + " packs 8 columns per qzeros word)");
  const std::int64_t g = s.group_size;
  if (g != 32 && g != 64 && g != 128 && g != s.k)
    return bad("group_size = " + s64(g) + ": takes 32, 64, 128 or k (= " + s64(s.k) + ")");
  if (s.k % g != 0) return bad("k = " + s64(s.k) + " is not a multiple of group_size = " + s64(g));
  if (!s.qweight) return bad("src.qweight is null");
  if (!s.qzeros) return bad("src.qzeros is null");
  if (!s.scales) return bad("src.scales is null");
  if (!t.w) return bad("dst.w is null");
  if (!t.scales) return bad("dst.scales is null");
  if (!t.zeros) return bad("dst.zeros is null");
  return Status::ok();
}

}  // namespace

Status int4_repack(const Int4RepackSource& s, const Int4RepackTarget& t) {
  BARACUDA_TRY(check_source(s, t));
  const std::int64_t K = s.k, N = s.n, G = K / s.group_size;
  const bool gptq = s.format == Int4CheckpointFormat::kGptq;
  // q(n, k) of the checkpoint
  auto q_at = [&](std::int64_t n, std::int64_t k) -> unsigned {
    if (gptq) return nibble(s.qweight[(k / 8) * N + n], static_cast<int>(k % 8));
    const int c = static_cast<int>(n % 8);
    int slot = 0;
    while (kAwqOrder[static_cast<std::size_t>(slot)] != c) ++slot;
    return nibble(s.qweight[k * (N / 8) + n / 8], slot);
  };
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; k += 2) {
      const unsigned lo = q_at(n, k), hi = q_at(n, k + 1);
      t.w[n * (K / 2) + k / 2] = static_cast<std::uint8_t>(lo | (hi << 4));
    }
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t n = 0; n < N; ++n) {
      const std::int32_t zw = s.qzeros[g * (N / 8) + n / 8];
      int slot = static_cast<int>(n % 8);
      if (!gptq) {
        slot = 0;
        while (kAwqOrder[static_cast<std::size_t>(slot)] != n % 8) ++slot;
      }
      const unsigned z = nibble(zw, slot) + (gptq && s.gptq_zero_plus_one ? 1u : 0u);
      const float zf = static_cast<float>(z);
      t.zeros[n * G + g] = s.scale_dtype == DType::kF16 ? f32_to_f16_bits(zf) : f32_to_bf16_bits(zf);
      t.scales[n * G + g] = s.scales[g * N + n];
    }
  return Status::ok();
}

}  // namespace baracuda
