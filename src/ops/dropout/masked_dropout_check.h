// The operand checks shared by the ops that consume a packed dropout mask (DoMask, DropoutBackward, V3Grad).
#pragma once

#include <string>
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

/**
 * The overlap rule (opapi/check.h) for an op that writes `out` from `input` and a packed mask: out writes no
 * address twice and overlaps neither operand (out may be exactly `input`'s view: in place).
 */
aclnnStatus checkMaskedOverlaps(std::string_view api, std::string_view inputName, const aclTensor& input,
                                const aclTensor& mask, std::string_view outName, const aclTensor& out);

/**
 * The overlap rule for an op that writes `out` and `maskOut` from `input`: neither output writes an address twice,
 * they do not overlap each other, and neither overlaps the input (out may be exactly input's view).
 */
aclnnStatus checkDropoutOutputOverlaps(std::string_view api, const aclTensor& input, const aclTensor& out,
                                       const aclTensor& maskOut);

/** `value` with 17 significant digits ("%.17g"): enough to read back the exact double, for messages. */
std::string exactNumberText(double value);

/**
 * The rule of the mask-producing ops (GenMask*, Dropout, DropoutV3): `mask` has exactly ceil(n/128)*16 elements
 * for n data elements; 161002 naming `name` otherwise.
 */
aclnnStatus checkProducedMaskSize(std::string_view api, std::string_view name, const aclTensor& mask, int64_t n);

}  // namespace gradkit::ops
