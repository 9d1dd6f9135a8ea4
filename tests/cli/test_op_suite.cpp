// OpSuite, the descriptor-driven verify/bench: a fake op (y = x + bias on fp32, run synchronously in its second
// phase) whose run and golden the tests spoil on purpose, to show that each check of the harness catches its fault.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "aclnnop/aclnn_threshold_backward.h"
#include "harness/acl_session.h"
#include "harness/op_suite.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

/** How the fake op misbehaves. */
struct Faults {
  float goldenBias = 0.0f;     // added by the golden only
  bool writeGaps = false;      // the run also writes the storage elements its output view skips
  bool writeInput = false;     // the run modifies its input
  bool realRejection = false;  // the first phase is a real rejected aclnn call (null arguments)
  float noise = 0.0f;          // added by the run to every output (double-benchmark gate)
};

// The run of the fake op: y[i] = x[i] + bias over the views' elements, plus the faults.
void runFake(OpCase& c, float bias, const Faults& faults) {
  HostTensor& x = c.tensor("x");
  HostTensor& y = c.tensor("y");
  auto* in = static_cast<float*>(x.deviceData());
  auto* out = static_cast<float*>(y.deviceData());
  std::vector<int64_t> inIndex, outIndex;
  forEachStorageIndex(x.geometry(), [&](int64_t i) { inIndex.push_back(i); });
  forEachStorageIndex(y.geometry(), [&](int64_t i) { outIndex.push_back(i); });
  if (faults.writeGaps) {
    for (int64_t i = 0; i < y.storageElements(); ++i) out[i] = -1.0f;
  }
  for (size_t i = 0; i < outIndex.size(); ++i) out[outIndex[i]] = in[inIndex[i]] + bias + faults.noise;
  if (faults.writeInput && !inIndex.empty()) in[inIndex[0]] = 42.0f;
}

OpDescriptor fakeDescriptor(Faults faults, Gate gate = Gate::kBitExact) {
  OpDescriptor d;
  d.name = "fake_add";
  d.api = "aclnnFakeAdd";
  d.gate = gate;
  d.tensors = {inputRule("x"), outputRule("y")};
  // The fake's second phase does the work the first phase bound (see bind): the executor slot carries nothing.
  auto pending = std::make_shared<std::function<void()>>();
  d.run = [pending](void*, uint64_t, aclOpExecutor*, aclrtStream) {
    (*pending)();
    return aclnnStatus{ACLNN_SUCCESS};
  };
  d.bind = [faults, pending](OpCase& c) {
    const double bias = c.number("bias", 0.5);
    OpCall call;
    call.plan = [&c, bias, faults, pending](uint64_t* workspaceSize, aclOpExecutor** executor) {
      if (faults.realRejection) {
        return aclnnThresholdBackwardGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, workspaceSize, executor);
      }
      *workspaceSize = 0;
      *executor = nullptr;
      *pending = [&c, bias, faults] { runFake(c, static_cast<float>(bias), faults); };
      return aclnnStatus{ACLNN_SUCCESS};
    };
    auto fill = [&c](double add) {
      const std::vector<unsigned char>& x = c.dense("x");
      std::vector<unsigned char>& y = c.golden("y");
      for (size_t i = 0; i < x.size() / 4; ++i) {
        float v = 0.0f;
        std::memcpy(&v, x.data() + 4 * i, 4);
        v = static_cast<float>(v + add);
        std::memcpy(y.data() + 4 * i, &v, 4);
      }
    };
    call.golden = [fill, bias, faults] { fill(static_cast<float>(bias) + faults.goldenBias); };
    call.naive = [fill, bias] { fill(static_cast<float>(bias) + 1e-3f); };  // a naive result 1e-3 off
    return call;
  };
  return d;
}

json fakeCase(json extra = json::object()) {
  json testCase = {{"name", "case"}, {"dtype", "fp32"}, {"shape", {3, 5}}};
  testCase.update(extra);
  return testCase;
}

class OpSuiteTest : public ::testing::Test {
 protected:
  VerifyRow verify(const Faults& faults, const json& testCase, Gate gate = Gate::kBitExact) {
    const OpSuite suite(fakeDescriptor(faults, gate));
    VerifyContext context;
    context.stream = session_.stream();
    std::vector<VerifyRow> rows = suite.verify(testCase, context);
    EXPECT_EQ(rows.size(), 1u);
    return rows.at(0);
  }
  AclSession session_;
};

TEST_F(OpSuiteTest, CorrectOpPassesBitExact) {
  const VerifyRow row = verify({}, fakeCase());
  EXPECT_TRUE(row.passed) << row.note;
  EXPECT_TRUE(row.bitExact);
  EXPECT_EQ(row.op, "fake_add");
  EXPECT_EQ(row.caseName, "case");
  EXPECT_EQ(row.dtype, "fp32");
}

TEST_F(OpSuiteTest, WrongGoldenFails) {
  Faults faults;
  faults.goldenBias = 0.25f;
  const VerifyRow row = verify(faults, fakeCase());
  EXPECT_FALSE(row.passed);
  EXPECT_FALSE(row.bitExact);
  EXPECT_NEAR(row.maxAbsErr, 0.25, 1e-6);
  EXPECT_NE(row.note.find("y: 15 of 15 elements differ"), std::string::npos) << row.note;
}

TEST_F(OpSuiteTest, StridedViewsAreComparedAndWritesOutsideTheViewAreCaught) {
  // y views every other element of its storage, x is transposed: values still match the golden.
  const json strided = fakeCase({{"y", {{"strides", {10, 2}}}}, {"x", {{"layout", "transposed"}}}});
  const VerifyRow clean = verify({}, strided);
  EXPECT_TRUE(clean.passed) << clean.note;

  Faults faults;
  faults.writeGaps = true;
  const VerifyRow row = verify(faults, strided);
  EXPECT_FALSE(row.passed);
  EXPECT_TRUE(row.bitExact);  // the view's values are right; the gaps are not the op's to write
  EXPECT_NE(row.note.find("written outside an output's view"), std::string::npos) << row.note;
}

TEST_F(OpSuiteTest, ModifiedInputFails) {
  Faults faults;
  faults.writeInput = true;
  const VerifyRow row = verify(faults, fakeCase());
  EXPECT_FALSE(row.passed);
  EXPECT_NE(row.note.find("an input was modified"), std::string::npos) << row.note;
}

TEST_F(OpSuiteTest, EmptyTensorsPass) {
  const VerifyRow row = verify({}, fakeCase({{"shape", {0, 4}}}));
  EXPECT_TRUE(row.passed) << row.note;
}

TEST_F(OpSuiteTest, ExpectedRejectionChecksStatusAndMessage) {
  Faults faults;
  faults.realRejection = true;  // aclnnThresholdBackward with null tensors: 161001
  EXPECT_TRUE(verify(faults, fakeCase({{"expect_status", 161001}})).passed);
  EXPECT_TRUE(verify(faults, fakeCase({{"expect_status", 161001}, {"expect_message", "gradOutput"}})).passed);

  const VerifyRow wrongStatus = verify(faults, fakeCase({{"expect_status", 161002}}));
  EXPECT_FALSE(wrongStatus.passed);
  const VerifyRow wrongMessage =
      verify(faults, fakeCase({{"expect_status", 161001}, {"expect_message", {"gradOutput", "no such words"}}}));
  EXPECT_FALSE(wrongMessage.passed);
  EXPECT_NE(wrongMessage.note.find("lacks \"no such words\""), std::string::npos) << wrongMessage.note;

  // An expected rejection that does not come fails too.
  EXPECT_FALSE(verify({}, fakeCase({{"expect_status", 161002}})).passed);
}

TEST_F(OpSuiteTest, DoubleBenchmarkGateJudgesAgainstTheNaiveError) {
  // Exact: passes (not bit-exact only when it differs).
  const VerifyRow exact = verify({}, fakeCase(), Gate::kDoubleBenchmark);
  EXPECT_TRUE(exact.passed) << exact.note;
  // 1e-4 off where the naive result is 1e-3 off: better than the naive one, passes without being bit-exact.
  Faults small;
  small.noise = 1e-4f;
  const VerifyRow close = verify(small, fakeCase(), Gate::kDoubleBenchmark);
  EXPECT_TRUE(close.passed) << close.note;
  EXPECT_FALSE(close.bitExact);
  // 0.1 off: far worse than the naive computation.
  Faults large;
  large.noise = 0.1f;
  const VerifyRow far = verify(large, fakeCase(), Gate::kDoubleBenchmark);
  EXPECT_FALSE(far.passed);
  EXPECT_NE(far.note.find("y: "), std::string::npos) << far.note;
}

TEST_F(OpSuiteTest, DumpWritesInputsGoldenAndOurs) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gradkit_op_suite_dump_test";
  std::filesystem::remove_all(dir);
  const OpSuite suite(fakeDescriptor({}));
  VerifyContext context;
  context.stream = session_.stream();
  context.dumpDir = dir;
  ASSERT_TRUE(suite.verify(fakeCase(), context).at(0).passed);
  for (const char* file : {"x.npy", "golden_y.npy", "ours_y.npy", "case.json"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / "fake_add" / "case" / file)) << file;
  }
  std::filesystem::remove_all(dir);
}

TEST_F(OpSuiteTest, BenchCountsEveryTensorsBytesAndChecksTheGolden) {
  BenchContext context;
  context.stream = session_.stream();
  context.repeat = 2;
  context.peer = false;
  context.copyGBps = 10.0;
  const OpSuite suite(fakeDescriptor({}));
  const BenchRow row = suite.bench(fakeCase(), context);
  EXPECT_EQ(row.caseName, "case");
  EXPECT_GT(row.seconds, 0.0);
  EXPECT_NEAR(row.gbps * row.seconds * 1e9, 2.0 * 15 * 4, 1e-6);  // x read, y written
  EXPECT_EQ(row.note.find("WRONG"), std::string::npos) << row.note;

  Faults faults;
  faults.goldenBias = 1.0f;
  const BenchRow wrong = OpSuite(fakeDescriptor(faults)).bench(fakeCase(), context);
  EXPECT_NE(wrong.note.find("WRONG RESULT"), std::string::npos) << wrong.note;

  EXPECT_THROW(suite.bench(fakeCase({{"y", {{"strides", {10, 2}}}}}), context), std::exception);  // not contiguous
}

}  // namespace
}  // namespace gradkit::cli
