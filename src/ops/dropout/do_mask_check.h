// Argument validation of aclnnDropoutDoMaskGetWorkspaceSize in upstream's order (spec dropout_threshold.md 1.4.1),
// and the operand checks it shares with aclnnDropoutBackward and aclnnDropoutV3Grad.
#pragma once

#include <cstdint>
#include <string_view>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kDropoutDoMaskApi = "aclnnDropoutDoMask";

/**
 * Returns ACLNN_SUCCESS or the first failing rule's code (with its message recorded). Upstream's order: null
 * pointers; an empty self or an empty mask passes at once (nothing is computed or written, even when self is not
 * empty); out castable from self; dtypes; prob in [0, 1] (NaN is rejected too); rank, shapes, mask size
 * (at least ceil(n/128)*16 elements).
 */
aclnnStatus checkDropoutDoMask(const aclTensor* self, const aclTensor* mask, double prob, const aclTensor* out,
                               const uint64_t* workspaceSize, aclOpExecutor* const* executor);

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
