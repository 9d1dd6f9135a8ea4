// The plans of aclnnMhcPreSinkhorn and aclnnMhcPreSinkhornBackward: made once in GetWorkspaceSize, run on the
// stream. Both reuse the unfused operators' work: the forward is MhcPre's plan (HF32 matmul operands, no gamma) whose
// every block of tokens then runs the Sinkhorn projection of its hRes logits in place; the backward first turns each
// token's gradHRes into the logits' gradient (the Sinkhorn steps backwards) and recomputes hPost, then runs
// MhcPreBackward's two passes on those.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/mhc/kernels/mhc_pre_sinkhorn_steps.h"
#include "ops/mhc/kernels/mhc_sinkhorn_kernel.h"
#include "ops/mhc/mhc_pre_backward_plan.h"
#include "ops/mhc/mhc_pre_plan.h"
#include "ops/mhc/mhc_pre_sinkhorn_args.h"

namespace gradkit::ops {

struct MhcPreSinkhornPlan {
  WorkspaceBooking workspace;
  MhcPrePlan pre;  // hin, hPost, hRes (logits, projected in place) and, when saving, hPre, hcBeforeNorm, invRms
  WorkspaceRegion preRegion;
  bool saving = false;
  StagedTensor sumOut, normOut;     // when saving
  kernels::PreSinkhornSteps steps;  // sizes and eps; the run fills in the buffers
  WorkspaceRegion stepScratch;      // one block's padded steps per MhcPre slot
  int64_t scratchFloats = 0;        // per slot
  const kernels::SinkhornKernels* sinkhorn = nullptr;

  aclnnStatus run(void* memory) const;
};

struct MhcPreSinkhornBackwardPlan {
  WorkspaceBooking workspace;
  StagedTensor gradHin, gradHPost, gradHRes, x, phi, alpha, bias, hPre, hcBeforeNorm, invRms, sumOut, normOut;
  StagedTensor gradX, gradPhi, gradAlpha, gradBias;
  WorkspaceRegion hPost;       // [T, n] 2 sigmoid(z_post), recomputed
  WorkspaceRegion gradLogits;  // [T, n*n] the Sinkhorn's input gradient: MhcPreBackward's gradHRes
  kernels::PreSinkhornSteps steps;
  WorkspaceRegion stepScratch;  // slots x scratchFloats
  int64_t slots = 0, scratchFloats = 0;
  const kernels::SinkhornKernels* sinkhorn = nullptr;
  MhcPreBackwardPasses passes;

  aclnnStatus run(void* memory) const;
};

/** Plans a checked forward call with work (mhcPreSinkhornIsEmpty false). */
MhcPreSinkhornPlan planMhcPreSinkhorn(const MhcPreSinkhornArgs& args);
/** Plans a checked backward call with work (mhcPreSinkhornBackwardIsEmpty false). */
MhcPreSinkhornBackwardPlan planMhcPreSinkhornBackward(const MhcPreSinkhornBackwardArgs& args);

}  // namespace gradkit::ops
