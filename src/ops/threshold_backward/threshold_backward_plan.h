// The plan of one ThresholdBackward call: made once in GetWorkspaceSize, run on the stream.
#pragma once

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/op_definition.h"
#include "opapi/staged_tensor.h"
#include "opapi/tensor.h"
#include "opapi/workspace.h"
#include "ops/threshold_backward/kernels/threshold_backward_kernel.h"
#include "ops/threshold_backward/threshold_backward_check.h"

namespace gradkit::ops {

/**
 * How the kernels read `threshold` for tensors of `dtype` (docs/threshold_backward.md): floating dtypes
 * round it to float (RNE; integer scalars convert directly); integer dtypes truncate it toward zero,
 * compare exactly (a value above the type keeps nothing, one below keeps everything, NaN keeps everything),
 * and UINT8 wraps an integer-typed threshold in [-255, -1] modulo 256 as PyTorch does.
 */
kernels::ThresholdValue resolveThreshold(aclDataType dtype, const aclScalar& threshold);

struct ThresholdBackwardPlan {
  WorkspaceBooking workspace;
  // An input whose innermost dim is neither dense nor broadcast, and an out that is not dense along its
  // innermost dim (or writes an element twice), is staged densely in its own shape.
  StagedTensor gradOutput, self, out;
  kernels::ThresholdValue threshold;
  // The iteration space: out's dims without size-1 dims, adjacent dims merged where all three operands
  // allow; the last dim is a row, along which grad and self have stride 0 or 1 and out stride 1.
  std::vector<int64_t> dims, gradStrides, selfStrides, outStrides;
  bool streamStores = false;
  const kernels::ThresholdBackwardKernels* kernels = nullptr;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const;
};

/** Plans a checked call whose out is not empty. */
ThresholdBackwardPlan planThresholdBackward(const ThresholdBackwardArgs& args);

/** aclnnThresholdBackward's first phase (opapi/op_definition.h). */
extern const OpDefinition<ThresholdBackwardArgs, ThresholdBackwardPlan> kThresholdBackward;

}  // namespace gradkit::ops
