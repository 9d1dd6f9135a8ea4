// Internal pieces of the platform profile shared by profile.cpp and init.cpp.
#pragma once

#include <optional>
#include <string>

#include "runtime/runtime.h"

namespace gradkit::rt {

/** The environment variable that picks the emulated SoC. */
inline constexpr const char* kSocVariable = "GRADKIT_SOC";

/** The accepted SoC names, for messages. */
inline constexpr const char* kSocChoices = "one of Ascend950, Ascend910B, Ascend910_93";

/**
 * The SoC GRADKIT_SOC asks for: Ascend950 when unset or empty, nullopt when set to an unknown name
 * (then `given`, if not null, receives the value as set).
 */
std::optional<Soc> socFromEnvironment(std::string* given);

/** Records a gradkitSetSoc() choice, which wins over GRADKIT_SOC. */
void setSocOverride(Soc soc);

/** True after gradkitSetSoc() (until clearSocOverride()). */
bool hasSocOverride();

}  // namespace gradkit::rt
