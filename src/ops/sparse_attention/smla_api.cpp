// The aclnn entry points of SparseFlashMla.
#include "aclnnop/aclnn_sparse_flash_mla.h"
#include "opapi/op_definition.h"
#include "ops/sparse_attention/smla_check.h"
#include "ops/sparse_attention/smla_plan.h"

namespace gradkit::ops {
namespace {

// q is never empty (checked), so a checked call always computes something.
bool hasNoWork(const SmlaArgs&) { return false; }

const OpDefinition<SmlaArgs, SmlaPlan> kSparseFlashMla{kSmlaApi, checkSparseFlashMla, hasNoWork, planSparseFlashMla};

}  // namespace
}  // namespace gradkit::ops

extern "C" aclnnStatus aclnnSparseFlashMlaGetWorkspaceSize(
    const aclTensor* q, const aclTensor* oriKvOptional, const aclTensor* cmpKvOptional,
    const aclTensor* oriSparseIndicesOptional, const aclTensor* cmpSparseIndicesOptional,
    const aclTensor* oriBlockTableOptional, const aclTensor* cmpBlockTableOptional, const aclTensor* cuSeqlensQOptional,
    const aclTensor* cuSeqlensOriKvOptional, const aclTensor* cuSeqlensCmpKvOptional, const aclTensor* sequsedQOptional,
    const aclTensor* sequsedOriKvOptional, const aclTensor* sequsedCmpKvOptional,
    const aclTensor* cmpResidualKvOptional, const aclTensor* oriTopkLengthOptional,
    const aclTensor* cmpTopkLengthOptional, const aclTensor* sinksOptional, const aclTensor* metadataOptional,
    double softmaxScale, int64_t cmpRatio, int64_t oriMaskMode, int64_t cmpMaskMode, int64_t oriWinLeft,
    int64_t oriWinRight, char* layoutQOptional, char* layoutKvOptional, int64_t topkValueMode, bool returnSoftmaxLse,
    const aclTensor* attnOutOut, const aclTensor* softmaxLseOutOptional, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  const gradkit::ops::SmlaArgs args{q,
                                    oriKvOptional,
                                    cmpKvOptional,
                                    oriSparseIndicesOptional,
                                    cmpSparseIndicesOptional,
                                    oriBlockTableOptional,
                                    cmpBlockTableOptional,
                                    cuSeqlensQOptional,
                                    cuSeqlensOriKvOptional,
                                    cuSeqlensCmpKvOptional,
                                    sequsedQOptional,
                                    sequsedOriKvOptional,
                                    sequsedCmpKvOptional,
                                    cmpResidualKvOptional,
                                    oriTopkLengthOptional,
                                    cmpTopkLengthOptional,
                                    sinksOptional,
                                    metadataOptional,
                                    softmaxScale,
                                    cmpRatio,
                                    oriMaskMode,
                                    cmpMaskMode,
                                    oriWinLeft,
                                    oriWinRight,
                                    layoutQOptional,
                                    layoutKvOptional,
                                    topkValueMode,
                                    returnSoftmaxLse,
                                    attnOutOut,
                                    softmaxLseOutOptional};
  return gradkit::getWorkspaceSize(gradkit::ops::kSparseFlashMla, gradkit::ops::smlaWithEmptyOptionalsAbsent(args),
                                   workspaceSize, executor);
}

extern "C" aclnnStatus aclnnSparseFlashMla(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                           aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kSmlaApi, workspace, workspaceSize, executor, stream);
}
