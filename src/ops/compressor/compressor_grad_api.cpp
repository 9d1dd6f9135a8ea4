// The aclnn entry points of CompressorGrad.
#include "aclnnop/aclnn_compressor_grad.h"
#include "opapi/op_definition.h"
#include "ops/compressor/compressor_grad_check.h"
#include "ops/compressor/compressor_grad_plan.h"

namespace gradkit::ops {
namespace {

// CompressorGrad rejects empty tensors (spec compressor.md 5.2), so a checked call always computes something.
bool nothingToCompute(const CompressorGradArgs&) { return false; }

const OpDefinition<CompressorGradArgs, CompressorGradPlan> kCompressorGrad{kCompressorGradApi, checkCompressorGrad,
                                                                           nothingToCompute, planCompressorGrad};

}  // namespace
}  // namespace gradkit::ops

extern "C" aclnnStatus aclnnCompressorGradGetWorkspaceSize(
    const aclTensor* x, const aclTensor* wkv, const aclTensor* wgate, const aclTensor* dCmpKv,
    const aclTensor* softmaxScore, const aclTensor* kv, const aclTensor* cuSeqlensOptional,
    const aclTensor* sequsedOptional, const aclTensor* startPosOptional, int64_t cmpRatio, int64_t coff,
    const aclTensor* dXOut, const aclTensor* dWkvOut, const aclTensor* dWgateOut, const aclTensor* dApeOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  const gradkit::ops::CompressorGradArgs args{
      x,        wkv,  wgate, dCmpKv,  softmaxScore, kv,     cuSeqlensOptional, sequsedOptional, startPosOptional,
      cmpRatio, coff, dXOut, dWkvOut, dWgateOut,    dApeOut};
  return gradkit::getWorkspaceSize(gradkit::ops::kCompressorGrad, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnCompressorGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                           aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kCompressorGradApi, workspace, workspaceSize, executor, stream);
}
