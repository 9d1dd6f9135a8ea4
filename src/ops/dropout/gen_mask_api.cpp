// The aclnn entry points of DropoutGenMask, DropoutGenMaskV2 and DropoutGenMaskV2Tensor. V2's probDataType only
// steers the A2/A3 hardware generator, which gradkit does not reproduce, so all three produce the Ascend950
// stateless stream; V2Tensor reads its seed and offset when it runs.
#include "aclnnop/aclnn_dropout_gen_mask.h"

#include "base/dtype.h"
#include "ops/dropout/gen_mask_plan.h"
#include "ops/dropout/gen_mask_tensor_plan.h"

extern "C" aclnnStatus aclnnDropoutGenMaskGetWorkspaceSize(const aclIntArray* shape, double prob, int64_t seed,
                                                           int64_t offset, aclTensor* out, uint64_t* workspaceSize,
                                                           aclOpExecutor** executor) {
  return gradkit::getWorkspaceSize(gradkit::ops::kDropoutGenMask, {shape, prob, seed, offset, out}, workspaceSize,
                                   executor);
}

extern "C" aclnnStatus aclnnDropoutGenMask(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                           aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kDropoutGenMaskApi, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnDropoutGenMaskV2GetWorkspaceSize(const aclIntArray* shape, double prob, int64_t seed,
                                                             int64_t offset, aclDataType probDataType, aclTensor* out,
                                                             uint64_t* workspaceSize, aclOpExecutor** executor) {
  return gradkit::getWorkspaceSize(gradkit::ops::kDropoutGenMaskV2,
                                   {shape, prob, seed, offset, gradkit::rawDtypeValue(probDataType), out},
                                   workspaceSize, executor);
}

extern "C" aclnnStatus aclnnDropoutGenMaskV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                             aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kDropoutGenMaskV2Api, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnDropoutGenMaskV2TensorGetWorkspaceSize(const aclIntArray* shape, double prob,
                                                                   const aclTensor* seedTensor,
                                                                   const aclTensor* offsetTensor, int64_t offset,
                                                                   aclDataType probDataType, aclTensor* out,
                                                                   uint64_t* workspaceSize, aclOpExecutor** executor) {
  return gradkit::getWorkspaceSize(
      gradkit::ops::kDropoutGenMaskV2Tensor,
      {shape, prob, seedTensor, offsetTensor, offset, gradkit::rawDtypeValue(probDataType), out}, workspaceSize,
      executor);
}

extern "C" aclnnStatus aclnnDropoutGenMaskV2Tensor(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                   aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kDropoutGenMaskV2TensorApi, workspace, workspaceSize, executor, stream);
}
