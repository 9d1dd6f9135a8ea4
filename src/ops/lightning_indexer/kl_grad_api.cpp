// The aclnn entry points of SparseLightningIndexerKLLossGrad and its Metadata op.
#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad_metadata.h"
#include "opapi/op_definition.h"
#include "opapi/tensor_rules.h"
#include "ops/lightning_indexer/kl_grad_check.h"
#include "ops/lightning_indexer/kl_grad_metadata.h"
#include "ops/lightning_indexer/kl_grad_plan.h"

namespace gradkit::ops {
namespace {

// Every tensor is non-empty once the checks pass: there is always work.
bool klGradHasNoWork(const KlGradArgs&) { return false; }
bool metadataHasNoWork(const KlGradMetadataArgs&) { return false; }

const OpDefinition<KlGradArgs, KlGradPlan> kKlGrad{kKlGradApi, checkKlGrad, klGradHasNoWork, planKlGrad};
const OpDefinition<KlGradMetadataArgs, KlGradMetadataPlan> kKlGradMetadata{kKlGradMetadataApi, checkKlGradMetadata,
                                                                           metadataHasNoWork, planKlGradMetadata};

}  // namespace
}  // namespace gradkit::ops

extern "C" aclnnStatus aclnnSparseLightningIndexerKLLossGradGetWorkspaceSize(
    const aclTensor* q, const aclTensor* k, const aclTensor* w, const aclTensor* sparseIndices,
    const aclTensor* attnSoftmaxL1Norm, const aclTensor* cuSeqLensQOptional, const aclTensor* cuSeqLensKOptional,
    const aclTensor* seqUsedQOptional, const aclTensor* seqUsedKOptional, const aclTensor* cmpResidualKOptional,
    const aclTensor* metadataOptional, char* layoutQ, char* layoutK, int64_t maskMode, int64_t cmpRatio,
    const aclTensor* dq, const aclTensor* dk, const aclTensor* dw, const aclTensor* softmaxOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  using gradkit::absentIfScalar;
  // Upstream declares the outputs const; the plan writes them (as upstream's kernel does).
  const gradkit::ops::KlGradArgs args{q,
                                      k,
                                      w,
                                      sparseIndices,
                                      attnSoftmaxL1Norm,
                                      absentIfScalar(cuSeqLensQOptional),
                                      absentIfScalar(cuSeqLensKOptional),
                                      absentIfScalar(seqUsedQOptional),
                                      absentIfScalar(seqUsedKOptional),
                                      absentIfScalar(cmpResidualKOptional),
                                      absentIfScalar(metadataOptional),
                                      layoutQ,
                                      layoutK,
                                      maskMode,
                                      cmpRatio,
                                      const_cast<aclTensor*>(dq),
                                      const_cast<aclTensor*>(dk),
                                      const_cast<aclTensor*>(dw),
                                      const_cast<aclTensor*>(softmaxOut)};
  return gradkit::getWorkspaceSize(gradkit::ops::kKlGrad, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnSparseLightningIndexerKLLossGrad(void* workspace, uint64_t workspaceSize,
                                                             aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kKlGradApi, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnSparseLightningIndexerKLLossGradMetadataGetWorkspaceSize(
    const aclTensor* cuSeqlensQOptional, const aclTensor* cuSeqlensKOptional, const aclTensor* sequsedQOptional,
    const aclTensor* sequsedKOptional, const aclTensor* cmpResidualKOptional, int64_t batchSize, int64_t maxSeqlenQ,
    int64_t maxSeqlenK, int64_t numHeadsQ, int64_t numHeadsK, int64_t headDim, int64_t topk, char* layoutQOptional,
    char* layoutKOptional, int64_t maskMode, int64_t cmpRatio, const aclTensor* metadata, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  using gradkit::absentIfScalar;
  const gradkit::ops::KlGradMetadataArgs args{absentIfScalar(cuSeqlensQOptional),
                                              absentIfScalar(cuSeqlensKOptional),
                                              absentIfScalar(sequsedQOptional),
                                              absentIfScalar(sequsedKOptional),
                                              absentIfScalar(cmpResidualKOptional),
                                              batchSize,
                                              maxSeqlenQ,
                                              maxSeqlenK,
                                              numHeadsQ,
                                              numHeadsK,
                                              headDim,
                                              topk,
                                              layoutQOptional,
                                              layoutKOptional,
                                              maskMode,
                                              cmpRatio,
                                              const_cast<aclTensor*>(metadata)};
  return gradkit::getWorkspaceSize(gradkit::ops::kKlGradMetadata, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnSparseLightningIndexerKLLossGradMetadata(void* workspace, uint64_t workspaceSize,
                                                                     aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kKlGradMetadataApi, workspace, workspaceSize, executor, stream);
}
