// The aclnn entry points of DropoutGenMask, DropoutGenMaskV2 and DropoutGenMaskV2Tensor: check -> plan -> executor,
// then launch. V2's probDataType only steers the A2/A3 hardware generator, which gradkit does not reproduce, so all
// three produce the Ascend950 stateless stream; V2Tensor reads its seed and offset when it runs.
#include <memory>
#include <optional>

#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "ops/dropout/gen_mask_check.h"
#include "ops/dropout/gen_mask_plan.h"
#include "ops/dropout/gen_mask_tensor_plan.h"
#include "runtime/executor.h"

namespace {

aclnnStatus planGenMask(const char* api, const aclIntArray* shape, double prob, int64_t seed, int64_t offset,
                        std::optional<aclDataType> probDataType, aclTensor* out, uint64_t* workspaceSize,
                        aclOpExecutor** executor) {
  const aclnnStatus status =
      gradkit::ops::checkDropoutGenMask(api, shape, prob, probDataType, out, workspaceSize, executor);
  if (status != ACLNN_SUCCESS) return status;

  aclOpExecutor* planned = gradkit::newExecutor(api);
  if (planned == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
  if (!out->isEmpty()) {
    auto plan = std::make_shared<const gradkit::ops::GenMaskPlan>(
        gradkit::ops::planDropoutGenMask(gradkit::ops::dropoutShapeNumel(*shape), prob, seed, offset, *out));
    planned->workspaceSize = plan->workspaceBytes;
    planned->body = [plan](void* workspace) { return plan->run(workspace); };
  }
  *workspaceSize = planned->workspaceSize;
  *executor = planned;
  return ACLNN_SUCCESS;
}

}  // namespace

extern "C" aclnnStatus aclnnDropoutGenMaskGetWorkspaceSize(const aclIntArray* shape, double prob, int64_t seed,
                                                           int64_t offset, aclTensor* out, uint64_t* workspaceSize,
                                                           aclOpExecutor** executor) {
  return planGenMask(gradkit::ops::kDropoutGenMaskApi, shape, prob, seed, offset, std::nullopt, out, workspaceSize,
                     executor);
}

extern "C" aclnnStatus aclnnDropoutGenMask(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                           aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kDropoutGenMaskApi, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnDropoutGenMaskV2GetWorkspaceSize(const aclIntArray* shape, double prob, int64_t seed,
                                                             int64_t offset, aclDataType probDataType, aclTensor* out,
                                                             uint64_t* workspaceSize, aclOpExecutor** executor) {
  return planGenMask(gradkit::ops::kDropoutGenMaskV2Api, shape, prob, seed, offset, probDataType, out, workspaceSize,
                     executor);
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
  using gradkit::ops::kDropoutGenMaskV2TensorApi;
  const aclnnStatus status = gradkit::ops::checkDropoutGenMaskV2Tensor(shape, prob, seedTensor, offsetTensor,
                                                                       probDataType, out, workspaceSize, executor);
  if (status != ACLNN_SUCCESS) return status;

  aclOpExecutor* planned = gradkit::newExecutor(kDropoutGenMaskV2TensorApi);
  if (planned == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
  if (!out->isEmpty()) {
    auto plan = std::make_shared<const gradkit::ops::GenMaskTensorPlan>(gradkit::ops::planDropoutGenMaskV2Tensor(
        gradkit::ops::dropoutShapeNumel(*shape), prob, *seedTensor, *offsetTensor, offset, *out));
    planned->workspaceSize = plan->mask.workspaceBytes;
    planned->body = [plan](void* workspace) { return plan->run(workspace); };
  }
  *workspaceSize = planned->workspaceSize;
  *executor = planned;
  return ACLNN_SUCCESS;
}

extern "C" aclnnStatus aclnnDropoutGenMaskV2Tensor(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                   aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kDropoutGenMaskV2TensorApi, workspace, workspaceSize, executor, stream);
}
