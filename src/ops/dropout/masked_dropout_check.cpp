#include "ops/dropout/masked_dropout_check.h"

#include <cstdio>
#include <string>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "ops/dropout/kernels/mask_format.h"

namespace gradkit::ops {

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

aclnnStatus checkMaskedOverlaps(std::string_view api, std::string_view inputName, const aclTensor& input,
                                const aclTensor& mask, std::string_view outName, const aclTensor& out) {
  GRADKIT_RETURN_IF_ERROR(checkNoInternalOverlap(api, outName, out));
  GRADKIT_RETURN_IF_ERROR(checkNoPartialOverlap(api, outName, out, inputName, input));
  return checkNoPartialOverlap(api, outName, out, "mask", mask);
}

aclnnStatus checkDropoutOutputOverlaps(std::string_view api, const aclTensor& input, const aclTensor& out,
                                       const aclTensor& maskOut) {
  GRADKIT_RETURN_IF_ERROR(checkNoInternalOverlap(api, "out", out));
  GRADKIT_RETURN_IF_ERROR(checkNoInternalOverlap(api, "maskOut", maskOut));
  GRADKIT_RETURN_IF_ERROR(checkNoPartialOverlap(api, "out", out, "input", input));
  GRADKIT_RETURN_IF_ERROR(checkNoPartialOverlap(api, "maskOut", maskOut, "input", input));
  return checkNoPartialOverlap(api, "maskOut", maskOut, "out", out);
}

std::string exactNumberText(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

aclnnStatus checkProducedMaskSize(std::string_view api, std::string_view name, const aclTensor& mask, int64_t n) {
  const int64_t expected = dropoutMaskBytes(n);
  if (mask.numel() == expected) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, name,
              std::to_string(expected) + " elements (ceil(" + std::to_string(n) + " / 128) * 16 mask bytes)",
              std::to_string(mask.numel()) + " elements, shape " + mask.shapeString());
}

}  // namespace gradkit::ops
