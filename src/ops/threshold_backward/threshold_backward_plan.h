// The plan of one ThresholdBackward call: made once in GetWorkspaceSize, run on the stream.
#pragma once

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"
#include "ops/threshold_backward/kernels/threshold_backward_kernel.h"

namespace gradkit::ops {

/**
 * How the kernels read `threshold` for tensors of `dtype` (docs/threshold_backward.md): floating dtypes
 * round it to float (RNE; integer scalars convert directly); integer dtypes truncate it toward zero,
 * compare exactly (a value above the type keeps nothing, one below keeps everything, NaN keeps everything),
 * and UINT8 wraps an integer-typed threshold in [-255, -1] modulo 256 as PyTorch does.
 */
kernels::ThresholdValue resolveThreshold(aclDataType dtype, const aclScalar& threshold);

struct ThresholdBackwardPlan {
  aclTensor gradOutput, self, out;  // copies of the caller's views
  kernels::ThresholdValue threshold;
  // An input whose innermost dim is neither dense nor broadcast, and an out that is not dense along its
  // innermost dim, is staged densely (in its own shape) in the workspace at these byte offsets.
  bool stageGradOutput = false, stageSelf = false, stageOut = false;
  uint64_t gradOutputAt = 0, selfAt = 0, outAt = 0;
  uint64_t workspaceBytes = 0;
  // The iteration space: out's dims without size-1 dims, adjacent dims merged where all three operands
  // allow; the last dim is a row, along which grad and self have stride 0 or 1 and out stride 1.
  std::vector<int64_t> dims, gradStrides, selfStrides, outStrides;
  bool streamStores = false;
  bool scalarKernel = false;

  /** Runs the op with `workspace` (at least workspaceBytes). */
  aclnnStatus run(void* workspace) const;
};

/** Plans a checked call whose out is not empty. */
ThresholdBackwardPlan planThresholdBackward(const aclTensor& gradOutput, const aclTensor& self,
                                            const aclScalar& threshold, const aclTensor& out);

}  // namespace gradkit::ops
