// fp64 golden of ThresholdBackward, written from the formula of the mainline op (spec dropout_threshold.md 2.5,
// 2.7; docs/threshold_backward.md): out = self > threshold ? gradOutput : +0, with gradOutput and self
// broadcast to out's shape, and the threshold read as PyTorch reads it.
#pragma once

#include <cstdint>
#include <vector>

#include "acl/acl_base.h"

namespace gradkit::golden {

/**
 * Dense row-major gradOutput and self of their own shapes, broadcast (numpy rules) to `outShape`; out is dense
 * row-major of `outShape`. All three of `dtype` (FLOAT, FLOAT16, BF16, INT8, UINT8, INT32, INT64). The threshold
 * is `threshold` given as a scalar of `thresholdDtype`:
 *  - floating tensors: keep where !(self <= t), t = threshold rounded to fp32 (so a NaN threshold keeps all);
 *  - integer tensors: t = threshold truncated toward zero (a NaN floating threshold keeps all); an integer
 *    threshold in [-255, -1] on UINT8 is read modulo 256; keep where self > t, compared exactly.
 * Values are widened to double for the predicate; kept gradients are copied bit for bit, dropped ones are +0.
 */
void thresholdBackward(aclDataType dtype, const void* gradOutput, const std::vector<int64_t>& gradShape,
                       const void* self, const std::vector<int64_t>& selfShape, aclDataType thresholdDtype,
                       double threshold, void* out, const std::vector<int64_t>& outShape);

}  // namespace gradkit::golden
