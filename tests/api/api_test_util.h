// Helpers shared by the runtime/API tests: message assertions and a fixture that leaves the process clean.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>

#include "acl/acl.h"
#include "gradkit/gradkit.h"
#include "runtime/runtime.h"

namespace gradkit_test {

/** This thread's recent error text (and clears it). */
inline std::string recentError() { return aclGetRecentErrMsg(); }

/** Asserts that `message` contains every one of `parts`. */
inline ::testing::AssertionResult mentions(const std::string& message, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts) {
    if (message.find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "message \"" << message << "\" does not mention \"" << part << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

/** The hex spelling the runtime uses for handles and pointers in messages. */
inline std::string hex(const void* pointer) {
  char text[32];
  std::snprintf(text, sizeof text, "%#llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(pointer)));
  return text;
}

/** Sets an environment variable for the lifetime of the object, then restores the previous value. */
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
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

/**
 * Every test starts and ends with no aclInit, no SoC choice, no device, and no pending error text, so the
 * tests pass whether ctest runs them one per process or the binary runs them all in one.
 */
class ApiFixture : public ::testing::Test {
 protected:
  void SetUp() override { reset(); }
  void TearDown() override { reset(); }

  static void reset() {
    aclFinalize();  // drains and destroys every stream and context (or fails harmlessly when not initialised)
    aclrtResetDevice(0);
    gradkit::rt::clearSocOverride();
    recentError();
  }
};

}  // namespace gradkit_test
