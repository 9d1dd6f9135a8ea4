// The aclnn entry points of MhcSinkhorn and MhcSinkhornBackward.
#include "aclnnop/aclnn_mhc_sinkhorn.h"
#include "aclnnop/aclnn_mhc_sinkhorn_backward.h"
#include "opapi/op_definition.h"
#include "ops/mhc/mhc_sinkhorn_check.h"
#include "ops/mhc/mhc_sinkhorn_plan.h"

namespace gradkit::ops {
namespace {

// The forward rejects an empty x, so a checked forward always computes something.
bool forwardHasNoWork(const MhcSinkhornArgs&) { return false; }

// Upstream accepts an empty backward (its saved tensors empty too) as a call without work.
bool backwardHasNoWork(const MhcSinkhornBackwardArgs& args) { return args.gradOutput->isEmpty(); }

const OpDefinition<MhcSinkhornArgs, MhcSinkhornPlan> kMhcSinkhorn{kMhcSinkhornApi, checkMhcSinkhorn, forwardHasNoWork,
                                                                  planMhcSinkhorn};
const OpDefinition<MhcSinkhornBackwardArgs, MhcSinkhornBackwardPlan> kMhcSinkhornBackward{
    kMhcSinkhornBackwardApi, checkMhcSinkhornBackward, backwardHasNoWork, planMhcSinkhornBackward};

}  // namespace
}  // namespace gradkit::ops

extern "C" aclnnStatus aclnnMhcSinkhornGetWorkspaceSize(const aclTensor* x, float eps, int64_t numIters,
                                                        aclTensor* output, aclTensor* normOut, aclTensor* sumOut,
                                                        uint64_t* workspaceSize, aclOpExecutor** executor) {
  const gradkit::ops::MhcSinkhornArgs args{x, eps, numIters, output, normOut, sumOut};
  return gradkit::getWorkspaceSize(gradkit::ops::kMhcSinkhorn, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnMhcSinkhorn(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                        aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kMhcSinkhornApi, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnMhcSinkhornBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* normOut,
                                                                const aclTensor* sumOut, aclTensor* out,
                                                                uint64_t* workspaceSize, aclOpExecutor** executor) {
  const gradkit::ops::MhcSinkhornBackwardArgs args{gradOutput, normOut, sumOut, out};
  return gradkit::getWorkspaceSize(gradkit::ops::kMhcSinkhornBackward, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnMhcSinkhornBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kMhcSinkhornBackwardApi, workspace, workspaceSize, executor, stream);
}
