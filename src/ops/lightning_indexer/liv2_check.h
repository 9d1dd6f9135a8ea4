// The checks of aclnnLightningIndexerV2 and aclnnLightningIndexerV2Metadata, in upstream's order (liv2_check.cpp,
// liv2_metadata_check.cpp), with the values upstream checks only at tiling or run time (liv2_check_values.cpp).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/lightning_indexer/liv2_args.h"

namespace gradkit::ops {

/** ACLNN_SUCCESS or the first failing rule's code, with its message recorded. */
aclnnStatus checkLightningIndexerV2(const LiV2Args& args, const uint64_t* workspaceSize,
                                    aclOpExecutor* const* executor);

/** The same for the metadata op. */
aclnnStatus checkLightningIndexerV2Metadata(const LiV2MetadataArgs& args, const uint64_t* workspaceSize,
                                            aclOpExecutor* const* executor);

}  // namespace gradkit::ops
