#include "ops/mhc/mhc_check_common.h"

#include <cstddef>
#include <string>

#include "base/dtype.h"
#include "base/error.h"
#include "opapi/check.h"
#include "ops/mhc/mhc_args.h"
#include "runtime/memory.h"
#include "runtime/registry.h"
#include "runtime/runtime.h"

namespace gradkit::ops {

bool MhcProfile::allowsStreams(int64_t n) const {
  if (hasV2) return n == 4 || n == 6 || n == 8;
  return n == 4;
}

const char* MhcProfile::streamsText() const { return hasV2 ? "{4, 6, 8}" : "{4}"; }

MhcProfile currentMhcProfile() {
  const rt::Soc soc = rt::currentSoc();
  if (soc == rt::Soc::Ascend950) {
    return MhcProfile{rt::socName(soc), /*hasV2=*/true, /*factorialResidual=*/false, 64, 64, 16384};
  }
  return MhcProfile{rt::socName(soc), /*hasV2=*/false, /*factorialResidual=*/true, 128, 128, 99968};
}

aclnnStatus checkMhcV2Entry(std::string_view api, bool isV2, int64_t opImplMode) {
  if (!isV2) return ACLNN_SUCCESS;
  const MhcProfile profile = currentMhcProfile();
  if (!profile.hasV2) {
    return failText(ACLNN_ERR_PARAM_INVALID, api,
                    std::string("the entry point is unavailable in the ") + profile.name +
                        " profile: the V2 interface (opImplMode) exists only in the Ascend950 profile (GRADKIT_SOC)");
  }
  if (opImplMode == kMhcFp32Matmul || opImplMode == kMhcHf32Matmul) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, "opImplMode", "0 (fp32 matmul) or 1 (HF32 matmul)",
              std::to_string(opImplMode));
}

aclnnStatus checkMhcStreams(std::string_view api, std::string_view name, const aclTensor& x, const MhcProfile& profile,
                            aclnnStatus code) {
  const int64_t n = x.viewDims[x.dim() - 2];
  if (profile.allowsStreams(n)) return ACLNN_SUCCESS;
  return fail(code, api, name,
              std::string("N (dim -2, the number of streams) in ") + profile.streamsText() + " in the " + profile.name +
                  " profile (GRADKIT_SOC)",
              "N = " + std::to_string(n) + " (shape " + x.shapeString() + ")");
}

aclnnStatus checkMhcHidden(std::string_view api, std::string_view name, const aclTensor& x, const MhcProfile& profile,
                           aclnnStatus code) {
  const int64_t d = x.viewDims[x.dim() - 1];
  if (d % profile.hiddenAlignment == 0 && d >= profile.hiddenMin && d <= profile.hiddenMax) return ACLNN_SUCCESS;
  return fail(code, api, name,
              "D (last dim, the hidden size) a multiple of " + std::to_string(profile.hiddenAlignment) + " in [" +
                  std::to_string(profile.hiddenMin) + ", " + std::to_string(profile.hiddenMax) + "] in the " +
                  profile.name + " profile (GRADKIT_SOC)",
              "D = " + std::to_string(d) + " (shape " + x.shapeString() + ")");
}

aclnnStatus checkMhcStreamsAndHidden(std::string_view api, std::string_view name, const aclTensor& x,
                                     const MhcProfile& profile) {
  GRADKIT_RETURN_IF_ERROR(checkMhcStreams(api, name, x, profile));
  return checkMhcHidden(api, name, x, profile);
}

aclnnStatus checkNotEmpty(std::string_view api, std::string_view name, const aclTensor& tensor) {
  if (!tensor.isEmpty()) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, "a non-empty tensor (mHC supports no empty tensor)",
              "empty shape " + tensor.shapeString());
}

int64_t mhcTokensOf(const aclTensor& t) {
  int64_t tokens = 1;
  for (int64_t i = 0; i + 2 < t.dim(); ++i) tokens *= t.viewDims[i];
  return tokens;
}

const char* mhcLeadNames(const std::vector<int64_t>& lead) { return lead.size() == 2 ? "B, S" : "T"; }

}  // namespace gradkit::ops
