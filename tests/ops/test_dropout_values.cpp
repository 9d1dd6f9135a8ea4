// aclnnDropout values against golden/dropout (itself the GenMask stream golden + the DoMask golden, written from
// the formulas), and against its documented composition: the mask equals aclnnDropoutGenMaskV2's, the output equals
// aclnnDropoutDoMask's on that mask; eval / p == 0 / p == 1 leave maskOut untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <vector>

#include "aclnnop/aclnn_dropout.h"
#include "aclnnop/aclnn_dropout_do_mask.h"
#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "core/parallel.h"
#include "golden/dropout.h"
#include "golden/dropout_gen_mask.h"
#include "ops/masked_dropout_test_util.h"
#include "ops/op_test_util.h"
#include "ops/random_data.h"

namespace gradkit::test {
namespace {

bool everyByteIs(const std::vector<uint8_t>& bytes, unsigned char value) {
  return std::all_of(bytes.begin(), bytes.end(), [value](uint8_t byte) { return byte == value; });
}

constexpr unsigned char kMaskSentinel = 0xC3;

struct Result {
  std::vector<unsigned char> out;
  std::vector<uint8_t> mask;
};

/** Runs aclnnDropout on dense tensors of shape [n]; maskOut starts as the sentinel. */
Result dropout(aclDataType dtype, aclDataType outDtype, const std::vector<unsigned char>& input, int64_t n, double p,
               bool train, int64_t seed, int64_t offset) {
  Result result{std::vector<unsigned char>(static_cast<size_t>(n) * aclDataTypeSize(outDtype), 0xEE),
                std::vector<uint8_t>(static_cast<size_t>(maskBytesFor(n)), kMaskSentinel)};
  std::vector<unsigned char> x = input;
  auto inputTensor = makeView(x.data(), dtype, {n});
  auto outTensor = makeView(result.out.data(), outDtype, {n});
  auto maskTensor = makeView(result.mask.data(), ACL_UINT8, {maskBytesFor(n)});
  const PlannedCall call = planAndRun(
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutGetWorkspaceSize(inputTensor.get(), p, train, seed, offset, outTensor.get(),
                                            maskTensor.get(), size, executor);
      },
      aclnnDropout);
  EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_EQ(x, input) << "the input was modified";
  return result;
}

Result golden(aclDataType dtype, aclDataType outDtype, const std::vector<unsigned char>& input, int64_t n, double p,
              bool train, int64_t seed, int64_t offset) {
  Result result{std::vector<unsigned char>(static_cast<size_t>(n) * aclDataTypeSize(outDtype)),
                std::vector<uint8_t>(static_cast<size_t>(maskBytesFor(n)), kMaskSentinel)};
  golden::dropout(dtype, outDtype, input.data(), n, p, train, seed, offset, result.out.data(), result.mask);
  return result;
}

void expectGolden(aclDataType dtype, aclDataType outDtype, int64_t n, double p, bool train, int64_t seed,
                  int64_t offset, uint32_t dataSeed) {
  const std::vector<unsigned char> input = randomElements(dtype, n, dataSeed);
  const Result ours = dropout(dtype, outDtype, input, n, p, train, seed, offset);
  const Result want = golden(dtype, outDtype, input, n, p, train, seed, offset);
  EXPECT_EQ(ours.mask, want.mask) << "n " << n << " p " << p << " train " << train << " dtype " << dtype;
  EXPECT_EQ(ours.out, want.out) << "n " << n << " p " << p << " train " << train << " dtype " << dtype;
}

TEST(DropoutValues, UpstreamExampleHasKeptValuesDoubled) {
  const float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<unsigned char> input(sizeof x);
  std::memcpy(input.data(), x, sizeof x);
  const Result ours = dropout(ACL_FLOAT, ACL_FLOAT, input, 8, 0.5, true, 1234, 0);
  EXPECT_EQ(ours.mask, golden::dropoutGenMask(8, 0.5, 1234, 0));
  float y[8];
  std::memcpy(y, ours.out.data(), sizeof y);
  for (int i = 0; i < 8; ++i) {
    const bool kept = (ours.mask[0] >> i) & 1;
    EXPECT_EQ(y[i], kept ? 2.0f * x[i] : 0.0f) << i;
  }
}

TEST(DropoutValues, EveryDtypeProbabilityAndTailMatchesTheGolden) {
  const aclDataType dtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
  for (aclDataType dtype : dtypes) {
    for (double p : {0.021, 0.1, 0.15, 0.319, 0.5, 0.9, 0.999, 1e-5}) {
      expectGolden(dtype, dtype, 1037, p, true, 7, 4, 11);
    }
    for (int64_t n = 1; n <= 140; ++n) expectGolden(dtype, dtype, n, 0.3, true, 2024 + n, n, 5);
  }
}

TEST(DropoutValues, MixedOutputDtypes) {
  const aclDataType dtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
  for (aclDataType in : dtypes) {
    for (aclDataType out : dtypes) {
      expectGolden(in, out, 999, 0.3, true, 9, 0, 3);
      expectGolden(in, out, 999, 0.3, false, 9, 0, 3);
    }
  }
}

TEST(DropoutValues, EvalAndExactZeroOrOneLeaveTheMaskUntouched) {
  const std::vector<unsigned char> input = randomElements(ACL_FLOAT, 300, 1);
  for (const auto& [p, train] : {std::pair{0.5, false}, std::pair{0.0, true}, std::pair{-0.0, true},
                                 std::pair{1.0, true}, std::pair{1.0, false}}) {
    const Result ours = dropout(ACL_FLOAT, ACL_FLOAT, input, 300, p, train, 5, 0);
    EXPECT_TRUE(everyByteIs(ours.mask, kMaskSentinel)) << p << " " << train;
    const bool zeros = train && p == 1.0;
    if (zeros) {
      EXPECT_TRUE(allBytesAre(ours.out, 0)) << p;
    } else {
      EXPECT_EQ(ours.out, input) << p << " " << train;
    }
  }
}

TEST(DropoutValues, ProbabilitiesWithinDblEpsilonGenerateTheMaskButCopyOrZero) {
  const std::vector<unsigned char> input = randomElements(ACL_FLOAT, 1000, 2);
  // p = DBL_EPSILON: the stream (keepF = 1.0f, not a 0xFF fill: padding bits are 0), out = input.
  Result ours = dropout(ACL_FLOAT, ACL_FLOAT, input, 1000, DBL_EPSILON, true, 1, 0);
  EXPECT_EQ(ours.mask, golden::dropoutGenMaskStream(1000, DBL_EPSILON, 1, 0));
  EXPECT_EQ(ours.mask.back(), 0x00);  // bits 1000..1023 are padding
  EXPECT_EQ(ours.out, input);
  // p = 1 - DBL_EPSILON: the stream keeps nothing, out = +0.
  ours = dropout(ACL_FLOAT, ACL_FLOAT, input, 1000, 1.0 - DBL_EPSILON, true, 1, 0);
  EXPECT_TRUE(everyByteIs(ours.mask, 0x00));
  EXPECT_TRUE(allBytesAre(ours.out, 0));
}

TEST(DropoutValues, EqualsGenMaskV2ThenDoMask) {
  const aclDataType dtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
  for (aclDataType dtype : dtypes) {
    const int64_t n = 4099;
    const std::vector<unsigned char> input = randomElements(dtype, n, 21);
    const Result ours = dropout(dtype, dtype, input, n, 0.15, true, -77, 12);

    std::vector<uint8_t> mask(static_cast<size_t>(maskBytesFor(n)));
    std::vector<unsigned char> x = input, out(input.size());
    const int64_t dims[1] = {n};
    aclIntArray* shape = aclCreateIntArray(dims, 1);
    auto maskTensor = makeView(mask.data(), ACL_UINT8, {maskBytesFor(n)});
    auto xTensor = makeView(x.data(), dtype, {n});
    auto outTensor = makeView(out.data(), dtype, {n});
    planAndRun(
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnDropoutGenMaskV2GetWorkspaceSize(shape, 0.15, -77, 12, dtype, maskTensor.get(), size, executor);
        },
        aclnnDropoutGenMaskV2);
    planAndRun(
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnDropoutDoMaskGetWorkspaceSize(xTensor.get(), maskTensor.get(), 0.15, outTensor.get(), size,
                                                    executor);
        },
        aclnnDropoutDoMask);
    aclDestroyIntArray(shape);
    EXPECT_EQ(ours.mask, mask) << dtype;
    EXPECT_EQ(ours.out, out) << dtype;
  }
}

TEST(DropoutValues, StridedInputOutAndMask) {
  // input [5, 40] with row stride 90 and column stride 2 at offset 3; out transposed; maskOut every 3rd byte.
  const int64_t rows = 5, cols = 40, n = rows * cols, bytes = maskBytesFor(n);
  std::vector<float> inStorage(3 + 4 * 90 + 39 * 2 + 1);
  for (size_t i = 0; i < inStorage.size(); ++i) inStorage[i] = static_cast<float>(i) * 0.25f - 7.0f;
  std::vector<float> outStorage(static_cast<size_t>(n), -99.0f);
  std::vector<uint8_t> maskStorage(static_cast<size_t>(2 + 3 * bytes), kMaskSentinel);
  auto in = makeView(inStorage.data(), ACL_FLOAT, {rows, cols}, {90, 2}, 3, static_cast<int64_t>(inStorage.size()));
  auto out = makeView(outStorage.data(), ACL_FLOAT, {rows, cols}, {1, rows}, 0, n);
  auto mask = makeView(maskStorage.data(), ACL_UINT8, {bytes}, {3}, 2, static_cast<int64_t>(maskStorage.size()));
  const PlannedCall call = planAndRun(
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutGetWorkspaceSize(in.get(), 0.7, true, 6, 0, out.get(), mask.get(), size, executor);
      },
      aclnnDropout);
  ASSERT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_GT(call.workspaceSize, 0u);

  std::vector<unsigned char> dense(static_cast<size_t>(n) * 4);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      std::memcpy(dense.data() + (r * cols + c) * 4, &inStorage[static_cast<size_t>(3 + r * 90 + c * 2)], 4);
    }
  }
  const Result want = golden(ACL_FLOAT, ACL_FLOAT, dense, n, 0.7, true, 6, 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float expected;
      std::memcpy(&expected, want.out.data() + (r * cols + c) * 4, 4);
      ASSERT_EQ(outStorage[static_cast<size_t>(r + c * rows)], expected) << r << "," << c;
    }
  }
  for (int64_t i = 0; i < static_cast<int64_t>(maskStorage.size()); ++i) {
    const bool inView = i >= 2 && (i - 2) % 3 == 0;
    ASSERT_EQ(maskStorage[static_cast<size_t>(i)], inView ? want.mask[static_cast<size_t>((i - 2) / 3)] : kMaskSentinel)
        << i;
  }
}

TEST(DropoutValues, ZeroDimEightDimAndEmpty) {
  float x = 3.0f, y = 0.0f;
  std::vector<uint8_t> mask(16, kMaskSentinel);
  auto in = makeView(&x, ACL_FLOAT, {});
  auto out = makeView(&y, ACL_FLOAT, {});
  auto maskTensor = makeView(mask.data(), ACL_UINT8, {16});
  ASSERT_EQ(planAndRun(
                [&](uint64_t* size, aclOpExecutor** executor) {
                  return aclnnDropoutGetWorkspaceSize(in.get(), 0.5, true, 11, 0, out.get(), maskTensor.get(), size,
                                                      executor);
                },
                aclnnDropout)
                .status,
            ACLNN_SUCCESS);
  const std::vector<uint8_t> want = golden::dropoutGenMaskStream(1, 0.5, 11, 0);
  EXPECT_EQ(mask, want);
  EXPECT_EQ(y, (want[0] & 1) ? 6.0f : 0.0f);

  // 8-d equals the flat case (the mask index is the row-major index).
  const std::vector<unsigned char> input = randomElements(ACL_BF16, 144, 8);
  std::vector<unsigned char> x8 = input, y8(input.size());
  std::vector<uint8_t> mask8(32);
  auto in8 = makeView(x8.data(), ACL_BF16, {2, 1, 3, 2, 1, 2, 3, 2});
  auto out8 = makeView(y8.data(), ACL_BF16, {2, 1, 3, 2, 1, 2, 3, 2});
  auto maskTensor8 = makeView(mask8.data(), ACL_UINT8, {2, 16});
  planAndRun(
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutGetWorkspaceSize(in8.get(), 0.6, true, 11, 4, out8.get(), maskTensor8.get(), size, executor);
      },
      aclnnDropout);
  const Result flat = golden(ACL_BF16, ACL_BF16, input, 144, 0.6, true, 11, 4);
  EXPECT_EQ(y8, flat.out);
  EXPECT_EQ(mask8, flat.mask);

  // Empty: success, workspace 0, nothing written.
  auto emptyIn = makeView(nullptr, ACL_FLOAT, {3, 0});
  auto emptyOut = makeView(nullptr, ACL_FLOAT, {3, 0});
  auto emptyMask = makeView(nullptr, ACL_UINT8, {0});
  const PlannedCall call = planAndRun(
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutGetWorkspaceSize(emptyIn.get(), 0.5, true, 1, 0, emptyOut.get(), emptyMask.get(), size,
                                            executor);
      },
      aclnnDropout);
  EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_EQ(call.workspaceSize, 0u);
}

TEST(DropoutValues, SameResultForAnyThreadCount) {
  const int64_t n = (int64_t{1} << 20) + 333;
  const std::vector<unsigned char> input = randomElements(ACL_FLOAT16, n, 44);
  const Result want = golden(ACL_FLOAT16, ACL_FLOAT16, input, n, 0.319, true, 123456789, 40);
  for (int threads : {1, 2, 3, 5}) {
    setThreadCount(threads);
    const Result ours = dropout(ACL_FLOAT16, ACL_FLOAT16, input, n, 0.319, true, 123456789, 40);
    EXPECT_EQ(ours.mask, want.mask) << threads;
    EXPECT_EQ(ours.out, want.out) << threads;
  }
  setThreadCount(0);
}

}  // namespace
}  // namespace gradkit::test
