// aclnnDropoutGenMaskV2Tensor: the argument checks (status and message), and masks against the golden for seeds
// and offsets that are read from the device tensors when the executor runs, not when it is planned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "core/parallel.h"
#include "golden/dropout_gen_mask.h"
#include "ops/masked_dropout_test_util.h"
#include "ops/op_test_util.h"

namespace gradkit::test {
namespace {

bool everyByteIs(const std::vector<uint8_t>& bytes, unsigned char value) {
  return std::all_of(bytes.begin(), bytes.end(), [value](uint8_t byte) { return byte == value; });
}

struct IntArrayDeleter {
  void operator()(aclIntArray* array) const { aclDestroyIntArray(array); }
};
using IntArrayPtr = std::unique_ptr<aclIntArray, IntArrayDeleter>;

IntArrayPtr shapeOf(std::vector<int64_t> dims) { return IntArrayPtr(aclCreateIntArray(dims.data(), dims.size())); }

/** One planned call over caller-owned seed/offset storage, so values can change between the phases. */
struct Call {
  aclnnStatus status = -1;
  aclOpExecutor* executor = nullptr;
  uint64_t workspaceSize = 0;
  std::string message;
};

Call plan(const aclIntArray* shape, double prob, const aclTensor* seed, const aclTensor* offsetTensor, int64_t offset,
          aclTensor* out, aclDataType probDataType = ACL_FLOAT) {
  Call call;
  call.status = aclnnDropoutGenMaskV2TensorGetWorkspaceSize(shape, prob, seed, offsetTensor, offset, probDataType, out,
                                                            &call.workspaceSize, &call.executor);
  call.message = recentError();
  return call;
}

void run(const Call& call) {
  ASSERT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  std::vector<unsigned char> workspace(call.workspaceSize);
  EXPECT_EQ(aclnnDropoutGenMaskV2Tensor(workspace.data(), call.workspaceSize, call.executor, nullptr), ACLNN_SUCCESS)
      << recentError();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
}

/** The mask of n elements for seed/offset values stored only after GetWorkspaceSize. */
std::vector<uint8_t> genMask(int64_t n, double prob, int64_t seedValue, int64_t offsetValue, int64_t offset) {
  int64_t seed = 0x5A5A5A5A5A5A5A5A, offsetStored = 0x5A5A5A5A5A5A5A5A;  // what the plan sees
  std::vector<uint8_t> mask(static_cast<size_t>(maskBytesFor(n)), 0xC3);
  auto seedTensor = makeView(&seed, ACL_INT64, {1});
  auto offsetTensor = makeView(&offsetStored, ACL_INT64, {1});
  auto out = makeView(mask.data(), ACL_UINT8, {maskBytesFor(n)});
  const auto shape = shapeOf({n});
  const Call call = plan(shape.get(), prob, seedTensor.get(), offsetTensor.get(), offset, out.get());
  seed = seedValue;
  offsetStored = offsetValue;
  run(call);
  return mask;
}

TEST(DropoutGenMaskV2TensorValues, SeedAndOffsetAreReadWhenTheExecutorRuns) {
  // The spec's self-consistency vectors: (seed 42, offset 0) and (seed 42, offset 8).
  std::vector<uint8_t> offset0(16, 0), offset8(16, 0);
  offset0[0] = 0xae, offset0[1] = 0x80, offset0[2] = 0x0d;
  offset8[0] = 0x2a, offset8[1] = 0x2d, offset8[2] = 0x0d;
  EXPECT_EQ(genMask(20, 0.5, 42, 0, 0), offset0);
  EXPECT_EQ(genMask(20, 0.5, 42, 8, 0), offset8);
  EXPECT_EQ(genMask(20, 0.5, 42, 0, 8), offset8);
  EXPECT_EQ(genMask(20, 0.5, 42, 3, 5), offset8);
  EXPECT_EQ(genMask(20, 0.5, 42, -8, 16), offset8);
}

TEST(DropoutGenMaskV2TensorValues, OneExecutorPerValueSetReplaysWithNewValues) {
  // Two executors planned over the same tensors; the values change between their runs (stream order).
  int64_t seed = 0, offsetValue = 0;
  std::vector<uint8_t> first(48), second(48);
  auto seedTensor = makeView(&seed, ACL_INT64, {1});
  auto offsetTensor = makeView(&offsetValue, ACL_INT64, {1});
  auto out1 = makeView(first.data(), ACL_UINT8, {48});
  auto out2 = makeView(second.data(), ACL_UINT8, {48});
  const auto shape = shapeOf({3, 100});
  const Call a = plan(shape.get(), 0.3, seedTensor.get(), offsetTensor.get(), 4, out1.get());
  const Call b = plan(shape.get(), 0.3, seedTensor.get(), offsetTensor.get(), 4, out2.get());
  seed = 11, offsetValue = 100;
  run(a);
  seed = -12, offsetValue = 200;
  run(b);
  EXPECT_EQ(first, golden::dropoutGenMask(300, 0.3, 11, 104));
  EXPECT_EQ(second, golden::dropoutGenMask(300, 0.3, -12, 204));
}

TEST(DropoutGenMaskV2TensorValues, EqualsGenMaskV2ForTheCombinedOffset) {
  const int64_t seeds[] = {0, 1, -1, INT64_MIN, INT64_MAX, 0x123456789abcdef0};
  const int64_t offsets[][2] = {{0, 0}, {4, 0}, {0, 4}, {1, 2}, {INT64_MAX, 1}, {INT64_MIN, -1}, {0x100000000, -8}};
  int64_t n = 500;
  for (int64_t seed : seeds) {
    for (const auto& offset : offsets) {
      n = n % 700 + 29;
      const int64_t combined = golden::dropoutGenMaskTensorOffset(offset[0], offset[1]);
      std::vector<uint8_t> v2(static_cast<size_t>(maskBytesFor(n)));
      auto out = makeView(v2.data(), ACL_UINT8, {maskBytesFor(n)});
      const auto shape = shapeOf({n});
      planAndRun(
          [&](uint64_t* size, aclOpExecutor** executor) {
            return aclnnDropoutGenMaskV2GetWorkspaceSize(shape.get(), 0.37, seed, combined, ACL_FLOAT, out.get(), size,
                                                         executor);
          },
          aclnnDropoutGenMaskV2);
      const std::vector<uint8_t> ours = genMask(n, 0.37, seed, offset[0], offset[1]);
      ASSERT_EQ(ours, v2) << "seed " << seed << " offsets " << offset[0] << " + " << offset[1];
      ASSERT_EQ(ours, golden::dropoutGenMask(n, 0.37, seed, combined));
    }
  }
  // The wrapped sums themselves.
  EXPECT_EQ(golden::dropoutGenMaskTensorOffset(INT64_MAX, 1), INT64_MIN);
  EXPECT_EQ(golden::dropoutGenMaskTensorOffset(INT64_MIN, -1), INT64_MAX);
  EXPECT_EQ(golden::dropoutGenMaskTensorOffset(-8, 16), 8);
}

TEST(DropoutGenMaskV2TensorValues, Int32SeedIsSignExtended) {
  for (int32_t value : {0, 1, -1, 42, INT32_MAX, INT32_MIN}) {
    int32_t seed = 0x5A5A5A5A;
    int64_t offsetValue = 0x5A5A5A5A5A5A5A5A;
    std::vector<uint8_t> mask(32, 0xC3);
    auto seedTensor = makeView(&seed, ACL_INT32, {1});
    auto offsetTensor = makeView(&offsetValue, ACL_INT64, {});
    auto out = makeView(mask.data(), ACL_UINT8, {32});
    const auto shape = shapeOf({250});
    const Call call = plan(shape.get(), 0.45, seedTensor.get(), offsetTensor.get(), 12, out.get());
    seed = value;
    offsetValue = 3;
    run(call);
    EXPECT_EQ(mask, golden::dropoutGenMask(250, 0.45, static_cast<int64_t>(value), 15)) << value;
  }
}

TEST(DropoutGenMaskV2TensorValues, TailsStridedOutAndStridedScalars) {
  for (int64_t n = 1; n <= 260; ++n) {
    ASSERT_EQ(genMask(n, 0.3, 1000 + n, n, 4), golden::dropoutGenMask(n, 0.3, 1000 + n, n + 4)) << "n " << n;
  }
  // Out every 3rd byte after 5, seed at element 2 of its storage, offset as a [1, 1] view at element 1.
  const int64_t n = 333, bytes = maskBytesFor(n);
  std::vector<uint8_t> storage(static_cast<size_t>(5 + 3 * bytes), 0x77);
  int64_t seeds[3] = {0, 0, 0}, offsets[2] = {0, 0};
  auto out = makeView(storage.data(), ACL_UINT8, {bytes}, {3}, 5, static_cast<int64_t>(storage.size()));
  auto seedTensor = makeView(seeds, ACL_INT64, {1}, {1}, 2, 3);
  auto offsetTensor = makeView(offsets, ACL_INT64, {1, 1}, {1, 1}, 1, 2);
  const auto shape = shapeOf({9, 37});
  const Call call = plan(shape.get(), 0.6, seedTensor.get(), offsetTensor.get(), -2, out.get());
  seeds[2] = 987654321, offsets[1] = 10;
  run(call);
  const std::vector<uint8_t> want = golden::dropoutGenMask(n, 0.6, 987654321, 8);
  for (int64_t i = 0; i < static_cast<int64_t>(storage.size()); ++i) {
    const bool inView = i >= 5 && (i - 5) % 3 == 0;
    ASSERT_EQ(storage[static_cast<size_t>(i)], inView ? want[static_cast<size_t>((i - 5) / 3)] : 0x77) << i;
  }
}

TEST(DropoutGenMaskV2TensorValues, FillsAndEmptyOutReadNeitherTensor) {
  // The tensors' storage is never written; a fill must not even need it to hold a valid value.
  for (const auto& [prob, byte] :
       {std::pair{0.0, 0xFF}, std::pair{DBL_EPSILON, 0xFF}, std::pair{1.0, 0x00}, std::pair{1.0 - DBL_EPSILON, 0x00}}) {
    const std::vector<uint8_t> mask = genMask(300, prob, 1, 2, 3);
    EXPECT_TRUE(everyByteIs(mask, static_cast<unsigned char>(byte))) << prob;
  }
  int64_t seed = 1, offsetValue = 2;
  auto seedTensor = makeView(&seed, ACL_INT64, {1});
  auto offsetTensor = makeView(&offsetValue, ACL_INT64, {1});
  auto out = makeView(nullptr, ACL_UINT8, {0});
  const auto shape = shapeOf({3, 0});
  const Call call = plan(shape.get(), 0.5, seedTensor.get(), offsetTensor.get(), 0, out.get());
  EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_EQ(call.workspaceSize, 0u);
  run(call);
}

TEST(DropoutGenMaskV2TensorValues, SameMaskForAnyThreadCountAndTheScalarPath) {
  const int64_t n = (int64_t{1} << 20) + 77;
  const std::vector<uint8_t> want = golden::dropoutGenMask(n, 0.319, 123456789, 44);
  for (int threads : {1, 2, 3, 5}) {
    setThreadCount(threads);
    EXPECT_EQ(genMask(n, 0.319, 123456789, 40, 4), want) << threads << " threads";
  }
  setThreadCount(0);
}

// ---- checks ----

struct Fixture {
  int64_t seed = 1, offset = 2;
  int32_t seed32 = 1;
  std::vector<uint8_t> mask = std::vector<uint8_t>(32, 0xC3);
  TensorPtr seedTensor = makeView(&seed, ACL_INT64, {1});
  TensorPtr offsetTensor = makeView(&offset, ACL_INT64, {1});
  TensorPtr out = makeView(mask.data(), ACL_UINT8, {32});
  IntArrayPtr shape = shapeOf({2, 100});
};

void expectRejected(const Call& call, aclnnStatus code, std::initializer_list<const char*> words) {
  EXPECT_EQ(call.status, code) << call.message;
  EXPECT_NE(call.message.find("aclnnDropoutGenMaskV2Tensor"), std::string::npos) << call.message;
  for (const char* word : words) EXPECT_NE(call.message.find(word), std::string::npos) << word << ": " << call.message;
}

TEST(DropoutGenMaskV2TensorChecks, NullArguments) {
  Fixture f;
  expectRejected(plan(nullptr, 0.5, f.seedTensor.get(), f.offsetTensor.get(), 0, f.out.get()), ACLNN_ERR_PARAM_NULLPTR,
                 {"shape"});
  expectRejected(plan(f.shape.get(), 0.5, nullptr, f.offsetTensor.get(), 0, f.out.get()), ACLNN_ERR_PARAM_NULLPTR,
                 {"seedTensor"});
  expectRejected(plan(f.shape.get(), 0.5, f.seedTensor.get(), nullptr, 0, f.out.get()), ACLNN_ERR_PARAM_NULLPTR,
                 {"offsetTensor"});
  expectRejected(plan(f.shape.get(), 0.5, f.seedTensor.get(), f.offsetTensor.get(), 0, nullptr),
                 ACLNN_ERR_PARAM_NULLPTR, {"out"});
  aclOpExecutor* executor = nullptr;
  uint64_t size = 0;
  EXPECT_EQ(aclnnDropoutGenMaskV2TensorGetWorkspaceSize(f.shape.get(), 0.5, f.seedTensor.get(), f.offsetTensor.get(), 0,
                                                        ACL_FLOAT, f.out.get(), nullptr, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnDropoutGenMaskV2TensorGetWorkspaceSize(f.shape.get(), 0.5, f.seedTensor.get(), f.offsetTensor.get(), 0,
                                                        ACL_FLOAT, f.out.get(), &size, nullptr),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(everyByteIs(f.mask, 0xC3));
}

TEST(DropoutGenMaskV2TensorChecks, GenMaskV2Rules) {
  Fixture f;
  for (double prob : {-0.1, 1.5, std::nan("")}) {
    expectRejected(plan(f.shape.get(), prob, f.seedTensor.get(), f.offsetTensor.get(), 0, f.out.get()),
                   ACLNN_ERR_PARAM_INVALID, {"prob"});
  }
  expectRejected(plan(f.shape.get(), 0.5, f.seedTensor.get(), f.offsetTensor.get(), 0, f.out.get(), ACL_INT32),
                 ACLNN_ERR_PARAM_INVALID, {"probDataType"});
  std::vector<int8_t> wrongDtype(32);
  auto int8Out = makeView(wrongDtype.data(), ACL_INT8, {32});
  expectRejected(plan(f.shape.get(), 0.5, f.seedTensor.get(), f.offsetTensor.get(), 0, int8Out.get()),
                 ACLNN_ERR_PARAM_INVALID, {"out", "UINT8"});
  auto shortOut = makeView(f.mask.data(), ACL_UINT8, {16});
  expectRejected(plan(f.shape.get(), 0.5, f.seedTensor.get(), f.offsetTensor.get(), 0, shortOut.get()),
                 ACLNN_ERR_PARAM_INVALID, {"out", "32", "16"});
}

TEST(DropoutGenMaskV2TensorChecks, SeedAndOffsetTensorRules) {
  Fixture f;
  float floatSeed = 1;
  auto floatSeedTensor = makeView(&floatSeed, ACL_FLOAT, {1});
  expectRejected(plan(f.shape.get(), 0.5, floatSeedTensor.get(), f.offsetTensor.get(), 0, f.out.get()),
                 ACLNN_ERR_PARAM_INVALID, {"seedTensor", "INT64", "FLOAT"});
  int64_t two[2] = {1, 2};
  auto twoSeeds = makeView(two, ACL_INT64, {2});
  expectRejected(plan(f.shape.get(), 0.5, twoSeeds.get(), f.offsetTensor.get(), 0, f.out.get()),
                 ACLNN_ERR_PARAM_INVALID, {"seedTensor", "one element", "2 elements"});
  auto noSeed = makeView(two, ACL_INT64, {0});
  expectRejected(plan(f.shape.get(), 0.5, noSeed.get(), f.offsetTensor.get(), 0, f.out.get()), ACLNN_ERR_PARAM_INVALID,
                 {"seedTensor", "0 elements"});
  auto int32Offset = makeView(&f.seed32, ACL_INT32, {1});
  expectRejected(plan(f.shape.get(), 0.5, f.seedTensor.get(), int32Offset.get(), 0, f.out.get()),
                 ACLNN_ERR_PARAM_INVALID, {"offsetTensor", "INT64", "INT32"});
  auto twoOffsets = makeView(two, ACL_INT64, {1, 2});
  expectRejected(plan(f.shape.get(), 0.5, f.seedTensor.get(), twoOffsets.get(), 0, f.out.get()),
                 ACLNN_ERR_PARAM_INVALID, {"offsetTensor", "2 elements"});
  // An INT32 seed, a 0-d offset and a [1, 1] seed are accepted.
  auto int32Seed = makeView(&f.seed32, ACL_INT32, {1, 1});
  auto scalarOffset = makeView(&f.offset, ACL_INT64, {});
  EXPECT_EQ(plan(f.shape.get(), 0.5, int32Seed.get(), scalarOffset.get(), 0, f.out.get()).status, ACLNN_SUCCESS);
  EXPECT_TRUE(everyByteIs(f.mask, 0xC3));
}

}  // namespace
}  // namespace gradkit::test
