#include "gpu_harness.hpp"

#include <mutex>

namespace baracuda::test {

const Stream& test_stream() {
  static Stream s = [] {
    auto st = Stream::create(0);
    if (!st) throw std::runtime_error(st.error().to_string());
    return std::move(st.value());
  }();
  return s;
}

const DeviceCaps& test_caps() {
  static const DeviceCaps* c = Device::caps(0).value();
  return *c;
}

Workspace test_workspace(std::size_t bytes) {
  static std::mutex mu;
  static DeviceBuffer buf;
  std::lock_guard<std::mutex> lock(mu);
  if (bytes == 0) return {};
  if (buf.bytes() < bytes) {
    (void)test_stream().synchronize();
    auto b = DeviceBuffer::allocate(bytes);
    if (!b) throw std::runtime_error(b.error().to_string());
    buf = std::move(b.value());
    // Fresh workspace content should not matter: fill it with garbage.
    (void)memset_device(buf.data(), 0x7B, bytes, test_stream());
  }
  return {buf.data(), bytes};
}

Untouched::Untouched(const TensorLayout& l) : host_(l), dev_(host_, test_stream()) { dev_.poison(0x5A, test_stream()); }

::testing::AssertionResult Untouched::check() {
  auto r = dev_.download(host_, test_stream());
  if (!r) return r;
  const auto* p = reinterpret_cast<const unsigned char*>(host_.storage());
  for (std::size_t i = 0; i < host_.storage_bytes(); ++i)
    if (p[i] != 0x5A) return ::testing::AssertionFailure() << "output byte " << i << " was written";
  return ::testing::AssertionSuccess();
}

void expect_refused(const Status& st, Code code, const std::string& needle) {
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
}

void expect_run_refusals(const std::vector<RunRefusal>& rows, const std::vector<Untouched*>& outputs) {
  for (const auto& r : rows) {
    SCOPED_TRACE(r.what);
    expect_refused(r.run(), r.code, r.needle);
  }
  const Status sync = test_stream().synchronize();
  ASSERT_TRUE(sync.is_ok()) << sync.to_string();
  for (Untouched* o : outputs) EXPECT_TRUE(o->check());
}

std::vector<RunRefusal> workspace_refusals(const std::string& plan, const std::function<Status(Workspace)>& run,
                                           Workspace buf, std::size_t need) {
  void* misaligned = static_cast<char*>(buf.data) + 64;
  return {
      {plan + " workspace too small", [=] { return run({buf.data, need - 1}); }, Code::kWorkspaceTooSmall,
       "workspace.bytes = " + std::to_string(need - 1) + " is below the " + std::to_string(need)},
      {plan + " workspace null", [=] { return run({nullptr, need}); }, Code::kInvalidArgument, "workspace.data is null"},
      {plan + " workspace misaligned", [=] { return run({misaligned, need}); }, Code::kMisaligned,
       "workspace.data is not 256-byte aligned"},
  };
}

}  // namespace baracuda::test
