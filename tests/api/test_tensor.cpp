// Tensor, scalar and array descriptors, and the dtype facts.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "api_test_util.h"
#include "base/dtype.h"
#include "opapi/tensor.h"

using gradkit_test::ApiFixture;
using gradkit_test::mentions;
using gradkit_test::recentError;

namespace {

using ApiTensor = ApiFixture;
using ApiScalar = ApiFixture;
using ApiDtype = ApiFixture;

struct TensorDeleter {
  void operator()(aclTensor* tensor) const { aclDestroyTensor(tensor); }
};
using TensorPtr = std::unique_ptr<aclTensor, TensorDeleter>;

TensorPtr makeTensor(const std::vector<int64_t>& view, aclDataType dtype, const std::vector<int64_t>* strides,
                     int64_t offset, const std::vector<int64_t>& storage, void* data) {
  return TensorPtr(aclCreateTensor(view.data(), view.size(), dtype, strides ? strides->data() : nullptr, offset,
                                   ACL_FORMAT_ND, storage.data(), storage.size(), data));
}

TEST_F(ApiTensor, RowMajorByDefault) {
  std::vector<float> data(24);
  const std::vector<int64_t> dims = {2, 3, 4};
  auto tensor = makeTensor(dims, ACL_FLOAT, nullptr, 0, dims, data.data());
  ASSERT_NE(tensor, nullptr) << recentError();
  EXPECT_EQ(tensor->strides, (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(tensor->numel(), 24);
  EXPECT_EQ(tensor->dim(), 3);
  EXPECT_TRUE(tensor->isContiguous());
  EXPECT_FALSE(tensor->isEmpty());
  EXPECT_EQ(tensor->firstElement(), data.data());
  EXPECT_EQ(tensor->shapeString(), "[2, 3, 4]");
  EXPECT_EQ(tensor->dtype, ACL_FLOAT);
  EXPECT_EQ(tensor->format, ACL_FORMAT_ND);
}

TEST_F(ApiTensor, AccessorsReturnCopies) {
  std::vector<uint16_t> data(40);
  const std::vector<int64_t> view = {3, 4};
  const std::vector<int64_t> strides = {1, 3};  // a transposed view of a [4, 3] buffer
  const std::vector<int64_t> storage = {40};
  auto tensor = TensorPtr(
      aclCreateTensor(view.data(), 2, ACL_BF16, strides.data(), 5, ACL_FORMAT_NCHW, storage.data(), 1, data.data()));
  ASSERT_NE(tensor, nullptr) << recentError();
  int64_t* dims = nullptr;
  uint64_t count = 0;
  ASSERT_EQ(aclGetViewShape(tensor.get(), &dims, &count), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + count), view);
  delete[] dims;
  ASSERT_EQ(aclGetViewStrides(tensor.get(), &dims, &count), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + count), strides);
  delete[] dims;
  ASSERT_EQ(aclGetStorageShape(tensor.get(), &dims, &count), ACLNN_SUCCESS);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + count), storage);
  delete[] dims;
  int64_t offset = -1;
  ASSERT_EQ(aclGetViewOffset(tensor.get(), &offset), ACLNN_SUCCESS);
  EXPECT_EQ(offset, 5);
  aclDataType dtype = ACL_DT_UNDEFINED;
  ASSERT_EQ(aclGetDataType(tensor.get(), &dtype), ACLNN_SUCCESS);
  EXPECT_EQ(dtype, ACL_BF16);
  aclFormat format = ACL_FORMAT_UNDEFINED;
  ASSERT_EQ(aclGetFormat(tensor.get(), &format), ACLNN_SUCCESS);
  EXPECT_EQ(format, ACL_FORMAT_NCHW);
  EXPECT_FALSE(tensor->isContiguous());
  EXPECT_EQ(tensor->firstElement(), data.data() + 5) << "offset counts elements of 2 bytes";
}

TEST_F(ApiTensor, AccessorsRejectNulls) {
  int64_t* dims = nullptr;
  uint64_t count = 0;
  EXPECT_EQ(aclGetViewShape(nullptr, &dims, &count), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"aclGetViewShape", "tensor", "nullptr"}));
  std::vector<float> data(4);
  const std::vector<int64_t> shape = {4};
  auto tensor = makeTensor(shape, ACL_FLOAT, nullptr, 0, shape, data.data());
  EXPECT_EQ(aclGetViewStrides(tensor.get(), nullptr, &count), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"aclGetViewStrides", "stridesValue"}));
  EXPECT_EQ(aclGetStorageShape(tensor.get(), &dims, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"aclGetStorageShape", "storageDimsNum"}));
  EXPECT_EQ(aclGetViewOffset(tensor.get(), nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetDataType(nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclGetFormat(tensor.get(), nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"aclGetViewOffset", "aclGetDataType", "aclGetFormat"}));
}

TEST_F(ApiTensor, ContiguityRules) {
  std::vector<float> data(64);
  const std::vector<int64_t> storage = {64};
  // Size-1 dims may carry any stride.
  const std::vector<int64_t> view = {2, 1, 3};
  const std::vector<int64_t> oddStride = {3, 99, 1};
  EXPECT_TRUE(makeTensor(view, ACL_FLOAT, &oddStride, 0, storage, data.data())->isContiguous());
  // A gap between rows is not contiguous.
  const std::vector<int64_t> padded = {4, 1};
  EXPECT_FALSE(makeTensor({2, 3}, ACL_FLOAT, &padded, 0, storage, data.data())->isContiguous());
  // A broadcast (stride 0) dim of size > 1 is not contiguous.
  const std::vector<int64_t> broadcast = {0, 1};
  EXPECT_FALSE(makeTensor({4, 3}, ACL_FLOAT, &broadcast, 0, storage, data.data())->isContiguous());
  // An offset does not break contiguity of the view itself.
  EXPECT_TRUE(makeTensor({2, 3}, ACL_FLOAT, nullptr, 7, storage, data.data())->isContiguous());
  // Empty views are contiguous whatever their strides.
  const std::vector<int64_t> emptyStrides = {5, 7};
  EXPECT_TRUE(makeTensor({0, 3}, ACL_FLOAT, &emptyStrides, 0, storage, data.data())->isContiguous());
}

TEST_F(ApiTensor, ZeroDimensionalTensor) {
  double value = 2.5;
  const int64_t one = 1;
  auto tensor = TensorPtr(aclCreateTensor(nullptr, 0, ACL_DOUBLE, nullptr, 0, ACL_FORMAT_ND, &one, 1, &value));
  ASSERT_NE(tensor, nullptr) << recentError();
  EXPECT_EQ(tensor->dim(), 0);
  EXPECT_EQ(tensor->numel(), 1);
  EXPECT_TRUE(tensor->isContiguous());
  EXPECT_EQ(tensor->shapeString(), "[]");
  EXPECT_EQ(*static_cast<double*>(tensor->firstElement()), 2.5);
  // A 0-d storage holds one element too.
  auto bare = TensorPtr(aclCreateTensor(nullptr, 0, ACL_DOUBLE, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, &value));
  ASSERT_NE(bare, nullptr) << recentError();
  EXPECT_EQ(bare->numel(), 1);
}

TEST_F(ApiTensor, EmptyTensorMayHaveNullData) {
  const std::vector<int64_t> view = {3, 0, 2};
  auto tensor = makeTensor(view, ACL_FLOAT16, nullptr, 0, view, nullptr);
  ASSERT_NE(tensor, nullptr) << recentError();
  EXPECT_EQ(tensor->numel(), 0);
  EXPECT_TRUE(tensor->isEmpty());
  EXPECT_EQ(tensor->firstElement(), nullptr);
  // An empty view needs no storage room either.
  auto noStorage = makeTensor(view, ACL_FLOAT16, nullptr, 100, {0}, nullptr);
  EXPECT_NE(noStorage, nullptr) << recentError();
}

TEST_F(ApiTensor, ViewThatExactlyFitsItsStorage) {
  std::vector<int32_t> data(20);
  // view [2, 3] with strides [8, 2] from offset 3: last element at 3 + 8 + 4 = 15 < 16.
  const std::vector<int64_t> strides = {8, 2};
  EXPECT_NE(makeTensor({2, 3}, ACL_INT32, &strides, 3, {16}, data.data()), nullptr) << recentError();
  EXPECT_NE(makeTensor({2, 3}, ACL_INT32, &strides, 3, {4, 4}, data.data()), nullptr) << recentError();
}

TEST_F(ApiTensor, RejectsViewOverrunningStorage) {
  std::vector<int32_t> data(20);
  const std::vector<int64_t> strides = {8, 2};
  EXPECT_EQ(makeTensor({2, 3}, ACL_INT32, &strides, 3, {15}, data.data()), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclCreateTensor", "storageDims", "offset 15", "[15]", "[2, 3]"}));
  EXPECT_EQ(makeTensor({4}, ACL_INT32, nullptr, 1, {4}, data.data()), nullptr) << "the offset counts too";
  EXPECT_TRUE(mentions(recentError(), {"storageDims", "[4]", "offset 1"}));
}

TEST_F(ApiTensor, RejectsBadDimsStridesAndOffsets) {
  std::vector<float> data(64);
  EXPECT_EQ(makeTensor({2, -3}, ACL_FLOAT, nullptr, 0, {64}, data.data()), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclCreateTensor", "viewDims[1]", ">= 0", "given -3"}));
  const std::vector<int64_t> negativeStride = {1, -1};
  EXPECT_EQ(makeTensor({2, 2}, ACL_FLOAT, &negativeStride, 2, {64}, data.data()), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"stride[1]", "given -1"}));
  EXPECT_EQ(makeTensor({2}, ACL_FLOAT, nullptr, -1, {64}, data.data()), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"offset", "given -1"}));
  EXPECT_EQ(makeTensor({2}, ACL_FLOAT, nullptr, 0, {-64}, data.data()), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"storageDims[0]", "given -64"}));
  EXPECT_EQ(aclCreateTensor(nullptr, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 0, data.data()), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"viewDims", "nullptr with viewDimsNum 2"}));
  const int64_t dims[1] = {4};
  EXPECT_EQ(aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nullptr, 3, data.data()), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"storageDims", "nullptr with storageDimsNum 3"}));
}

TEST_F(ApiTensor, RejectsTooManyDimsAndOverflow) {
  std::vector<float> data(4);
  const std::vector<int64_t> deep(17, 1);
  EXPECT_EQ(makeTensor(deep, ACL_FLOAT, nullptr, 0, {1}, data.data()), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"viewDimsNum", "<= 16", "given 17"}));
  const std::vector<int64_t> deepest(16, 1);
  EXPECT_NE(makeTensor(deepest, ACL_FLOAT, nullptr, 0, {1}, data.data()), nullptr) << recentError();
  const int64_t huge = int64_t{1} << 40;
  EXPECT_EQ(makeTensor({huge, huge}, ACL_FLOAT, nullptr, 0, {huge, huge}, data.data()), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"viewDims", "fits in int64"}));
  const std::vector<int64_t> hugeStride = {std::numeric_limits<int64_t>::max() / 2};
  EXPECT_EQ(makeTensor({3}, ACL_FLOAT, &hugeStride, 0, {64}, data.data()), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"storageDims"}));
}

TEST_F(ApiTensor, RejectsEmptyViewsWhoseDefaultStridesOverflow) {
  // [0, 2^62, 2^62] has no elements, but its row-major stride of dim 0 would be 2^124.
  const int64_t big = int64_t{1} << 62;
  EXPECT_EQ(makeTensor({0, big, big}, ACL_FLOAT, nullptr, 0, {0}, nullptr), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"viewDims", "row-major strides", "fit in int64", "[0, 4611686018427387904"}));
  auto fine = makeTensor({0, big}, ACL_FLOAT, nullptr, 0, {0}, nullptr);  // strides {2^62, 1} fit
  ASSERT_NE(fine, nullptr) << recentError();
  EXPECT_EQ(fine->strides, (std::vector<int64_t>{big, 1}));
}

TEST_F(ApiTensor, StorageMustFitTheTrackedAllocationBehindIt) {
  // An 8-d [2,...,2] fp32 storage (1024 bytes) over a 256-byte aclrtMalloc buffer (288 usable after CANN's
  // rounding) would let a kernel read past the allocation.
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  const std::vector<int64_t> eightD(8, 2);
  EXPECT_EQ(makeTensor(eightD, ACL_FLOAT, nullptr, 0, eightD, device), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclCreateTensor", "storageDims", "288 bytes left", "288-byte allocation",
                                       "1024 bytes", "161002"}));
  EXPECT_NE(makeTensor({72}, ACL_FLOAT, nullptr, 0, {72}, device), nullptr) << "288 bytes fit exactly";
  EXPECT_EQ(makeTensor({8}, ACL_FLOAT, nullptr, 0, {8}, static_cast<char*>(device) + 260), nullptr)
      << "an interior pointer has only the rest of the allocation";
  EXPECT_TRUE(mentions(recentError(), {"28 bytes left"}));
  std::vector<float> host(256);
  EXPECT_NE(makeTensor(eightD, ACL_FLOAT, nullptr, 0, eightD, host.data()), nullptr) << "untracked memory is the "
                                                                                        "caller's business";
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
}

TEST_F(ApiTensor, RejectsUnknownFormats) {
  std::vector<float> data(4);
  const int64_t dims[] = {4};
  for (int format : {999, -7, 5, 48}) {
    aclFormat value;
    std::memcpy(&value, &format, sizeof value);  // as a C caller would pass it
    EXPECT_EQ(aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, value, dims, 1, data.data()), nullptr) << format;
    EXPECT_TRUE(mentions(recentError(), {"aclCreateTensor", "format", "given " + std::to_string(format), "161002"}));
  }
  for (aclFormat format : {ACL_FORMAT_UNDEFINED, ACL_FORMAT_NCHW, ACL_FORMAT_ND, ACL_FORMAT_NCL}) {
    aclTensor* tensor = aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, format, dims, 1, data.data());
    ASSERT_NE(tensor, nullptr) << format;
    EXPECT_EQ(tensor->format, format);
    aclDestroyTensor(tensor);
  }
}

TEST_F(ApiTensor, RejectsDtypesWithoutByteSize) {
  std::vector<uint8_t> data(8);
  for (aclDataType dtype : {ACL_DT_UNDEFINED, ACL_STRING, ACL_INT4, ACL_UINT1, ACL_FLOAT4_E2M1}) {
    EXPECT_EQ(makeTensor({8}, dtype, nullptr, 0, {8}, data.data()), nullptr);
    EXPECT_TRUE(mentions(recentError(), {"dataType", gradkit::dtypeName(dtype)}));
  }
  for (int raw : {77, 999, -7}) {  // read as an int: 77 and 999 are outside the enum's range
    aclDataType dtype;
    std::memcpy(&dtype, &raw, sizeof dtype);
    EXPECT_EQ(makeTensor({8}, dtype, nullptr, 0, {8}, data.data()), nullptr);
    EXPECT_TRUE(mentions(recentError(), {"dataType", "UNKNOWN(" + std::to_string(raw) + ")"}));
  }
}

TEST_F(ApiTensor, RejectsNullDataForNonEmptyView) {
  EXPECT_EQ(makeTensor({2, 2}, ACL_FLOAT, nullptr, 0, {2, 2}, nullptr), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"tensorData", "nullptr", "[2, 2]", "161001"}));
}

TEST_F(ApiTensor, DestroyAcceptsNull) {
  EXPECT_EQ(aclDestroyTensor(nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyScalar(nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyIntArray(nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyFloatArray(nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyBoolArray(nullptr), ACLNN_SUCCESS);
}

TEST_F(ApiTensor, Arrays) {
  const int64_t ints[] = {3, -1, 1LL << 40};
  aclIntArray* intArray = aclCreateIntArray(ints, 3);
  ASSERT_NE(intArray, nullptr);
  EXPECT_EQ(intArray->values, (std::vector<int64_t>{3, -1, 1LL << 40}));
  EXPECT_EQ(aclDestroyIntArray(intArray), ACLNN_SUCCESS);
  const float floats[] = {0.5f, -2.0f};
  aclFloatArray* floatArray = aclCreateFloatArray(floats, 2);
  ASSERT_NE(floatArray, nullptr);
  EXPECT_EQ(floatArray->values, (std::vector<float>{0.5f, -2.0f}));
  EXPECT_EQ(aclDestroyFloatArray(floatArray), ACLNN_SUCCESS);
  const bool bools[] = {true, false, true};
  aclBoolArray* boolArray = aclCreateBoolArray(bools, 3);
  ASSERT_NE(boolArray, nullptr);
  EXPECT_EQ(boolArray->values, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(aclDestroyBoolArray(boolArray), ACLNN_SUCCESS);
  aclIntArray* empty = aclCreateIntArray(nullptr, 0);
  ASSERT_NE(empty, nullptr);
  EXPECT_TRUE(empty->values.empty());
  aclDestroyIntArray(empty);
  EXPECT_EQ(aclCreateIntArray(nullptr, 2), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclCreateIntArray", "value", "nullptr with size 2"}));
  EXPECT_EQ(aclCreateFloatArray(nullptr, 1), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclCreateFloatArray", "size 1"}));
  EXPECT_EQ(aclCreateBoolArray(nullptr, 4), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclCreateBoolArray", "size 4"}));
  // A size no buffer can have is rejected instead of wrapping value + size.
  EXPECT_EQ(aclCreateIntArray(ints, uint64_t{1} << 62), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclCreateIntArray", "size", "given 4611686018427387904", "161002"}));
  EXPECT_EQ(aclCreateBoolArray(bools, ~uint64_t{0}), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclCreateBoolArray", "size"}));
}

/** Creates a scalar from raw bytes of `dtype` and returns it (owned by the caller). */
template <class T>
aclScalar* scalarOf(T value, aclDataType dtype) {
  return aclCreateScalar(&value, dtype);
}

struct ScalarCase {
  aclScalar* scalar;
  double asDouble;
  int64_t asInt;
};

TEST_F(ApiScalar, EveryNumericDtype) {
  // Expected values are the formats' definitions (IEEE binary16, bfloat16, OCP FP8), not computed here.
  const ScalarCase cases[] = {
      {scalarOf<float>(-2.75f, ACL_FLOAT), -2.75, -2},
      {scalarOf<double>(1e300, ACL_DOUBLE), 1e300, std::numeric_limits<int64_t>::max()},
      {scalarOf<uint16_t>(0x3E00, ACL_FLOAT16), 1.5, 1},
      {scalarOf<uint16_t>(0xC500, ACL_FLOAT16), -5.0, -5},
      {scalarOf<uint16_t>(0x0001, ACL_FLOAT16), std::ldexp(1.0, -24), 0},
      {scalarOf<uint16_t>(0x3FC0, ACL_BF16), 1.5, 1},
      {scalarOf<uint16_t>(0xC2F7, ACL_BF16), -123.5, -123},
      {scalarOf<uint8_t>(0x38, ACL_FLOAT8_E4M3FN), 1.0, 1},
      {scalarOf<uint8_t>(0x7E, ACL_FLOAT8_E4M3FN), 448.0, 448},
      {scalarOf<uint8_t>(0x3C, ACL_FLOAT8_E5M2), 1.0, 1},
      {scalarOf<uint8_t>(0xC2, ACL_FLOAT8_E5M2), -3.0, -3},
      {scalarOf<uint8_t>(127, ACL_FLOAT8_E8M0), 1.0, 1},
      {scalarOf<uint8_t>(130, ACL_FLOAT8_E8M0), 8.0, 8},
      {scalarOf<int8_t>(-128, ACL_INT8), -128.0, -128},
      {scalarOf<uint8_t>(255, ACL_UINT8), 255.0, 255},
      {scalarOf<int16_t>(-30000, ACL_INT16), -30000.0, -30000},
      {scalarOf<uint16_t>(65535, ACL_UINT16), 65535.0, 65535},
      {scalarOf<int32_t>(-2147483647 - 1, ACL_INT32), -2147483648.0, -2147483648LL},
      {scalarOf<uint32_t>(4294967295u, ACL_UINT32), 4294967295.0, 4294967295LL},
      {scalarOf<int64_t>(-(int64_t{1} << 53), ACL_INT64), -9007199254740992.0, -(int64_t{1} << 53)},
      {scalarOf<int64_t>(std::numeric_limits<int64_t>::max(), ACL_INT64), 9223372036854775807.0,
       std::numeric_limits<int64_t>::max()},
      {scalarOf<uint64_t>(~uint64_t{0}, ACL_UINT64), 18446744073709551615.0, std::numeric_limits<int64_t>::max()},
      {scalarOf<uint8_t>(1, ACL_BOOL), 1.0, 1},
      {scalarOf<uint8_t>(0, ACL_BOOL), 0.0, 0},
      {scalarOf<std::array<float, 2>>({1.5f, 2.0f}, ACL_COMPLEX64), 1.5, 1},  // complex: the real part
      {scalarOf<std::array<double, 2>>({-7.25, 1.0}, ACL_COMPLEX128), -7.25, -7},
  };
  for (const ScalarCase& c : cases) {
    ASSERT_NE(c.scalar, nullptr) << recentError();
    EXPECT_EQ(c.scalar->toDouble(), c.asDouble) << gradkit::dtypeName(c.scalar->dtype);
    EXPECT_EQ(c.scalar->toInt64(), c.asInt) << gradkit::dtypeName(c.scalar->dtype);
    EXPECT_EQ(aclDestroyScalar(c.scalar), ACLNN_SUCCESS);
  }
}

TEST_F(ApiScalar, SpecialFloatValues) {
  aclScalar* nanHalf = scalarOf<uint16_t>(0x7E00, ACL_FLOAT16);
  EXPECT_TRUE(std::isnan(nanHalf->toDouble()));
  EXPECT_EQ(nanHalf->toInt64(), 0) << "NaN converts to 0 instead of undefined behaviour";
  aclScalar* minusInf = scalarOf<float>(-std::numeric_limits<float>::infinity(), ACL_FLOAT);
  EXPECT_EQ(minusInf->toInt64(), std::numeric_limits<int64_t>::min());
  aclScalar* negZero = scalarOf<uint16_t>(0x8000, ACL_BF16);
  EXPECT_EQ(negZero->toDouble(), 0.0);
  EXPECT_TRUE(std::signbit(negZero->toDouble()));
  aclScalar* e4m3Nan = scalarOf<uint8_t>(0x7F, ACL_FLOAT8_E4M3FN);
  EXPECT_TRUE(std::isnan(e4m3Nan->toDouble()));
  aclScalar* e8m0Nan = scalarOf<uint8_t>(0xFF, ACL_FLOAT8_E8M0);
  EXPECT_TRUE(std::isnan(e8m0Nan->toDouble()));
  for (aclScalar* scalar : {nanHalf, minusInf, negZero, e4m3Nan, e8m0Nan}) aclDestroyScalar(scalar);
}

TEST_F(ApiScalar, ScalarCopiesItsValue) {
  int32_t value = 7;
  aclScalar* scalar = aclCreateScalar(&value, ACL_INT32);
  value = 9;
  EXPECT_EQ(scalar->toInt64(), 7);
  aclDestroyScalar(scalar);
}

TEST_F(ApiScalar, RejectsNullAndNonNumeric) {
  EXPECT_EQ(aclCreateScalar(nullptr, ACL_FLOAT), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclCreateScalar", "value", "nullptr"}));
  char text[16] = "abc";
  EXPECT_EQ(aclCreateScalar(text, ACL_STRING), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclCreateScalar", "dataType", "given STRING"}));
  EXPECT_EQ(aclCreateScalar(text, ACL_INT4), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"given INT4"}));
  EXPECT_EQ(aclCreateScalar(text, static_cast<aclDataType>(200)), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"UNKNOWN(200)"}));
}

TEST_F(ApiDtype, NamesAndParsing) {
  struct Names {
    aclDataType dtype;
    const char* name;
    const char* shortName;
  };
  const Names table[] = {
      {ACL_FLOAT, "FLOAT", "fp32"},
      {ACL_FLOAT16, "FLOAT16", "fp16"},
      {ACL_BF16, "BFLOAT16", "bf16"},
      {ACL_DOUBLE, "DOUBLE", "fp64"},
      {ACL_INT8, "INT8", "int8"},
      {ACL_UINT8, "UINT8", "uint8"},
      {ACL_INT16, "INT16", "int16"},
      {ACL_UINT16, "UINT16", "uint16"},
      {ACL_INT32, "INT32", "int32"},
      {ACL_UINT32, "UINT32", "uint32"},
      {ACL_INT64, "INT64", "int64"},
      {ACL_UINT64, "UINT64", "uint64"},
      {ACL_BOOL, "BOOL", "bool"},
      {ACL_COMPLEX64, "COMPLEX64", "complex64"},
      {ACL_COMPLEX128, "COMPLEX128", "complex128"},
      {ACL_FLOAT8_E5M2, "FLOAT8_E5M2", "fp8_e5m2"},
      {ACL_FLOAT8_E4M3FN, "FLOAT8_E4M3FN", "fp8_e4m3fn"},
  };
  for (const Names& row : table) {
    EXPECT_EQ(gradkit::dtypeName(row.dtype), row.name);
    EXPECT_EQ(gradkit::dtypeShortName(row.dtype), row.shortName);
    EXPECT_EQ(gradkit::parseDtype(row.name), row.dtype) << row.name;
    EXPECT_EQ(gradkit::parseDtype(row.shortName), row.dtype) << row.shortName;
  }
  EXPECT_EQ(gradkit::dtypeName(static_cast<aclDataType>(55)), "UNKNOWN(55)");
  EXPECT_EQ(gradkit::parseDtype("FP16"), ACL_FLOAT16) << "case does not matter";
  EXPECT_EQ(gradkit::parseDtype("float32"), ACL_FLOAT);
  EXPECT_EQ(gradkit::parseDtype("fp33"), std::nullopt);
  EXPECT_EQ(gradkit::parseDtype(""), std::nullopt);
  EXPECT_EQ(gradkit::parseDtype("UNDEFINED"), std::nullopt);
}

TEST_F(ApiDtype, Classes) {
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_DOUBLE, ACL_FLOAT8_E4M3FN, ACL_FLOAT8_E5M2}) {
    EXPECT_TRUE(gradkit::isFloatingDtype(dtype)) << gradkit::dtypeName(dtype);
    EXPECT_FALSE(gradkit::isIntegerDtype(dtype)) << gradkit::dtypeName(dtype);
  }
  for (aclDataType dtype : {ACL_INT8, ACL_UINT8, ACL_INT16, ACL_UINT16, ACL_INT32, ACL_UINT32, ACL_INT64, ACL_UINT64}) {
    EXPECT_TRUE(gradkit::isIntegerDtype(dtype)) << gradkit::dtypeName(dtype);
    EXPECT_FALSE(gradkit::isFloatingDtype(dtype)) << gradkit::dtypeName(dtype);
  }
  for (aclDataType dtype : {ACL_BOOL, ACL_COMPLEX64, ACL_STRING, ACL_DT_UNDEFINED}) {
    EXPECT_FALSE(gradkit::isIntegerDtype(dtype)) << gradkit::dtypeName(dtype);
    EXPECT_FALSE(gradkit::isFloatingDtype(dtype)) << gradkit::dtypeName(dtype);
  }
  EXPECT_EQ(gradkit::dtypeSize(ACL_BF16), 2u);
  EXPECT_EQ(gradkit::dtypeSize(ACL_COMPLEX32), 4u);
}

}  // namespace
