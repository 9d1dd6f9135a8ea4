// Host tensors against the runtime: the aclTensor they make describes their view, and data survives the
// trip to device memory and back.
#include <gtest/gtest.h>

#include <cstring>

#include "harness/acl_session.h"
#include "harness/host_tensor.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

class HostTensorTest : public ::testing::Test {
 protected:
  AclSession session_;
};

TEST_F(HostTensorTest, AclTensorDescribesTheView) {
  TensorDefaults defaults;
  defaults.dtype = ACL_INT32;
  defaults.shape = {3, 4};
  const TensorSpec spec = parseTensorSpec(json::parse(R"({"strides": [1, 5], "offset": 2})"), "t", defaults);
  HostTensor tensor(spec);
  const AclTensorPtr acl = tensor.makeAclTensor();

  int64_t* dims = nullptr;
  uint64_t count = 0;
  ASSERT_EQ(aclGetViewShape(acl.get(), &dims, &count), 0);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + count), (std::vector<int64_t>{3, 4}));
  delete[] dims;
  ASSERT_EQ(aclGetViewStrides(acl.get(), &dims, &count), 0);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + count), (std::vector<int64_t>{1, 5}));
  delete[] dims;
  int64_t offset = -1;
  ASSERT_EQ(aclGetViewOffset(acl.get(), &offset), 0);
  EXPECT_EQ(offset, 2);
  ASSERT_EQ(aclGetStorageShape(acl.get(), &dims, &count), 0);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + count), std::vector<int64_t>{2 + 2 + 3 * 5 + 1});
  delete[] dims;
  aclDataType dtype = ACL_DT_UNDEFINED;
  ASSERT_EQ(aclGetDataType(acl.get(), &dtype), 0);
  EXPECT_EQ(dtype, ACL_INT32);
}

TEST_F(HostTensorTest, DataRoundTripsThroughDeviceMemory) {
  TensorDefaults defaults;
  defaults.dtype = ACL_FLOAT;
  defaults.shape = {64};
  HostTensor tensor(parseTensorSpec(json(), "t", defaults));
  const std::vector<unsigned char> generated = tensor.host();
  std::fill(tensor.host().begin(), tensor.host().end(), 0);
  tensor.download();
  EXPECT_EQ(tensor.host(), generated);

  tensor.fillBytes(0xA5);
  std::fill(tensor.host().begin(), tensor.host().end(), 0);
  tensor.download();
  for (unsigned char byte : tensor.host()) ASSERT_EQ(byte, 0xA5);
}

TEST_F(HostTensorTest, ScalarsEncodeTheirDtype) {
  const std::vector<unsigned char> half = encodeScalar(ACL_FLOAT16, 1.0);
  ASSERT_EQ(half.size(), 2u);
  uint16_t bits;
  std::memcpy(&bits, half.data(), 2);
  EXPECT_EQ(bits, 0x3c00);
  const std::vector<unsigned char> int64 = encodeScalar(ACL_INT64, -3.0);
  int64_t value;
  std::memcpy(&value, int64.data(), 8);
  EXPECT_EQ(value, -3);
  EXPECT_NE(makeAclScalar(ACL_INT32, 0.0), nullptr);
}

}  // namespace
}  // namespace gradkit::cli
