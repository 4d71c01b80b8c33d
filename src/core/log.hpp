// BARACUDA_LOG: diagnostics on stderr, off by default. BARACUDA_LOG=dispatch prints one line
// per select() (the chosen SKU and each rejected candidate with its reason).
#pragma once

namespace baracuda::detail {

enum class LogTopic : unsigned { kDispatch = 1u };
bool log_enabled(LogTopic topic) noexcept;  // reads the environment once

}  // namespace baracuda::detail
