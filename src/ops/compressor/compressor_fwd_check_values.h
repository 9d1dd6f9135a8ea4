// The value rules of aclnnCompressorGetWorkspaceSize that need the int32 tensors' contents (read from host memory)
// and that upstream leaves unchecked (DECISIONS.md "Check early and clearly", spec compressor.md 9 #5):
// cu_seqlens non-decreasing from 0 with cu[B] <= T, 0 <= seqused[b] <= len_b, start_pos >= 0 with the last position
// within int32, the ring-buffer size rule of cacheMode 2, and every block-table entry the call reads or writes
// through (cacheMode 1: enough columns; every entry in [0, block_num)).
#pragma once

#include "aclnn/aclnn_base.h"
#include "ops/compressor/compressor_args.h"

namespace gradkit::ops {

/** ACLNN_SUCCESS or 161002 with a message naming the argument, the rule and the offending value. Call after every
 *  shape and memory rule has passed. */
aclnnStatus checkCompressorValues(const CompressorArgs& args);

}  // namespace gradkit::ops
