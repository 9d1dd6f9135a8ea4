// gradkit::native_dropout (forward host dispatch): paths, the packed mask on every path (same mask from aclnnDropoutV3
// and aclnnDropoutGenMaskV2 for one seed/offset), output values against the formulas, checks, and a forward + backward
// round trip with PyTorch's autograd scale.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "gradkit/native_dropout.h"
#include "opapi/tensor.h"
#include "ops/random_data.h"
#include "ops/test_native_dropout_util.h"

namespace gradkit::test {
namespace {

using Path = DropoutPath;
using gradkit_test::mentions;
using gradkit_test::ScopedEnv;

constexpr int64_t kSeed = 20260826;
constexpr int64_t kOffset = 8;

/** Output and mask of the out overload on contiguous tensors, after the stream ran. */
struct Forward {
  std::vector<unsigned char> out;
  std::vector<uint8_t> mask;
  Path path = Path::kRejected;
  aclnnStatus status = ACLNN_SUCCESS;
};

Forward forwardOf(aclDataType dtype, std::vector<unsigned char>& input, double p, bool train, int64_t seed = kSeed,
                  int64_t offset = kOffset) {
  const int64_t n = static_cast<int64_t>(input.size() / aclDataTypeSize(dtype));
  Forward result;
  result.out.assign(input.size(), 0xA5);
  result.mask.assign(static_cast<size_t>((n + 127) / 128 * 16), 0x5A);
  auto x = makeView(input.data(), dtype, {n});
  auto out = makeView(result.out.data(), dtype, {n});
  auto mask = makeView(result.mask.data(), ACL_UINT8, {static_cast<int64_t>(result.mask.size())});
  result.status = native_dropout(x.get(), p, train, seed, offset, out.get(), mask.get(), nullptr, &result.path);
  if (result.status == ACLNN_SUCCESS) result.status = aclrtSynchronizeStream(nullptr);
  return result;
}

/** aclnnDropoutGenMaskV2 called directly, for comparison with the dispatch's masks. */
std::vector<uint8_t> genMaskV2(int64_t n, double p, aclDataType dtype, int64_t seed, int64_t offset) {
  std::vector<uint8_t> mask(static_cast<size_t>((n + 127) / 128 * 16), 0x77);
  const int64_t dims[1] = {n};
  std::unique_ptr<aclIntArray, decltype(&aclDestroyIntArray)> shape(aclCreateIntArray(dims, 1), aclDestroyIntArray);
  auto out = makeView(mask.data(), ACL_UINT8, {static_cast<int64_t>(mask.size())});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnDropoutGenMaskV2GetWorkspaceSize(shape.get(), p, seed, offset, dtype, out.get(), &size, &executor),
            ACLNN_SUCCESS)
      << recentError();
  std::vector<unsigned char> workspace(size);
  EXPECT_EQ(aclnnDropoutGenMaskV2(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  return mask;
}

int64_t keptCount(const std::vector<uint8_t>& mask, int64_t n) {
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) kept += keepBit(mask, i);
  return kept;
}

using NativeDropout = DispatchFixture;

TEST_F(NativeDropout, PathFollowsTrainProbabilityProfileAndDisabledOps) {
  EXPECT_EQ(native_dropout_path(10, 0.5, true), Path::kV3);
  EXPECT_EQ(native_dropout_path(10, 0.5, false), Path::kIdentity);
  EXPECT_EQ(native_dropout_path(10, 0.0, true), Path::kIdentity);
  EXPECT_EQ(native_dropout_path(10, 1.0, true), Path::kZeros);
  EXPECT_EQ(native_dropout_path(10, 1.0, false), Path::kIdentity);
  EXPECT_EQ(native_dropout_path(0, 0.5, true), Path::kEmpty);
  for (double bad : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_EQ(native_dropout_path(10, bad, true), Path::kRejected);
    EXPECT_EQ(native_dropout_path(10, bad, false), Path::kRejected);
  }
  {
    ScopedSoc a2("Ascend910B");
    EXPECT_EQ(native_dropout_path(10, 0.5, true), Path::kGenMaskDoMask);
  }
  {
    ScopedEnv disabled("GRADKIT_DISABLE_OPS", "aclnnDropoutV3");
    EXPECT_EQ(native_dropout_path(10, 0.5, true), Path::kGenMaskDoMask);
  }
  EXPECT_STREQ(path_name(Path::kGenMaskDoMask), "genmask+domask");
}

TEST_F(NativeDropout, ScaleIsPyTorchsAutogradFormula) {
  EXPECT_EQ(native_dropout_scale(0.5, true), 2.0);
  EXPECT_EQ(native_dropout_scale(0.15, true), 1.0 / (1.0 - 0.15));
  EXPECT_EQ(native_dropout_scale(0.0, true), 1.0);
  EXPECT_EQ(native_dropout_scale(1.0, true), 0.0);
  EXPECT_EQ(native_dropout_scale(0.5, false), 1.0);
}

TEST_F(NativeDropout, EvalOrZeroProbabilityCopiesTheInputAndKeepsEverything) {
  for (aclDataType dtype : kDropoutDtypes) {
    auto input = randomElements(dtype, 200, 3);
    for (const auto& [p, train] : {std::pair{0.5, false}, std::pair{0.0, true}}) {
      const Forward result = forwardOf(dtype, input, p, train);
      ASSERT_EQ(result.status, ACLNN_SUCCESS) << recentError();
      EXPECT_EQ(result.path, Path::kIdentity);
      EXPECT_EQ(result.out, input);  // bit for bit: NaN, -0 included
      EXPECT_EQ(result.mask, std::vector<uint8_t>(32, 0xFF));
    }
  }
}

TEST_F(NativeDropout, ProbabilityOneGivesPositiveZerosAndAnEmptyMask) {
  for (aclDataType dtype : kDropoutDtypes) {
    auto input = randomElements(dtype, 130, 4);
    const Forward result = forwardOf(dtype, input, 1.0, true);
    ASSERT_EQ(result.status, ACLNN_SUCCESS) << recentError();
    EXPECT_EQ(result.path, Path::kZeros);
    EXPECT_EQ(result.out, std::vector<unsigned char>(input.size(), 0));
    EXPECT_EQ(result.mask, std::vector<uint8_t>(32, 0x00));
  }
}

TEST_F(NativeDropout, BothRandomPathsDrawGenMaskV2sMaskAndApplyTheirOwnArithmetic) {
  for (aclDataType dtype : kDropoutDtypes) {
    for (double p : {0.1, 0.15, 0.5, 0.9}) {
      auto input = randomElements(dtype, 1000, static_cast<uint32_t>(p * 100));
      const auto expectedMask = genMaskV2(1000, p, dtype, kSeed, kOffset);
      const Forward v3 = forwardOf(dtype, input, p, true);
      ASSERT_EQ(v3.status, ACLNN_SUCCESS) << recentError();
      EXPECT_EQ(v3.path, Path::kV3);
      EXPECT_EQ(v3.mask, expectedMask) << "dtype " << dtype << " p " << p;
      EXPECT_EQ(v3.out, v3Forward(dtype, input, v3.mask, p)) << "dtype " << dtype << " p " << p;
      ScopedSoc a2("Ascend910B");
      const Forward legacy = forwardOf(dtype, input, p, true);
      ASSERT_EQ(legacy.status, ACLNN_SUCCESS) << recentError();
      EXPECT_EQ(legacy.path, Path::kGenMaskDoMask);
      EXPECT_EQ(legacy.mask, expectedMask);
      EXPECT_EQ(legacy.out, legacyDoMask(dtype, input, legacy.mask, p)) << "dtype " << dtype << " p " << p;
    }
  }
}

TEST_F(NativeDropout, MaskKeepsAboutOneMinusPAndDependsOnSeedAndOffset) {
  std::vector<unsigned char> input(100000 * 4, 0);
  const Forward base = forwardOf(ACL_FLOAT, input, 0.3, true);
  ASSERT_EQ(base.status, ACLNN_SUCCESS) << recentError();
  const double kept = static_cast<double>(keptCount(base.mask, 100000)) / 100000;
  EXPECT_NEAR(kept, 0.7, 0.01);  // 0.7 +- 7 standard deviations
  const Forward otherSeed = forwardOf(ACL_FLOAT, input, 0.3, true, kSeed + 1, kOffset);
  const Forward otherOffset = forwardOf(ACL_FLOAT, input, 0.3, true, kSeed, kOffset + 4);
  EXPECT_NE(base.mask, otherSeed.mask);
  EXPECT_NE(base.mask, otherOffset.mask);
  const Forward again = forwardOf(ACL_FLOAT, input, 0.3, true);
  EXPECT_EQ(base.mask, again.mask);
}

TEST_F(NativeDropout, ChecksNameTheArgument) {
  std::vector<float> x(200, 1.0f), o(200);
  std::vector<uint8_t> m(32);
  auto input = makeView(x.data(), ACL_FLOAT, {200});
  auto out = makeView(o.data(), ACL_FLOAT, {200});
  auto mask = makeView(m.data(), ACL_UINT8, {32});
  Path path = Path::kV3;
  EXPECT_EQ(native_dropout(nullptr, 0.5, true, 0, 0, out.get(), mask.get(), nullptr, &path), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"native_dropout", "'input'"}));
  EXPECT_EQ(path, Path::kRejected);
  EXPECT_EQ(native_dropout(input.get(), 0.5, true, 0, 0, nullptr, mask.get(), nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"'out'"}));
  EXPECT_EQ(native_dropout(input.get(), 0.5, true, 0, 0, out.get(), static_cast<aclTensor*>(nullptr), nullptr),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"'mask'"}));
  EXPECT_EQ(native_dropout(input.get(), 1.5, false, 0, 0, out.get(), mask.get(), nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'p'", "[0, 1]", "1.5"}));
  EXPECT_EQ(native_dropout(input.get(), std::nan(""), true, 0, 0, out.get(), mask.get(), nullptr),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'p'", "nan"}));
  auto shortMask = makeView(m.data(), ACL_UINT8, {16});
  EXPECT_EQ(native_dropout(input.get(), 0.0, true, 0, 0, out.get(), shortMask.get(), nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'mask'", "32 elements", "16 elements"}));
  auto wideOut = makeView(o.data(), ACL_FLOAT, {100, 2});
  EXPECT_EQ(native_dropout(input.get(), 0.5, true, 0, 0, wideOut.get(), mask.get(), nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'out'", "[200]", "[100, 2]"}));
  auto intInput = makeView(x.data(), ACL_INT32, {200});
  EXPECT_EQ(native_dropout(intInput.get(), 0.5, true, 0, 0, intInput.get(), mask.get(), nullptr),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'input'", "INT32"}));
  // aclnnDropoutV3 requires offset % 4 == 0; its refusal comes back unchanged and nothing is reported as taken.
  path = Path::kV3;
  EXPECT_NE(native_dropout(input.get(), 0.5, true, 0, 2, out.get(), mask.get(), nullptr, &path), ACLNN_SUCCESS);
  EXPECT_EQ(path, Path::kRejected);
  EXPECT_TRUE(mentions(recentError(), {"offset"}));
}

TEST_F(NativeDropout, AllocatingOverloadMakesContiguousOutputAndPackedMask) {
  auto storage = randomElements(ACL_FLOAT16, 300, 9);
  const std::vector<int64_t> shape = {10, 15};
  auto input = makeView(storage.data(), ACL_FLOAT16, shape, {30, 2}, 0, 300);
  DeviceTensor out, mask;
  Path path = Path::kRejected;
  ASSERT_EQ(native_dropout(input.get(), 0.25, true, kSeed, kOffset, &out, &mask, nullptr, &path), ACLNN_SUCCESS)
      << recentError();
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(path, Path::kV3);
  EXPECT_EQ(out.shape(), shape);
  EXPECT_EQ(out.dtype(), ACL_FLOAT16);
  EXPECT_EQ(mask.shape(), (std::vector<int64_t>{32}));
  EXPECT_EQ(mask.dtype(), ACL_UINT8);
  const auto* maskBytes = static_cast<const uint8_t*>(mask.data());
  const std::vector<uint8_t> maskVector(maskBytes, maskBytes + mask.bytes());
  EXPECT_EQ(maskVector, genMaskV2(150, 0.25, ACL_FLOAT16, kSeed, kOffset));
  const auto* outBytes = static_cast<const unsigned char*>(out.data());
  EXPECT_EQ(std::vector<unsigned char>(outBytes, outBytes + out.bytes()),
            v3Forward(ACL_FLOAT16, gatherView(ACL_FLOAT16, storage, shape, {30, 2}, 0), maskVector, 0.25));

  std::vector<float> none;
  auto empty = makeView(none.data(), ACL_FLOAT, {0, 4});
  ASSERT_EQ(native_dropout(empty.get(), 0.25, true, 0, 0, &out, &mask, nullptr, &path), ACLNN_SUCCESS);
  EXPECT_EQ(path, Path::kEmpty);
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(mask.shape(), (std::vector<int64_t>{0}));
  EXPECT_EQ(native_dropout(input.get(), 2.0, true, 0, 0, &out, &mask, nullptr, &path), ACLNN_ERR_PARAM_INVALID);
  EXPECT_FALSE(out.valid());
  EXPECT_FALSE(mask.valid());

  DeviceTensor held, heldMask;
  ASSERT_EQ(DeviceTensor::allocate({16}, ACL_FLOAT, &held), ACLNN_SUCCESS);
  EXPECT_EQ(native_dropout(held.get(), 0.5, true, 0, 0, &held, &heldMask, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'out'", "memory of an input"}));
  EXPECT_TRUE(held.valid());

  // An input whose data pointer lies before the held memory but whose offset leads into it is held all the same
  // (the reliability finding: only the data pointer was compared, and the input was read after it was freed).
  aclTensor intoHeld;
  intoHeld.viewDims = {8};
  intoHeld.strides = {1};
  intoHeld.dtype = ACL_FLOAT;
  intoHeld.storageDims = {40};
  intoHeld.data = static_cast<float*>(held.data()) - 32;
  intoHeld.offset = 32;
  EXPECT_EQ(native_dropout(&intoHeld, 0.5, true, 0, 0, &held, &heldMask, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'out'", "memory of an input"}));
  EXPECT_TRUE(held.valid());
}

TEST_F(NativeDropout, OutputsOverlappingTheInputAreRejectedOnEveryPath) {
  // Input at element 2 and out at element 0 of one buffer: the copy path (eval, or p == 0) would memcpy overlapping
  // ranges, the random paths would read what they already wrote.
  std::vector<float> shared(66, 1.0f);
  std::vector<uint8_t> maskBytes(16);
  auto input = makeView(shared.data(), ACL_FLOAT, {64}, {1}, 2, 66);
  auto out = makeView(shared.data(), ACL_FLOAT, {64}, {1}, 0, 66);
  auto mask = makeView(maskBytes.data(), ACL_UINT8, {16});
  for (const auto& [p, train] : std::vector<std::pair<double, bool>>{{0.5, false}, {0.0, true}, {0.5, true}}) {
    EXPECT_EQ(native_dropout(input.get(), p, train, 0, 0, out.get(), mask.get(), nullptr), ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(mentions(recentError(), {"native_dropout", "'out'", "overlapping input"}));
  }
  auto maskOverInput = makeView(reinterpret_cast<uint8_t*>(shared.data()), ACL_UINT8, {16});
  auto separateOut = makeView(maskBytes.data(), ACL_FLOAT, {4});
  auto small = makeView(shared.data(), ACL_FLOAT, {4});
  EXPECT_EQ(native_dropout(small.get(), 0.5, true, 0, 0, separateOut.get(), maskOverInput.get(), nullptr),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'mask'", "overlapping input"}));
}

// The forward's mask and PyTorch's autograd scale drive the backward: grad_in = grad_out * m * scale, where the V3
// forward kept; on the legacy profile the DoMask arithmetic with the same mask.
TEST_F(NativeDropout, ForwardThenBackwardRoundTrip) {
  for (const char* soc : {"Ascend950", "Ascend910B"}) {
    ScopedSoc profile(soc);
    for (aclDataType dtype : kDropoutDtypes) {
      for (const auto& [p, train] :
           {std::pair{0.3, true}, std::pair{0.0, true}, std::pair{1.0, true}, std::pair{0.6, false}}) {
        auto input = randomElements(dtype, 257, 41);
        const Forward forward = forwardOf(dtype, input, p, train);
        ASSERT_EQ(forward.status, ACLNN_SUCCESS) << recentError();
        auto gradOut = randomElements(dtype, 257, 42);
        std::vector<unsigned char> gradIn(gradOut.size(), 0xCC);
        std::vector<uint8_t> mask = forward.mask;
        auto g = makeView(gradOut.data(), dtype, {257});
        auto m = makeView(mask.data(), ACL_UINT8, {static_cast<int64_t>(mask.size())});
        auto o = makeView(gradIn.data(), dtype, {257});
        const double scale = native_dropout_scale(p, train);
        DropoutBackwardPath backwardPath = DropoutBackwardPath::kRejected;
        ASSERT_EQ(native_dropout_backward(g.get(), m.get(), scale, o.get(), nullptr, &backwardPath), ACLNN_SUCCESS)
            << recentError();
        ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
        std::vector<unsigned char> expected;
        if (scale == 1.0) {
          EXPECT_EQ(backwardPath, DropoutBackwardPath::kClone);
          expected = gradOut;
        } else if (scale == 0.0) {
          EXPECT_EQ(backwardPath, DropoutBackwardPath::kZeros);
          expected.assign(gradOut.size(), 0);
        } else if (std::string(soc) == "Ascend950") {
          EXPECT_EQ(backwardPath, DropoutBackwardPath::kV3Grad);
          expected = torchBackward(dtype, gradOut, mask, scale);
        } else {
          EXPECT_EQ(backwardPath, DropoutBackwardPath::kDoMask);
          expected = legacyDoMask(dtype, gradOut, mask, 1.0 - 1.0 / scale);
        }
        EXPECT_EQ(gradIn, expected) << soc << " dtype " << dtype << " p " << p << " train " << train;
      }
    }
  }
}

}  // namespace
}  // namespace gradkit::test
