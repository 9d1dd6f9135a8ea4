// The aclnn entry points of SparseFlashMlaGrad.
#include "aclnnop/aclnn_sparse_flash_mla_grad.h"
#include "opapi/op_definition.h"
#include "ops/sparse_attention/smla_grad_check.h"
#include "ops/sparse_attention/smla_grad_plan.h"

namespace gradkit::ops {
namespace {

// query is never empty (checked), so a checked call always computes something.
bool hasNoWork(const SmlaGradArgs&) { return false; }

const OpDefinition<SmlaGradArgs, SmlaGradPlan> kSparseFlashMlaGrad{kSmlaGradApi, checkSparseFlashMlaGrad, hasNoWork,
                                                                   planSparseFlashMlaGrad};

}  // namespace
}  // namespace gradkit::ops

extern "C" aclnnStatus aclnnSparseFlashMlaGradGetWorkspaceSize(
    const aclTensor* query, const aclTensor* dOut, const aclTensor* out, const aclTensor* lse,
    const aclTensor* oriKvOptional, const aclTensor* cmpKvOptional, const aclTensor* oriSparseIndicesOptional,
    const aclTensor* cmpSparseIndicesOptional, const aclTensor* cuSeqlensQOptional,
    const aclTensor* cuSeqlensOriKvOptional, const aclTensor* cuSeqlensCmpKvOptional, const aclTensor* sequsedQOptional,
    const aclTensor* sequsedOriKvOptional, const aclTensor* sequsedCmpKvOptional,
    const aclTensor* cmpResidualKvOptional, const aclTensor* oriTopkLengthOptional,
    const aclTensor* cmpTopkLengthOptional, const aclTensor* sinksOptional, const aclTensor* metadataOptional,
    double scaleValue, int64_t cmpRatio, int64_t oriMaskMode, int64_t cmpMaskMode, int64_t oriWinLeft,
    int64_t oriWinRight, char* layoutQOptional, char* layoutKvOptional, const aclTensor* dQueryOut,
    const aclTensor* dOriKvOutOptional, const aclTensor* dCmpKvOutOptional, const aclTensor* dSinksOutOptional,
    const aclTensor* oriSoftmaxL1NormOptional, const aclTensor* cmpSoftmaxL1NormOptional, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  const gradkit::ops::SmlaGradArgs args{query,
                                        dOut,
                                        out,
                                        lse,
                                        oriKvOptional,
                                        cmpKvOptional,
                                        oriSparseIndicesOptional,
                                        cmpSparseIndicesOptional,
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
                                        scaleValue,
                                        cmpRatio,
                                        oriMaskMode,
                                        cmpMaskMode,
                                        oriWinLeft,
                                        oriWinRight,
                                        layoutQOptional,
                                        layoutKvOptional,
                                        dQueryOut,
                                        dOriKvOutOptional,
                                        dCmpKvOutOptional,
                                        dSinksOutOptional,
                                        oriSoftmaxL1NormOptional,
                                        cmpSoftmaxL1NormOptional};
  return gradkit::getWorkspaceSize(gradkit::ops::kSparseFlashMlaGrad,
                                   gradkit::ops::smlaGradWithEmptyOptionalsAbsent(args), workspaceSize, executor);
}

extern "C" aclnnStatus aclnnSparseFlashMlaGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                               aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kSmlaGradApi, workspace, workspaceSize, executor, stream);
}
