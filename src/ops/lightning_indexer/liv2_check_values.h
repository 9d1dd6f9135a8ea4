// The values of aclnnLightningIndexerV2's int32 tensors, read from host memory in the first phase: the per-batch
// arrays (cu_seqlens, seqused, cmpResidualK) for the size model, and the rules upstream leaves to its AI-CPU metadata
// kernel or to nobody (DECISIONS.md "Check early and clearly"): cu_seqlens from 0 and non-decreasing within the rows,
// seqused within the lengths, cmpResidualK in [0, cmpRatio), the block-table entries the used keys go through within
// the cache, and outputIdxOffset >= 0 with every index it shifts within int32.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"
#include "ops/lightning_indexer/liv2_args.h"
#include "ops/lightning_indexer/liv2_layout.h"

namespace gradkit::ops {

/** Element `index` (one per dim) of an INT32 view in host memory. */
int32_t liv2Int32At(const aclTensor& tensor, std::initializer_list<int64_t> index);

/** The per-batch values of a call whose shapes passed the checks (absent tensors give empty lists). */
LiV2Values liv2ValuesOf(const LiV2Args& args);

/** ACLNN_SUCCESS or 161002 naming the first value outside its rule (message recorded). */
aclnnStatus checkLightningIndexerV2Values(const LiV2Args& args, const LiV2Dims& dims);

}  // namespace gradkit::ops
