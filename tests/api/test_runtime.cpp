// aclInit/aclFinalize, the platform profile, devices, contexts and library facts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "api_test_util.h"
#include "base/error.h"

using gradkit_test::ApiFixture;
using gradkit_test::hex;
using gradkit_test::mentions;
using gradkit_test::recentError;
using gradkit_test::ScopedEnv;

namespace {

using ApiRuntime = ApiFixture;

/** Runs `fn` on a fresh thread (one that never chose a device or context) and waits for it. */
template <class Fn>
void onFreshThread(Fn fn) {
  std::thread thread(fn);
  thread.join();
}

TEST_F(ApiRuntime, InitWithoutConfigThenFinalize) {
  EXPECT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(recentError(), "");
}

TEST_F(ApiRuntime, SecondInitIsRepeatInitialize) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_TRUE(mentions(recentError(), {"aclInit", "already", "100002"}));
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclInit(nullptr), ACL_SUCCESS) << "init after finalize starts afresh";
}

TEST_F(ApiRuntime, FinalizeWithoutInitIsRepeatFinalize) {
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  EXPECT_TRUE(mentions(recentError(), {"aclFinalize", "not initialised"}));
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
}

TEST_F(ApiRuntime, InitRejectsMissingConfigFile) {
  const char* path = "/nonexistent-dir/gradkit-acl.json";
  EXPECT_EQ(aclInit(path), ACL_ERROR_INVALID_FILE);
  EXPECT_TRUE(mentions(recentError(), {"aclInit", "configPath", path}));
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE) << "a failed init leaves the runtime uninitialised";
}

TEST_F(ApiRuntime, InitRejectsDirectoryAsConfigFile) {
  EXPECT_EQ(aclInit("/tmp"), ACL_ERROR_INVALID_FILE);
  EXPECT_TRUE(mentions(recentError(), {"configPath", "\"/tmp\""}));
}

TEST_F(ApiRuntime, InitAcceptsReadableConfigFile) {
  const std::string path = ::testing::TempDir() + "gradkit_api_acl.json";
  std::ofstream(path) << "{}\n";
  EXPECT_EQ(aclInit(path.c_str()), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  std::remove(path.c_str());
}

TEST_F(ApiRuntime, SocDefaultsToAscend950) {
  ScopedEnv soc("GRADKIT_SOC", nullptr);
  EXPECT_STREQ(aclrtGetSocName(), "Ascend950");
  EXPECT_EQ(gradkit::rt::currentSoc(), gradkit::rt::Soc::Ascend950);
}

TEST_F(ApiRuntime, SocFromEnvironment) {
  ScopedEnv soc("GRADKIT_SOC", "Ascend910B");
  EXPECT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_STREQ(aclrtGetSocName(), "Ascend910B");
  EXPECT_EQ(gradkit::rt::currentSoc(), gradkit::rt::Soc::Ascend910B);
  ScopedEnv a3("GRADKIT_SOC", "Ascend910_93");
  EXPECT_STREQ(aclrtGetSocName(), "Ascend910_93");
  EXPECT_EQ(gradkit::rt::currentSoc(), gradkit::rt::Soc::Ascend910_93);
}

TEST_F(ApiRuntime, InvalidSocEnvironmentFailsInitAndFallsBack) {
  ScopedEnv soc("GRADKIT_SOC", "Ascend310P");
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"GRADKIT_SOC", "Ascend310P", "Ascend950", "Ascend910B", "Ascend910_93"}));
  EXPECT_STREQ(aclrtGetSocName(), "Ascend950");
  EXPECT_EQ(gradkit::rt::currentSoc(), gradkit::rt::Soc::Ascend950);
  EXPECT_EQ(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
}

TEST_F(ApiRuntime, SetSocOverridesEnvironment) {
  ScopedEnv soc("GRADKIT_SOC", "Ascend310P");  // even an invalid variable is moot after gradkitSetSoc
  EXPECT_EQ(gradkitSetSoc("Ascend910_93"), ACL_SUCCESS);
  EXPECT_STREQ(aclrtGetSocName(), "Ascend910_93");
  EXPECT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(gradkit::rt::currentSoc(), gradkit::rt::Soc::Ascend910_93);
}

TEST_F(ApiRuntime, SetSocAfterInitIsRejected) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(gradkitSetSoc("Ascend910B"), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_TRUE(mentions(recentError(), {"gradkitSetSoc", "before aclInit"}));
  EXPECT_STREQ(aclrtGetSocName(), "Ascend950");
}

TEST_F(ApiRuntime, SetSocRejectsUnknownNames) {
  EXPECT_EQ(gradkitSetSoc("Ascend999"), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"gradkitSetSoc", "socName", "\"Ascend999\"", "Ascend910B"}));
  EXPECT_EQ(gradkitSetSoc(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"socName", "nullptr"}));
  EXPECT_EQ(gradkitSetSoc("ascend950"), ACL_ERROR_INVALID_PARAM) << "names are exact";
}

TEST_F(ApiRuntime, ParseSocAndNames) {
  EXPECT_EQ(gradkit::rt::parseSoc("Ascend950"), gradkit::rt::Soc::Ascend950);
  EXPECT_EQ(gradkit::rt::parseSoc("Ascend910B"), gradkit::rt::Soc::Ascend910B);
  EXPECT_EQ(gradkit::rt::parseSoc("Ascend910_93"), gradkit::rt::Soc::Ascend910_93);
  EXPECT_EQ(gradkit::rt::parseSoc("Ascend910"), std::nullopt);
  EXPECT_STREQ(gradkit::rt::socName(gradkit::rt::Soc::Ascend910B), "Ascend910B");
}

TEST_F(ApiRuntime, DisabledOpsList) {
  {
    ScopedEnv list("GRADKIT_DISABLE_OPS", "aclnnFoo, aclnnDropoutV3Grad ,aclnnBar");
    EXPECT_TRUE(gradkit::rt::isOpDisabled("aclnnDropoutV3Grad"));
    EXPECT_TRUE(gradkit::rt::isOpDisabled("aclnnFoo"));
    EXPECT_TRUE(gradkit::rt::isOpDisabled("aclnnBar"));
    EXPECT_FALSE(gradkit::rt::isOpDisabled("aclnnDropoutV3"));
    EXPECT_FALSE(gradkit::rt::isOpDisabled("aclnnDropout"));
    EXPECT_FALSE(gradkit::rt::isOpDisabled(""));
  }
  ScopedEnv unset("GRADKIT_DISABLE_OPS", nullptr);
  EXPECT_FALSE(gradkit::rt::isOpDisabled("aclnnDropoutV3Grad"));
}

TEST_F(ApiRuntime, VersionIsSemantic) {
  // major.minor.patch, each a decimal number (std::regex trips a GCC 12 warning in sanitizer builds).
  int major = -1, minor = -1, patch = -1, consumed = 0;
  const std::string version = gradkitVersion();
  ASSERT_EQ(std::sscanf(version.c_str(), "%d.%d.%d%n", &major, &minor, &patch, &consumed), 3) << version;
  EXPECT_EQ(static_cast<size_t>(consumed), version.size()) << version;
  EXPECT_GE(major, 0);
  EXPECT_GE(minor, 0);
  EXPECT_GE(patch, 0);
}

TEST_F(ApiRuntime, DataTypeSizes) {
  // Byte sizes of CANN's element types.
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_BF16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_DOUBLE), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT8), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_UINT8), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_UINT16), 2u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT32), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_UINT32), 4u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT64), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_UINT64), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_BOOL), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_COMPLEX64), 8u);
  EXPECT_EQ(aclDataTypeSize(ACL_COMPLEX128), 16u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT8_E4M3FN), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_FLOAT8_E5M2), 1u);
  EXPECT_EQ(aclDataTypeSize(ACL_INT4), 0u);
  EXPECT_EQ(aclDataTypeSize(ACL_STRING), 0u);
  EXPECT_EQ(aclDataTypeSize(ACL_DT_UNDEFINED), 0u);
  EXPECT_EQ(aclDataTypeSize(static_cast<aclDataType>(99)), 0u);
}

TEST_F(ApiRuntime, Float16Conversions) {
  // IEEE binary16 encodings.
  EXPECT_EQ(aclFloatToFloat16(1.0f), 0x3C00);
  EXPECT_EQ(aclFloatToFloat16(-2.0f), 0xC000);
  EXPECT_EQ(aclFloatToFloat16(65504.0f), 0x7BFF);
  EXPECT_EQ(aclFloatToFloat16(65520.0f), 0x7C00) << "the tie above the largest finite rounds to Inf";
  EXPECT_EQ(aclFloatToFloat16(1.0f + 1.0f / 2048.0f), 0x3C00) << "tie to even (down)";
  EXPECT_EQ(aclFloatToFloat16(1.0f + 3.0f / 2048.0f), 0x3C02) << "tie to even (up)";
  EXPECT_EQ(aclFloat16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(aclFloat16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(aclFloat16ToFloat(0xC000), -2.0f);
  EXPECT_TRUE(std::isinf(aclFloat16ToFloat(0x7C00)));
  EXPECT_TRUE(std::isnan(aclFloat16ToFloat(0x7E00)));
}

TEST_F(ApiRuntime, DeviceQueries) {
  uint32_t count = 0;
  EXPECT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_EQ(count, 1u);
  aclrtRunMode mode = ACL_DEVICE;
  EXPECT_EQ(aclrtGetRunMode(&mode), ACL_SUCCESS);
  EXPECT_EQ(mode, ACL_HOST);
  EXPECT_EQ(aclrtGetDeviceCount(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtGetDeviceCount", "count", "nullptr"}));
  EXPECT_EQ(aclrtGetRunMode(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtGetRunMode", "runMode"}));
}

TEST_F(ApiRuntime, SetGetResetDevice) {
  int32_t device = -7;
  EXPECT_EQ(aclrtGetDevice(&device), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_TRUE(mentions(recentError(), {"aclrtGetDevice", "no device"}));
  EXPECT_EQ(device, -7);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetDevice(&device), ACL_SUCCESS);
  EXPECT_EQ(device, 0);
  onFreshThread([] {
    int32_t other = -1;
    EXPECT_EQ(aclrtGetDevice(&other), ACL_ERROR_RT_CONTEXT_NULL) << "the device is chosen per thread";
  });
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetDevice(&device), ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(aclrtGetDevice(nullptr), ACL_ERROR_INVALID_PARAM);
}

TEST_F(ApiRuntime, InvalidDeviceIds) {
  EXPECT_EQ(aclrtSetDevice(1), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtSetDevice", "deviceId", "given 1"}));
  EXPECT_EQ(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_TRUE(mentions(recentError(), {"deviceId", "given -1"}));
  EXPECT_EQ(aclrtResetDevice(3), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtResetDevice", "given 3"}));
  aclrtContext context = nullptr;
  EXPECT_EQ(aclrtCreateContext(&context, 2), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtCreateContext", "given 2"}));
  EXPECT_EQ(context, nullptr);
}

TEST_F(ApiRuntime, ContextLifecycle) {
  aclrtContext first = nullptr;
  aclrtContext second = nullptr;
  ASSERT_EQ(aclrtCreateContext(&first, 0), ACL_SUCCESS);
  ASSERT_NE(first, nullptr);
  aclrtContext current = nullptr;
  EXPECT_EQ(aclrtGetCurrentContext(&current), ACL_SUCCESS);
  EXPECT_EQ(current, first) << "a new context becomes current";
  int32_t device = -1;
  EXPECT_EQ(aclrtGetDevice(&device), ACL_SUCCESS);
  EXPECT_EQ(device, 0);
  ASSERT_EQ(aclrtCreateContext(&second, 0), ACL_SUCCESS);
  EXPECT_NE(second, first);
  EXPECT_EQ(aclrtSetCurrentContext(first), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetCurrentContext(&current), ACL_SUCCESS);
  EXPECT_EQ(current, first);
  EXPECT_EQ(aclrtDestroyContext(first), ACL_SUCCESS);
  EXPECT_EQ(aclrtGetCurrentContext(&current), ACL_ERROR_RT_CONTEXT_NULL) << "destroying the current one clears it";
  EXPECT_TRUE(mentions(recentError(), {"aclrtGetCurrentContext"}));
  EXPECT_EQ(aclrtDestroyContext(first), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtDestroyContext", "context", hex(first), "destroyed"}));
  EXPECT_EQ(aclrtSetCurrentContext(first), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtSetCurrentContext", hex(first)}));
  EXPECT_EQ(aclrtDestroyContext(second), ACL_SUCCESS);
}

TEST_F(ApiRuntime, ContextHandleErrors) {
  aclrtContext bogus = reinterpret_cast<aclrtContext>(static_cast<uintptr_t>(0xdead0));
  EXPECT_EQ(aclrtSetCurrentContext(bogus), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"context", "0xdead0", "unknown"}));
  EXPECT_EQ(aclrtDestroyContext(bogus), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(aclrtDestroyContext(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtDestroyContext", "nullptr"}));
  EXPECT_EQ(aclrtSetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtCreateContext(nullptr, 0), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtGetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM);
  // A stream handle is not a context handle.
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtSetCurrentContext(stream), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  recentError();
}

TEST_F(ApiRuntime, DefaultContextIsReleasedOnlyByReset) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtContext defaultContext = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&defaultContext), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyContext(defaultContext), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtDestroyContext", "default context", "aclrtResetDevice"}));
  onFreshThread([defaultContext] {
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    aclrtContext seen = nullptr;
    EXPECT_EQ(aclrtGetCurrentContext(&seen), ACL_SUCCESS);
    EXPECT_EQ(seen, defaultContext) << "every thread shares the device's default context";
  });
}

TEST_F(ApiRuntime, ContextMovesAcrossThreads) {
  aclrtContext context = nullptr;
  ASSERT_EQ(aclrtCreateContext(&context, 0), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  onFreshThread([context, stream] {
    EXPECT_EQ(aclrtSetCurrentContext(context), ACL_SUCCESS);
    int32_t device = -1;
    EXPECT_EQ(aclrtGetDevice(&device), ACL_SUCCESS);
    EXPECT_EQ(device, 0);
    int ran = 0;
    EXPECT_EQ(gradkit::rt::enqueue(stream, [&ran] { return ++ran, ACL_SUCCESS; }), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    EXPECT_EQ(ran, 1);
  });
  EXPECT_EQ(aclrtDestroyContext(context), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_RT_PARAM_INVALID) << "the context took its streams along";
  EXPECT_TRUE(mentions(recentError(), {"aclrtSynchronizeStream", hex(stream)}));
}

TEST_F(ApiRuntime, ResetDeviceDrainsAndDestroysStreams) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  int ran = 0;
  for (int i = 0; i < 50; ++i) ASSERT_EQ(gradkit::rt::enqueue(stream, [&ran] { return ++ran, ACL_SUCCESS; }), 0);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(ran, 50) << "reset drains pending work first";
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtDestroyStream", hex(stream), "unknown or destroyed"}));
}

TEST_F(ApiRuntime, FinalizeDrainsAndDestroysEverything) {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtContext context = nullptr;
  ASSERT_EQ(aclrtCreateContext(&context, 0), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  int ran = 0;
  for (int i = 0; i < 50; ++i) ASSERT_EQ(gradkit::rt::enqueue(stream, [&ran] { return ++ran, ACL_SUCCESS; }), 0);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  EXPECT_EQ(ran, 50);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(aclrtSetCurrentContext(context), ACL_ERROR_RT_PARAM_INVALID);
  int32_t device = -1;
  EXPECT_EQ(aclrtGetDevice(&device), ACL_ERROR_RT_CONTEXT_NULL);
  recentError();
}

TEST_F(ApiRuntime, RuntimeWorksWithoutInitOrDevice) {
  // Lenient mode: a thread that never called aclInit or aclrtSetDevice still gets device 0's default stream.
  onFreshThread([] {
    int ran = 0;
    EXPECT_EQ(gradkit::rt::enqueue(nullptr, [&ran] { return ++ran, ACL_SUCCESS; }), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
    EXPECT_EQ(ran, 1);
    int32_t device = -1;
    EXPECT_EQ(aclrtGetDevice(&device), ACL_ERROR_RT_CONTEXT_NULL) << "implicit use does not bind a device";
  });
}

TEST_F(ApiRuntime, RecentErrorTextIsTakenOnce) {
  EXPECT_EQ(aclrtSetDevice(5), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_EQ(aclrtSetDevice(6), ACL_ERROR_RT_INVALID_DEVICEID);
  const std::string both = recentError();
  EXPECT_TRUE(mentions(both, {"given 5", "given 6"}));
  EXPECT_LT(both.find("given 5"), both.find("given 6")) << "most recent last";
  EXPECT_EQ(recentError(), "");
}

}  // namespace

TEST_F(ApiRuntime, RecentErrorTextIsBoundedAndSaysWhatWasDropped) {
  // 200 000 failing calls without reading the text keep only the newest ~64 KiB of messages.
  constexpr int kFailures = 200000;
  for (int i = 0; i < kFailures; ++i) gradkit::fail(161002, "aclnnFake", "x", "ok", "call " + std::to_string(i));
  const std::string text = recentError();
  EXPECT_LE(text.size(), size_t{66} << 10);
  EXPECT_TRUE(mentions(text, {"earlier messages dropped", "given call 199999"}));
  EXPECT_EQ(text.find("given call 0 "), std::string::npos);
  const size_t kept = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));  // one line per message
  EXPECT_TRUE(mentions(text, {"(" + std::to_string(kFailures - kept) + " earlier messages dropped"}));
  EXPECT_EQ(recentError(), "") << "taking the text clears it";
  // A single long message is kept whole.
  const std::string longGiven(100000, 'z');
  gradkit::fail(161002, "aclnnFake", "x", "ok", longGiven);
  EXPECT_TRUE(mentions(recentError(), {longGiven}));
}

TEST(ApiThreads, SetNumThreadsOverridesAndZeroRestores) {
  const int32_t defaultThreads = gradkitGetNumThreads();
  EXPECT_GE(defaultThreads, 1);
  EXPECT_EQ(gradkitSetNumThreads(3), ACL_SUCCESS);
  EXPECT_EQ(gradkitGetNumThreads(), 3);
  EXPECT_EQ(gradkitSetNumThreads(-1), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(gradkitGetNumThreads(), 3) << "a rejected count changes nothing";
  EXPECT_EQ(gradkitSetNumThreads(0), ACL_SUCCESS);
  EXPECT_EQ(gradkitGetNumThreads(), defaultThreads);
}
