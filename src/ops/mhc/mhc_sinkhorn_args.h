// The arguments of aclnnMhcSinkhorn and aclnnMhcSinkhornBackward, packed once, and the sizes every later step reads.
// Upstream: ops-transformer mhc/mhc_sinkhorn, mhc/mhc_sinkhorn_backward (docs/mhc_sinkhorn.md).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kMhcSinkhornApi = "aclnnMhcSinkhorn";
inline constexpr const char* kMhcSinkhornBackwardApi = "aclnnMhcSinkhornBackward";

/** One aclnnMhcSinkhorn call, as the caller gave it. */
struct MhcSinkhornArgs {
  const aclTensor* x;
  float eps;
  int64_t numIters;
  aclTensor* output;
  aclTensor* normOut;  // optional: nullptr or one element with sumOut = no saved steps
  aclTensor* sumOut;
};

/** One aclnnMhcSinkhornBackward call, as the caller gave it. */
struct MhcSinkhornBackwardArgs {
  const aclTensor* gradOutput;
  const aclTensor* normOut;
  const aclTensor* sumOut;
  aclTensor* out;
};

/** The sizes of a checked call: x is [B, S, n, n] or [T, n, n]; tokens T = B * S. */
struct MhcSinkhornDims {
  int64_t tokens = 0;
  int64_t n = 0;
  int64_t iters = 0;
};

/** True when the forward saves its steps: normOut and sumOut given, neither of one element. */
bool mhcSinkhornSaves(const MhcSinkhornArgs& args);

/** The sizes of a forward call that passed its checks. */
MhcSinkhornDims mhcSinkhornDimsOf(const MhcSinkhornArgs& args);

/** The sizes of a backward call that passed its checks (iters from normOut's size; 0 for an empty gradOutput). */
MhcSinkhornDims mhcSinkhornBackwardDimsOf(const MhcSinkhornBackwardArgs& args);

}  // namespace gradkit::ops
