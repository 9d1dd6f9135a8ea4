// The emulated SoC (GRADKIT_SOC or gradkitSetSoc) and the GRADKIT_DISABLE_OPS list.
#include <atomic>
#include <cstdlib>
#include <string>

#include "gradkit/gradkit.h"
#include "runtime/profile.h"
#include "runtime/runtime.h"

namespace gradkit::rt {
namespace {

// -1: no gradkitSetSoc() choice; otherwise the chosen Soc's value.
std::atomic<int> socOverride{-1};

std::string_view trim(std::string_view text) {
  const auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && isSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && isSpace(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace

const char* socName(Soc soc) {
  switch (soc) {
    case Soc::Ascend910B:
      return "Ascend910B";
    case Soc::Ascend910_93:
      return "Ascend910_93";
    case Soc::Ascend950:
      break;
  }
  return "Ascend950";
}

std::optional<Soc> parseSoc(std::string_view name) {
  for (Soc soc : {Soc::Ascend950, Soc::Ascend910B, Soc::Ascend910_93}) {
    if (name == socName(soc)) return soc;
  }
  return std::nullopt;
}

std::optional<Soc> socFromEnvironment(std::string* given) {
  const char* value = std::getenv(kSocVariable);
  if (value == nullptr || *value == '\0') return Soc::Ascend950;
  if (given != nullptr) *given = value;
  return parseSoc(trim(value));
}

void setSocOverride(Soc soc) { socOverride.store(static_cast<int>(soc)); }

bool hasSocOverride() { return socOverride.load() >= 0; }

void clearSocOverride() { socOverride.store(-1); }

Soc currentSoc() {
  const int chosen = socOverride.load();
  if (chosen >= 0) return static_cast<Soc>(chosen);
  return socFromEnvironment(nullptr).value_or(Soc::Ascend950);
}

bool isOpDisabled(std::string_view api) {
  const char* value = std::getenv("GRADKIT_DISABLE_OPS");
  if (value == nullptr || api.empty()) return false;
  std::string_view list(value);
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (trim(list.substr(0, comma)) == api) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace gradkit::rt

extern "C" const char* aclrtGetSocName(void) { return gradkit::rt::socName(gradkit::rt::currentSoc()); }

extern "C" const char* gradkitVersion(void) { return GRADKIT_VERSION; }

extern "C" uint32_t gradkitAiCoreCount(int vector) {
  const gradkit::rt::Soc soc = gradkit::rt::currentSoc();
  return static_cast<uint32_t>(vector != 0 ? gradkit::rt::aivCores(soc) : gradkit::rt::aicCores(soc));
}
