#include "core/log.hpp"

#include <cstdlib>
#include <string_view>

namespace baracuda::detail {

namespace {
unsigned read_log_mask() {
  const char* v = std::getenv("BARACUDA_LOG");
  if (!v) return 0;
  std::string_view s(v);
  unsigned mask = 0;
  if (s.find("dispatch") != std::string_view::npos || s == "all" || s == "1") mask |= static_cast<unsigned>(LogTopic::kDispatch);
  return mask;
}
}  // namespace

bool log_enabled(LogTopic topic) noexcept {
  static const unsigned mask = read_log_mask();
  return (mask & static_cast<unsigned>(topic)) != 0;
}

}  // namespace baracuda::detail
