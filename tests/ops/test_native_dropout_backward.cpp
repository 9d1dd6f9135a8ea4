// gradkit::native_dropout_backward, the RFC's host dispatch: every path and when it is taken (scale, empty, profile,
// GRADKIT_DISABLE_OPS), the checks and their messages, strided grad/out, and the values of each path against the
// formulas written in test_native_dropout_util.h.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "gradkit/native_dropout.h"
#include "opapi/tensor.h"
#include "ops/random_data.h"
#include "ops/test_native_dropout_util.h"

namespace gradkit::test {
namespace {

using Path = DropoutBackwardPath;
using gradkit_test::mentions;
using gradkit_test::ScopedEnv;

const double kProbabilities[] = {0.1, 0.15, 0.3, 0.5, 0.9, 0.021, 0.319};
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/** The out overload, then a wait; the first failing status. */
aclnnStatus runBackward(const aclTensor* grad, const aclTensor* mask, double scale, aclTensor* out,
                        Path* taken = nullptr) {
  const aclnnStatus status = native_dropout_backward(grad, mask, scale, out, nullptr, taken);
  if (status != ACLNN_SUCCESS) return status;
  return aclrtSynchronizeStream(nullptr);
}

/** Dense data, its mask, and the dispatch's result for `scale`, on contiguous tensors. */
struct Result {
  std::vector<unsigned char> out;
  Path path = Path::kRejected;
};

Result backwardOf(aclDataType dtype, std::vector<unsigned char>& grad, std::vector<uint8_t>& mask, double scale) {
  const int64_t n = static_cast<int64_t>(grad.size() / aclDataTypeSize(dtype));
  Result result;
  result.out.assign(grad.size(), 0xA5);
  auto g = makeView(grad.data(), dtype, {n});
  auto m = makeView(mask.data(), ACL_UINT8, {static_cast<int64_t>(mask.size())});
  auto o = makeView(result.out.data(), dtype, {n});
  EXPECT_EQ(runBackward(g.get(), m.get(), scale, o.get(), &result.path), ACLNN_SUCCESS) << recentError();
  return result;
}

using NativeDropoutBackward = DispatchFixture;

TEST_F(NativeDropoutBackward, PathFollowsScaleEmptinessProfileAndDisabledOps) {
  EXPECT_EQ(native_dropout_backward_path(10, 1.0), Path::kClone);
  EXPECT_EQ(native_dropout_backward_path(10, 0.0), Path::kZeros);
  EXPECT_EQ(native_dropout_backward_path(10, -0.0), Path::kZeros);  // -0 == 0, as torch_npu compares
  EXPECT_EQ(native_dropout_backward_path(10, kInf), Path::kZeros);
  EXPECT_EQ(native_dropout_backward_path(10, 0x1p54), Path::kZeros);   // 1 - 2^-54 rounds to 1 in double
  EXPECT_EQ(native_dropout_backward_path(10, 0x1p53), Path::kV3Grad);  // 1 - 2^-53 is a double < 1
  EXPECT_EQ(native_dropout_backward_path(10, std::nextafter(1.0, 2.0)), Path::kV3Grad);
  EXPECT_EQ(native_dropout_backward_path(10, 2.0), Path::kV3Grad);
  EXPECT_EQ(native_dropout_backward_path(0, 2.0), Path::kEmpty);
  EXPECT_EQ(native_dropout_backward_path(0, 1.0), Path::kEmpty);
  for (double bad : {0.5, std::nextafter(1.0, 0.0), -1.0, -kInf, kNaN, 1e-300}) {
    EXPECT_EQ(native_dropout_backward_path(10, bad), Path::kRejected) << bad;
    EXPECT_EQ(native_dropout_backward_path(0, bad), Path::kRejected) << bad;  // the scale check comes first
  }
  {
    ScopedSoc a2("Ascend910B");
    EXPECT_EQ(native_dropout_backward_path(10, 2.0), Path::kDoMask);
    EXPECT_EQ(native_dropout_backward_path(10, 1.0), Path::kClone);
  }
  {
    ScopedSoc a3("Ascend910_93");
    EXPECT_EQ(native_dropout_backward_path(10, 2.0), Path::kDoMask);
  }
  {
    ScopedEnv disabled("GRADKIT_DISABLE_OPS", "aclnnThresholdBackward, aclnnDropoutV3Grad");
    EXPECT_EQ(native_dropout_backward_path(10, 2.0), Path::kDoMask);
  }
  {
    ScopedEnv otherDisabled("GRADKIT_DISABLE_OPS", "aclnnDropoutV3,aclnnDropoutDoMask");
    EXPECT_EQ(native_dropout_backward_path(10, 2.0), Path::kV3Grad);
  }
  EXPECT_STREQ(path_name(Path::kV3Grad), "v3grad");
  EXPECT_STREQ(path_name(Path::kDoMask), "domask");
}

TEST_F(NativeDropoutBackward, V3GradPathEqualsPyTorchFormulaForEveryDtypeAndTail) {
  for (aclDataType dtype : kDropoutDtypes) {
    for (double p : kProbabilities) {
      for (int64_t n : {1, 7, 127, 128, 129, 1000}) {
        auto grad = randomElements(dtype, n, static_cast<uint32_t>(n * 31 + p * 1000));
        auto mask = randomMask(n, 1.0 - p, static_cast<uint32_t>(n + p * 7919));
        const double scale = 1.0 / (1.0 - p);
        const Result result = backwardOf(dtype, grad, mask, scale);
        ASSERT_EQ(result.path, Path::kV3Grad);
        ASSERT_EQ(result.out, torchBackward(dtype, grad, mask, scale)) << "dtype " << dtype << " p " << p << " n " << n;
      }
    }
  }
}

TEST_F(NativeDropoutBackward, OlderProfilesTakeTheLegacyDoMaskPathWithPFromScale) {
  for (const char* soc : {"Ascend910B", "Ascend910_93"}) {
    ScopedSoc profile(soc);
    for (aclDataType dtype : kDropoutDtypes) {
      for (double p : kProbabilities) {
        auto grad = randomElements(dtype, 300, static_cast<uint32_t>(p * 1000));
        auto mask = randomMask(300, 1.0 - p, 77);
        const double scale = 1.0 / (1.0 - p);
        const Result result = backwardOf(dtype, grad, mask, scale);
        ASSERT_EQ(result.path, Path::kDoMask) << soc;
        ASSERT_EQ(result.out, legacyDoMask(dtype, grad, mask, 1.0 - 1.0 / scale)) << soc << " " << dtype << " " << p;
      }
    }
  }
}

TEST_F(NativeDropoutBackward, DisablingV3GradFallsBackToDoMaskOnAscend950) {
  ScopedEnv disabled("GRADKIT_DISABLE_OPS", "aclnnDropoutV3Grad");
  auto grad = randomElements(ACL_FLOAT16, 500, 5);
  auto mask = randomMask(500, 0.7, 6);
  const double scale = 1.0 / 0.7;
  const Result result = backwardOf(ACL_FLOAT16, grad, mask, scale);
  EXPECT_EQ(result.path, Path::kDoMask);
  EXPECT_EQ(result.out, legacyDoMask(ACL_FLOAT16, grad, mask, 1.0 - 1.0 / scale));
}

// Spec 1.8: p = 0.15 in fp32. PyTorch and V3Grad multiply by RN32(1/0.85) = 0x3f969697; the legacy chain rebuilds the
// factor as RN32(1 / RN32(1 - p)) = 0x3f969696, one ulp lower. Dropped Inf: NaN vs +0.
TEST_F(NativeDropoutBackward, LegacyPathLosesAnUlpAtP015WhereV3GradDoesNot) {
  std::vector<float> values = {1.0f, INFINITY, -2.0f};
  std::vector<unsigned char> grad(values.size() * 4);
  std::memcpy(grad.data(), values.data(), grad.size());
  std::vector<uint8_t> mask(16, 0);
  mask[0] = 0b001;  // keep element 0, drop 1 and 2
  const double scale = 1.0 / (1.0 - 0.15);
  auto bitsOf = [](const std::vector<unsigned char>& out, int i) {
    uint32_t bits;
    std::memcpy(&bits, out.data() + i * 4, 4);
    return bits;
  };
  const Result v3 = backwardOf(ACL_FLOAT, grad, mask, scale);
  EXPECT_EQ(bitsOf(v3.out, 0), 0x3f969697u);
  EXPECT_TRUE(std::isnan(loadElement(ACL_FLOAT, v3.out, 1)));  // Inf * 0
  EXPECT_EQ(bitsOf(v3.out, 2), 0x80000000u);                   // -2 * 0 = -0
  ScopedEnv disabled("GRADKIT_DISABLE_OPS", "aclnnDropoutV3Grad");
  const Result legacy = backwardOf(ACL_FLOAT, grad, mask, scale);
  ASSERT_EQ(legacy.path, Path::kDoMask);
  EXPECT_EQ(bitsOf(legacy.out, 0), 0x3f969696u);
  EXPECT_EQ(bitsOf(legacy.out, 1), 0u);  // selected +0
  EXPECT_EQ(bitsOf(legacy.out, 2), 0u);
}

TEST_F(NativeDropoutBackward, ScaleOneClonesAStridedGradIntoAStridedOutWithoutReadingTheMask) {
  for (aclDataType dtype : kDropoutDtypes) {
    const size_t size = aclDataTypeSize(dtype);
    auto storage = randomElements(dtype, 12 * 9, 11);
    std::vector<unsigned char> outStorage(10 * 20 * size, 0x5A);
    const std::vector<int64_t> shape = {7, 4};
    auto grad = makeView(storage.data(), dtype, shape, {1, 12}, 2, 12 * 9);     // transposed, offset 2
    auto out = makeView(outStorage.data(), dtype, shape, {20, 3}, 5, 10 * 20);  // gaps between elements
    Path path = Path::kRejected;
    ASSERT_EQ(runBackward(grad.get(), nullptr, 1.0, out.get(), &path), ACLNN_SUCCESS) << recentError();
    EXPECT_EQ(path, Path::kClone);
    EXPECT_EQ(gatherView(dtype, outStorage, shape, {20, 3}, 5), gatherView(dtype, storage, shape, {1, 12}, 2));
    std::vector<unsigned char> untouched = outStorage;
    for (int64_t r = 0; r < 7; ++r) {  // blank the written elements; everything else must still be 0x5A
      for (int64_t c = 0; c < 4; ++c) std::memset(untouched.data() + (5 + r * 20 + c * 3) * size, 0x5A, size);
    }
    EXPECT_EQ(untouched, std::vector<unsigned char>(outStorage.size(), 0x5A));
  }
}

TEST_F(NativeDropoutBackward, ScaleZeroInfinityOrHugeWritesPositiveZerosEvenForNaNGrads) {
  for (double scale : {0.0, kInf, 0x1p60}) {
    for (aclDataType dtype : kDropoutDtypes) {
      const size_t size = aclDataTypeSize(dtype);
      auto storage = randomElements(dtype, 64, 12);
      std::vector<unsigned char> outStorage(64 * 2 * size, 0xEE);
      auto grad = makeView(storage.data(), dtype, {8, 8});
      auto out = makeView(outStorage.data(), dtype, {8, 8}, {16, 2}, 0, 128);
      Path path = Path::kRejected;
      ASSERT_EQ(runBackward(grad.get(), nullptr, scale, out.get(), &path), ACLNN_SUCCESS) << recentError();
      EXPECT_EQ(path, Path::kZeros);
      EXPECT_EQ(gatherView(dtype, outStorage, {8, 8}, {16, 2}, 0), std::vector<unsigned char>(64 * size, 0));
      for (int64_t i = 1; i < 128; i += 2) {  // the skipped elements keep their bytes
        EXPECT_EQ(outStorage[i * size], 0xEE) << i;
      }
    }
  }
}

TEST_F(NativeDropoutBackward, EmptyGradGivesAnEmptyResultWithGradsShapeAndLaunchesNothing) {
  std::vector<float> none;
  auto grad = makeView(none.data(), ACL_FLOAT, {2, 0, 3});
  auto out = makeView(none.data(), ACL_FLOAT, {2, 0, 3});
  auto flatMask = makeView(none.data(), ACL_UINT8, {0});
  Path path = Path::kRejected;
  EXPECT_EQ(runBackward(grad.get(), flatMask.get(), 2.0, out.get(), &path), ACLNN_SUCCESS) << recentError();
  EXPECT_EQ(path, Path::kEmpty);
  EXPECT_EQ(runBackward(grad.get(), nullptr, 2.0, out.get(), &path), ACLNN_SUCCESS);  // the mask is not read
  EXPECT_EQ(path, Path::kEmpty);
  DeviceTensor result;
  EXPECT_EQ(native_dropout_backward(grad.get(), flatMask.get(), 2.0, &result, nullptr, &path), ACLNN_SUCCESS);
  EXPECT_EQ(path, Path::kEmpty);
  ASSERT_TRUE(result.valid());
  EXPECT_EQ(result.shape(), (std::vector<int64_t>{2, 0, 3}));  // grad's shape, not the mask's [0]
  EXPECT_EQ(result.dtype(), ACL_FLOAT);
  EXPECT_EQ(result.data(), nullptr);
  // The scale check still applies (the RFC checks scale before looking at the mask).
  EXPECT_EQ(runBackward(grad.get(), flatMask.get(), 0.5, out.get(), &path), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(path, Path::kRejected);
}

TEST_F(NativeDropoutBackward, ScaleOutsideZeroOrAtLeastOneIsRejectedWithTorchNpusMessage) {
  std::vector<float> g(4, 1.0f), o(4, 9.0f);
  std::vector<uint8_t> m(16, 0xFF);
  auto grad = makeView(g.data(), ACL_FLOAT, {4});
  auto out = makeView(o.data(), ACL_FLOAT, {4});
  auto mask = makeView(m.data(), ACL_UINT8, {16});
  const struct {
    double scale;
    const char* text;
  } cases[] = {
      {0.5, "0.5"}, {kNaN, "nan"}, {-1.0, "-1"}, {std::nextafter(1.0, 0.0), "0.9999999999999999"}, {-kInf, "-inf"}};
  for (const auto& c : cases) {
    Path path = Path::kV3Grad;
    EXPECT_EQ(runBackward(grad.get(), mask.get(), c.scale, out.get(), &path), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(path, Path::kRejected);
    EXPECT_TRUE(
        mentions(recentError(), {"native_dropout_backward", "'scale'",
                                 "scale has to be 0 or greater than or equal to 1, but got " + std::string(c.text)}));
  }
  EXPECT_EQ(o, std::vector<float>(4, 9.0f));
}

TEST_F(NativeDropoutBackward, ArgumentChecksNameTheArgument) {
  std::vector<float> g(200, 1.0f), o(200, 0.0f);
  std::vector<uint16_t> h(200, 0);
  std::vector<int32_t> ints(200, 0);
  std::vector<uint8_t> m(48, 0xFF);
  auto grad = makeView(g.data(), ACL_FLOAT, {200});
  auto out = makeView(o.data(), ACL_FLOAT, {200});
  auto mask = makeView(m.data(), ACL_UINT8, {32});
  EXPECT_EQ(runBackward(nullptr, mask.get(), 2.0, out.get()), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"'grad'", "nullptr"}));
  EXPECT_EQ(runBackward(grad.get(), mask.get(), 2.0, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"'out'", "nullptr"}));
  EXPECT_EQ(runBackward(grad.get(), nullptr, 2.0, out.get()), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"'mask'", "nullptr"}));
  auto intGrad = makeView(ints.data(), ACL_INT32, {200});
  EXPECT_EQ(runBackward(intGrad.get(), mask.get(), 2.0, intGrad.get()), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'grad'", "FLOAT16", "INT32"}));
  auto halfOut = makeView(h.data(), ACL_FLOAT16, {200});
  EXPECT_EQ(runBackward(grad.get(), mask.get(), 2.0, halfOut.get()), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'out'", "dtype FLOAT ", "FLOAT16"}));
  auto shortOut = makeView(o.data(), ACL_FLOAT, {10, 10});
  EXPECT_EQ(runBackward(grad.get(), mask.get(), 2.0, shortOut.get()), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'out'", "[200]", "[10, 10]"}));
  std::vector<float> one(1, 1.0f);
  auto rank9 = makeView(one.data(), ACL_FLOAT, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(runBackward(rank9.get(), mask.get(), 1.0, rank9.get()), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'grad'", "at most 8 dims"}));
  auto floatMask = makeView(g.data(), ACL_FLOAT, {32});
  EXPECT_EQ(runBackward(grad.get(), floatMask.get(), 2.0, out.get()), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'mask'", "UINT8"}));
  // Exactly ceil(n/128)*16 bytes on both compute paths (aclnnDropoutDoMask alone would accept more).
  auto longMask = makeView(m.data(), ACL_UINT8, {48});
  auto shortMask = makeView(m.data(), ACL_UINT8, {16});
  for (const char* soc : {"Ascend950", "Ascend910B"}) {
    ScopedSoc profile(soc);
    for (const aclTensor* bad : {longMask.get(), shortMask.get()}) {
      Path path = Path::kV3Grad;
      EXPECT_EQ(runBackward(grad.get(), bad, 2.0, out.get(), &path), ACLNN_ERR_PARAM_INVALID) << soc;
      EXPECT_EQ(path, Path::kRejected);
      EXPECT_TRUE(mentions(recentError(), {"'mask'", "32 elements", "ceil(n/128)*16"}));
    }
  }
  // The short-circuit paths do not read the mask, so an unpacked or wrong-size one is accepted there.
  EXPECT_EQ(runBackward(grad.get(), floatMask.get(), 1.0, out.get()), ACLNN_SUCCESS);
  EXPECT_EQ(runBackward(grad.get(), shortMask.get(), 0.0, out.get()), ACLNN_SUCCESS);
}

TEST_F(NativeDropoutBackward, ComputePathsReadStridedGradAndWriteStridedOut) {
  for (bool legacy : {false, true}) {
    ScopedEnv disabled("GRADKIT_DISABLE_OPS", legacy ? "aclnnDropoutV3Grad" : "");
    for (aclDataType dtype : kDropoutDtypes) {
      const size_t size = aclDataTypeSize(dtype);
      const std::vector<int64_t> shape = {13, 11};
      auto storage = randomElements(dtype, 11 * 30 + 3, 21);  // grad = storage viewed as [11, 30]^T, sliced
      std::vector<unsigned char> outStorage(13 * 2 * 11 * size + 7 * size, 0x3C);
      auto grad = makeView(storage.data(), dtype, shape, {1, 30}, 3, 11 * 30 + 3);
      auto out = makeView(outStorage.data(), dtype, shape, {22, 2}, 7, 13 * 22 + 7);
      auto maskBytes = randomMask(143, 0.6, 22);
      auto mask = makeView(maskBytes.data(), ACL_UINT8, {static_cast<int64_t>(maskBytes.size())});
      const double p = 0.4, scale = 1.0 / (1.0 - p);
      Path path = Path::kRejected;
      ASSERT_EQ(runBackward(grad.get(), mask.get(), scale, out.get(), &path), ACLNN_SUCCESS) << recentError();
      EXPECT_EQ(path, legacy ? Path::kDoMask : Path::kV3Grad);
      const auto dense = gatherView(dtype, storage, shape, {1, 30}, 3);
      const auto expected = legacy ? legacyDoMask(dtype, dense, maskBytes, 1.0 - 1.0 / scale)
                                   : torchBackward(dtype, dense, maskBytes, scale);
      EXPECT_EQ(gatherView(dtype, outStorage, shape, {22, 2}, 7), expected) << "legacy " << legacy << " " << dtype;
      for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(outStorage[i * size], 0x3C);  // before the view's offset
      EXPECT_EQ(outStorage[(7 + 1) * size], 0x3C);                            // a gap between columns
    }
  }
}

TEST_F(NativeDropoutBackward, AllocatingOverloadReturnsAContiguousTensorOfGradsShape) {
  auto storage = randomElements(ACL_BF16, 6 * 40, 31);
  const std::vector<int64_t> shape = {2, 3, 20};
  auto grad = makeView(storage.data(), ACL_BF16, shape, {120, 40, 2}, 0, 240);  // every other element
  auto maskBytes = randomMask(120, 0.5, 32);
  auto mask = makeView(maskBytes.data(), ACL_UINT8, {16});
  DeviceTensor result;
  Path path = Path::kRejected;
  ASSERT_EQ(native_dropout_backward(grad.get(), mask.get(), 2.0, &result, nullptr, &path), ACLNN_SUCCESS)
      << recentError();
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(path, Path::kV3Grad);
  ASSERT_TRUE(result.valid());
  EXPECT_EQ(result.shape(), shape);
  EXPECT_EQ(result.dtype(), ACL_BF16);
  EXPECT_TRUE(result.get()->isContiguous());
  const auto* bytes = static_cast<const unsigned char*>(result.data());
  EXPECT_EQ(std::vector<unsigned char>(bytes, bytes + result.bytes()),
            torchBackward(ACL_BF16, gatherView(ACL_BF16, storage, shape, {120, 40, 2}, 0), maskBytes, 2.0));

  EXPECT_EQ(native_dropout_backward(grad.get(), mask.get(), 0.25, &result, nullptr, &path), ACLNN_ERR_PARAM_INVALID);
  EXPECT_FALSE(result.valid());  // a failed call leaves nothing behind
  EXPECT_EQ(native_dropout_backward(grad.get(), nullptr, 2.0, &result, nullptr, &path), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_FALSE(result.valid());
  EXPECT_EQ(native_dropout_backward(grad.get(), mask.get(), 2.0, static_cast<DeviceTensor*>(nullptr), nullptr, &path),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"'result'"}));
  ASSERT_EQ(native_dropout_backward(grad.get(), nullptr, 1.0, &result, nullptr, &path), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(path, Path::kClone);
  bytes = static_cast<const unsigned char*>(result.data());
  EXPECT_EQ(std::vector<unsigned char>(bytes, bytes + result.bytes()),
            gatherView(ACL_BF16, storage, shape, {120, 40, 2}, 0));
}

TEST_F(NativeDropoutBackward, AllocatingOverloadRefusesAResultThatHoldsTheGrad) {
  DeviceTensor held;
  ASSERT_EQ(DeviceTensor::allocate({4}, ACL_FLOAT, &held), ACLNN_SUCCESS);
  std::vector<uint8_t> m(16, 0xFF);
  auto mask = makeView(m.data(), ACL_UINT8, {16});
  EXPECT_EQ(native_dropout_backward(held.get(), mask.get(), 2.0, &held, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'result'", "memory of an input"}));
  EXPECT_TRUE(held.valid());  // refused before anything was released
  DeviceTensor other;
  ASSERT_EQ(DeviceTensor::allocate({4}, ACL_FLOAT, &other), ACLNN_SUCCESS);
  std::memset(held.data(), 0, held.bytes());
  EXPECT_EQ(native_dropout_backward(held.get(), mask.get(), 2.0, &other, nullptr), ACLNN_SUCCESS);  // reuse: fine
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
}

TEST_F(NativeDropoutBackward, CEntryPointReportsThePathAsAnInteger) {
  std::vector<float> g(3, 2.0f), o(3, 0.0f);
  std::vector<uint8_t> m(16, 0x05);
  auto grad = makeView(g.data(), ACL_FLOAT, {3});
  auto out = makeView(o.data(), ACL_FLOAT, {3});
  auto mask = makeView(m.data(), ACL_UINT8, {16});
  int32_t path = -1;
  ASSERT_EQ(gradkitNativeDropoutBackward(grad.get(), mask.get(), 4.0, out.get(), nullptr, &path), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(path, static_cast<int32_t>(Path::kV3Grad));
  EXPECT_EQ(o, (std::vector<float>{8.0f, 0.0f, 8.0f}));
  EXPECT_EQ(gradkitNativeDropoutBackward(grad.get(), mask.get(), 0.5, out.get(), nullptr, &path),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(path, static_cast<int32_t>(Path::kRejected));
}

}  // namespace
}  // namespace gradkit::test
