// A case's "soc" key: the SoC profile (runtime/profile.h) the case runs under instead of the process's.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

namespace gradkit::cli {

/**
 * Applies the case's "soc" for as long as the returned handle lives (nullptr when the case has none); the previous
 * profile comes back when it is destroyed. Throws HarnessError for an unknown SoC.
 */
std::shared_ptr<void> applyCaseSoc(const nlohmann::json& testCase);

}  // namespace gradkit::cli
