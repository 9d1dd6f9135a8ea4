// The plan of one DropoutV3 call. gradkit's decisions (spec dropout_threshold.md 1.3 leaves the kernel's
// CUDA-like thread mapping aside):
//  - maskOut is exactly the mask aclnnDropoutGenMaskV2 writes for (numel(input), p, seed, offset): one linear
//    Philox4x32-10 stream, element i = word i % 4 of block i / 4 (not CUDA's per-thread subsequences);
//  - out = T(RN32(RN32(float(x) * m) * scaleF)), m = 1.0f / 0.0f multiplied (so a dropped Inf/NaN gives NaN),
//    keepF = float(1 - p), scaleF = RN32(1.0f / keepF): the arithmetic of aclnnDropoutV3Grad with scaleF;
//  - p == 0 exactly: out = input (a copy), mask all 0xFF; p == 1 exactly: out = +0, mask all 0x00.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"
#include "ops/dropout/gen_mask_plan.h"

namespace gradkit::ops {

struct DropoutV3Plan {
  enum class Mode { kCopy, kZeros, kDropout };

  aclTensor input, out, mask;  // copies of the caller's views
  Mode mode = Mode::kDropout;
  int64_t n = 0;
  GenMaskPlan maskPlan;  // the mask: a fill or the Philox stream (its own out/staging fields are unused)
  float scale = 1.0f;    // scaleF
  // Non-contiguous tensors are staged densely in the workspace at these byte offsets.
  bool stageInput = false, stageOut = false, stageMask = false;
  uint64_t inputAt = 0, outAt = 0, maskAt = 0;
  uint64_t workspaceBytes = 0;
  bool streamStores = false;
  bool scalarKernel = false;

  /** Runs the op with `workspace` (at least workspaceBytes). */
  aclnnStatus run(void* workspace) const;

 private:
  void runDropout(const void* x, void* y, uint8_t* bits) const;
};

/** Plans a checked call with a non-empty input. */
DropoutV3Plan planDropoutV3(const aclTensor& input, double p, int64_t seed, int64_t offset, const aclTensor& out,
                            const aclTensor& mask);

}  // namespace gradkit::ops
