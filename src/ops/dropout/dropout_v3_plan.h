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
#include "opapi/op_definition.h"
#include "opapi/staged_tensor.h"
#include "opapi/tensor.h"
#include "opapi/workspace.h"
#include "ops/dropout/dropout_mask.h"
#include "ops/dropout/dropout_v3_check.h"
#include "ops/dropout/kernels/v3_grad_kernel.h"

namespace gradkit::ops {

struct DropoutV3Plan {
  enum class Mode { kCopy, kZeros, kDropout };

  WorkspaceBooking workspace;
  // Non-contiguous tensors are staged densely (input only when it is multiplied, out only when a dense pass writes
  // it).
  StagedTensor input, out, mask;
  Mode mode = Mode::kDropout;
  DropoutMask generator;  // what fills the mask: a constant byte or the Philox stream
  float scale = 1.0f;     // scaleF
  bool streamStores = false;
  const kernels::V3GradKernels* kernels = nullptr;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const;

 private:
  void runDropout(const void* x, void* y, uint8_t* bits) const;
};

/** Plans a checked call with a non-empty input. */
DropoutV3Plan planDropoutV3(const DropoutV3Args& args);

/** aclnnDropoutV3's first phase (opapi/op_definition.h). */
extern const OpDefinition<DropoutV3Args, DropoutV3Plan> kDropoutV3;

}  // namespace gradkit::ops
