// The value rules of aclnnCompressorGradGetWorkspaceSize that need the int32 tensors' contents (read from host memory)
// and that upstream leaves unchecked (spec compressor.md 5.3 and 9 #5, DECISIONS.md "Check early and clearly"):
// cu_seqlens non-decreasing from 0 with cu[B] <= T, 0 <= seqused[b] <= len_b, start_pos[b] >= 0 with
// start_pos[b] + len_b within int32 (positions are int32 upstream).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/compressor/compressor_args.h"

namespace gradkit::ops {

/**
 * ACLNN_SUCCESS or 161002 with a message naming the argument, the rule and the offending value. Call after every
 * shape and memory rule has passed; `tokens` is T (TH: x.dim0; BSH: B*S).
 */
aclnnStatus checkCompressorGradValues(const CompressorGradArgs& args, int64_t tokens);

}  // namespace gradkit::ops
