// Placeholder until the checks of spec mhc.md 2.8 land: every call is rejected.
#include "ops/mhc/mhc_pre_check.h"

#include "base/error.h"

namespace gradkit::ops {

aclnnStatus checkMhcPre(const MhcPreArgs& args, const uint64_t*, aclOpExecutor* const*) {
  return failText(ACLNN_ERR_PARAM_INVALID, args.api, "not implemented yet");
}

}  // namespace gradkit::ops
