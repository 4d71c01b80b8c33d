// Status, error codes and Expected<T>: the one error type of baracuda.
//
// Every fallible call returns a Status (or an Expected<T>). A Status carries a code, a
// message that names the offending field and its value, and the raw CUDA / library status
// where one exists. The library never throws across its boundary and never exits or aborts.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace baracuda {

enum class Code : std::uint8_t {
  kOk = 0,
  kInvalidArgument,    // a descriptor or args field is wrong (the message names it)
  kNotSupported,       // no candidate accepts the problem (the message lists each reason)
  kNotBuilt,           // a candidate would apply but was compiled out (message names the knob)
  kMisaligned,         // a pointer is not aligned as the descriptor promised
  kWorkspaceTooSmall,  // the caller's workspace is smaller than workspace_size()
  kArchMismatch,       // the device cannot run the (forced) kernel
  kNoDevice,           // no CUDA device is visible
  kCudaError,          // a CUDA runtime call failed (raw cudaError_t kept)
  kLibraryError,       // cuBLAS/cuDNN/... failed (raw status kept)
  kInternal,           // a bug in baracuda
};

const char* code_name(Code c) noexcept;

// Which library a raw status belongs to.
enum class StatusSource : std::uint8_t { kNone, kCuda, kCublas, kCudnn, kCufft, kCusolver, kCurand };

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(Code code, std::string message, StatusSource source = StatusSource::kNone, int raw = 0)
      : code_(code), message_(std::move(message)), source_(source), raw_(raw) {}

  static Status ok() { return {}; }

  bool is_ok() const noexcept { return code_ == Code::kOk; }
  explicit operator bool() const noexcept { return is_ok(); }
  Code code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  StatusSource source() const noexcept { return source_; }
  int raw_status() const noexcept { return raw_; }
  // "invalid_argument: unary: x.shape[1] = 7 does not match y.shape[1] = 8"
  std::string to_string() const;

  // Prefix the message with context ("select unary: ...").
  Status& add_context(const std::string& ctx);

 private:
  Code code_ = Code::kOk;
  std::string message_;
  StatusSource source_ = StatusSource::kNone;
  int raw_ = 0;
};

// A value or an error Status (std::expected is C++23; this is the small subset we need).
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}                // NOLINT(implicit)
  Expected(Status error) : v_(std::move(error)) {}           // NOLINT(implicit); must not be ok
  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Status& error() const { return std::get<1>(v_); }
  Status status() const { return has_value() ? Status::ok() : error(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace baracuda

// Propagate a bad Status from an expression returning Status.
#define BARACUDA_TRY(expr)                                  \
  do {                                                      \
    ::baracuda::Status baracuda_try_status_ = (expr);       \
    if (!baracuda_try_status_.is_ok()) return baracuda_try_status_; \
  } while (0)
