// The operand checks shared by the ops that consume a packed dropout mask (DoMask, DropoutBackward, V3Grad).
#pragma once

#include <string_view>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

/**
 * The dtype rules of the mask-consuming ops: input FLOAT, FLOAT16 or BFLOAT16; mask UINT8; output castable from the
 * input, which gradkit takes as FLOAT, FLOAT16 or BFLOAT16 (the result is rounded once from fp32 to the output's
 * dtype; DOUBLE and integer outputs are not supported).
 */
aclnnStatus checkMaskedDtypes(std::string_view api, std::string_view inputName, const aclTensor& input,
                              const aclTensor& mask, std::string_view outName, const aclTensor& out);

/**
 * numel(mask) == ceil(n/128)*16 when `exact` (DropoutBackward, V3Grad), else >= (DoMask); n = numel(input). Only
 * the element count is checked, not the mask's shape.
 */
aclnnStatus checkMaskSize(std::string_view api, const aclTensor& mask, std::string_view inputName,
                          const aclTensor& input, bool exact);

}  // namespace gradkit::ops
