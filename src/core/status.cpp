#include "baracuda/core/status.hpp"

namespace baracuda {

const char* code_name(Code c) noexcept {
  switch (c) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kNotSupported: return "not_supported";
    case Code::kNotBuilt: return "not_built";
    case Code::kMisaligned: return "misaligned";
    case Code::kWorkspaceTooSmall: return "workspace_too_small";
    case Code::kArchMismatch: return "arch_mismatch";
    case Code::kNoDevice: return "no_device";
    case Code::kCudaError: return "cuda_error";
    case Code::kLibraryError: return "library_error";
    case Code::kInternal: return "internal";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  std::string s = std::string(code_name(code_)) + ": " + message_;
  if (source_ != StatusSource::kNone) s += " (raw status " + std::to_string(raw_) + ")";
  return s;
}

Status& Status::add_context(const std::string& ctx) {
  if (!is_ok()) message_ = ctx + ": " + message_;
  return *this;
}

}  // namespace baracuda
