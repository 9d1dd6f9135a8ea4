// Helpers for the tests of the mask-consuming dropout ops (DoMask, DropoutBackward, V3Grad): calling the two
// phases, random packed masks, bit-level views of results, scoped environment variables.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "ops/op_test_util.h"

namespace gradkit::test {

/** What one GetWorkspaceSize call returned (and, on success, whether running it succeeded). */
struct PlannedCall {
  aclnnStatus status = -1;
  uint64_t workspaceSize = 0;
  std::string message;
};

/**
 * Calls `getWorkspaceSize(&size, &executor)`; on success runs `run(workspace, size, executor, nullptr)` and waits.
 * The message is what aclGetRecentErrMsg returned after the first phase.
 */
template <class Plan, class Run>
PlannedCall planAndRun(Plan getWorkspaceSize, Run run) {
  PlannedCall call;
  aclOpExecutor* executor = nullptr;
  call.status = getWorkspaceSize(&call.workspaceSize, &executor);
  call.message = recentError();
  if (call.status == ACLNN_SUCCESS) {
    std::vector<unsigned char> workspace(call.workspaceSize);
    EXPECT_EQ(run(workspace.data(), call.workspaceSize, executor, nullptr), ACLNN_SUCCESS) << recentError();
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  }
  return call;
}

/** ceil(n / 128) * 16, written here independently of the library. */
inline int64_t maskBytesFor(int64_t n) { return (n + 127) / 128 * 16; }

/** `bytes` random mask bytes (every bit pattern equally likely). */
inline std::vector<uint8_t> randomMask(int64_t bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> mask(static_cast<size_t>(bytes));
  for (auto& byte : mask) byte = static_cast<uint8_t>(rng() >> 24);
  return mask;
}

inline uint32_t floatBitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

inline float floatOfBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/** Sets an environment variable for one scope and restores the previous state. */
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (previous_) {
      setenv(name_.c_str(), previous_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> previous_;
};

/** A 64-byte aligned byte buffer (the streaming-store path needs an aligned output). */
class AlignedBytes {
 public:
  AlignedBytes(size_t bytes, unsigned char fill)
      : data_(static_cast<unsigned char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)), &std::free) {
    std::memset(data_.get(), fill, bytes);
  }
  unsigned char* get() const { return data_.get(); }

 private:
  std::unique_ptr<unsigned char, void (*)(void*)> data_;
};

/** True when every byte of `bytes` equals `value`. */
inline bool allBytesAre(const std::vector<unsigned char>& bytes, unsigned char value) {
  for (unsigned char byte : bytes) {
    if (byte != value) return false;
  }
  return true;
}

}  // namespace gradkit::test
