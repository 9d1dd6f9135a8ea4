// Applies a case's SoC profile (harness/case_soc.h).
#include "harness/case_soc.h"

#include <optional>
#include <string>

#include "harness/error.h"
#include "runtime/profile.h"
#include "runtime/runtime.h"

namespace gradkit::cli {

std::shared_ptr<void> applyCaseSoc(const nlohmann::json& testCase) {
  if (!testCase.contains("soc")) return nullptr;
  const std::string name = testCase["soc"].get<std::string>();
  const std::optional<rt::Soc> soc = rt::parseSoc(name);
  if (!soc) throw HarnessError("'soc': unknown SoC \"" + name + "\" (" + rt::kSocChoices + ")");
  const std::optional<rt::Soc> previous =
      rt::hasSocOverride() ? std::optional<rt::Soc>(rt::currentSoc()) : std::nullopt;
  rt::setSocOverride(*soc);
  return std::shared_ptr<void>(nullptr, [previous](void*) {
    if (previous) {
      rt::setSocOverride(*previous);
    } else {
      rt::clearSocOverride();
    }
  });
}

}  // namespace gradkit::cli
