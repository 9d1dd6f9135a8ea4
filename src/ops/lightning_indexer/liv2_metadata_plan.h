// The plan of aclnnLightningIndexerV2Metadata: the image is computed in the first phase (liv2_metadata_image.h) from
// the call's values, read from host memory then; the run writes it into the metadata tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/lightning_indexer/liv2_args.h"
#include "ops/lightning_indexer/liv2_metadata_image.h"

namespace gradkit::ops {

/** Upstream's "given": non-null, rank >= 1 and dim 0 > 0 (any other optional tensor is ignored). */
bool liv2MetadataTensorGiven(const aclTensor* tensor);
/** The tensor when given, else nullptr. */
const aclTensor* liv2MetadataGiven(const aclTensor* tensor);

/** A side's batch size and where it comes from ("sequsedQOptional", "cuSeqlensQOptional" or "batchSize"). */
struct LiV2MetadataBatch {
  int64_t batch = 0;
  std::string source;
};
/** q: sequsedQ's size when given, else TND cuSeqlensQ's size - 1, else batchSize; k the same with the k tensors. */
LiV2MetadataBatch liv2MetadataQueryBatch(const LiV2MetadataArgs& args);
LiV2MetadataBatch liv2MetadataKeyBatch(const LiV2MetadataArgs& args);

/** The planner's request of a checked call (its values read now; the emulated SoC's core counts). */
LiV2MetadataRequest liv2MetadataRequestOf(const LiV2MetadataArgs& args);

struct LiV2MetadataPlan {
  WorkspaceBooking workspace;
  StagedTensor metadata;
  std::vector<int32_t> image;  // 1024 words

  aclnnStatus run(void* memory) const;
};

LiV2MetadataPlan planLightningIndexerV2Metadata(const LiV2MetadataArgs& args);

}  // namespace gradkit::ops
