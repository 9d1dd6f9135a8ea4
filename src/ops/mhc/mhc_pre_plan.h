// The plan of one aclnnMhcPre[V2] call: made once in GetWorkspaceSize, run on the stream.
#pragma once

#include <cstdint>
#include <functional>

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/mhc/kernels/mhc_pre_kernel.h"
#include "ops/mhc/mhc_args.h"

namespace gradkit::ops {

/**
 * Work a fused operator adds to each block of tokens [first, first + count) once the block's outputs are in the
 * kernels' dense buffers (`problem`'s pointers), on the thread that computed them, with its scratch slot index.
 */
using MhcPreBlockHook =
    std::function<void(const kernels::MhcPreProblem& problem, int64_t slot, int64_t first, int64_t count)>;

struct MhcPrePlan {
  WorkspaceBooking workspace;
  MhcDims dims;
  // Every tensor as the kernels see it: dense views in place, any other view staged through the workspace.
  // Optional tensors the caller did not give stay unused (hasGamma, hasResidual, hasCaches).
  StagedTensor x, phi, alpha, bias, gamma, hIn, hPost, hRes, invRms, hMix, hPre;
  bool hasGamma = false, hasResidual = false, hasCaches = false;
  // Sizes and attributes; the run fills in the buffers.
  kernels::MhcPreProblem problem;
  WorkspaceRegion packedPhi;  // phi in the kernels' panel layout (HF32-rounded in opImplMode 1)
  WorkspaceRegion scratch;    // `slots` private scratch slots of slotFloats floats
  int64_t slots = 0, slotFloats = 0;
  const kernels::MhcPreKernels* kernels = nullptr;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()); `afterBlock` (if given) runs
   *  after every block, before the staged outputs are written back. */
  aclnnStatus run(void* memory, const MhcPreBlockHook& afterBlock = {}) const;
};

/**
 * Plans a checked call (mHC rejects empty tensors, so every checked call computes something). Tokens run in fixed
 * blocks of kernels::kMhcPreBlockTokens spread over threadCount() scratch slots (at plan time): each block's
 * results depend only on its tokens, so the bits do not depend on the thread count.
 */
MhcPrePlan planMhcPre(const MhcPreArgs& args);

}  // namespace gradkit::ops
