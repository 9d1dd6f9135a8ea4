// The plan of one ThresholdBackward call: made once in GetWorkspaceSize, run on the stream.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "core/tensor.h"

namespace gradkit::ops {

struct ThresholdBackwardPlan {
  aclTensor gradOutput, self, out;  // copies of the caller's views
  // Non-contiguous tensors are staged densely in the workspace at these byte offsets.
  bool stageGradOutput = false, stageSelf = false, stageOut = false;
  uint64_t gradOutputAt = 0, selfAt = 0, outAt = 0;
  uint64_t workspaceBytes = 0;
  bool streamStores = false;
  bool scalarKernel = false;

  /** Runs the op with `workspace` (at least workspaceBytes). */
  aclnnStatus run(void* workspace) const;
};

/** Plans a checked, non-empty call. */
ThresholdBackwardPlan planThresholdBackward(const aclTensor& gradOutput, const aclTensor& self, const aclTensor& out);

}  // namespace gradkit::ops
