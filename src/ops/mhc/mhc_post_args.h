// The arguments of aclnnMhcPost and aclnnMhcPostBackward, packed once, and the sizes every later step reads.
// Upstream: ops-transformer mhc/mhc_post, mhc/mhc_post_backward (docs/mhc.md).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kMhcPostApi = "aclnnMhcPost";
inline constexpr const char* kMhcPostBackwardApi = "aclnnMhcPostBackward";

/** One aclnnMhcPost call, as the caller gave it. */
struct MhcPostArgs {
  const aclTensor* x;
  const aclTensor* hRes;  // optional in the Ascend950 profile
  const aclTensor* hOut;
  const aclTensor* hPost;
  aclTensor* out;
};

/** One aclnnMhcPostBackward call, as the caller gave it. */
struct MhcPostBackwardArgs {
  const aclTensor* gradOutput;
  const aclTensor* x;
  const aclTensor* hRes;  // optional in the Ascend950 profile
  const aclTensor* hOut;
  const aclTensor* hPost;
  aclTensor* gradX;
  aclTensor* gradHRes;
  aclTensor* gradHOut;
  aclTensor* gradHPost;
};

/** The sizes of a checked call: x is [B, S, N, D] (BSND) or [T, N, D] (TND); tokens T = B * S, row-major. */
struct MhcPostDims {
  int64_t tokens = 0;   // T
  int64_t streams = 0;  // N
  int64_t hidden = 0;   // D
};

/** The sizes of a call whose x passed its checks. */
MhcPostDims mhcPostDimsOf(const aclTensor& x);

}  // namespace gradkit::ops
