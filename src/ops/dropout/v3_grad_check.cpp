#include "ops/dropout/v3_grad_check.h"

#include <string>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "ops/dropout/masked_dropout_check.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kMaxRank = 8;

// Upstream rejects every SoC but Ascend950 before looking at any argument (GRADKIT_DISABLE_OPS, which emulates a
// CANN without the operator, is asked before this, for every operator: opapi/op_definition.h).
aclnnStatus checkAvailable() {
  const rt::Soc soc = rt::currentSoc();
  if (soc == rt::Soc::Ascend950) return ACLNN_SUCCESS;
  return failText(ACLNN_ERR_PARAM_INVALID, kDropoutV3GradApi,
                  std::string("the operator is unavailable in the ") + rt::socName(soc) +
                      " profile: it exists only on Ascend950 (GRADKIT_SOC)");
}

}  // namespace

aclnnStatus checkDropoutV3Grad(const DropoutV3GradArgs& args, const uint64_t* workspaceSize,
                               aclOpExecutor* const* executor) {
  const char* api = kDropoutV3GradApi;
  const auto& [gradY, mask, scale, gradX] = args;
  GRADKIT_RETURN_IF_ERROR(checkAvailable());
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "gradY", gradY));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "mask", mask));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "gradX", gradX));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));  // upstream does not; we do
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));

  GRADKIT_RETURN_IF_ERROR(checkMaskedDtypes(api, "gradY", *gradY, *mask, "gradX", *gradX));

  GRADKIT_RETURN_IF_ERROR(checkMaxRank(api, "gradY", *gradY, kMaxRank));
  GRADKIT_RETURN_IF_ERROR(checkSameShape(api, "gradX", *gradX, "gradY", *gradY));
  GRADKIT_RETURN_IF_ERROR(checkMaskSize(api, *mask, "gradY", *gradY, /*exact=*/true));
  return checkMaskedOverlaps(api, "gradY", *gradY, *mask, "gradX", *gradX);
}

}  // namespace gradkit::ops
