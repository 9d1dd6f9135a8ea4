// Streams: order, asynchrony, error reporting, draining, handle checks, asynchronous copies.
#include <atomic>
#include <future>
#include <latch>
#include <stdexcept>
#include <thread>
#include <vector>

#include "api_test_util.h"
#include "base/error.h"

using gradkit_test::ApiFixture;
using gradkit_test::hex;
using gradkit_test::mentions;
using gradkit_test::recentError;

namespace {

using gradkit::rt::enqueue;

class ApiStream : public ApiFixture {
 protected:
  void SetUp() override {
    ApiFixture::SetUp();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS);
    ASSERT_NE(stream_, nullptr);
  }
  void TearDown() override {
    if (stream_ != nullptr) aclrtDestroyStream(stream_);
    ApiFixture::TearDown();
  }
  aclrtStream stream_ = nullptr;
};

TEST_F(ApiStream, TasksRunInOrder) {
  std::vector<int> seen;  // touched only by the worker until the sync below
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(enqueue(stream_, [&seen, i] { return seen.push_back(i), ACL_SUCCESS; }), ACL_SUCCESS);
  }
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  ASSERT_EQ(seen.size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(seen[i], i);
}

TEST_F(ApiStream, TasksRunOnAnotherThread) {
  std::thread::id worker;
  ASSERT_EQ(enqueue(stream_, [&worker] { return worker = std::this_thread::get_id(), ACL_SUCCESS; }), 0);
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_NE(worker, std::this_thread::get_id());
}

TEST_F(ApiStream, EnqueueDoesNotWaitForWork) {
  std::latch release(1);
  std::promise<void> started;
  std::atomic<bool> finished{false};
  std::atomic<int> later{0};
  ASSERT_EQ(enqueue(stream_,
                    [&] {
                      started.set_value();
                      release.wait();
                      finished = true;
                      return ACL_SUCCESS;
                    }),
            ACL_SUCCESS);
  started.get_future().wait();
  // The first task is blocked until we release it, yet enqueue keeps returning at once.
  for (int i = 0; i < 10; ++i) ASSERT_EQ(enqueue(stream_, [&] { return ++later, ACL_SUCCESS; }), ACL_SUCCESS);
  EXPECT_FALSE(finished.load());
  EXPECT_EQ(later.load(), 0) << "later tasks wait for the blocked one (in order)";
  release.count_down();
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_TRUE(finished.load());
  EXPECT_EQ(later.load(), 10);
}

TEST_F(ApiStream, SynchronizeReportsTaskErrorAndItsMessage) {
  int after = 0;
  ASSERT_EQ(enqueue(stream_, [] { return gradkit::fail(161002, "aclnnFake", "self", "FLOAT", "INT4"); }), 0);
  ASSERT_EQ(enqueue(stream_, [&after] { return ++after, ACL_SUCCESS; }), 0);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), 161002);
  EXPECT_TRUE(mentions(recentError(), {"aclnnFake", "self", "given INT4"}));
  EXPECT_EQ(after, 1) << "later work still runs";
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS) << "the error is reported once";
  EXPECT_EQ(recentError(), "");
}

TEST_F(ApiStream, FirstErrorWinsAndAllMessagesArrive) {
  ASSERT_EQ(enqueue(stream_, [] { return gradkit::failText(507000, "first", "one"); }), 0);
  ASSERT_EQ(enqueue(stream_, [] { return gradkit::failText(161001, "second", "two"); }), 0);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), 507000);
  EXPECT_TRUE(mentions(recentError(), {"first: one", "second: two"}));
}

TEST_F(ApiStream, ErrorWithoutMessageStillExplains) {
  ASSERT_EQ(enqueue(stream_, [] { return 12345; }), 0);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), 12345);
  EXPECT_TRUE(mentions(recentError(), {"12345"}));
}

TEST_F(ApiStream, SuccessfulTaskMessagesAreNotReported) {
  ASSERT_EQ(enqueue(stream_,
                    [] {
                      gradkit::recordError("a warning-like note from a task that then succeeded");
                      return ACL_SUCCESS;
                    }),
            0);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(recentError(), "");
}

TEST_F(ApiStream, ThrowingTaskBecomesInternalError) {
  int after = 0;
  ASSERT_EQ(enqueue(stream_, []() -> aclError { throw std::runtime_error("kernel exploded"); }), 0);
  ASSERT_EQ(enqueue(stream_, [&after] { return ++after, ACL_SUCCESS; }), 0);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_TRUE(mentions(recentError(), {"kernel exploded"}));
  EXPECT_EQ(after, 1);
  ASSERT_EQ(enqueue(stream_, []() -> aclError { throw 42; }), 0);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_TRUE(mentions(recentError(), {"unknown type"}));
}

TEST_F(ApiStream, ErrorMessageReachesTheSynchronizingThread) {
  ASSERT_EQ(enqueue(stream_, [] { return gradkit::failText(161002, "aclnnFake", "bad shape"); }), 0);
  std::thread other([this] {
    EXPECT_EQ(aclrtSynchronizeStream(stream_), 161002);
    EXPECT_TRUE(mentions(recentError(), {"aclnnFake: bad shape"}));
  });
  other.join();
  EXPECT_EQ(recentError(), "") << "the text went to the thread that synchronised";
}

TEST_F(ApiStream, DestroyDrainsPendingWork) {
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  std::atomic<int> ran{0};
  ASSERT_EQ(enqueue(stream_, [opened] { return opened.wait(), ACL_SUCCESS; }), 0);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(enqueue(stream_, [&ran] { return ++ran, ACL_SUCCESS; }), 0);
  std::thread opener([&gate] { gate.set_value(); });
  EXPECT_EQ(aclrtDestroyStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(ran.load(), 100);
  opener.join();
  const aclrtStream destroyed = stream_;
  stream_ = nullptr;
  EXPECT_EQ(aclrtDestroyStream(destroyed), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtDestroyStream", "stream", hex(destroyed), "unknown or destroyed"}));
  EXPECT_EQ(enqueue(destroyed, [] { return ACL_SUCCESS; }), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"stream", hex(destroyed)}));
}

TEST_F(ApiStream, UnknownHandlesAreRejected) {
  const auto bogus = reinterpret_cast<aclrtStream>(static_cast<uintptr_t>(0xbad00));
  EXPECT_EQ(aclrtSynchronizeStream(bogus), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtSynchronizeStream", "stream", "0xbad00"}));
  EXPECT_EQ(aclrtDestroyStream(bogus), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtDestroyStream", "0xbad00"}));
  EXPECT_EQ(enqueue(
                bogus, [] { return ACL_SUCCESS; }, "aclnnFake"),
            ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclnnFake", "stream", "0xbad00"}));
  EXPECT_EQ(aclrtDestroyStream(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtDestroyStream", "nullptr"}));
  EXPECT_EQ(aclrtCreateStream(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtCreateStream", "nullptr"}));
  // A context handle is not a stream handle.
  aclrtContext context = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&context), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(context), ACL_ERROR_RT_PARAM_INVALID);
  recentError();
}

TEST_F(ApiStream, DefaultStreamIsInOrderToo) {
  std::vector<int> seen;
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(enqueue(nullptr, [&seen, i] { return seen.push_back(i), ACL_SUCCESS; }), ACL_SUCCESS);
  }
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  ASSERT_EQ(seen.size(), 100u);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(seen[i], i);
}

TEST_F(ApiStream, SynchronizeDeviceWaitsForEveryStream) {
  aclrtStream second = nullptr;
  ASSERT_EQ(aclrtCreateStream(&second), ACL_SUCCESS);
  std::atomic<int> ran{0};
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(enqueue(stream_, [&ran] { return ++ran, ACL_SUCCESS; }), 0);
    ASSERT_EQ(enqueue(second, [&ran] { return ++ran, ACL_SUCCESS; }), 0);
    ASSERT_EQ(enqueue(nullptr, [&ran] { return ++ran, ACL_SUCCESS; }), 0);
  }
  ASSERT_EQ(enqueue(second, [] { return gradkit::failText(161002, "aclnnFake", "on the second stream"); }), 0);
  EXPECT_EQ(aclrtSynchronizeDevice(), 161002);
  EXPECT_EQ(ran.load(), 60);
  EXPECT_TRUE(mentions(recentError(), {"on the second stream"}));
  EXPECT_EQ(aclrtSynchronizeStream(second), ACL_SUCCESS) << "the device sync took the error";
  EXPECT_EQ(aclrtDestroyStream(second), ACL_SUCCESS);
}

TEST_F(ApiStream, WaitingOnItsOwnStreamIsRejected) {
  aclError fromTask = ACL_SUCCESS;
  std::string text;
  ASSERT_EQ(enqueue(stream_,
                    [&] {
                      fromTask = aclrtSynchronizeStream(stream_);
                      text = recentError();
                      return ACL_SUCCESS;
                    }),
            0);
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(fromTask, ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(text, {"aclrtSynchronizeStream", "same stream"}));
}

TEST_F(ApiStream, MemcpyAsyncRunsInStreamOrder) {
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<unsigned char> source(64), back(64, 0);
  for (int i = 0; i < 64; ++i) source[i] = static_cast<unsigned char>(3 * i + 1);
  std::latch release(1);
  ASSERT_EQ(enqueue(stream_, [&release] { return release.wait(), ACL_SUCCESS; }), 0);
  ASSERT_EQ(aclrtMemcpyAsync(device, 64, source.data(), 64, ACL_MEMCPY_HOST_TO_DEVICE, stream_), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(back.data(), 64, device, 64, ACL_MEMCPY_DEVICE_TO_HOST, stream_), ACL_SUCCESS);
  EXPECT_EQ(back, std::vector<unsigned char>(64, 0)) << "nothing copied while the stream is blocked";
  release.count_down();
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(back, source);
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
}

TEST_F(ApiStream, MemcpyAsyncChecksLikeMemcpy) {
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 32, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);  // 64 usable bytes (CANN's rounding)
  std::vector<unsigned char> host(96, 7);
  EXPECT_EQ(aclrtMemcpyAsync(device, 96, host.data(), 96, ACL_MEMCPY_HOST_TO_DEVICE, stream_), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMemcpyAsync", "dst", "96 bytes", "32 bytes past"}));
  EXPECT_EQ(aclrtMemcpyAsync(device, 16, host.data(), 32, ACL_MEMCPY_HOST_TO_DEVICE, stream_), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"count", "destMax (16)", "given 32"}));
  const auto bogus = reinterpret_cast<aclrtStream>(static_cast<uintptr_t>(0xbad10));
  EXPECT_EQ(aclrtMemcpyAsync(device, 32, host.data(), 32, ACL_MEMCPY_HOST_TO_DEVICE, bogus),
            ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMemcpyAsync", "stream", "0xbad10"}));
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
}

TEST_F(ApiStream, ManyProducersOneStream) {
  std::atomic<int> ran{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([this, &ran] {
      for (int i = 0; i < 250; ++i) EXPECT_EQ(enqueue(stream_, [&ran] { return ++ran, ACL_SUCCESS; }), 0);
    });
  }
  for (auto& producer : producers) producer.join();
  ASSERT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(ran.load(), 1000);
}

}  // namespace
