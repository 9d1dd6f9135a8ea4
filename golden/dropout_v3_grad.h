// fp64 golden of DropoutV3Grad, written from the formula (spec dropout_threshold.md 1.5, DECISIONS.md "Dropout"):
// gradX = RN_out(RN32(RN32(g * m) * RN32(scale))), m = 1 where the packed mask keeps element i, else 0.
#pragma once

#include <cstdint>

#include "acl/acl_base.h"

namespace gradkit::golden {

/**
 * Dense row-major gradY of `n` elements (FLOAT, FLOAT16 or BF16) and the packed mask (element i in byte i / 8, bit
 * i % 8 from the least significant, 1 = keep) -> dense gradX of `outDtype` (FLOAT, FLOAT16 or BF16). Products are
 * formed exactly in double and rounded once to fp32, which is what each fp32 multiply of the formula does; the fp32
 * result is rounded once to outDtype (nearest even). A dropped Inf/NaN gives NaN (Inf * 0), a dropped negative -0.
 */
void dropoutV3Grad(aclDataType gradDtype, aclDataType outDtype, const void* gradY, const uint8_t* mask, double scale,
                   void* gradX, int64_t n);

}  // namespace gradkit::golden
