// Reading a suite's own case keys with the checks every suite makes: a number's lower bound, a string's allowed
// values. Each failure throws HarnessError naming the key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradkit::cli {

/** The integer `key` (`fallback` when absent); throws "'key' must be >= minimum" below `minimum`. */
int64_t integerKeyAtLeast(const nlohmann::json& testCase, const char* key, int64_t fallback, int64_t minimum);

/** The string `key` (`fallback` when absent), which must be one of `allowed`; else throws "'key'" + `what`. */
std::string stringKeyOneOf(const nlohmann::json& testCase, const char* key, const std::string& fallback,
                           const std::vector<std::string>& allowed, const std::string& what);

}  // namespace gradkit::cli
