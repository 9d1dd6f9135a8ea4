// The per-case checks shared by every suite: bytes changed outside an output's view, hex notes.
#include <gtest/gtest.h>

#include "harness/acl_session.h"
#include "harness/host_tensor.h"
#include "harness/view_checks.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

TEST(ViewChecks, CountsOnlyChangedBytesOutsideTheView) {
  AclSession session;
  TensorDefaults defaults;
  defaults.dtype = ACL_INT16;
  defaults.shape = {2, 2};
  // View [2, 2] with strides {4, 1} and offset 1 over storage elements 0..6: covers elements 1, 2, 5, 6.
  HostTensor tensor(parseTensorSpec(json::parse(R"({"strides": [4, 1], "offset": 1})"), "t", defaults));
  ASSERT_EQ(tensor.storageElements(), 7);
  const std::vector<unsigned char> before = tensor.host();
  EXPECT_EQ(changedBytesOutsideView(tensor, before), 0);

  tensor.host()[2 * 1] ^= 0xFF;      // element 1: inside the view, allowed
  tensor.host()[2 * 6 + 1] ^= 0x01;  // element 6: inside
  EXPECT_EQ(changedBytesOutsideView(tensor, before), 0);

  tensor.host()[2 * 0] ^= 0x10;  // element 0: outside, one byte
  tensor.host()[2 * 3] ^= 0x01;  // element 3: outside, both bytes
  tensor.host()[2 * 3 + 1] ^= 0x01;
  EXPECT_EQ(changedBytesOutsideView(tensor, before), 3);
}

TEST(ViewChecks, HexBytesPrintsMostSignificantFirst) {
  const unsigned char bytes[] = {0x97, 0x96, 0x96, 0x3f};  // 1.17647064f, little-endian
  EXPECT_EQ(hexBytes(bytes, 4), "0x3f969697");
  EXPECT_EQ(hexBytes(bytes, 1), "0x97");
}

TEST(ViewChecks, AppendNoteSeparatesNotes) {
  VerifyRow row;
  appendNote(row, "first");
  appendNote(row, "second");
  EXPECT_EQ(row.note, "first; second");
}

}  // namespace
}  // namespace gradkit::cli
