#include "ops/dropout/do_mask_check.h"

#include <cstdio>
#include <string>

#include "base/dtype.h"
#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "ops/dropout/mask_format.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kMaxRank = 8;

std::string numberText(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

}  // namespace

aclnnStatus checkMaskedDtypes(std::string_view api, std::string_view inputName, const aclTensor& input,
                              const aclTensor& mask, std::string_view outName, const aclTensor& out) {
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, inputName, input, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "mask", mask, {ACL_UINT8}));
  return checkDtypeIn(api, outName, out, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16});
}

aclnnStatus checkMaskSize(std::string_view api, const aclTensor& mask, std::string_view inputName,
                          const aclTensor& input, bool exact) {
  const int64_t n = input.numel();
  const int64_t needed = dropoutMaskBytes(n);
  const int64_t given = mask.numel();
  if (exact ? given == needed : given >= needed) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, "mask",
              std::string(exact ? "exactly " : "at least ") + std::to_string(needed) +
                  " elements (ceil(n/128)*16 for n = " + std::to_string(n) + " elements of " + std::string(inputName) +
                  ")",
              std::to_string(given) + " elements " + mask.shapeString());
}

aclnnStatus checkDropoutDoMask(const aclTensor* self, const aclTensor* mask, double prob, const aclTensor* out,
                               const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  const char* api = kDropoutDoMaskApi;
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "self", self));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "mask", mask));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "out", out));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  if (self->isEmpty() || mask->isEmpty()) return ACLNN_SUCCESS;  // upstream's early exits, before any other rule

  GRADKIT_RETURN_IF_ERROR(checkMaskedDtypes(api, "self", *self, *mask, "out", *out));
  if (!(prob >= 0.0 && prob <= 1.0)) {  // NaN fails too
    return fail(ACLNN_ERR_PARAM_INVALID, api, "prob", "a drop probability in [0, 1]", numberText(prob));
  }
  GRADKIT_RETURN_IF_ERROR(checkMaxRank(api, "self", *self, kMaxRank));
  GRADKIT_RETURN_IF_ERROR(checkSameShape(api, "out", *out, "self", *self));
  return checkMaskSize(api, *mask, "self", *self, /*exact=*/false);
}

}  // namespace gradkit::ops
