// The aclnn entry points of aclnnSparseFlashMlaMetadata, aclnnSparseFlashMlaGradMetadata and
// aclnnSparseFlashMlaSoftmaxL1NormMetadata.
#include "aclnnop/aclnn_sparse_flash_mla_grad_metadata.h"
#include "aclnnop/aclnn_sparse_flash_mla_metadata.h"
#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm_metadata.h"
#include "opapi/op_definition.h"
#include "ops/sparse_attention/smla_metadata_check.h"
#include "ops/sparse_attention/smla_metadata_plan.h"

namespace gradkit::ops {
namespace {

// A checked call always writes its image (even for no rows), so there is always a plan.
bool neverEmpty(const SmlaMetaArgs&) { return false; }
bool neverEmptyL1(const SmlaL1MetaArgs&) { return false; }

const OpDefinition<SmlaMetaArgs, SmlaMetaPlan> kSmlaMetadata{kSmlaMetadataApi, checkSmlaMetadata, neverEmpty,
                                                             planSmlaMetadataCall};
const OpDefinition<SmlaMetaArgs, SmlaMetaPlan> kSmlaGradMetadata{kSmlaGradMetadataApi, checkSmlaMetadata, neverEmpty,
                                                                 planSmlaMetadataCall};
const OpDefinition<SmlaL1MetaArgs, SmlaMetaPlan> kSmlaL1NormMetadata{kSmlaL1NormMetadataApi, checkSmlaL1NormMetadata,
                                                                     neverEmptyL1, planSmlaL1NormMetadataCall};

SmlaMetaArgs metaArgs(SmlaMetaOp op, const aclTensor* cuSeqlensQ, const aclTensor* cuSeqlensOriKv,
                      const aclTensor* cuSeqlensCmpKv, const aclTensor* sequsedQ, const aclTensor* sequsedOriKv,
                      const aclTensor* sequsedCmpKv, const aclTensor* cmpResidualKv, const aclTensor* oriTopkLength,
                      const aclTensor* cmpTopkLength, int64_t numHeadsQ, int64_t numHeadsKv, int64_t headDim,
                      int64_t batchSize, int64_t maxSeqlenQ, int64_t maxSeqlenOriKv, int64_t maxSeqlenCmpKv,
                      int64_t oriTopk, int64_t cmpTopk, int64_t cmpRatio, int64_t oriMaskMode, int64_t cmpMaskMode,
                      int64_t oriWinLeft, int64_t oriWinRight, const char* layoutQ, const char* layoutKv, bool hasOriKv,
                      bool hasCmpKv, const aclTensor* metadata) {
  return {op,           cuSeqlensQ,    cuSeqlensOriKv, cuSeqlensCmpKv, sequsedQ,       sequsedOriKv,
          sequsedCmpKv, cmpResidualKv, oriTopkLength,  cmpTopkLength,  numHeadsQ,      numHeadsKv,
          headDim,      batchSize,     maxSeqlenQ,     maxSeqlenOriKv, maxSeqlenCmpKv, oriTopk,
          cmpTopk,      cmpRatio,      oriMaskMode,    cmpMaskMode,    oriWinLeft,     oriWinRight,
          layoutQ,      layoutKv,      hasOriKv,       hasCmpKv,       metadata};
}

}  // namespace
}  // namespace gradkit::ops

using gradkit::ops::SmlaMetaOp;

extern "C" aclnnStatus aclnnSparseFlashMlaMetadataGetWorkspaceSize(
    const aclTensor* cuSeqlensQOptional, const aclTensor* cuSeqlensOriKvOptional,
    const aclTensor* cuSeqlensCmpKvOptional, const aclTensor* sequsedQOptional, const aclTensor* sequsedOriKvOptional,
    const aclTensor* sequsedCmpKvOptional, const aclTensor* cmpResidualKvOptional,
    const aclTensor* oriTopkLengthOptional, const aclTensor* cmpTopkLengthOptional, int64_t numHeadsQ,
    int64_t numHeadsKv, int64_t headDim, int64_t batchSize, int64_t maxSeqlenQ, int64_t maxSeqlenOriKv,
    int64_t maxSeqlenCmpKv, int64_t oriTopk, int64_t cmpTopk, int64_t cmpRatio, int64_t oriMaskMode,
    int64_t cmpMaskMode, int64_t oriWinLeft, int64_t oriWinRight, const char* layoutQOptional,
    const char* layoutKvOptional, bool hasOriKv, bool hasCmpKv, const aclTensor* metaData, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  const auto args = gradkit::ops::metaArgs(
      SmlaMetaOp::Forward, cuSeqlensQOptional, cuSeqlensOriKvOptional, cuSeqlensCmpKvOptional, sequsedQOptional,
      sequsedOriKvOptional, sequsedCmpKvOptional, cmpResidualKvOptional, oriTopkLengthOptional, cmpTopkLengthOptional,
      numHeadsQ, numHeadsKv, headDim, batchSize, maxSeqlenQ, maxSeqlenOriKv, maxSeqlenCmpKv, oriTopk, cmpTopk, cmpRatio,
      oriMaskMode, cmpMaskMode, oriWinLeft, oriWinRight, layoutQOptional, layoutKvOptional, hasOriKv, hasCmpKv,
      metaData);
  return gradkit::getWorkspaceSize(gradkit::ops::kSmlaMetadata, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnSparseFlashMlaMetadata(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                   aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kSmlaMetadataApi, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnSparseFlashMlaGradMetadataGetWorkspaceSize(
    const aclTensor* cuSeqlensQOptional, const aclTensor* cuSeqlensOriKvOptional,
    const aclTensor* cuSeqlensCmpKvOptional, const aclTensor* sequsedQOptional, const aclTensor* sequsedOriKvOptional,
    const aclTensor* sequsedCmpKvOptional, const aclTensor* cmpResidualKvOptional,
    const aclTensor* oriTopkLengthOptional, const aclTensor* cmpTopkLengthOptional, int64_t numHeadsQ,
    int64_t numHeadsKv, int64_t headDim, int64_t batchSize, int64_t maxSeqlenQ, int64_t maxSeqlenOriKv,
    int64_t maxSeqlenCmpKv, int64_t oriTopk, int64_t cmpTopk, int64_t cmpRatio, int64_t oriMaskMode,
    int64_t cmpMaskMode, int64_t oriWinLeft, int64_t oriWinRight, const char* layoutQOptional,
    const char* layoutKvOptional, bool hasOriKv, bool hasCmpKv, const aclTensor* metaData, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  const auto args = gradkit::ops::metaArgs(
      SmlaMetaOp::Grad, cuSeqlensQOptional, cuSeqlensOriKvOptional, cuSeqlensCmpKvOptional, sequsedQOptional,
      sequsedOriKvOptional, sequsedCmpKvOptional, cmpResidualKvOptional, oriTopkLengthOptional, cmpTopkLengthOptional,
      numHeadsQ, numHeadsKv, headDim, batchSize, maxSeqlenQ, maxSeqlenOriKv, maxSeqlenCmpKv, oriTopk, cmpTopk, cmpRatio,
      oriMaskMode, cmpMaskMode, oriWinLeft, oriWinRight, layoutQOptional, layoutKvOptional, hasOriKv, hasCmpKv,
      metaData);
  return gradkit::getWorkspaceSize(gradkit::ops::kSmlaGradMetadata, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnSparseFlashMlaGradMetadata(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                       aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kSmlaGradMetadataApi, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnSparseFlashMlaSoftmaxL1NormMetadataGetWorkspaceSize(
    const aclTensor* cuSeqLensQOptional, const aclTensor* cuSeqLensKOptional, const aclTensor* seqUsedQOptional,
    const aclTensor* seqUsedKOptional, const aclTensor* cmpResidualKOptional, const aclTensor* topkLengthOptional,
    int64_t batchSize, int64_t maxSeqLenQ, int64_t maxSeqLenK, int64_t numHeadsQ, int64_t numHeadsK, int64_t headDim,
    int64_t topk, int64_t cmpRatio, int64_t maskMode, char* layoutQ, char* layoutK, const aclTensor* metadata,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  const gradkit::ops::SmlaL1MetaArgs args{cuSeqLensQOptional,
                                          cuSeqLensKOptional,
                                          seqUsedQOptional,
                                          seqUsedKOptional,
                                          cmpResidualKOptional,
                                          topkLengthOptional,
                                          batchSize,
                                          maxSeqLenQ,
                                          maxSeqLenK,
                                          numHeadsQ,
                                          numHeadsK,
                                          headDim,
                                          topk,
                                          cmpRatio,
                                          maskMode,
                                          layoutQ,
                                          layoutK,
                                          metadata};
  return gradkit::getWorkspaceSize(gradkit::ops::kSmlaL1NormMetadata, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnSparseFlashMlaSoftmaxL1NormMetadata(void* workspace, uint64_t workspaceSize,
                                                                aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kSmlaL1NormMetadataApi, workspace, workspaceSize, executor, stream);
}
