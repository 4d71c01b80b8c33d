// GPU tests of the runtime layer: caps, streams, events, buffers, copies, the library
// handle cache, and plans run concurrently from several host threads.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "gpu_harness.hpp"
#include "test_support.hpp"

namespace baracuda::test {
namespace {

TEST(RuntimeGpu, CapsAreReadOnceAndCached) {
  BARACUDA_REQUIRE_GPU();
  auto a = Device::caps(0), b = Device::caps(0);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a.value(), b.value());
  EXPECT_GE(a.value()->sm, 80);
  EXPECT_GT(a.value()->sm_count, 0);
  EXPECT_GT(a.value()->l2_bytes, 0u);
  EXPECT_FALSE(Device::caps(1000).has_value());
}

TEST(RuntimeGpu, StreamsEventsBuffersCopies) {
  BARACUDA_REQUIRE_GPU();
  auto s = Stream::create(0);
  ASSERT_TRUE(s.has_value());
  auto borrowed = Stream::borrow(s->handle(), 0);
  EXPECT_EQ(borrowed.handle(), s->handle());
  std::vector<int> host(1 << 20), back(1 << 20, 0);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int>(i * 7 + 1);
  auto plain = DeviceBuffer::allocate(host.size() * sizeof(int));
  auto async = DeviceBuffer::allocate_async(host.size() * sizeof(int), s.value());
  ASSERT_TRUE(plain && async);
  auto start = Event::create(), stop = Event::create();
  ASSERT_TRUE(start && stop);
  ASSERT_TRUE(start->record(s.value()));
  ASSERT_TRUE(copy_to_device(plain->data(), host.data(), host.size() * sizeof(int), s.value()));
  ASSERT_TRUE(copy_device_to_device(async->data(), plain->data(), host.size() * sizeof(int), s.value()));
  ASSERT_TRUE(stop->record(s.value()));
  ASSERT_TRUE(copy_to_host(back.data(), async->data(), back.size() * sizeof(int), s.value()));
  EXPECT_EQ(back, host);
  auto ms = stop->elapsed_ms_since(start.value());
  ASSERT_TRUE(ms.has_value());
  EXPECT_GE(ms.value(), 0.f);
  EXPECT_TRUE(async->release());
  EXPECT_TRUE(s->synchronize());
  auto capturing = s->is_capturing();
  ASSERT_TRUE(capturing.has_value());
  EXPECT_FALSE(capturing.value());
}

TEST(RuntimeGpu, LibraryHandlesAreCreatedOncePerDevice) {
  BARACUDA_REQUIRE_GPU();
  std::vector<cublasLtHandle_t> lt(8);
  std::vector<cudnnHandle_t> dnn(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      auto h = LibraryHandles::cublaslt(0);
      lt[i] = h ? h.value() : nullptr;
      auto d = LibraryHandles::cudnn(0);
      dnn[i] = d ? d.value() : nullptr;
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) {
    EXPECT_NE(lt[i], nullptr);
    EXPECT_EQ(lt[i], lt[0]);
    EXPECT_NE(dnn[i], nullptr);
    EXPECT_EQ(dnn[i], dnn[0]);
  }
}

TEST(RuntimeGpu, OnePlanRunsFromSeveralThreadsOnTheirOwnStreams) {
  BARACUDA_REQUIRE_GPU();
  auto l = TensorLayout::contiguous(DType::kF32, {1024, 1024});
  auto plan = BinaryPlan::select(test_stream(), BinaryDescriptor{BinaryKind::kSub, l, l, l});
  ASSERT_TRUE(plan.has_value());
  constexpr int kThreads = 4;
  std::vector<reference::HostTensor> ha, hb, ho;
  for (int i = 0; i < kThreads; ++i) {
    ha.emplace_back(l);
    hb.emplace_back(l);
    ho.emplace_back(l);
    fill_random(ha.back(), -5, 5);
    fill_random(hb.back(), -5, 5);
  }
  std::vector<Status> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      auto s = Stream::create(0);
      if (!s) {
        results[i] = s.error();
        return;
      }
      DeviceTensor da(ha[i], s.value()), db(hb[i], s.value()), dout(ho[i], s.value());
      dout.poison(0xFF, s.value());
      for (int rep = 0; rep < 20 && results[i].is_ok(); ++rep)
        results[i] = plan->run(s.value(), {}, BinaryArgs{.a = da.data(), .b = db.data(), .out = dout.data()});
      if (results[i] && !dout.download(ho[i], s.value())) results[i] = Status(Code::kInternal, "download failed");
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(results[i].is_ok()) << results[i].to_string();
    auto want = reference::binary(plan->descriptor(), ha[i], hb[i]);
    EXPECT_TRUE(check_close(ho[i], want.value(), "thread " + std::to_string(i)));
  }
}

}  // namespace
}  // namespace baracuda::test
