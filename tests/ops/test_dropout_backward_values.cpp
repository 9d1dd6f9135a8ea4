// DropoutBackward results (DoMask's legacy arithmetic with p = 1 - 1/scale) against the golden, bit for bit: the
// scale edge values (copy, zeros), every dtype pair, and the one-ulp difference from V3Grad at p = 0.15 (spec 1.8).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "aclnnop/aclnn_dropout_backward.h"
#include "aclnnop/aclnn_dropout_v3_grad.h"
#include "golden/dropout_do_mask.h"
#include "ops/masked_dropout_test_util.h"
#include "ops/random_data.h"

namespace gradkit::test {
namespace {

const aclDataType kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

void runDropoutBackward(const aclTensor* grad, const aclTensor* mask, double scale, aclTensor* out) {
  const PlannedCall call = planAndRun(
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutBackwardGetWorkspaceSize(grad, mask, scale, out, size, executor);
      },
      aclnnDropoutBackward);
  ASSERT_EQ(call.status, ACLNN_SUCCESS) << call.message;
}

std::vector<unsigned char> goldenOf(aclDataType xDtype, aclDataType outDtype, const std::vector<unsigned char>& x,
                                    const std::vector<uint8_t>& mask, double prob) {
  const int64_t n = static_cast<int64_t>(x.size() / aclDataTypeSize(xDtype));
  std::vector<unsigned char> out(static_cast<size_t>(n) * aclDataTypeSize(outDtype));
  golden::dropoutDoMask(xDtype, outDtype, x.data(), mask.data(), prob, out.data(), n);
  return out;
}

TEST(DropoutBackwardValues, DiffersFromV3GradByOneUlpAtP015) {
  std::vector<float> grad(100, 1.0f), legacy(100), exact(100);
  auto mask = randomMask(16, 1);
  mask[0] |= 1;
  auto gv = makeView(grad.data(), ACL_FLOAT, {100});
  auto mv = makeView(mask.data(), ACL_UINT8, {16});
  auto lv = makeView(legacy.data(), ACL_FLOAT, {100});
  auto ev = makeView(exact.data(), ACL_FLOAT, {100});
  const double scale = 1.0 / (1.0 - 0.15);
  runDropoutBackward(gv.get(), mv.get(), scale, lv.get());
  const PlannedCall call = planAndRun(
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutV3GradGetWorkspaceSize(gv.get(), mv.get(), scale, ev.get(), size, executor);
      },
      aclnnDropoutV3Grad);
  ASSERT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_EQ(floatBitsOf(legacy[0]), 0x3f969696u);
  EXPECT_EQ(floatBitsOf(exact[0]), 0x3f969697u);
}

TEST(DropoutBackwardValues, ScaleEdgeValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> grad = {1.5f, -2.0f, nan, -0.0f, 3.0f, std::numeric_limits<float>::infinity(), -7.0f, 0.25f};
  std::vector<uint8_t> mask(16, 0);
  mask[0] = 0b01010101;
  auto gv = makeView(grad.data(), ACL_FLOAT, {8});
  auto mv = makeView(mask.data(), ACL_UINT8, {16});
  const std::vector<unsigned char> gradBytes(reinterpret_cast<unsigned char*>(grad.data()),
                                             reinterpret_cast<unsigned char*>(grad.data() + 8));
  for (double scale : {0.0, -0.0, 1e-300, 0x1p54, std::numeric_limits<double>::infinity(), 1e300}) {
    std::vector<float> out(8, 9.0f);
    auto ov = makeView(out.data(), ACL_FLOAT, {8});
    runDropoutBackward(gv.get(), mv.get(), scale, ov.get());
    for (int i = 0; i < 8; ++i) EXPECT_EQ(floatBitsOf(out[i]), 0u) << "scale " << scale << " element " << i;
  }
  for (double scale : {1.0, 1.0 + DBL_EPSILON}) {
    std::vector<float> out(8, 9.0f);
    auto ov = makeView(out.data(), ACL_FLOAT, {8});
    runDropoutBackward(gv.get(), mv.get(), scale, ov.get());
    EXPECT_EQ(std::memcmp(out.data(), gradBytes.data(), 32), 0) << scale;  // a copy, mask ignored
  }
  for (double scale : {2.0, 1.0 / 0.7, 1.0 / (1.0 - 0.021), 1e10}) {
    std::vector<float> out(8, 9.0f);
    auto ov = makeView(out.data(), ACL_FLOAT, {8});
    runDropoutBackward(gv.get(), mv.get(), scale, ov.get());
    const auto want = goldenOf(ACL_FLOAT, ACL_FLOAT, gradBytes, mask, golden::dropoutBackwardProb(scale));
    EXPECT_EQ(std::memcmp(out.data(), want.data(), 32), 0) << scale;
  }
}

TEST(DropoutBackwardValues, EveryDtypePairMatchesTheGolden) {
  for (aclDataType xDtype : kDtypes) {
    for (aclDataType outDtype : kDtypes) {
      for (double scale : {1.0 / 0.9, 1.0 / 0.85, 2.0, 1.0 / 0.681, 10.0}) {
        const int64_t n = 1000;
        auto grad = randomElements(xDtype, n, 77);
        auto mask = randomMask(maskBytesFor(n), 78);
        std::vector<unsigned char> out(n * aclDataTypeSize(outDtype));
        auto gv = makeView(grad.data(), xDtype, {n});
        auto mv = makeView(mask.data(), ACL_UINT8, {maskBytesFor(n)});
        auto ov = makeView(out.data(), outDtype, {n});
        runDropoutBackward(gv.get(), mv.get(), scale, ov.get());
        EXPECT_EQ(out, goldenOf(xDtype, outDtype, grad, mask, golden::dropoutBackwardProb(scale)))
            << xDtype << " " << outDtype << " " << scale;
      }
    }
  }
}

}  // namespace
}  // namespace gradkit::test
