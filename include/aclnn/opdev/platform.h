// gradkit: the part of CANN's opdev platform query that programs use to ask which NPU they run on
// (op::GetCurrentPlatformInfo().GetCurNpuArch() == NpuArch::DAV_3510, as upstream's example programs do). Header-only:
// every answer follows the emulated SoC profile (GRADKIT_SOC or gradkitSetSoc, read through aclrtGetSocName() on each
// call): Ascend950 is DAV_3510, Ascend910B and Ascend910_93 are DAV_2201.
// Core counts are the profile's (gradkitAiCoreCount in gradkit/gradkit.h), the ones every metadata operator plans with.
#ifndef GRADKIT_ACLNN_OPDEV_PLATFORM_H_
#define GRADKIT_ACLNN_OPDEV_PLATFORM_H_

#include <stdint.h>

#include <cstring>
#include <string>

#include "acl/acl_rt.h"
#include "gradkit/gradkit.h"

/** NPU architecture codes (DAV = Da Vinci). Declared at global scope as CANN does (programs write NpuArch::DAV_3510).
 */
enum class NpuArch : uint32_t {
  DAV_1001 = 1001,
  DAV_2002 = 2002,
  DAV_2201 = 2201,
  DAV_3002 = 3002,
  DAV_3102 = 3102,
  DAV_3510 = 3510,
  DAV_RESV = 0xFFFF
};

namespace op {

using ::NpuArch;

/** The SoC families CANN distinguishes (gradkit emulates ASCEND950, ASCEND910B and ASCEND910_93). */
enum class SocVersion {
  ASCEND910 = 0,
  ASCEND910B,
  ASCEND910_93,
  ASCEND950,
  ASCEND310,
  ASCEND310P,
  ASCEND310B,
  ASCEND610LITE,
  RESERVED_VERSION = 99999
};

/** What the current device is. Every query reads the emulated profile anew. */
class PlatformInfo {
 public:
  /** The SoC family of the profile. */
  SocVersion GetSocVersion() const {
    const char* name = aclrtGetSocName();
    if (name == nullptr) return SocVersion::RESERVED_VERSION;
    if (std::strcmp(name, "Ascend950") == 0) return SocVersion::ASCEND950;
    if (std::strcmp(name, "Ascend910B") == 0) return SocVersion::ASCEND910B;
    if (std::strcmp(name, "Ascend910_93") == 0) return SocVersion::ASCEND910_93;
    return SocVersion::RESERVED_VERSION;
  }
  /** DAV_3510 for Ascend950, DAV_2201 for Ascend910B and Ascend910_93. */
  NpuArch GetCurNpuArch() const {
    switch (GetSocVersion()) {
      case SocVersion::ASCEND950:
        return NpuArch::DAV_3510;
      case SocVersion::ASCEND910B:
      case SocVersion::ASCEND910_93:
        return NpuArch::DAV_2201;
      default:
        return NpuArch::DAV_RESV;
    }
  }
  /** The profile's name, as aclrtGetSocName() gives it. */
  const std::string GetSocLongVersion() const {
    const char* name = aclrtGetSocName();
    return name == nullptr ? std::string() : std::string(name);
  }
  /** Device 0 (gradkit emulates one device). */
  int32_t GetDeviceId() const { return 0; }
  /** Cube (AIC) cores of the profile (gradkitAiCoreCount). */
  uint32_t GetCubeCoreNum() const { return gradkitAiCoreCount(0); }
  /** Vector (AIV) cores of the profile. */
  uint32_t GetVectorCoreNum() const { return gradkitAiCoreCount(1); }
  /** Always valid (the profile always names a SoC). */
  bool Valid() const { return true; }
};

/** The current device's platform information. */
inline const PlatformInfo& GetCurrentPlatformInfo() {
  static const PlatformInfo info;
  return info;
}

}  // namespace op

#endif  // GRADKIT_ACLNN_OPDEV_PLATFORM_H_
