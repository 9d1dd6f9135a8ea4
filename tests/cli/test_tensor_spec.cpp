// Tensor specs from JSON, value generation, element access and the harness's own strided gather.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "harness/elements.h"
#include "harness/error.h"
#include "harness/fill.h"
#include "harness/gather.h"
#include "harness/tensor_spec.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

TensorDefaults defaults(aclDataType dtype, std::vector<int64_t> shape) {
  TensorDefaults d;
  d.dtype = dtype;
  d.shape = std::move(shape);
  d.seed = 99;
  return d;
}

TEST(TensorSpec, DefaultsGiveAContiguousView) {
  const TensorSpec spec = parseTensorSpec(json(), "self", defaults(ACL_FLOAT16, {2, 3, 4}));
  EXPECT_EQ(spec.dtype, ACL_FLOAT16);
  EXPECT_EQ(spec.strides, (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(spec.offset, 0);
  EXPECT_TRUE(spec.isContiguous());
  EXPECT_EQ(spec.numel(), 24);
  EXPECT_EQ(spec.storageElements(), 24);
}

TEST(TensorSpec, TransposedPermutedAndExplicitStrides) {
  const TensorSpec transposed =
      parseTensorSpec(json::parse(R"({"layout": "transposed"})"), "g", defaults(ACL_FLOAT, {2, 3, 4}));
  EXPECT_EQ(transposed.strides, (std::vector<int64_t>{1, 2, 6}));  // storage is [4, 3, 2]
  EXPECT_FALSE(transposed.isContiguous());
  EXPECT_EQ(transposed.storageElements(), 24);

  const TensorSpec permuted =
      parseTensorSpec(json::parse(R"({"permute": [2, 0, 1], "offset": 5})"), "g", defaults(ACL_FLOAT, {2, 3, 4}));
  EXPECT_EQ(permuted.strides, (std::vector<int64_t>{3, 1, 6}));  // storage is [4, 2, 3]
  EXPECT_EQ(permuted.storageElements(), 29);

  const TensorSpec gaps =
      parseTensorSpec(json::parse(R"({"strides": [9, 2], "offset": 3})"), "g", defaults(ACL_INT8, {5, 4}));
  EXPECT_EQ(gaps.storageElements(), 3 + 4 * 9 + 3 * 2 + 1);
}

TEST(TensorSpec, ZeroDimAndEmpty) {
  const TensorSpec scalar = parseTensorSpec(json(), "s", defaults(ACL_FLOAT, {}));
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.storageElements(), 1);
  EXPECT_TRUE(scalar.isContiguous());
  const TensorSpec empty = parseTensorSpec(json::parse(R"({"offset": 4})"), "e", defaults(ACL_FLOAT, {3, 0}));
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.storageElements(), 0);
}

TEST(TensorSpec, OverridesAndValues) {
  const TensorSpec spec = parseTensorSpec(json::parse(R"({"dtype": "bf16", "shape": [7], "range": [-1, 3], "seed": 5,
                      "special": {"values": ["nan", "-0", "inf"], "fraction": 0.25}})"),
                                          "x", defaults(ACL_FLOAT, {2}));
  EXPECT_EQ(spec.dtype, ACL_BF16);
  EXPECT_EQ(spec.shape, std::vector<int64_t>{7});
  EXPECT_EQ(spec.values.lo, -1.0);
  EXPECT_EQ(spec.values.hi, 3.0);
  EXPECT_EQ(spec.seed, 5u);
  ASSERT_EQ(spec.values.specials.size(), 3u);
  EXPECT_TRUE(std::isnan(spec.values.specials[0]));
  EXPECT_TRUE(std::signbit(spec.values.specials[1]) && spec.values.specials[1] == 0.0);
  EXPECT_EQ(spec.values.specialFraction, 0.25);
}

TEST(TensorSpec, TwoTensorsOfOneCaseGetDifferentSeeds) {
  const TensorDefaults d = defaults(ACL_FLOAT, {4});
  EXPECT_NE(parseTensorSpec(json(), "gradOutput", d).seed, parseTensorSpec(json(), "self", d).seed);
}

// Returns the message of the HarnessError `parse` throws ("" when it does not throw).
template <class Fn>
std::string errorOf(Fn&& parse) {
  try {
    parse();
  } catch (const HarnessError& error) {
    return error.what();
  }
  return "";
}

TEST(TensorSpec, BadInputIsRejectedWithTheTensorName) {
  const TensorDefaults d = defaults(ACL_FLOAT, {2, 3});
  const std::string strides = errorOf([&] { parseTensorSpec(json::parse(R"({"strides": [1]})"), "self", d); });
  EXPECT_NE(strides.find("tensor 'self'"), std::string::npos) << strides;
  EXPECT_NE(strides.find("expected 2 strides, given 1"), std::string::npos) << strides;
  EXPECT_NE(errorOf([&] { parseTensorSpec(json::parse(R"({"dtype": "fp99"})"), "g", d); }).find("fp99"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { parseTensorSpec(json::parse(R"({"layout": "diagonal"})"), "g", d); }), "");
  EXPECT_NE(errorOf([&] { parseTensorSpec(json::parse(R"({"permute": [0, 0]})"), "g", d); }), "");
  EXPECT_NE(errorOf([&] { parseTensorSpec(json::parse(R"({"strides": [-1, 1]})"), "g", d); }), "");
  EXPECT_NE(errorOf([&] { parseTensorSpec(json::parse(R"({"range": [3, 1]})"), "g", d); }), "");
  EXPECT_NE(errorOf([&] {
              parseTensorSpec(json::parse(R"({"special": {"values": ["nan"]}})"), "g", defaults(ACL_INT32, {2}));
            }).find("floating dtype"),
            std::string::npos);
}

TEST(Fill, IntegerValuesStayInRangeAndCoverIt) {
  TensorSpec spec = parseTensorSpec(json::parse(R"({"range": [-3, 3]})"), "s", defaults(ACL_INT8, {2000}));
  std::vector<int8_t> values(2000);
  fillStorage(spec, values.data(), 2000);
  std::set<int> seen(values.begin(), values.end());
  EXPECT_EQ(seen, (std::set<int>{-3, -2, -1, 0, 1, 2, 3}));
}

TEST(Fill, FloatValuesStayInRangeAndAreDeterministic) {
  TensorSpec spec = parseTensorSpec(json::parse(R"({"range": [0.5, 0.75]})"), "s", defaults(ACL_FLOAT, {1000}));
  std::vector<float> a(1000), b(1000);
  fillStorage(spec, a.data(), 1000);
  fillStorage(spec, b.data(), 1000);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  for (float v : a) {
    EXPECT_GE(v, 0.5f);
    EXPECT_LE(v, 0.75f);
  }
  spec.seed += 1;
  fillStorage(spec, b.data(), 1000);
  EXPECT_NE(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
}

TEST(Fill, ConstantAndSpecialValues) {
  TensorSpec spec = parseTensorSpec(json::parse(R"({"value": "-0"})"), "s", defaults(ACL_FLOAT16, {10}));
  std::vector<uint16_t> half(10);
  fillStorage(spec, half.data(), 10);
  for (uint16_t h : half) EXPECT_EQ(h, 0x8000);  // fp16 -0

  spec = parseTensorSpec(json::parse(R"({"value": 1, "special": {"values": ["-nan", "-inf"], "fraction": 0.5}})"), "s",
                         defaults(ACL_FLOAT, {4000}));
  std::vector<float> values(4000);
  fillStorage(spec, values.data(), 4000);
  int ones = 0, nans = 0, infs = 0;
  for (float v : values) {
    ones += v == 1.0f;
    nans += std::isnan(v) && std::signbit(v);
    infs += v == -INFINITY;
  }
  EXPECT_EQ(ones + nans + infs, 4000);
  // Each class is drawn with probability 1/2, 1/4, 1/4: far from 0 and from all.
  EXPECT_GT(ones, 1600);
  EXPECT_GT(nans, 700);
  EXPECT_GT(infs, 700);
}

TEST(Elements, StoreAndLoadRoundTrip) {
  unsigned char buffer[16] = {};
  storeFromDouble(ACL_BF16, buffer, 0, 1.0);
  uint16_t bits;
  std::memcpy(&bits, buffer, 2);
  EXPECT_EQ(bits, 0x3f80);
  storeFromDouble(ACL_FLOAT16, buffer, 0, -2.0);
  std::memcpy(&bits, buffer, 2);
  EXPECT_EQ(bits, 0xc000);
  EXPECT_EQ(loadAsDouble(ACL_FLOAT16, buffer, 0), -2.0);
  storeFromDouble(ACL_INT8, buffer, 0, 1000.0);  // saturates
  EXPECT_EQ(loadAsDouble(ACL_INT8, buffer, 0), 127.0);
  storeFromDouble(ACL_UINT8, buffer, 0, -5.0);
  EXPECT_EQ(loadAsDouble(ACL_UINT8, buffer, 0), 0.0);
  storeFromDouble(ACL_INT32, buffer, 1, -7.9);  // truncates toward zero
  EXPECT_EQ(loadAsDouble(ACL_INT32, buffer, 1), -7.0);
  storeFromDouble(ACL_INT64, buffer, 0, -0x1.0p62);
  EXPECT_EQ(loadAsDouble(ACL_INT64, buffer, 0), -0x1.0p62);
  EXPECT_THROW(loadAsDouble(ACL_STRING, buffer, 0), HarnessError);
}

TEST(Gather, TransposedViewInRowMajorOrder) {
  // Storage [0..5] viewed as shape [2, 3] with strides [1, 2]: element (i, j) = storage[i + 2 j].
  const int32_t storage[6] = {0, 1, 2, 3, 4, 5};
  const std::vector<unsigned char> dense =
      gatherDense({{2, 3}, {1, 2}, 0}, reinterpret_cast<const unsigned char*>(storage), 4);
  int32_t values[6];
  std::memcpy(values, dense.data(), sizeof values);
  EXPECT_EQ(std::vector<int32_t>(values, values + 6), (std::vector<int32_t>{0, 2, 4, 1, 3, 5}));
}

TEST(Gather, OffsetStrideZeroAndZeroDim) {
  const int16_t storage[5] = {10, 11, 12, 13, 14};
  const auto* bytes = reinterpret_cast<const unsigned char*>(storage);
  std::vector<unsigned char> dense = gatherDense({{2, 2}, {0, 2}, 1}, bytes, 2);
  int16_t values[4];
  std::memcpy(values, dense.data(), sizeof values);
  EXPECT_EQ(std::vector<int16_t>(values, values + 4), (std::vector<int16_t>{11, 13, 11, 13}));
  dense = gatherDense({{}, {}, 4}, bytes, 2);
  ASSERT_EQ(dense.size(), 2u);
  EXPECT_EQ(dense[0], 14);
  EXPECT_TRUE(gatherDense({{3, 0}, {1, 1}, 0}, bytes, 2).empty());
}

TEST(Gather, CoveredElementsMarkOnlyTheView) {
  const std::vector<bool> covered = coveredElements({{2, 2}, {4, 2}, 1}, 8);
  EXPECT_EQ(covered, (std::vector<bool>{false, true, false, true, false, true, false, true}));
}

}  // namespace
}  // namespace gradkit::cli
