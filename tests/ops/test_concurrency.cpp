// Concurrency: 8 threads, each with its own stream and its own data, run every operator family while another
// thread keeps producing argument errors; each thread queues all its executors before one synchronize. Every
// result must equal the single-threaded one bit for bit, and every thread must see only its own error messages.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_dropout_do_mask.h"
#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "aclnnop/aclnn_dropout_v3.h"
#include "aclnnop/aclnn_dropout_v3_grad.h"
#include "aclnnop/aclnn_threshold_backward.h"
#include "ops/op_test_util.h"
#include "ops/random_data.h"

namespace gradkit::test {
namespace {

constexpr int64_t kElements = 70000;  // several parallel chunks and a tail
constexpr int64_t kMaskBytes = (kElements + 127) / 128 * 16;

/** One thread's inputs and outputs; `seed` makes every thread's data and dropout stream its own. */
struct Job {
  explicit Job(uint32_t dataSeed)
      : grad(randomElements(ACL_BF16, kElements, dataSeed)),
        self(randomElements(ACL_BF16, kElements, dataSeed + 1)),
        seed(dataSeed) {}

  std::vector<unsigned char> grad, self;
  uint32_t seed;
  // Outputs: ThresholdBackward, GenMaskV2, DropoutV3 (out, mask), DoMask, V3Grad.
  std::vector<unsigned char> threshold = std::vector<unsigned char>(kElements * 2);
  std::vector<uint8_t> genMask = std::vector<uint8_t>(kMaskBytes);
  std::vector<unsigned char> v3Out = std::vector<unsigned char>(kElements * 2);
  std::vector<uint8_t> v3Mask = std::vector<uint8_t>(kMaskBytes);
  std::vector<unsigned char> doMask = std::vector<unsigned char>(kElements * 2);
  std::vector<unsigned char> v3Grad = std::vector<unsigned char>(kElements * 2);

  bool operator==(const Job& other) const {
    return threshold == other.threshold && genMask == other.genMask && v3Out == other.v3Out && v3Mask == other.v3Mask &&
           doMask == other.doMask && v3Grad == other.v3Grad;
  }
};

/** Plans and launches one op on `stream` without waiting; false (with a gtest failure) when a phase fails. */
template <class Plan, class Launch>
bool enqueue(Plan plan, Launch launch, aclrtStream stream, std::vector<std::vector<unsigned char>>& workspaces) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus planned = plan(&size, &executor);
  EXPECT_EQ(planned, ACLNN_SUCCESS) << recentError();
  if (planned != ACLNN_SUCCESS) return false;
  workspaces.emplace_back(size);  // kept alive until the stream has run
  const aclnnStatus launched = launch(workspaces.back().data(), size, executor, stream);
  EXPECT_EQ(launched, ACLNN_SUCCESS) << recentError();
  return launched == ACLNN_SUCCESS;
}

/** Queues every op of `job` on `stream` (DoMask and V3Grad read the mask GenMaskV2 wrote), then synchronizes. */
void runJob(Job& job, aclrtStream stream) {
  const std::vector<int64_t> shape = {kElements};
  auto grad = makeView(job.grad.data(), ACL_BF16, shape), self = makeView(job.self.data(), ACL_BF16, shape);
  auto threshold = makeView(job.threshold.data(), ACL_BF16, shape);
  auto genMask = makeView(job.genMask.data(), ACL_UINT8, {kMaskBytes});
  auto v3Out = makeView(job.v3Out.data(), ACL_BF16, shape);
  auto v3Mask = makeView(job.v3Mask.data(), ACL_UINT8, {kMaskBytes});
  auto doMask = makeView(job.doMask.data(), ACL_BF16, shape);
  auto v3Grad = makeView(job.v3Grad.data(), ACL_BF16, shape);
  auto zero = makeScalar<float>(0.25f, ACL_FLOAT);
  std::unique_ptr<aclIntArray, void (*)(aclIntArray*)> dims(aclCreateIntArray(shape.data(), 1),
                                                            [](aclIntArray* a) { aclDestroyIntArray(a); });
  std::vector<std::vector<unsigned char>> workspaces;
  workspaces.reserve(8);
  const int64_t seed = job.seed, offset = 4 * (job.seed % 7);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnThresholdBackwardGetWorkspaceSize(grad.get(), self.get(), zero.get(), threshold.get(), s, e);
      },
      aclnnThresholdBackward, stream, workspaces);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnDropoutGenMaskV2GetWorkspaceSize(dims.get(), 0.3, seed, offset, ACL_BF16, genMask.get(), s, e);
      },
      aclnnDropoutGenMaskV2, stream, workspaces);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnDropoutV3GetWorkspaceSize(self.get(), nullptr, 0.3, seed, offset, v3Out.get(), v3Mask.get(), s, e);
      },
      aclnnDropoutV3, stream, workspaces);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnDropoutDoMaskGetWorkspaceSize(grad.get(), genMask.get(), 0.3, doMask.get(), s, e);
      },
      aclnnDropoutDoMask, stream, workspaces);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnDropoutV3GradGetWorkspaceSize(grad.get(), genMask.get(), 1.0 / 0.7, v3Grad.get(), s, e);
      },
      aclnnDropoutV3Grad, stream, workspaces);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << recentError();
}

TEST(Concurrency, EightStreamsInParallelGiveTheSingleThreadedBitsWhileAnotherThreadFails) {
  constexpr int kThreads = 8;
  std::vector<Job> expected, actual;
  for (int t = 0; t < kThreads; ++t) {
    expected.emplace_back(1000 + 10 * t);
    actual.emplace_back(1000 + 10 * t);
  }
  for (Job& job : expected) runJob(job, nullptr);  // one thread, the default stream, one job at a time

  std::atomic<bool> stop{false};
  std::atomic<int> errorsSeen{0};
  std::thread failing([&] {
    // Argument errors on a thread of its own: each call's message names its own argument, never another thread's.
    std::vector<unsigned char> bytes(64);
    auto tensor = makeView(bytes.data(), ACL_FLOAT, {16});
    while (!stop.load()) {
      uint64_t size = 0;
      aclOpExecutor* executor = nullptr;
      const aclnnStatus status =
          aclnnDropoutDoMaskGetWorkspaceSize(tensor.get(), nullptr, 0.5, tensor.get(), &size, &executor);
      const std::string message = recentError();
      if (status != ACLNN_ERR_PARAM_NULLPTR || !mentions(message, {"aclnnDropoutDoMask", "'mask'"}) ||
          message.find('\n') != std::string::npos) {
        ADD_FAILURE() << "status " << status << ", message: " << message;
        return;
      }
      ++errorsSeen;
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      aclrtStream stream = nullptr;
      ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
      for (int round = 0; round < 3; ++round) runJob(actual[t], stream);
      EXPECT_EQ(recentError(), "") << "no error text leaks into a thread whose calls all succeeded";
      EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    });
  }
  for (std::thread& worker : workers) worker.join();
  stop = true;
  failing.join();
  EXPECT_GT(errorsSeen.load(), 0);
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(actual[t] == expected[t]) << "thread " << t;
  // Different seeds really gave different masks (the comparison above is not vacuous).
  EXPECT_NE(expected[0].genMask, expected[1].genMask);
}

}  // namespace
}  // namespace gradkit::test
