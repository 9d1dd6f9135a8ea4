// The aclnn entry points of LightningIndexerV2 and LightningIndexerV2Metadata.
#include "aclnnop/aclnn_lightning_indexer_v2.h"
#include "aclnnop/aclnn_lightning_indexer_v2_metadata.h"
#include "opapi/op_definition.h"
#include "opapi/tensor_rules.h"
#include "ops/lightning_indexer/liv2_check.h"
#include "ops/lightning_indexer/liv2_metadata_plan.h"
#include "ops/lightning_indexer/liv2_plan.h"

namespace gradkit::ops {
namespace {

// A checked call always writes sparseIndices (q is not empty, topk >= 1); the metadata op always writes its image.
bool indexerHasNoWork(const LiV2Args&) { return false; }
bool metadataHasNoWork(const LiV2MetadataArgs&) { return false; }

const OpDefinition<LiV2Args, LiV2Plan> kLiV2{kLiV2Api, checkLightningIndexerV2, indexerHasNoWork,
                                             planLightningIndexerV2};
const OpDefinition<LiV2MetadataArgs, LiV2MetadataPlan> kLiV2Metadata{kLiV2MetadataApi, checkLightningIndexerV2Metadata,
                                                                     metadataHasNoWork, planLightningIndexerV2Metadata};

}  // namespace
}  // namespace gradkit::ops

extern "C" aclnnStatus aclnnLightningIndexerV2GetWorkspaceSize(
    const aclTensor* q, const aclTensor* k, const aclTensor* w, const aclTensor* cuSeqlensQOptional,
    const aclTensor* cuSeqlensKOptional, const aclTensor* sequsedQOptional, const aclTensor* sequsedKOptional,
    const aclTensor* cmpResidualKOptional, const aclTensor* blockTableOptional,
    const aclTensor* outputIdxOffsetOptional, const aclTensor* metadataOptional, int64_t topk, int64_t maxSeqlenQ,
    char* layoutQ, char* layoutK, int64_t maskMode, int64_t cmpRatio, int64_t returnValue,
    const aclTensor* sparseIndices, const aclTensor* sparseValues, uint64_t* workspaceSize, aclOpExecutor** executor) {
  using gradkit::absentIfScalar;
  const gradkit::ops::LiV2Args args{q,
                                    k,
                                    w,
                                    absentIfScalar(cuSeqlensQOptional),
                                    absentIfScalar(cuSeqlensKOptional),
                                    absentIfScalar(sequsedQOptional),
                                    absentIfScalar(sequsedKOptional),
                                    absentIfScalar(cmpResidualKOptional),
                                    absentIfScalar(blockTableOptional),
                                    absentIfScalar(outputIdxOffsetOptional),
                                    absentIfScalar(metadataOptional),
                                    topk,
                                    maxSeqlenQ,
                                    layoutQ,
                                    layoutK,
                                    maskMode,
                                    cmpRatio,
                                    returnValue,
                                    sparseIndices,
                                    sparseValues};
  return gradkit::getWorkspaceSize(gradkit::ops::kLiV2, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnLightningIndexerV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                               aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kLiV2Api, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnLightningIndexerV2MetadataGetWorkspaceSize(
    const aclTensor* cuSeqlensQOptional, const aclTensor* cuSeqlensKOptional, const aclTensor* sequsedQOptional,
    const aclTensor* sequsedKOptional, const aclTensor* cmpResidualKOptional, int64_t numHeadsQ, int64_t numHeadsK,
    int64_t headDim, int64_t topk, int64_t batchSize, int64_t maxSeqlenQ, int64_t maxSeqlenK, char* layoutQOptional,
    char* layoutKOptional, int64_t maskMode, int64_t cmpRatio, const aclTensor* metadata, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  const gradkit::ops::LiV2MetadataArgs args{cuSeqlensQOptional,
                                            cuSeqlensKOptional,
                                            sequsedQOptional,
                                            sequsedKOptional,
                                            cmpResidualKOptional,
                                            numHeadsQ,
                                            numHeadsK,
                                            headDim,
                                            topk,
                                            batchSize,
                                            maxSeqlenQ,
                                            maxSeqlenK,
                                            layoutQOptional,
                                            layoutKOptional,
                                            maskMode,
                                            cmpRatio,
                                            metadata};
  return gradkit::getWorkspaceSize(gradkit::ops::kLiV2Metadata, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnLightningIndexerV2Metadata(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                       aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kLiV2MetadataApi, workspace, workspaceSize, executor, stream);
}
