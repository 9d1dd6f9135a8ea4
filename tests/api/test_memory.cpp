// Tracked memory: allocation, freeing, every copy kind, destMax and overrun checks, memset.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "api_test_util.h"
#include "runtime/memory.h"

using gradkit_test::ApiFixture;
using gradkit_test::hex;
using gradkit_test::mentions;
using gradkit_test::recentError;

namespace {

using ApiMemory = ApiFixture;

std::vector<unsigned char> pattern(size_t size, int seed) {
  std::vector<unsigned char> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(seed + 7 * i);
  return bytes;
}

// The THPeligible field of /proc/self/smaps for the mapping that holds `pointer`: 1 when the kernel may back it
// with transparent huge pages (madvised, or THP always on), 0 when not, -1 when unknown (no smaps, THP off).
int hugePageEligible(const void* pointer) {
  std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  if (!std::getline(enabled, mode) || mode.find("[never]") != std::string::npos) return -1;
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(pointer);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long start = 0, end = 0;
    // A mapping's header ("start-end perms offset dev:ice ...") has its first colon after a space; its field lines
    // ("Size:  4 kB") before one.
    if (std::sscanf(line.c_str(), "%llx-%llx ", &start, &end) == 2 && line.find(':') > line.find(' ')) {
      inside = start <= at && at < end;
    } else if (inside && line.rfind("THPeligible:", 0) == 0) {
      return std::stoi(line.substr(std::string("THPeligible:").size()));
    }
  }
  return -1;
}

std::vector<unsigned char> readBack(const void* device, size_t size) {
  std::vector<unsigned char> bytes(size);
  std::memcpy(bytes.data(), device, size);  // device memory is host memory on a CPU
  return bytes;
}

TEST_F(ApiMemory, MallocIsAlignedTrackedAndFreed) {
  for (size_t size : {size_t{1}, size_t{63}, size_t{64}, size_t{1000}, size_t{1} << 20}) {
    void* device = nullptr;
    ASSERT_EQ(aclrtMalloc(&device, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_NE(device, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(device) % 64, 0u);
    const size_t usable = (size + 31) / 32 * 32 + 32;  // CANN's rounding
    const auto allocation = gradkit::rt::findAllocation(static_cast<char*>(device) + usable - 1);
    ASSERT_TRUE(allocation.has_value());
    EXPECT_EQ(allocation->base, device);
    EXPECT_EQ(allocation->size, usable);
    EXPECT_EQ(allocation->requested, size);
    EXPECT_EQ(allocation->kind, gradkit::rt::MemoryKind::Device);
    EXPECT_FALSE(gradkit::rt::findAllocation(static_cast<char*>(device) + usable).has_value() &&
                 gradkit::rt::findAllocation(static_cast<char*>(device) + usable)->base == device);
    EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
    EXPECT_FALSE(gradkit::rt::findAllocation(device).has_value());
  }
}

TEST_F(ApiMemory, DeviceMallocRoundsAsCannAndHostMallocDoesNot) {
  // CANN rounds device allocations up to a multiple of 32 bytes and adds 32; upstream's GenMaskV2 example copies
  // 64 bytes out of a 16-byte allocation.
  const std::pair<size_t, size_t> expected[] = {{1, 64}, {16, 64}, {32, 64}, {33, 96}, {64, 96}, {1000, 1056}};
  for (const auto& [requested, usable] : expected) {
    void* device = nullptr;
    ASSERT_EQ(aclrtMalloc(&device, requested, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    std::vector<unsigned char> host(usable + 1, 0x5A);
    EXPECT_EQ(aclrtMemcpy(device, usable, host.data(), usable, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS) << requested;
    EXPECT_EQ(aclrtMemcpy(host.data(), usable, device, usable, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS) << requested;
    EXPECT_EQ(aclrtMemcpy(host.data(), usable + 1, device, usable + 1, ACL_MEMCPY_DEVICE_TO_HOST),
              ACL_ERROR_INVALID_PARAM)
        << requested;
    EXPECT_TRUE(mentions(recentError(), {std::to_string(usable) + "-byte device memory",
                                         std::to_string(requested) + " bytes requested", "1 bytes past"}));
    EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
  }
  void* host = nullptr;
  ASSERT_EQ(aclrtMallocHost(&host, 16), ACL_SUCCESS);
  std::vector<unsigned char> bytes(17);
  EXPECT_EQ(aclrtMemcpy(bytes.data(), 17, host, 17, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtFreeHost(host), ACL_SUCCESS);
}

TEST_F(ApiMemory, MallocRecordsEveryValidPolicy) {
  const int policies[] = {ACL_MEM_MALLOC_HUGE_FIRST,
                          ACL_MEM_MALLOC_HUGE_ONLY,
                          ACL_MEM_MALLOC_NORMAL_ONLY,
                          ACL_MEM_MALLOC_HUGE_FIRST_P2P,
                          ACL_MEM_MALLOC_HUGE_ONLY_P2P,
                          ACL_MEM_MALLOC_NORMAL_ONLY_P2P,
                          ACL_MEM_MALLOC_HUGE1G_ONLY,
                          ACL_MEM_MALLOC_HUGE1G_ONLY_P2P,
                          ACL_MEM_MALLOC_HUGE_FIRST | ACL_MEM_TYPE_HIGH_BAND_WIDTH,
                          ACL_MEM_MALLOC_NORMAL_ONLY | ACL_MEM_TYPE_LOW_BAND_WIDTH,
                          ACL_MEM_MALLOC_HUGE_ONLY | ACL_MEM_ACCESS_USER_SPACE_READONLY};
  for (int policy : policies) {
    void* device = nullptr;
    ASSERT_EQ(aclrtMalloc(&device, 128, static_cast<aclrtMemMallocPolicy>(policy)), ACL_SUCCESS) << policy;
    EXPECT_EQ(gradkit::rt::findAllocation(device)->policy, policy);
    EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
  }
}

TEST_F(ApiMemory, HugePagePoliciesAlignLargeDeviceBlocksToHugePages) {
  using gradkit::rt::kHugePageBytes;
  using gradkit::rt::MemoryKind;
  using gradkit::rt::wantsHugePages;
  // Huge pages first or only (any flags), device memory, at least one huge page: aligned to it and advised.
  const int hugePolicies[] = {ACL_MEM_MALLOC_HUGE_FIRST,
                              ACL_MEM_MALLOC_HUGE_ONLY,
                              ACL_MEM_MALLOC_HUGE_FIRST_P2P,
                              ACL_MEM_MALLOC_HUGE_ONLY_P2P,
                              ACL_MEM_MALLOC_HUGE1G_ONLY,
                              ACL_MEM_MALLOC_HUGE1G_ONLY_P2P,
                              ACL_MEM_MALLOC_HUGE_FIRST | ACL_MEM_TYPE_HIGH_BAND_WIDTH};
  for (int policy : hugePolicies) {
    EXPECT_TRUE(wantsHugePages(kHugePageBytes, MemoryKind::Device, policy)) << policy;
    EXPECT_FALSE(wantsHugePages(kHugePageBytes - 1, MemoryKind::Device, policy)) << policy;
    EXPECT_FALSE(wantsHugePages(kHugePageBytes, MemoryKind::Host, policy)) << policy;
  }
  EXPECT_FALSE(wantsHugePages(kHugePageBytes, MemoryKind::Device, ACL_MEM_MALLOC_NORMAL_ONLY));
  EXPECT_FALSE(wantsHugePages(kHugePageBytes, MemoryKind::Device, ACL_MEM_MALLOC_NORMAL_ONLY_P2P));

  const size_t size = 3 * kHugePageBytes + 5;
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(device) % kHugePageBytes, 0u);
  const auto allocation = gradkit::rt::findAllocation(device);
  ASSERT_TRUE(allocation.has_value());
  EXPECT_EQ(allocation->size, (size + 31) / 32 * 32 + 32);  // CANN's rounding, not the huge page's
  const int eligible = hugePageEligible(device);
  if (eligible >= 0) {
    EXPECT_EQ(eligible, 1);
  }
  std::vector<unsigned char> bytes = pattern(allocation->size, 3);
  EXPECT_EQ(aclrtMemcpy(device, bytes.size(), bytes.data(), bytes.size(), ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(readBack(device, bytes.size()), bytes);
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
}

TEST_F(ApiMemory, MallocRejectsBadArguments) {
  void* device = reinterpret_cast<void*>(1);
  EXPECT_EQ(aclrtMalloc(&device, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMalloc", "size", "given 0"}));
  EXPECT_EQ(device, nullptr) << "the output is cleared on failure";
  EXPECT_EQ(aclrtMalloc(nullptr, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMalloc", "devPtr", "nullptr"}));
  EXPECT_EQ(aclrtMalloc(&device, 64, static_cast<aclrtMemMallocPolicy>(8)), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMalloc", "policy", "given 8"}));
  EXPECT_EQ(aclrtMalloc(&device, 64, static_cast<aclrtMemMallocPolicy>(0x2000)), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"policy", "given 8192"}));
  EXPECT_EQ(aclrtMalloc(&device, 64,
                        static_cast<aclrtMemMallocPolicy>(ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH)),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"policy", "given 4352"}));
}

TEST_F(ApiMemory, AllocationFailureIsReported) {
  void* device = nullptr;
  EXPECT_EQ(aclrtMalloc(&device, SIZE_MAX, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMalloc", "size", std::to_string(SIZE_MAX), "allocation failed"}));
  EXPECT_EQ(device, nullptr);
  EXPECT_EQ(aclrtMalloc(&device, size_t{1} << 62, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
  recentError();
  void* host = nullptr;
  EXPECT_EQ(aclrtMallocHost(&host, SIZE_MAX - 10), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMallocHost", "size"}));
}

TEST_F(ApiMemory, FreeRejectsUnknownInteriorAndDoubleFree) {
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  void* interior = static_cast<char*>(device) + 16;
  EXPECT_EQ(aclrtFree(interior), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtFree", "devPtr", hex(interior), "16 bytes inside", hex(device)}));
  int onStack = 0;
  EXPECT_EQ(aclrtFree(&onStack), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtFree", hex(&onStack), "unknown or already freed"}));
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(device), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtFree", hex(device), "already freed"}));
  EXPECT_EQ(aclrtFree(nullptr), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtFree", "devPtr", "nullptr"}));
}

TEST_F(ApiMemory, HostAndDeviceMemoryAreFreedByTheirOwnCall) {
  void* host = nullptr;
  void* device = nullptr;
  ASSERT_EQ(aclrtMallocHost(&host, 100), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&device, 100, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(host) % 64, 0u);
  EXPECT_EQ(gradkit::rt::findAllocation(host)->kind, gradkit::rt::MemoryKind::Host);
  EXPECT_EQ(aclrtFree(host), ACL_ERROR_RT_INVALID_MEMORY_TYPE);
  EXPECT_TRUE(mentions(recentError(), {"aclrtFree", hex(host), "aclrtFreeHost"}));
  EXPECT_EQ(aclrtFreeHost(device), ACL_ERROR_RT_INVALID_MEMORY_TYPE);
  EXPECT_TRUE(mentions(recentError(), {"aclrtFreeHost", hex(device), "use aclrtFree"}));
  EXPECT_EQ(aclrtFreeHost(host), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(host), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtFreeHost", "hostPtr", hex(host)}));
  EXPECT_EQ(aclrtFree(device), ACL_SUCCESS);
  EXPECT_EQ(aclrtMallocHost(nullptr, 8), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMallocHost", "hostPtr", "nullptr"}));
  EXPECT_EQ(aclrtMallocHost(&host, 0), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMallocHost", "size", "given 0"}));
  EXPECT_EQ(aclrtFreeHost(nullptr), ACL_ERROR_INVALID_PARAM);
}

class ApiMemcpy : public ApiFixture {
 protected:
  void SetUp() override {
    ApiFixture::SetUp();
    // 64 requested bytes are kSize usable ones after CANN's rounding (up to 32, plus 32).
    ASSERT_EQ(aclrtMalloc(&deviceA_, kSize - 32, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMalloc(&deviceB_, kSize - 32, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
    ASSERT_EQ(aclrtMallocHost(&pinned_, kSize), ACL_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(aclrtFree(deviceA_), ACL_SUCCESS);
    EXPECT_EQ(aclrtFree(deviceB_), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreeHost(pinned_), ACL_SUCCESS);
    ApiFixture::TearDown();
  }
  static constexpr size_t kSize = 96;
  void* deviceA_ = nullptr;
  void* deviceB_ = nullptr;
  void* pinned_ = nullptr;
};

TEST_F(ApiMemcpy, EveryKindCopies) {
  const auto source = pattern(kSize, 3);
  std::vector<unsigned char> host(kSize, 0);
  // H2D, D2D (three spellings), D2H, H2H, H2BUF2D, DEFAULT: the bytes travel unchanged.
  ASSERT_EQ(aclrtMemcpy(deviceA_, kSize, source.data(), kSize, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(readBack(deviceA_, kSize), source);
  for (aclrtMemcpyKind kind :
       {ACL_MEMCPY_DEVICE_TO_DEVICE, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, ACL_MEMCPY_INTER_DEVICE_TO_DEVICE}) {
    std::memset(deviceB_, 0, kSize);
    ASSERT_EQ(aclrtMemcpy(deviceB_, kSize, deviceA_, kSize, kind), ACL_SUCCESS) << kind;
    EXPECT_EQ(readBack(deviceB_, kSize), source) << kind;
  }
  ASSERT_EQ(aclrtMemcpy(host.data(), kSize, deviceB_, kSize, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(host, source);
  const auto second = pattern(kSize, 100);
  ASSERT_EQ(aclrtMemcpy(host.data(), kSize, second.data(), kSize, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(host, second);
  ASSERT_EQ(aclrtMemcpy(pinned_, kSize, host.data(), kSize, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(readBack(pinned_, kSize), second);
  ASSERT_EQ(aclrtMemcpy(deviceA_, kSize, pinned_, kSize, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(readBack(deviceA_, kSize), second);
  const auto third = pattern(kSize, 200);
  ASSERT_EQ(aclrtMemcpy(deviceB_, kSize, third.data(), kSize, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
  EXPECT_EQ(readBack(deviceB_, kSize), third);
  ASSERT_EQ(aclrtMemcpy(host.data(), kSize, deviceB_, kSize, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
  EXPECT_EQ(host, third);
}

TEST_F(ApiMemcpy, PartialCopiesAtOffsets) {
  const auto source = pattern(kSize, 9);
  std::memset(deviceA_, 0xEE, kSize);
  char* middle = static_cast<char*>(deviceA_) + 40;
  ASSERT_EQ(aclrtMemcpy(middle, kSize - 40, source.data(), 56, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  const auto bytes = readBack(deviceA_, kSize);
  for (size_t i = 0; i < 40; ++i) ASSERT_EQ(bytes[i], 0xEE) << i;
  for (size_t i = 0; i < 56; ++i) ASSERT_EQ(bytes[40 + i], source[i]) << i;
}

TEST_F(ApiMemcpy, CountAboveDestMaxIsRejected) {
  const auto source = pattern(kSize, 1);
  std::memset(deviceA_, 0, kSize);
  EXPECT_EQ(aclrtMemcpy(deviceA_, 32, source.data(), 33, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMemcpy", "count", "destMax (32)", "given 33"}));
  EXPECT_EQ(readBack(deviceA_, kSize), std::vector<unsigned char>(kSize, 0)) << "nothing was written";
  std::vector<unsigned char> host(8);
  EXPECT_EQ(aclrtMemcpy(host.data(), 8, source.data(), 9, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);
}

TEST_F(ApiMemcpy, DeviceOverrunsAreRejected) {
  const auto source = pattern(2 * kSize, 1);
  std::vector<unsigned char> host(2 * kSize);
  char* nearEnd = static_cast<char*>(deviceA_) + kSize - 8;
  EXPECT_EQ(aclrtMemcpy(nearEnd, 64, source.data(), 16, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(
      mentions(recentError(), {"aclrtMemcpy", "dst", "8 bytes left", hex(nearEnd), "16 bytes", "8 bytes past"}));
  EXPECT_EQ(aclrtMemcpy(host.data(), 2 * kSize, deviceA_, kSize + 1, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"src", "1 bytes past", hex(deviceA_)}));
  EXPECT_EQ(aclrtMemcpy(deviceB_, 2 * kSize, deviceA_, kSize + 4, ACL_MEMCPY_DEVICE_TO_DEVICE),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"dst", "4 bytes past"}));
  EXPECT_EQ(aclrtMemcpy(deviceB_, 2 * kSize, source.data(), 2 * kSize, ACL_MEMCPY_DEFAULT), ACL_ERROR_INVALID_PARAM)
      << "DEFAULT still knows device memory from the registry";
  EXPECT_TRUE(mentions(recentError(), {"dst", hex(deviceB_)}));
}

TEST_F(ApiMemcpy, TrackedHostSidesAreBoundsChecked) {
  std::vector<unsigned char> host(2 * kSize);
  EXPECT_EQ(aclrtMemcpy(host.data(), 2 * kSize, pinned_, kSize + 1, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"src", "host memory (aclrtMallocHost)", "1 bytes past"}));
  EXPECT_EQ(aclrtMemcpy(host.data(), 2 * kSize, deviceA_, kSize + 1, ACL_MEMCPY_DEFAULT), ACL_ERROR_INVALID_PARAM);
}

TEST_F(ApiMemcpy, DeviceSidesMustBeDeviceMemory) {
  std::vector<unsigned char> host(kSize), other(kSize);
  EXPECT_EQ(aclrtMemcpy(host.data(), kSize, other.data(), kSize, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"dst", "ACL_MEMCPY_HOST_TO_DEVICE", hex(host.data()), "not inside any"}));
  EXPECT_EQ(aclrtMemcpy(host.data(), kSize, other.data(), kSize, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"src", "ACL_MEMCPY_DEVICE_TO_HOST", hex(other.data())}));
  EXPECT_EQ(aclrtMemcpy(deviceA_, kSize, pinned_, kSize, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"src", "host memory (aclrtMallocHost)"}));
  EXPECT_EQ(aclrtMemcpy(pinned_, kSize, deviceA_, kSize, ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"dst", "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE"}));
  // A freed buffer is no longer device memory.
  void* freed = nullptr;
  ASSERT_EQ(aclrtMalloc(&freed, 32, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtFree(freed), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(host.data(), kSize, freed, 16, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"src", hex(freed)}));
}

TEST_F(ApiMemcpy, NullPointersAndBadKinds) {
  std::vector<unsigned char> host(kSize);
  EXPECT_EQ(aclrtMemcpy(nullptr, kSize, host.data(), kSize, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMemcpy", "dst", "nullptr"}));
  EXPECT_EQ(aclrtMemcpy(host.data(), kSize, nullptr, kSize, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMemcpy", "src", "nullptr"}));
  EXPECT_EQ(aclrtMemcpy(host.data(), kSize, deviceA_, kSize, static_cast<aclrtMemcpyKind>(8)), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"kind", "given 8"}));
  EXPECT_EQ(aclrtMemcpy(host.data(), kSize, deviceA_, kSize, static_cast<aclrtMemcpyKind>(-1)),
            ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"kind", "given -1"}));
}

TEST_F(ApiMemcpy, ZeroCountIsANoOp) {
  std::memset(deviceA_, 0x11, kSize);
  int hostValue = 5;
  EXPECT_EQ(aclrtMemcpy(deviceA_, 0, &hostValue, 0, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(readBack(deviceA_, kSize), std::vector<unsigned char>(kSize, 0x11));
  EXPECT_EQ(recentError(), "");
}

TEST_F(ApiMemcpy, MemsetFillsAndChecks) {
  std::memset(deviceA_, 0, kSize);
  char* at = static_cast<char*>(deviceA_) + 10;
  ASSERT_EQ(aclrtMemset(at, kSize - 10, 0x1AB, 20), ACL_SUCCESS);  // the value is taken as a byte
  const auto bytes = readBack(deviceA_, kSize);
  for (size_t i = 0; i < kSize; ++i) ASSERT_EQ(bytes[i], (i >= 10 && i < 30) ? 0xAB : 0) << i;
  EXPECT_EQ(aclrtMemset(deviceA_, 16, 0, 17), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMemset", "count", "maxCount (16)", "given 17"}));
  EXPECT_EQ(aclrtMemset(at, 1000, 0, kSize), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMemset", "count", "86 bytes left", "given 96"}));
  EXPECT_EQ(aclrtMemset(nullptr, 16, 0, 16), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMemset", "devPtr", "nullptr"}));
  int untracked[4] = {};
  EXPECT_EQ(aclrtMemset(untracked, sizeof untracked, 0, sizeof untracked), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMemset", hex(untracked), "not inside any"}));
  EXPECT_EQ(aclrtMemset(deviceA_, 0, 0, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemset(pinned_, kSize, 0x5A, kSize), ACL_SUCCESS);
  EXPECT_EQ(readBack(pinned_, kSize), std::vector<unsigned char>(kSize, 0x5A));
}

}  // namespace
