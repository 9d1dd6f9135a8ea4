// The plan of one aclnnDropout call, upstream's composition (ops-math aclnn_dropout.cpp) of gradkit's own pieces:
//  - mask: train and p not exactly 0 or 1 -> the GenMaskV2 Philox stream for (numel, p, seed, offset) written into
//    maskOut, without GenMask's DBL_EPSILON fills (upstream calls the stateless generator directly); otherwise
//    maskOut is not written at all;
//  - out: the DoMask plan for (input, maskOut, train ? p : 0, out), run after the mask (same executor, in order).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"
#include "ops/dropout/do_mask_plan.h"
#include "ops/dropout/gen_mask_plan.h"

namespace gradkit::ops {

struct DropoutPlan {
  bool generateMask = false;
  GenMaskPlan mask;  // workspace [0, mask.workspaceBytes) when generateMask
  DoMaskPlan output;
  uint64_t outputAt = 0;  // the DoMask plan's workspace, after the mask's
  uint64_t workspaceBytes = 0;

  /** Runs the op with `workspace` (at least workspaceBytes). */
  aclnnStatus run(void* workspace) const;
};

/** Plans a checked call with a non-empty input. */
DropoutPlan planDropout(const aclTensor& input, double p, bool train, int64_t seed, int64_t offset,
                        const aclTensor& out, const aclTensor& maskOut);

}  // namespace gradkit::ops
