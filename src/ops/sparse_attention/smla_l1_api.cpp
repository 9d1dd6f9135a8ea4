// The aclnn entry points of SparseFlashMlaSoftmaxL1Norm.
#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm.h"
#include "opapi/op_definition.h"
#include "opapi/tensor.h"
#include "ops/sparse_attention/smla_l1_check.h"
#include "ops/sparse_attention/smla_l1_plan.h"

namespace gradkit::ops {
namespace {

// An empty q: upstream returns at once (nothing to compute, the output has no elements either).
bool hasNoWork(const SmlaL1Args& a) { return a.q->isEmpty(); }

const OpDefinition<SmlaL1Args, SmlaL1Plan> kSoftmaxL1Norm{kSmlaL1Api, checkSparseFlashMlaSoftmaxL1Norm, hasNoWork,
                                                          planSparseFlashMlaSoftmaxL1Norm};

}  // namespace
}  // namespace gradkit::ops

extern "C" aclnnStatus aclnnSparseFlashMlaSoftmaxL1NormGetWorkspaceSize(
    const aclTensor* q, const aclTensor* k, const aclTensor* softmaxLse, const aclTensor* sparseIndicesOptional,
    const aclTensor* cuSeqlensQOptional, const aclTensor* cuSeqlensKOptional, const aclTensor* sequsedQOptional,
    const aclTensor* sequsedKOptional, const aclTensor* cmpResidualKOptional, const aclTensor* topkLengthOptional,
    const aclTensor* metadataOptional, double softmaxScale, int64_t maxSeqlenK, int64_t cmpRatio, int64_t maskMode,
    char* layoutQOptional, char* layoutKOptional, const aclTensor* softmaxL1Norm, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  const gradkit::ops::SmlaL1Args args{q,
                                      k,
                                      softmaxLse,
                                      sparseIndicesOptional,
                                      cuSeqlensQOptional,
                                      cuSeqlensKOptional,
                                      sequsedQOptional,
                                      sequsedKOptional,
                                      cmpResidualKOptional,
                                      topkLengthOptional,
                                      metadataOptional,
                                      softmaxScale,
                                      maxSeqlenK,
                                      cmpRatio,
                                      maskMode,
                                      layoutQOptional,
                                      layoutKOptional,
                                      softmaxL1Norm};
  return gradkit::getWorkspaceSize(gradkit::ops::kSoftmaxL1Norm, gradkit::ops::smlaL1WithEmptyOptionalsAbsent(args),
                                   workspaceSize, executor);
}

extern "C" aclnnStatus aclnnSparseFlashMlaSoftmaxL1Norm(void* workspace, uint64_t workspaceSize,
                                                        aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kSmlaL1Api, workspace, workspaceSize, executor, stream);
}
