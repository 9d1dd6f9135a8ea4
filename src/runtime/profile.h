// The platform profile's pieces beyond runtime.h: the GRADKIT_SOC plumbing shared by profile.cpp and init.cpp, and
// the emulated chip's constants that operators and tools read (the AI-core counts).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/runtime.h"

namespace gradkit::rt {

/**
 * AI-core counts of the emulated chip, the one place gradkit keeps them: cube cores (AIC) and vector cores (AIV, two
 * per cube core). Upstream's AI-CPU planners (the sparse attention metadata operators) split work by them, so they
 * decide those operators' output. Atlas A2/A3 (Ascend910B, Ascend910_93): 24 / 48, as CANN's platform_config for
 * the 24-core parts; Ascend950: 32 / 64, an assumption (no platform file is public; docs/sparse_attention.md, "The
 * emulated chip's cores"). `gradkit info` prints them.
 */
constexpr int64_t aicCores(Soc soc) { return soc == Soc::Ascend950 ? 32 : 24; }
constexpr int64_t aivCores(Soc soc) { return 2 * aicCores(soc); }

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
