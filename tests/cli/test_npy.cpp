// The .npy writer: exact header bytes (hand-written expectations), a minimal independent parser, and
// numpy itself where /usr/bin/python3 has it.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "harness/error.h"
#include "harness/npy.h"
#include "harness/peer.h"

namespace gradkit::cli {
namespace {

// Parses the parts of a version-1.0 header this test needs, written from the format description.
struct ParsedNpy {
  std::string dict;
  std::string data;
  size_t headerTotal = 0;
};

ParsedNpy parseNpy(const std::string& bytes) {
  ParsedNpy parsed;
  EXPECT_EQ(bytes.substr(0, 6), std::string("\x93NUMPY", 6));
  EXPECT_EQ(bytes[6], 1);
  EXPECT_EQ(bytes[7], 0);
  const size_t length = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  parsed.headerTotal = 10 + length;
  parsed.dict = bytes.substr(10, length);
  parsed.data = bytes.substr(10 + length);
  return parsed;
}

TEST(Npy, HeaderOfA2x3Float32ArrayIsExact) {
  const float values[6] = {0.0f, 1.0f, -2.5f, 3.0f, 4.0f, 5.0f};
  const std::string bytes = npyBytes(ACL_FLOAT, {2, 3}, values);
  const ParsedNpy parsed = parseNpy(bytes);
  EXPECT_EQ(parsed.headerTotal % 64, 0u);
  const std::string expectedStart = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(parsed.dict.substr(0, expectedStart.size()), expectedStart);
  EXPECT_EQ(parsed.dict.back(), '\n');
  EXPECT_EQ(parsed.dict.find_first_not_of(' ', expectedStart.size()), parsed.dict.size() - 1);
  ASSERT_EQ(parsed.data.size(), sizeof values);
  EXPECT_EQ(std::memcmp(parsed.data.data(), values, sizeof values), 0);
}

TEST(Npy, ShapesOfRankZeroOneAndEmpty) {
  const int64_t one = 7;
  EXPECT_NE(parseNpy(npyBytes(ACL_INT64, {}, &one)).dict.find("'shape': (), }"), std::string::npos);
  EXPECT_NE(parseNpy(npyBytes(ACL_INT64, {1}, &one)).dict.find("'shape': (1,), }"), std::string::npos);
  const ParsedNpy empty = parseNpy(npyBytes(ACL_FLOAT16, {2, 0}, nullptr));
  EXPECT_NE(empty.dict.find("'shape': (2, 0), }"), std::string::npos);
  EXPECT_TRUE(empty.data.empty());
}

TEST(Npy, DescrPerDtype) {
  EXPECT_EQ(npyDescr(ACL_FLOAT), "<f4");
  EXPECT_EQ(npyDescr(ACL_FLOAT16), "<f2");
  EXPECT_EQ(npyDescr(ACL_BF16), "<u2");
  EXPECT_EQ(npyDescr(ACL_INT8), "|i1");
  EXPECT_EQ(npyDescr(ACL_UINT8), "|u1");
  EXPECT_EQ(npyDescr(ACL_INT32), "<i4");
  EXPECT_EQ(npyDescr(ACL_INT64), "<i8");
  EXPECT_EQ(npyDescr(ACL_BOOL), "|b1");
  EXPECT_THROW(npyDescr(ACL_COMPLEX64), HarnessError);
}

// Runs python and returns its stdout.
std::string runPython(const std::string& code) {
  std::string output;
  FILE* pipe = popen(("/usr/bin/python3 -c " + shellQuote(code) + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[512];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  pclose(pipe);
  return output;
}

TEST(Npy, NumpyLoadsWhatWeWrite) {
  if (runPython("import numpy; print('ok')") != "ok\n") GTEST_SKIP() << "numpy is not importable";
  TempDir dir;
  const int32_t ints[2][3] = {{1, -2, 3}, {2147483647, -2147483647 - 1, 0}};
  writeNpy(dir.path() / "ints.npy", ACL_INT32, {2, 3}, ints);
  const uint16_t bf16[3] = {0x3f80, 0xc000, 0x7fc0};  // 1.0, -2.0, NaN as bf16 bits
  writeNpy(dir.path() / "sub" / "bf16.npy", ACL_BF16, {3}, bf16);
  const int8_t scalar = -5;
  writeNpy(dir.path() / "scalar.npy", ACL_INT8, {}, &scalar);

  const std::string code = "import numpy as np; d='" + dir.path().string() +
                           "'; a=np.load(d+'/ints.npy'); b=np.load(d+'/sub/bf16.npy'); s=np.load(d+'/scalar.npy');"
                           "print(a.dtype, a.shape, a.tolist()); print(b.dtype, b.tolist()); "
                           "print(s.dtype, s.shape, int(s))";
  EXPECT_EQ(runPython(code),
            "int32 (2, 3) [[1, -2, 3], [2147483647, -2147483648, 0]]\n"
            "uint16 [16256, 49152, 32704]\n"
            "int8 () -5\n");
}

}  // namespace
}  // namespace gradkit::cli
