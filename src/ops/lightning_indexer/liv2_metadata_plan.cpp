#include "ops/lightning_indexer/liv2_metadata_plan.h"

#include <cstring>

#include "aclnn/opdev/platform.h"
#include "opapi/tensor.h"
#include "opapi/tensor_copy.h"  // readInt32Values

namespace gradkit::ops {
namespace {

LiV2MetadataBatch sideBatch(const aclTensor* seqused, const char* sequsedName, const aclTensor* cuSeqlens,
                            const char* cuName, const char* layout, int64_t batchSize) {
  if (liv2MetadataTensorGiven(seqused)) return {seqused->viewDims[0], sequsedName};
  if (std::strcmp(layout, "TND") == 0 && liv2MetadataTensorGiven(cuSeqlens)) {
    return {cuSeqlens->viewDims[0] - 1, cuName};
  }
  return {batchSize, "batchSize"};
}

// Per batch: seqused when given, else the TND cu_seqlens length, else the max length.
std::vector<int64_t> lengths(int64_t batch, const aclTensor* seqused, const aclTensor* cuSeqlens, bool tnd,
                             int64_t maxLength) {
  const std::vector<int64_t> used = readInt32Values(liv2MetadataGiven(seqused));
  const std::vector<int64_t> cu = tnd ? readInt32Values(liv2MetadataGiven(cuSeqlens)) : std::vector<int64_t>{};
  std::vector<int64_t> out(static_cast<size_t>(batch), maxLength);
  for (int64_t b = 0; b < batch; ++b) {
    if (!used.empty()) {
      out[static_cast<size_t>(b)] = used[static_cast<size_t>(b)];
    } else if (!cu.empty()) {
      out[static_cast<size_t>(b)] = cu[static_cast<size_t>(b + 1)] - cu[static_cast<size_t>(b)];
    }
  }
  return out;
}

}  // namespace

bool liv2MetadataTensorGiven(const aclTensor* t) { return t != nullptr && t->dim() >= 1 && t->viewDims[0] > 0; }
const aclTensor* liv2MetadataGiven(const aclTensor* t) { return liv2MetadataTensorGiven(t) ? t : nullptr; }

LiV2MetadataBatch liv2MetadataQueryBatch(const LiV2MetadataArgs& a) {
  return sideBatch(a.sequsedQ, "sequsedQOptional", a.cuSeqlensQ, "cuSeqlensQOptional", a.layoutQ, a.batchSize);
}

LiV2MetadataBatch liv2MetadataKeyBatch(const LiV2MetadataArgs& a) {
  return sideBatch(a.sequsedK, "sequsedKOptional", a.cuSeqlensK, "cuSeqlensKOptional", a.layoutK, a.batchSize);
}

LiV2MetadataRequest liv2MetadataRequestOf(const LiV2MetadataArgs& a) {
  const op::PlatformInfo& platform = op::GetCurrentPlatformInfo();
  LiV2MetadataRequest r;
  r.ascend950 = platform.GetSocVersion() == op::SocVersion::ASCEND950;
  r.aicCores = platform.GetCubeCoreNum();
  r.aivCores = platform.GetVectorCoreNum();
  r.headsQ = a.numHeadsQ;
  r.headsK = a.numHeadsK;
  r.topk = a.topk;
  r.maskMode = a.maskMode;
  r.cmpRatio = a.cmpRatio;
  const int64_t batch = liv2MetadataQueryBatch(a).batch;
  r.queryRows = lengths(batch, a.sequsedQ, a.cuSeqlensQ, std::strcmp(a.layoutQ, "TND") == 0, a.maxSeqlenQ);
  r.keys = lengths(batch, a.sequsedK, a.cuSeqlensK, std::strcmp(a.layoutK, "TND") == 0, a.maxSeqlenK);
  r.residual = readInt32Values(liv2MetadataGiven(a.cmpResidualK));
  return r;
}

LiV2MetadataPlan planLightningIndexerV2Metadata(const LiV2MetadataArgs& args) {
  LiV2MetadataPlan plan;
  plan.metadata = StagedTensor::planUnlessDense(*args.metadata, "metadata staging", plan.workspace);
  plan.image = liv2MetadataImage(liv2MetadataRequestOf(args));
  return plan;
}

aclnnStatus LiV2MetadataPlan::run(void* memory) const {
  std::memcpy(metadata.target(memory), image.data(), image.size() * sizeof(int32_t));
  metadata.writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
