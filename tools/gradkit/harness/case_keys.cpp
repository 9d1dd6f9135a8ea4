// Checked case keys (harness/case_keys.h).
#include "harness/case_keys.h"

#include <algorithm>

#include "harness/error.h"

namespace gradkit::cli {

int64_t integerKeyAtLeast(const nlohmann::json& testCase, const char* key, int64_t fallback, int64_t minimum) {
  const int64_t value = testCase.value(key, fallback);
  if (value < minimum) throw HarnessError(std::string("'") + key + "' must be >= " + std::to_string(minimum));
  return value;
}

std::string stringKeyOneOf(const nlohmann::json& testCase, const char* key, const std::string& fallback,
                           const std::vector<std::string>& allowed, const std::string& what) {
  std::string value = testCase.value(key, fallback);
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    throw HarnessError(std::string("'") + key + "'" + what);
  }
  return value;
}

}  // namespace gradkit::cli
